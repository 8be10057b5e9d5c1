#include <arrow/compute/cast.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <arrow/type_traits.h>
#include <fmt/format.h>

#include <map>
#include <regex>
#include <set>

#include "query/duck_internal.h"
#include "query/views_internal.h"
#include "table/stored_types.h"
#include "table/table_service.h"

namespace sediment::query {
namespace {

// The DuckDB type DuckDB reads for a stored Arrow type (for the view of a
// table with no file yet, which must still have the table's columns).
Result<std::string> DuckTypeOf(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::BOOL:
      return std::string("BOOLEAN");
    case arrow::Type::INT8:
      return std::string("TINYINT");
    case arrow::Type::INT16:
      return std::string("SMALLINT");
    case arrow::Type::INT32:
      return std::string("INTEGER");
    case arrow::Type::INT64:
      return std::string("BIGINT");
    case arrow::Type::UINT8:
      return std::string("UTINYINT");
    case arrow::Type::UINT16:
      return std::string("USMALLINT");
    case arrow::Type::UINT32:
      return std::string("UINTEGER");
    case arrow::Type::UINT64:
      return std::string("UBIGINT");
    case arrow::Type::FLOAT:
      return std::string("FLOAT");
    case arrow::Type::DOUBLE:
      return std::string("DOUBLE");
    case arrow::Type::STRING:
    case arrow::Type::LARGE_STRING:
      return std::string("VARCHAR");
    case arrow::Type::BINARY:
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::FIXED_SIZE_BINARY:
      return std::string("BLOB");
    case arrow::Type::DATE32:
      return std::string("DATE");
    case arrow::Type::TIMESTAMP: {
      const auto& ts = static_cast<const arrow::TimestampType&>(type);
      return std::string(ts.timezone().empty() ? "TIMESTAMP" : "TIMESTAMPTZ");
    }
    case arrow::Type::DECIMAL128:
    case arrow::Type::DECIMAL256: {
      const auto& d = static_cast<const arrow::DecimalType&>(type);
      if (d.precision() > 38) return std::string("DOUBLE");
      return fmt::format("DECIMAL({},{})", d.precision(), d.scale());
    }
    case arrow::Type::LIST: {
      const auto& l = static_cast<const arrow::ListType&>(type);
      ARROW_ASSIGN_OR_RAISE(auto item, DuckTypeOf(*l.value_type()));
      return item + "[]";
    }
    default:
      return Status::NotImplemented("no DuckDB type for ", type.ToString());
  }
}

// A view with the table's stored columns and no rows.
Result<std::string> EmptySelect(const arrow::Schema& stored) {
  std::string columns;
  for (const auto& f : stored.fields()) {
    ARROW_ASSIGN_OR_RAISE(auto type, DuckTypeOf(*f->type()));
    if (!columns.empty()) columns += ", ";
    columns += fmt::format("CAST(NULL AS {}) AS {}", type, duck::Identifier(f->name()));
  }
  return fmt::format("SELECT {} WHERE false", columns);
}

// The view's columns: binary columns (addresses, hashes) through an
// expression DuckDB does not push into the Parquet reader: DuckDB 1.5.6
// answers an equality filter on a BLOB column that has a bloom filter with no
// rows (its probe disagrees with the filters Parquet's writers, and DuckDB
// itself, write: duckdb/duckdb#24994), and so does a join's dynamic filter.
// The rest as stored, so filters on them (block ranges above all) prune row
// groups and pages; unsigned integers get the table's types back on the way
// out (TableTypes), not in the view: a CAST there would stop that pruning.
std::string ViewColumns(const arrow::Schema& stored) {
  std::string columns;
  for (const auto& f : stored.fields()) {
    std::string name = duck::Identifier(f->name());
    if (!columns.empty()) columns += ", ";
    const auto id = f->type()->id();
    if (id == arrow::Type::FIXED_SIZE_BINARY || id == arrow::Type::BINARY || id == arrow::Type::LARGE_BINARY) {
      columns += fmt::format("{0} || ''::BLOB AS {0}", name);
    } else {
      columns += name;
    }
  }
  return columns;
}

std::string PathList(const std::vector<std::string>& files) {
  std::string out = "[";
  for (size_t i = 0; i < files.size(); ++i) out += (i ? ", " : "") + duck::Literal(files[i]);
  return out + "]";
}

}  // namespace

Result<TableView> OpenView(table::TableService* tables, const table::TableId& id, std::optional<BlockRange> range) {
  ARROW_ASSIGN_OR_RAISE(auto info, tables->GetTable(id));
  TableView view;
  view.id = id;
  if (range) {
    ARROW_ASSIGN_OR_RAISE(view.snapshot, tables->OpenSnapshot(id, range->from, range->to));
  } else {
    ARROW_ASSIGN_OR_RAISE(view.snapshot, tables->OpenSnapshot(id));
  }
  for (const auto& s : view.snapshot->segments()) {
    auto file = tables->blobs().LocalFile(s.path);
    if (!file) {
      return Status::NotImplemented(
          fmt::format("table {} is on {}: the query server reads tables on local storage only (docs/query.md)",
                      id.ToString(), tables->blobs().Describe()));
    }
    view.files.push_back(std::move(*file));
  }
  const auto& schema = view.snapshot->schema();
  const auto stored = table::StoredSchema(schema);
  for (int i = 0; i < schema->num_fields() && i < stored->num_fields(); ++i) {
    const auto& f = schema->field(i);
    if (arrow::is_unsigned_integer(f->type()->id()) && !stored->field(i)->type()->Equals(f->type())) {
      view.unsigned_columns.push_back({f->name(), f->type(), stored->field(i)->type()});
    }
  }
  std::string select;
  if (view.files.empty()) {
    ARROW_ASSIGN_OR_RAISE(select, EmptySelect(*stored));
  } else {
    // Files written before a schema change lack its columns: read by name, the missing as nulls.
    select = fmt::format("SELECT {} FROM read_parquet({}{})", ViewColumns(*stored), PathList(view.files),
                         info.version() > 1 ? ", union_by_name = true" : "");
    if (range) select += fmt::format(" WHERE block_num BETWEEN {} AND {}", range->from, range->to);
  }
  view.create_sql = fmt::format("CREATE SCHEMA IF NOT EXISTS {0}; CREATE VIEW {0}.{1} AS {2};",
                                duck::Identifier(id.dataset), duck::Identifier(id.table), select);
  return view;
}

