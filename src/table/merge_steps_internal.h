// The merge's steps as worker tasks run them: each reads its pieces from the
// inputs and makes what the writer appends — row groups copied as encoded
// bytes, a run of data pages, or row groups decoded and encoded again — and
// the buffers local inputs are read into, reused step after step. Private to
// src/table (merge*.cc).
//
// Thread-safety: Produce runs on many workers at once, each on its own step;
// StepBuffers is safe from any thread.
#pragma once

#include <arrow/buffer.h>

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "base/status.h"
#include "blob/blob.h"
#include "table/merge_footers_internal.h"
#include "table/merge_plan_internal.h"
#include "table/parquet_assembler.h"

namespace sediment::table::merge_internal {

// Buffers a step reads its local input files into: one a step, given back
// when the step's last slice is gone and taken again by a later step. A merge
// of thousands of head files then holds a few buffers, faulted in once,
// instead of thousands of freed ones that the allocator keeps resident for a
// while (the tiny head merge at 2 threads peaked at 147 MiB, now 125:
// bench/RESULTS.md). At most `keep` are held at once, free or in use: a step
// that fits in no free buffer replaces the largest one.
class StepBuffers : public std::enable_shared_from_this<StepBuffers> {
 public:
  explicit StepBuffers(size_t keep) : keep_(keep) { free_.reserve(keep); }

  // `size` bytes, uninitialised.
  Result<std::shared_ptr<arrow::Buffer>> Take(int64_t size);

  // The most buffers held at once.
  int64_t most_held() {
    std::lock_guard lock(mu_);
    return most_held_;
  }

 private:
  void Give(std::unique_ptr<arrow::ResizableBuffer> buffer);

  const size_t keep_;
  std::mutex mu_;
  std::vector<std::unique_ptr<arrow::ResizableBuffer>> free_;  // GUARDED_BY(mu_)
  int64_t held_ = 0, most_held_ = 0;                           // GUARDED_BY(mu_)
};

// What a step of plain pieces decodes and encodes with (merge_steps.cc): a
// chunk encoder, the buffers a column is decoded into, and one for the
// column chunks read. Kept from step to step like StepBuffers, for the
// same reason: pages faulted in once, not freed and held by the allocator.
struct StepScratch;
class StepScratches : public std::enable_shared_from_this<StepScratches> {
 public:
  explicit StepScratches(size_t keep);
  ~StepScratches();

  // A scratch, given back when the last reference goes.
  std::shared_ptr<StepScratch> Take();

 private:
  void Give(std::unique_ptr<StepScratch> scratch);

  const size_t keep_;
  std::mutex mu_;
  std::vector<std::unique_ptr<StepScratch>> free_;  // GUARDED_BY(mu_)
};

// What a step made, ready for the writer: row groups to copy, or a run of pages.
struct Prepared {
  std::vector<EncodedRowGroup> row_groups;
  std::optional<PageRun> run;
  int64_t plain_decoded = 0;  // input row groups decoded from their PLAIN pages (plain_decode.h)
};

// What a step reads and writes: shared by its worker tasks.
struct StepInputs {
  blob::BlobStore* blobs = nullptr;
  std::shared_ptr<StepBuffers> buffers;
  std::shared_ptr<StepScratches> scratches;
  const Footers* footers = nullptr;
  const Wholes* wholes = nullptr;
  const std::vector<SegmentRecord>* inputs = nullptr;
  const WriterSettings* settings = nullptr;
  std::shared_ptr<parquet::WriterProperties> props;
  std::shared_ptr<arrow::Schema> schema;
  std::shared_ptr<arrow::Schema> stored_schema;      // StoredSchema(schema): what re-encoded steps read
  const parquet::SchemaDescriptor* descr = nullptr;  // the output's Parquet schema (stored_schema's)

  Status Named(size_t input, const Status& st) const;
};

// Runs on a worker: the step, ready for the writer.
Result<Prepared> Produce(const StepInputs& in, const Step& step);

}  // namespace sediment::table::merge_internal
