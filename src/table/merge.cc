#include "table/merge.h"

#include <arrow/api.h>
#include <arrow/io/concurrency.h>
#include <arrow/io/interfaces.h>
#include <arrow/util/future.h>
#include <fmt/format.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>
#include <parquet/schema.h>

#include <algorithm>
#include <cstring>
#include <deque>

#include "table/parquet_assembler.h"
#include "table/run_on_internal.h"

namespace sediment::table {
namespace {

// Every input's footer: read once, checked, kept for planning and for opening
// the file again without reading it twice. No file stays open between steps.
using Footers = std::vector<std::shared_ptr<parquet::FileMetaData>>;

// Every input's footer, read metadata_concurrency at a time on the footer
// pool from the start, and taken in input order as the merge plans: steps are
// planned, and run, while later footers are still being read. Each footer is
// checked against the registry; the first failure, by input order, names its file.
class FooterReads {
 public:
  FooterReads(const MergeContext& ctx, const TableInfo& table, const std::vector<SegmentRecord>& inputs)
      : table_(table), inputs_(inputs) {
    for (const auto& s : inputs) {
      opening_.push_back(RunOn<Result<std::unique_ptr<SegmentFileReader>>>(
          ctx.footer_pool,
          [blobs = ctx.blobs, path = s.path, size = s.stored_bytes]() -> Result<std::unique_ptr<SegmentFileReader>> {
            // One request for the footer: the registry knows the size.
            ARROW_ASSIGN_OR_RAISE(auto file, blobs->OpenReaderSized(path, size));
            return SegmentFileReader::Open(std::move(file), path, /*decode_threads=*/false, nullptr, false);
          }));
    }
  }
  ~FooterReads() {
    for (auto& f : opening_) {
      if (f.valid()) f.wait();
    }
  }

  // Input i's footer, checked. Call in order.
  Result<std::shared_ptr<parquet::FileMetaData>> Take(size_t i) {
    auto r = opening_[i].get();
    const auto& path = inputs_[i].path;
    if (!r.ok()) return Status::IOError(fmt::format("{}: {}", path, r.status().message()));
    if (!SameSchema(*(*r)->schema(), *table_.schema)) {
      return Status::IOError(fmt::format("{}: schema {} differs from the table's", path, (*r)->schema()->ToString()));
    }
    if ((*r)->facts().rows != inputs_[i].rows) {
      return Status::IOError(
          fmt::format("{}: {} rows in the file, {} in the registry", path, (*r)->facts().rows, inputs_[i].rows));
    }
    return (*r)->parquet_metadata();
  }

 private:
  const TableInfo& table_;
  const std::vector<SegmentRecord>& inputs_;
  std::vector<std::future<Result<std::unique_ptr<SegmentFileReader>>>> opening_;
};

SegmentRecord OutputRecord(const TableInfo& table, const std::vector<SegmentRecord>& inputs, TimePoint now,
                           uint32_t writer_tag) {
  SegmentRecord out;
  out.id = NewSegmentId(inputs.front().start, writer_tag);
  out.path = TableRegistry::SegmentPath(table.id, out.id);
  out.start = inputs.front().start;
  out.end = inputs.back().end;
  out.end_hash = inputs.back().end_hash;
  out.parent_hash = inputs.front().parent_hash;
  for (const auto& s : inputs) {
    out.generation = std::max(out.generation, s.generation + 1);
    out.parents.push_back(s.id);
  }
  out.created_at_us = ToUnixMicros(now);
  return out;
}

// One row group of one input.
struct Piece {
  size_t input = 0;
  int row_group = 0;
};

// One step of the output, in order: a row group copied as it is, or row
// groups decoded together and encoded again.
struct Step {
  bool copy = false;
  std::vector<Piece> pieces;
};

// Whether a row group's encoded bytes can go into the output as they are:
// laid out and compressed as the output is, and carrying what the output
// must have (statistics, encodings, page index, the bloom filters asked for).
bool Compatible(const parquet::RowGroupMetaData& rg, const parquet::SchemaDescriptor& descr,
                const parquet::WriterProperties& props, const WriterSettings& settings) {
  if (rg.num_rows() > settings.max_row_group_rows || rg.total_byte_size() > settings.max_row_group_bytes) return false;
  if (!rg.schema()->Equals(descr)) return false;
  for (int c = 0; c < rg.num_columns(); ++c) {
    auto cc = rg.ColumnChunk(c);
    auto path = descr.Column(c)->path();
    if (cc->compression() != props.compression(path)) return false;
    if (!cc->is_stats_set() || cc->encoding_stats().empty()) return false;
    if (!cc->GetColumnIndexLocation() || !cc->GetOffsetIndexLocation()) return false;
    if (props.column_properties(path).bloom_filter_enabled() && !cc->bloom_filter_offset()) return false;
  }
  return true;
}

// Full: half the row or byte limit, or more. A full compatible row group is
// copied; others are decoded and packed with their neighbours into full ones.
bool Full(const parquet::RowGroupMetaData& rg, const WriterSettings& settings) {
  return rg.num_rows() * 2 >= settings.max_row_group_rows || rg.total_byte_size() * 2 >= settings.max_row_group_bytes;
}

// Turns inputs' row groups, in order, into steps: full compatible row groups
// are copied; the others are packed into full ones (a lone one is copied).
class Planner {
 public:
  Planner(const parquet::SchemaDescriptor& descr, const parquet::WriterProperties& props,
          const WriterSettings& settings)
      : descr_(descr), props_(props), settings_(settings) {}

