// The merge's plan: its inputs' row groups, in order, turned into steps, one
// per output row group — copied as it is, made of data pages concatenated, or
// decoded and encoded again. Private to src/table (merge*.cc).
//
// Thread-safety: a Planner is used by one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "table/parquet_io.h"

namespace parquet {
class FileMetaData;
class SchemaDescriptor;
class WriterProperties;
}  // namespace parquet

namespace sediment::table::merge_internal {

// One row group of one input.
struct Piece {
  size_t input = 0;
  int row_group = 0;
};

// One step of the output, in order: a row group copied as it is, row groups
// whose data pages are concatenated into one, or row groups decoded together
// and encoded again.
enum class StepKind { kCopy, kPages, kEncode };
struct Step {
  StepKind kind = StepKind::kEncode;
  std::vector<Piece> pieces;
};

// Turns inputs' row groups, in order, into steps: full compatible row groups
// are copied; the others are packed into full ones, by concatenating their
// pages where they allow it and the output is not final, else by encoding
// (a lone one is copied).
class Planner {
 public:
  Planner(const parquet::SchemaDescriptor& descr, const parquet::WriterProperties& props,
          const WriterSettings& settings, FileLayout layout)
      : descr_(descr), props_(props), settings_(settings), layout_(layout) {}

  // Adds input i's row groups; steps that are complete go to `out`.
  void Add(size_t i, const parquet::FileMetaData& md, std::vector<Step>* out);

  // The first input a step not yet handed out may read, if any.
  std::optional<size_t> PendingFirstInput() const {
    if (pending_.pieces.empty()) return std::nullopt;
    return pending_.pieces.front().input;
  }

  void Flush(std::vector<Step>* out);

 private:
  const parquet::SchemaDescriptor& descr_;
  const parquet::WriterProperties& props_;
  const WriterSettings& settings_;
  const FileLayout layout_;
  Step pending_;
  bool pending_compatible_ = false;  // its one piece could be copied
  int64_t pending_rows_ = 0, pending_bytes_ = 0;
};

}  // namespace sediment::table::merge_internal
