#include "table/merge.h"

#include <arrow/api.h>
#include <fmt/format.h>

#include <algorithm>

#include "table/run_on_internal.h"

namespace sediment::table {
namespace {

// Opens every input's footer, metadata_concurrency at a time, and checks it
// against the registry. The first failure, by input order, names its file.
Result<std::vector<std::unique_ptr<SegmentFileReader>>> OpenInputs(const MergeContext& ctx, const TableInfo& table,
                                                                   const std::vector<SegmentRecord>& inputs) {
  std::vector<std::future<Result<std::unique_ptr<SegmentFileReader>>>> opening;
  for (const auto& s : inputs) {
    opening.push_back(RunOn<Result<std::unique_ptr<SegmentFileReader>>>(
        ctx.footer_pool, [blobs = ctx.blobs, path = s.path]() { return SegmentFileReader::Open(blobs, path); }));
  }
  std::vector<std::unique_ptr<SegmentFileReader>> readers;
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
      readers.push_back(std::move(*r));
    }
  }
  ARROW_RETURN_NOT_OK(first_error);
  return readers;
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

}  // namespace

Result<SegmentRecord> MergeSegments(const MergeContext& ctx, const TableInfo& table,
                                    const std::vector<SegmentRecord>& inputs, TimePoint now) {
  ARROW_ASSIGN_OR_RAISE(auto readers, OpenInputs(ctx, table, inputs));
  SegmentRecord out = OutputRecord(table, inputs, now, ctx.writer_tag);
  ARROW_ASSIGN_OR_RAISE(auto writer, SegmentFileWriter::Open(ctx.blobs, out.path, table.schema, *ctx.file_settings,
                                                             EncodeSegmentFileMetadata(out)));
  // Inputs are adjacent and each is in block order: their concatenation is
  // the block order. One row group in memory per merge.
  int64_t rows = 0;
  for (size_t i = 0; i < readers.size(); ++i) {
    for (int rg = 0; rg < readers[i]->num_row_groups(); ++rg) {
      if (*ctx.stopping) return Status::Cancelled("server stopping");
      auto t = readers[i]->ReadRowGroup(rg);
      if (!t.ok()) return Status::IOError(fmt::format("{}: {}", inputs[i].path, t.status().message()));
      arrow::TableBatchReader batches(**t);
      std::shared_ptr<arrow::RecordBatch> batch;
      while (true) {
        ARROW_RETURN_NOT_OK(batches.ReadNext(&batch));
        if (!batch) break;
        rows += batch->num_rows();
        ARROW_RETURN_NOT_OK(writer->Write(batch));
      }
    }
  }
  ARROW_ASSIGN_OR_RAISE(FileFacts facts, writer->Finish());
  out.rows = facts.rows;
  out.bytes = facts.bytes;
  out.stored_bytes = facts.stored_bytes;
  if (rows != out.rows) {
    (void)ctx.blobs->Delete(out.path);
    return Status::IOError(fmt::format("merged {} rows but the output has {}", rows, out.rows));
  }
  return out;
}

}  // namespace sediment::table
