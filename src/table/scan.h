// Scan: rows of one table snapshot, in block order, a row group at a time.
//
// It skips files whose block range misses [from_block, to_block], then row
// groups by the block_num statistics in their footers, slices the rest to the
// range, applies an optional `column op value` filter, and projects columns.
// Memory: one row group (of the projected columns) at a time. The snapshot's
// files are held against GC until the Scan is destroyed, so a scan running
// while compaction swaps files and GC deletes returns exactly its snapshot.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "table/names.h"

namespace arrow {
class RecordBatch;
class Schema;
class Scalar;
}  // namespace arrow

namespace sediment::table {

class TableService;
class ReadSnapshot;
class SegmentFileReader;

struct Filter {
  std::string column;
  std::string op;     // = != < <= > >=
  std::string value;  // text; binary values as 0x-hex
};
// "value >= 100", "address = 0xabc…", "name != 'x'".
Result<Filter> ParseFilter(const std::string& text);

struct ScanRequest {
  std::optional<uint64_t> from_block;
  std::optional<uint64_t> to_block;
  std::vector<std::string> columns;  // empty: all
  std::optional<Filter> filter;
  std::optional<int64_t> limit;
};

struct ScanStats {
  int64_t files = 0;
  int64_t files_skipped = 0;
  int64_t row_groups = 0;
  int64_t row_groups_skipped = 0;
  int64_t rows = 0;
};

class Scan {
 public:
  // Validates the request against the table (InvalidArgument naming what is
  // wrong) and takes the snapshot.
  static Result<std::unique_ptr<Scan>> Open(TableService* tables, const TableId& id, const ScanRequest& request);
  ~Scan();

  const std::shared_ptr<arrow::Schema>& schema() const { return output_schema_; }
  // The next non-empty batch, or nullptr at the end.
  Result<std::shared_ptr<arrow::RecordBatch>> Next();
  const ScanStats& stats() const { return stats_; }

 private:
  Scan() = default;
  Result<std::shared_ptr<arrow::RecordBatch>> Process(std::shared_ptr<arrow::RecordBatch> batch);

  TableService* tables_ = nullptr;
  ScanRequest request_;
  std::shared_ptr<ReadSnapshot> snapshot_;
  std::shared_ptr<arrow::Schema> output_schema_;
  std::vector<int> read_columns_;    // file columns to read (output + block_num + filter)
  std::vector<int> output_columns_;  // indices into the read batch
  int block_column_ = -1;            // in the read batch
  int filter_column_ = -1;           // in the read batch
  std::shared_ptr<arrow::Scalar> filter_value_;
  std::string filter_function_;
  size_t file_ = 0;
  int row_group_ = 0;
  std::unique_ptr<SegmentFileReader> reader_;
  int64_t emitted_ = 0;
  ScanStats stats_;
};

}  // namespace sediment::table
