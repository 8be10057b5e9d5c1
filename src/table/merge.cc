#include "table/merge.h"

#include <arrow/api.h>
#include <fmt/format.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>
#include <parquet/schema.h>

#include <algorithm>
#include <deque>

#include "table/parquet_assembler.h"
#include "table/run_on_internal.h"

namespace sediment::table {
namespace {

// Every input's footer: read once, checked, kept for planning and for opening
// the file again without reading it twice. No file stays open between steps.
using Footers = std::vector<std::shared_ptr<parquet::FileMetaData>>;

// Reads every input's footer, metadata_concurrency at a time, and checks it
// against the registry. The first failure, by input order, names its file.
Result<std::shared_ptr<Footers>> ReadFooters(const MergeContext& ctx, const TableInfo& table,
                                             const std::vector<SegmentRecord>& inputs) {
  std::vector<std::future<Result<std::unique_ptr<SegmentFileReader>>>> opening;
  for (const auto& s : inputs) {
    opening.push_back(
        RunOn<Result<std::unique_ptr<SegmentFileReader>>>(ctx.footer_pool, [blobs = ctx.blobs, path = s.path]() {
          return SegmentFileReader::Open(blobs, path, /*decode_threads=*/false);
        }));
  }
  auto footers = std::make_shared<Footers>();
  Status first_error;
  auto fail = [&](Status st) {
    if (first_error.ok()) first_error = std::move(st);
  };
  for (size_t i = 0; i < opening.size(); ++i) {
    auto r = opening[i].get();
    if (!r.ok()) {
      fail(Status::IOError(fmt::format("{}: {}", inputs[i].path, r.status().message())));
    } else if (!SameSchema(*(*r)->schema(), *table.schema)) {
      fail(Status::IOError(
          fmt::format("{}: schema {} differs from the table's", inputs[i].path, (*r)->schema()->ToString())));
    } else if ((*r)->facts().rows != inputs[i].rows) {
      fail(Status::IOError(fmt::format("{}: {} rows in the file, {} in the registry", inputs[i].path,
                                       (*r)->facts().rows, inputs[i].rows)));
    } else {
      footers->push_back((*r)->parquet_metadata());
    }
  }
  ARROW_RETURN_NOT_OK(first_error);
  return footers;
}

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

std::vector<Step> Plan(const Footers& footers, const parquet::SchemaDescriptor& descr,
                       const parquet::WriterProperties& props, const WriterSettings& settings) {
  std::vector<Step> steps;
  Step pending;
  bool pending_compatible = false;  // its one piece could be copied
  int64_t pending_rows = 0, pending_bytes = 0;
  auto flush = [&] {
    if (pending.pieces.empty()) return;
    // A small row group with nothing to pack it with (a file's last one,
    // between full ones) would come out as it went in: copy it.
    pending.copy = pending.pieces.size() == 1 && pending_compatible;
    steps.push_back(std::move(pending));
    pending = Step{};
    pending_rows = pending_bytes = 0;
  };
  for (size_t i = 0; i < footers.size(); ++i) {
    const auto& md = *footers[i];
    for (int r = 0; r < md.num_row_groups(); ++r) {
      auto rg = md.RowGroup(r);
      const bool compatible = Compatible(*rg, descr, props, settings);
      if (compatible && Full(*rg, settings)) {
        flush();
        steps.push_back(Step{true, {Piece{i, r}}});
        continue;
      }
      if (!pending.pieces.empty() && (pending_rows + rg->num_rows() > settings.max_row_group_rows ||
                                      pending_bytes + rg->total_byte_size() > settings.max_row_group_bytes)) {
        flush();
      }
      if (pending.pieces.empty()) pending_compatible = compatible;
      pending.pieces.push_back(Piece{i, r});
      pending_rows += rg->num_rows();
      pending_bytes += rg->total_byte_size();
    }
  }
  flush();
  return steps;
}

// Runs on a worker: the step's row groups, encoded and ready to copy. Opens
// the inputs it reads (their footers known) and closes them when done.
Result<std::vector<EncodedRowGroup>> Produce(blob::BlobStore* blobs, const Footers& footers,
                                             const std::vector<SegmentRecord>& inputs, const Step& step,
                                             const WriterSettings& settings,
                                             const std::shared_ptr<parquet::WriterProperties>& props,
                                             const std::shared_ptr<arrow::Schema>& schema) {
  std::unique_ptr<SegmentFileReader> reader;
  size_t open_input = SIZE_MAX;
  auto open = [&](size_t input) -> Status {
    if (open_input == input) return Status::OK();
    auto r = SegmentFileReader::Open(blobs, inputs[input].path, /*decode_threads=*/false, footers[input]);
    if (!r.ok()) return Status::IOError(fmt::format("{}: {}", inputs[input].path, r.status().message()));
    reader = std::move(*r);
    open_input = input;
    return Status::OK();
  };
  if (step.copy) {
    const Piece& p = step.pieces.front();
    ARROW_RETURN_NOT_OK(open(p.input));
    ARROW_ASSIGN_OR_RAISE(auto rg, reader->ReadEncoded(p.row_group));
    std::vector<EncodedRowGroup> out;
    out.push_back(std::move(rg));
    return out;
  }
  std::vector<std::shared_ptr<arrow::Table>> tables;
  for (const Piece& p : step.pieces) {
    ARROW_RETURN_NOT_OK(open(p.input));
    auto t = reader->ReadRowGroup(p.row_group);
    if (!t.ok()) return Status::IOError(fmt::format("{}: {}", inputs[p.input].path, t.status().message()));
    // The table's schema exactly (a file's carries its own metadata).
    tables.push_back(arrow::Table::Make(schema, (*t)->columns(), (*t)->num_rows()));
  }
  reader.reset();
  ARROW_ASSIGN_OR_RAISE(auto table, arrow::ConcatenateTables(tables));
  return EncodeForSegment(*table, settings, props);
}

}  // namespace

Result<SegmentRecord> MergeSegments(const MergeContext& ctx, const TableInfo& table,
                                    const std::vector<SegmentRecord>& inputs, TimePoint now, MergeStats* stats) {
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<Footers> footers, ReadFooters(ctx, table, inputs));
  SegmentRecord out = OutputRecord(table, inputs, now, ctx.writer_tag);
  ARROW_ASSIGN_OR_RAISE(auto writer, SegmentFileWriter::Open(ctx.blobs, out.path, table.schema, *ctx.file_settings,
                                                             EncodeSegmentFileMetadata(out)));
  const auto props = writer->properties();
  ARROW_ASSIGN_OR_RAISE(auto descr, ParquetSchemaFor(*table.schema, *props));
  auto steps = std::make_shared<std::vector<Step>>(Plan(*footers, *descr, *props, *ctx.file_settings));

  // Inputs are adjacent and each is in block order: their row groups in
  // order are the block order. Workers read, decode and encode up to
  // `window` (workers + 1) steps ahead; this thread copies them into the output in order.
  const size_t window = static_cast<size_t>(ctx.workers + 1);
  std::deque<std::future<Result<std::vector<EncodedRowGroup>>>> ahead;
  size_t next = 0;
  auto submit = [&] {
    size_t k = next++;
    ahead.push_back(RunOn<Result<std::vector<EncodedRowGroup>>>(
        ctx.worker_pool,
        [blobs = ctx.blobs, footers, steps, k, &inputs, settings = *ctx.file_settings, props, schema = table.schema]() {
          return Produce(blobs, *footers, inputs, (*steps)[k], settings, props, schema);
        }));
  };
  // Every task submitted is waited for before returning: they read `inputs`.
  auto drain = [&] {
    for (auto& f : ahead) f.wait();
  };
  while (next < steps->size() && ahead.size() < window) submit();
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
    const bool copied = (*steps)[done++].copy;
    if (next < steps->size()) submit();
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