std::shared_ptr<arrow::Schema> TableTypes(const std::shared_ptr<arrow::Schema>& result,
                                          const std::vector<TableView>& views) {
  std::map<std::string, const UnsignedColumn*> columns;
  std::set<std::string> ambiguous;
  for (const auto& v : views) {
    for (const auto& c : v.unsigned_columns) {
      auto [it, added] = columns.emplace(c.name, &c);
      if (!added && !it->second->type->Equals(c.type)) ambiguous.insert(c.name);
    }
  }
  auto fields = result->fields();
  bool changed = false;
  for (auto& f : fields) {
    auto it = columns.find(f->name());
    if (it == columns.end() || ambiguous.count(f->name())) continue;
    // Only a column still of its stored type: an expression's is not.
    if (!f->type()->Equals(it->second->stored)) continue;
    f = f->WithType(it->second->type);
    changed = true;
  }
  return changed ? arrow::schema(fields, result->metadata()) : result;
}

Result<std::shared_ptr<arrow::RecordBatch>> Retyped(const std::shared_ptr<arrow::RecordBatch>& batch,
                                                    const std::shared_ptr<arrow::Schema>& schema) {
  if (batch->schema()->Equals(*schema, /*check_metadata=*/false)) return batch;
  std::vector<std::shared_ptr<arrow::Array>> columns;
  for (int i = 0; i < batch->num_columns(); ++i) {
    auto column = batch->column(i);
    const auto& want = schema->field(i)->type();
    if (!column->type()->Equals(want)) {
      if (arrow::bit_width(column->type_id()) == arrow::bit_width(want->id())) {
        ARROW_ASSIGN_OR_RAISE(column, column->View(want));  // the same bits: stored as signed
      } else {
        ARROW_ASSIGN_OR_RAISE(auto datum, arrow::compute::Cast(*column, want));
        column = datum;
      }
    }
    columns.push_back(std::move(column));
  }
  return arrow::RecordBatch::Make(schema, batch->num_rows(), std::move(columns));
}

std::string LockDownSql(const std::vector<TableView>& views) {
  std::vector<std::string> files;
  for (const auto& v : views) files.insert(files.end(), v.files.begin(), v.files.end());
  std::string allowed = files.empty() ? "[]" : PathList(files);
  return fmt::format("SET allowed_paths = {}; SET enable_external_access = false; SET lock_configuration = true;",
                     allowed);
}

Status CheckPlanIncremental(const std::vector<std::vector<std::string>>& plan) {
  // Operators of DuckDB's physical plan that need every row before they answer.
  // Named as Amp names them (its incrementalizer's operations), with what they are in SQL.
  static const std::vector<std::pair<std::regex, const char*>> kBlocking = {
      {std::regex(R"(\b(HASH_GROUP_BY|PERFECT_HASH_GROUP_BY)\b)"), "Aggregate (GROUP BY or DISTINCT)"},
      {std::regex(R"(\b(UNGROUPED_AGGREGATE|SIMPLE_AGGREGATE)\b)"), "Aggregate"},
      {std::regex(R"(\b(WINDOW|STREAMING_WINDOW)\b)"), "Window (a window function)"},
      {std::regex(R"(\b(ORDER_BY|TOP_N)\b)"), "Sort (ORDER BY)"},
      {std::regex(R"(\b(LIMIT|STREAMING_LIMIT|LIMIT_PERCENT)\b)"), "Limit"},
      {std::regex(R"(\bDISTINCT\b)"), "Distinct"},
      {std::regex(R"(Join Type: LEFT\b)"), "Join(Left)"},
      {std::regex(R"(Join Type: RIGHT\b)"), "Join(Right)"},
      {std::regex(R"(Join Type: (FULL|OUTER)\b)"), "Join(Full)"},
      {std::regex(R"(Join Type: (ANTI|RIGHT_ANTI)\b)"), "Join(Anti) (NOT EXISTS, NOT IN)"},
      {std::regex(R"(Join Type: (MARK|RIGHT_SEMI|SEMI)\b)"), "Join(Mark) (IN or EXISTS over a subquery)"},
      {std::regex(R"(\bRECURSIVE_CTE\b)"), "RecursiveQuery"},
  };
  for (const auto& row : plan) {
    for (const auto& text : row) {
      for (const auto& [re, what] : kBlocking) {
        if (std::regex_search(text, re)) {
          return InvalidArgument(fmt::format(
              "non-incremental queries are not supported for streaming, query contains non-incremental "
              "operation: {}; it needs rows of every block before it answers, and a stream never ends (run it "
              "as a batch query, without SETTINGS stream = true)",
              what));
        }
      }
    }
  }
  return Status::OK();
}

}  // namespace sediment::query