  // Adds input i's row groups; steps that are complete go to `out`.
  void Add(size_t i, const parquet::FileMetaData& md, std::vector<Step>* out) {
    for (int r = 0; r < md.num_row_groups(); ++r) {
      auto rg = md.RowGroup(r);
      const bool compatible = Compatible(*rg, descr_, props_, settings_);
      if (compatible && Full(*rg, settings_)) {
        Flush(out);
        out->push_back(Step{true, {Piece{i, r}}});
        continue;
      }
      if (!pending_.pieces.empty() && (pending_rows_ + rg->num_rows() > settings_.max_row_group_rows ||
                                       pending_bytes_ + rg->total_byte_size() > settings_.max_row_group_bytes)) {
        Flush(out);
      }
      if (pending_.pieces.empty()) pending_compatible_ = compatible;
      pending_.pieces.push_back(Piece{i, r});
      pending_rows_ += rg->num_rows();
      pending_bytes_ += rg->total_byte_size();
    }
  }

  void Flush(std::vector<Step>* out) {
    if (pending_.pieces.empty()) return;
    // A small row group with nothing to pack it with (a file's last one,
    // between full ones) would come out as it went in: copy it.
    pending_.copy = pending_.pieces.size() == 1 && pending_compatible_;
    out->push_back(std::move(pending_));
    pending_ = Step{};
    pending_rows_ = pending_bytes_ = 0;
  }

 private:
  const parquet::SchemaDescriptor& descr_;
  const parquet::WriterProperties& props_;
  const WriterSettings& settings_;
  Step pending_;
  bool pending_compatible_ = false;  // its one piece could be copied
  int64_t pending_rows_ = 0, pending_bytes_ = 0;
};

// A file of which only bytes [begin, begin + bytes->size()) were fetched: a
// row group's column chunks, read in one request. Reads outside fail.
class FetchedRange final : public arrow::io::internal::RandomAccessFileConcurrencyWrapper<FetchedRange> {
 public:
  FetchedRange(std::shared_ptr<arrow::Buffer> bytes, int64_t begin, int64_t size)
      : bytes_(std::move(bytes)), begin_(begin), size_(size) {}
  bool closed() const override { return closed_; }

