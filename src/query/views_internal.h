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

namespace sediment::table {
class ReadSnapshot;
class TableService;
}  // namespace sediment::table

namespace sediment::query {

struct TableView {
  table::TableId id;
  std::shared_ptr<table::ReadSnapshot> snapshot;  // holds the files against GC
  std::vector<std::string> files;                 // local paths of the snapshot's files
  std::string create_sql;                         // CREATE SCHEMA/VIEW statements
};

// Pins `id`'s snapshot (only the files holding blocks in `range`, the view
// restricted to those blocks) and writes its view.
Result<TableView> OpenView(table::TableService* tables, const table::TableId& id, std::optional<BlockRange> range);

// The statements that let a database read exactly the views' files, then lock its configuration.
std::string LockDownSql(const std::vector<TableView>& views);

// InvalidArgument naming the first operator in EXPLAIN's `plan` that cannot run over one block range at a time.
Status CheckPlanIncremental(const std::vector<std::vector<std::string>>& plan);

}  // namespace sediment::query
