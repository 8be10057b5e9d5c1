// MergeSegments: the merge itself — reads a group of adjacent segment files
// and writes them as one new file in block order (spec: "merges each group
// of two or more files into one new file"). It publishes nothing: the caller
// (Compactor) swaps the output into the live set or deletes it.
//
// Footers are read metadata_concurrency at a time on `footer_pool`, once,
// and planned in input order while later ones are still being read; the
// files are opened again with them (and their known sizes: no metadata
// requests), one step at a time, so no input stays open between steps. The
// merge is a pipeline: a row group that is already full and encoded as the
// output wants is copied as bytes (parquet_assembler.h); runs of small row
// groups are decoded and encoded together into full ones. Both are done by
// `worker_pool` tasks, up to workers + 1 steps ahead of the thread that
// appends their results to the output in order, so memory holds a few row
// groups per merge. Small row groups of files without dictionaries (head
// files, and merges before the final one) are not decoded at all: their data
// pages are concatenated into full row groups (parquet_assembler.h). A file
// whose schema or row count disagrees with the
// registry fails the merge, named by its path.
//
// Thread-safety: a pure function of its inputs apart from the blob store;
// safe to run many at once.
#pragma once

#include <atomic>
#include <vector>

#include "base/clock.h"
#include "base/executor.h"
#include "base/status.h"
#include "blob/blob.h"
#include "table/parquet_io.h"
#include "table/registry.h"

namespace sediment::table {

struct MergeContext {
  blob::BlobStore* blobs = nullptr;
  ThreadPool* footer_pool = nullptr;  // reads footers: metadata_concurrency threads
  ThreadPool* worker_pool = nullptr;  // reads, decodes, encodes row groups
  int workers = 1;                    // worker_pool's threads
  const WriterSettings* file_settings = nullptr;
  const std::atomic<bool>* stopping = nullptr;  // Cancelled once set
  uint32_t writer_tag = 0;                      // in the output's name (segment.h)
};

// How the output's row groups were made.
struct MergeStats {
  int64_t row_groups_copied = 0;      // input row groups copied as encoded bytes
  int64_t row_groups_from_pages = 0;  // output row groups made of inputs' data pages, copied
  int64_t row_groups_reencoded = 0;   // output row groups decoded and encoded again
  int64_t step_buffers = 0;           // most buffers held at once for local inputs, reused step after step
  int64_t inputs_decoded_plain = 0;   // input row groups re-encoded from their PLAIN pages (plain_decode.h)
};

// The output's record (id, path, block range, hashes, generation, parents,
// sizes), with its file written. Cancelled if `stopping` was set.
// `layout`: kFinal when the output will not be merged again (the planner's
// CompactionGroup::final): it is encoded fully, once; kPages otherwise.
Result<SegmentRecord> MergeSegments(const MergeContext& ctx, const TableInfo& table,
                                    const std::vector<SegmentRecord>& inputs, TimePoint now, FileLayout layout,
                                    MergeStats* stats = nullptr);

}  // namespace sediment::table
