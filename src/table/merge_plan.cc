// The merge's plan (merge_plan_internal.h).
#include <parquet/metadata.h>
#include <parquet/properties.h>
#include <parquet/schema.h>

#include "table/merge_plan_internal.h"
#include "table/parquet_assembler.h"

namespace sediment::table::merge_internal {
namespace {

// Laid out and compressed as the output is.
bool SameLayout(const parquet::RowGroupMetaData& rg, const parquet::SchemaDescriptor& descr,
                const parquet::WriterProperties& props) {
  if (!rg.schema()->Equals(descr)) return false;
  for (int c = 0; c < rg.num_columns(); ++c) {
    if (rg.ColumnChunk(c)->compression() != props.compression(descr.Column(c)->path())) return false;
  }
  return true;
}

// Whether a row group's encoded bytes can go into the output as they are:
// laid out and compressed as the output is, and carrying what the output
// must have (statistics, encodings, page index, the bloom filters asked for,
// and dictionaries if the output is final).
bool Compatible(const parquet::RowGroupMetaData& rg, const parquet::SchemaDescriptor& descr,
                const parquet::WriterProperties& props, const WriterSettings& settings, FileLayout layout) {
  if (rg.num_rows() > settings.max_row_group_rows || rg.total_byte_size() > settings.max_row_group_bytes) return false;
  if (!SameLayout(rg, descr, props)) return false;
  if (layout == FileLayout::kFinal && PagesCopyable(rg)) return false;
  for (int c = 0; c < rg.num_columns(); ++c) {
    auto cc = rg.ColumnChunk(c);
    auto path = descr.Column(c)->path();
    if (!cc->is_stats_set() || cc->encoding_stats().empty()) return false;
    if (!cc->GetColumnIndexLocation() || !cc->GetOffsetIndexLocation()) return false;
    if (props.column_properties(path).bloom_filter_enabled() && !cc->bloom_filter_offset()) return false;
  }
  return true;
}

// Full: half the row or byte limit, or more. A full compatible row group is
// copied; others are packed with their neighbours into full ones.
bool Full(const parquet::RowGroupMetaData& rg, const WriterSettings& settings) {
  return rg.num_rows() * 2 >= settings.max_row_group_rows || rg.total_byte_size() * 2 >= settings.max_row_group_bytes;
}

}  // namespace

void Planner::Add(size_t i, const parquet::FileMetaData& md, std::vector<Step>* out) {
  for (int r = 0; r < md.num_row_groups(); ++r) {
    auto rg = md.RowGroup(r);
    const bool compatible = Compatible(*rg, descr_, props_, settings_, layout_);
    if (compatible && Full(*rg, settings_)) {
      Flush(out);
      out->push_back(Step{StepKind::kCopy, {Piece{i, r}}});
      continue;
    }
    const StepKind kind = layout_ == FileLayout::kPages && SameLayout(*rg, descr_, props_) && PagesCopyable(*rg)
                              ? StepKind::kPages
                              : StepKind::kEncode;
    if (!pending_.pieces.empty() &&
        (kind != pending_.kind || pending_rows_ + rg->num_rows() > settings_.max_row_group_rows ||
         pending_bytes_ + rg->total_byte_size() > settings_.max_row_group_bytes)) {
      Flush(out);
    }
    if (pending_.pieces.empty()) {
      pending_compatible_ = compatible;
      pending_.kind = kind;
    }
    pending_.pieces.push_back(Piece{i, r});
    pending_rows_ += rg->num_rows();
    pending_bytes_ += rg->total_byte_size();
  }
}

void Planner::Flush(std::vector<Step>* out) {
  if (pending_.pieces.empty()) return;
  // A small row group with nothing to pack it with (a file's last one,
  // between full ones) would come out as it went in: copy it.
  if (pending_.pieces.size() == 1 && pending_compatible_) pending_.kind = StepKind::kCopy;
  out->push_back(std::move(pending_));
  pending_ = Step{};
  pending_rows_ = pending_bytes_ = 0;
}

}  // namespace sediment::table::merge_internal