 protected:
  friend arrow::io::internal::RandomAccessFileConcurrencyWrapper<FetchedRange>;
  Status DoClose() {
    closed_ = true;
    return Status::OK();
  }
  Result<int64_t> DoTell() const { return pos_; }
  Status DoSeek(int64_t position) {
    pos_ = position;
    return Status::OK();
  }
  Result<int64_t> DoGetSize() { return size_; }
  Result<std::shared_ptr<arrow::Buffer>> DoReadAt(int64_t position, int64_t nbytes, bool allow_short_read = true) {
    (void)allow_short_read;
    if (position < begin_ || position + nbytes > begin_ + bytes_->size()) {
      return Status::IOError(fmt::format("read of [{}, {}) outside the fetched range [{}, {})", position,
                                         position + nbytes, begin_, begin_ + bytes_->size()));
    }
    return arrow::SliceBuffer(bytes_, position - begin_, nbytes);
  }
  Result<int64_t> DoReadAt(int64_t position, int64_t nbytes, bool allow_short_read, void* out) {
    ARROW_ASSIGN_OR_RAISE(auto b, DoReadAt(position, nbytes, allow_short_read));
    std::memcpy(out, b->data(), static_cast<size_t>(b->size()));
    return b->size();
  }
  Result<std::shared_ptr<arrow::Buffer>> DoRead(int64_t nbytes) {
    ARROW_ASSIGN_OR_RAISE(auto b, DoReadAt(pos_, nbytes));
    pos_ += b->size();
    return b;
  }
  Result<int64_t> DoRead(int64_t nbytes, void* out) {
    ARROW_ASSIGN_OR_RAISE(int64_t n, DoReadAt(pos_, nbytes, true, out));
    pos_ += n;
    return n;
  }

