// How a query's database sees the tables: each table it names is a view over
// its pinned snapshot's Parquet files, and the database may read those files
// and nothing else. Also the check that a plan can run incrementally.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "query/engine.h"
#include "table/names.h"

namespace arrow {
class DataType;
class RecordBatch;
class Schema;
}  // namespace arrow

namespace sediment::table {
class ReadSnapshot;
class TableService;
}  // namespace sediment::table

namespace sediment::query {

// An unsigned column of a table and the signed type its files store it as.
struct UnsignedColumn {
  std::string name;
  std::shared_ptr<arrow::DataType> type, stored;
};

struct TableView {
  table::TableId id;
  std::shared_ptr<table::ReadSnapshot> snapshot;  // holds the files against GC
  std::vector<std::string> files;                 // local paths of the snapshot's files
  std::string create_sql;                         // CREATE SCHEMA/VIEW statements
  // The table's unsigned columns, stored signed and read as stored (a CAST in
  // the view would keep DuckDB from pruning by block_num).
  std::vector<UnsignedColumn> unsigned_columns;
};

// A result's columns named as one of `views`' unsigned columns, of its stored
// type, with the table's type (names the views disagree on are left alone).
std::shared_ptr<arrow::Schema> TableTypes(const std::shared_ptr<arrow::Schema>& result,
                                          const std::vector<TableView>& views);
// `batch` as `schema` says (TableTypes): the same bits for 64-bit integers, a checked cast for the widened.
Result<std::shared_ptr<arrow::RecordBatch>> Retyped(const std::shared_ptr<arrow::RecordBatch>& batch,
                                                    const std::shared_ptr<arrow::Schema>& schema);

// Pins `id`'s snapshot (only the files holding blocks in `range`, the view
// restricted to those blocks) and writes its view.
Result<TableView> OpenView(table::TableService* tables, const table::TableId& id, std::optional<BlockRange> range);

// The statements that let a database read exactly the views' files, then lock its configuration.
std::string LockDownSql(const std::vector<TableView>& views);

// InvalidArgument naming the first operator in EXPLAIN's `plan` that cannot run over one block range at a time.
Status CheckPlanIncremental(const std::vector<std::vector<std::string>>& plan);

}  // namespace sediment::query