 private:
  std::shared_ptr<arrow::Buffer> bytes_;
  int64_t begin_, size_;
  int64_t pos_ = 0;
  bool closed_ = false;
};

// Runs on a worker: the step's row groups, encoded and ready to copy. The
// inputs are opened with their known sizes and footers (no metadata
// requests); a re-encoded step fetches all its row groups at once, one
// request each, several in flight, then decodes them from memory.
Result<std::vector<EncodedRowGroup>> Produce(blob::BlobStore* blobs, const Footers& footers,
                                             const std::vector<SegmentRecord>& inputs, const Step& step,
                                             const WriterSettings& settings,
                                             const std::shared_ptr<parquet::WriterProperties>& props,
                                             const std::shared_ptr<arrow::Schema>& schema) {
  auto named = [&](size_t input, const Status& st) {
    return Status::IOError(fmt::format("{}: {}", inputs[input].path, st.message()));
  };
  if (step.copy) {
    const Piece& p = step.pieces.front();
    auto file = blobs->OpenReaderSized(inputs[p.input].path, inputs[p.input].stored_bytes);
    if (!file.ok()) return named(p.input, file.status());
    auto reader = SegmentFileReader::Open(*file, inputs[p.input].path, false, footers[p.input], false);
    if (!reader.ok()) return named(p.input, reader.status());
    ARROW_ASSIGN_OR_RAISE(auto rg, (*reader)->ReadEncoded(p.row_group));
    std::vector<EncodedRowGroup> out;
    out.push_back(std::move(rg));
    return out;
  }
  struct Fetch {
    std::shared_ptr<arrow::io::RandomAccessFile> file;
    int64_t begin = 0;
    arrow::Future<std::shared_ptr<arrow::Buffer>> bytes;
  };
  std::vector<Fetch> fetches;
  for (const Piece& p : step.pieces) {
    auto file = blobs->OpenReaderSized(inputs[p.input].path, inputs[p.input].stored_bytes);
    if (!file.ok()) return named(p.input, file.status());
    auto [begin, end] = RowGroupByteRange(*footers[p.input]->RowGroup(p.row_group));
    fetches.push_back(Fetch{*file, begin, (*file)->ReadAsync(arrow::io::default_io_context(), begin, end - begin)});
  }
  std::vector<std::shared_ptr<arrow::Table>> tables;
  for (size_t k = 0; k < step.pieces.size(); ++k) {
    const Piece& p = step.pieces[k];
    auto bytes = fetches[k].bytes.result();
    if (!bytes.ok()) return named(p.input, bytes.status());
    auto window = std::make_shared<FetchedRange>(
        *bytes, fetches[k].begin, std::max(inputs[p.input].stored_bytes, fetches[k].begin + (*bytes)->size()));
    auto reader = SegmentFileReader::Open(window, inputs[p.input].path, false, footers[p.input], false);
    if (!reader.ok()) return named(p.input, reader.status());
    auto t = (*reader)->ReadRowGroup(p.row_group);
    if (!t.ok()) return named(p.input, t.status());
    // The table's schema exactly (a file's carries its own metadata).
    tables.push_back(arrow::Table::Make(schema, (*t)->columns(), (*t)->num_rows()));
  }
  fetches.clear();
  ARROW_ASSIGN_OR_RAISE(auto table, arrow::ConcatenateTables(tables));
  return EncodeForSegment(*table, settings, props);
}

}  // namespace

Result<SegmentRecord> MergeSegments(const MergeContext& ctx, const TableInfo& table,
                                    const std::vector<SegmentRecord>& inputs, TimePoint now, MergeStats* stats) {
  SegmentRecord out = OutputRecord(table, inputs, now, ctx.writer_tag);
  ARROW_ASSIGN_OR_RAISE(auto writer, SegmentFileWriter::Open(ctx.blobs, out.path, table.schema, *ctx.file_settings,
                                                             EncodeSegmentFileMetadata(out)));
  const auto props = writer->properties();
  ARROW_ASSIGN_OR_RAISE(auto descr, ParquetSchemaFor(*table.schema, *props));
  // Footers are filled in input order; a task reads only those of its step's
  // inputs, filled before the step was planned.
  auto footers = std::make_shared<Footers>(inputs.size());
  FooterReads reads(ctx, table, inputs);
  Planner planner(*descr, *props, *ctx.file_settings);
  std::vector<Step> steps;
  size_t planned = 0;  // inputs whose footers were taken

  // Inputs are adjacent and each is in block order: their row groups in
  // order are the block order. Workers read, decode and encode up to
  // `window` (workers + 1) steps ahead; this thread copies them into the
  // output in order.
  const size_t window = static_cast<size_t>(ctx.workers + 1);
  std::deque<std::future<Result<std::vector<EncodedRowGroup>>>> ahead;
  size_t next = 0;
  // Every task submitted is waited for before returning: they read `inputs`.
  auto drain = [&] {
    for (auto& f : ahead) f.wait();
  };
  // Submits steps until the window is full, planning more as footers arrive.
  auto fill = [&]() -> Status {
    while (ahead.size() < window) {
      if (next < steps.size()) {
        ahead.push_back(RunOn<Result<std::vector<EncodedRowGroup>>>(
            ctx.worker_pool,
            [blobs = ctx.blobs, footers, step = steps[next++], &inputs, settings = *ctx.file_settings, props,
             schema = table.schema]() { return Produce(blobs, *footers, inputs, step, settings, props, schema); }));
      } else if (planned < inputs.size()) {
        ARROW_ASSIGN_OR_RAISE((*footers)[planned], reads.Take(planned));
        planner.Add(planned, *(*footers)[planned], &steps);
        if (++planned == inputs.size()) planner.Flush(&steps);
      } else {
        break;
      }
    }
    return Status::OK();
  };
  if (Status st = fill(); !st.ok()) {
    drain();
    return st;
  }
  int64_t rows = 0;
  size_t done = 0;  // steps taken from `ahead`, in order
  while (!ahead.empty()) {
    if (*ctx.stopping) {
      drain();
      return Status::Cancelled("server stopping");
    }
    auto ready = ahead.front().get();
    ahead.pop_front();
    if (!ready.ok()) {
      drain();
      return ready.status();
    }
    const bool copied = steps[done++].copy;
    if (Status st = fill(); !st.ok()) {
      drain();
      return st;
    }
    if (stats) (copied ? stats->row_groups_copied : stats->row_groups_reencoded) += static_cast<int64_t>(ready->size());
    for (const auto& rg : *ready) {
      Status st = writer->Append(rg);
      if (!st.ok()) {
        drain();
        return st;
      }
      rows += rg.rows();
    }
  }
  ARROW_ASSIGN_OR_RAISE(FileFacts facts, writer->Finish());
  out.rows = facts.rows;
  out.bytes = facts.bytes;
  out.stored_bytes = facts.stored_bytes;
  int64_t expected = 0;
  for (const auto& s : inputs) expected += s.rows;
  if (rows != out.rows || rows != expected) {
    (void)ctx.blobs->Delete(out.path);
    return Status::IOError(
        fmt::format("merged {} rows from {} in the inputs but the output has {}", rows, expected, out.rows));
  }
  return out;
}

}  // namespace sediment::table
