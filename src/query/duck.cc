#include <arrow/c/abi.h>
#include <arrow/c/bridge.h>
#include <arrow/record_batch.h>
#include <fmt/format.h>

#include "query/duck_internal.h"

namespace sediment::query::duck {
namespace {

// DuckDB's message for a failed error-data call, consumed.
Status FromErrorData(duckdb_error_data error, std::string_view what) {
  if (error == nullptr) return Status::OK();
  if (!duckdb_error_data_has_error(error)) {
    duckdb_destroy_error_data(&error);
    return Status::OK();
  }
  std::string message = duckdb_error_data_message(error);
  duckdb_destroy_error_data(&error);
  return Status::IOError(fmt::format("{}: {}", what, message));
}

// A user's SQL that DuckDB refuses (syntax, binder, a type, a limit) is the
// caller's error; the message is DuckDB's, which names the place.
Status SqlError(const char* message) { return InvalidArgument(message ? message : "the query failed"); }

}  // namespace

Result<std::unique_ptr<Database>> Database::Open(const std::vector<std::pair<std::string, std::string>>& settings) {
  duckdb_config config = nullptr;
  if (duckdb_create_config(&config) != DuckDBSuccess) return Status::OutOfMemory("DuckDB: cannot create a config");
  for (const auto& [name, value] : settings) {
    if (duckdb_set_config(config, name.c_str(), value.c_str()) != DuckDBSuccess) {
      duckdb_destroy_config(&config);
      return InvalidArgument(fmt::format("DuckDB refuses setting {} = {}", name, value));
    }
  }
  auto db = std::unique_ptr<Database>(new Database());
  char* error = nullptr;
  duckdb_state state = duckdb_open_ext(nullptr, &db->db_, config, &error);
  duckdb_destroy_config(&config);
  if (state != DuckDBSuccess) {
    std::string message = error ? error : "unknown error";
    duckdb_free(error);
    db->db_ = nullptr;
    return Status::IOError("DuckDB: cannot open a database: ", message);
  }
  return db;
}

Database::~Database() {
  if (db_ != nullptr) duckdb_close(&db_);
}

Result<std::unique_ptr<Connection>> Connection::Open(const Database& db) {
  auto conn = std::unique_ptr<Connection>(new Connection());
  if (duckdb_connect(db.get(), &conn->c_) != DuckDBSuccess) {
    conn->c_ = nullptr;
    return Status::IOError("DuckDB: cannot connect");
  }
  return conn;
}

Connection::~Connection() {
  if (c_ != nullptr) duckdb_disconnect(&c_);
}

Status Connection::Exec(const std::string& sql) {
  duckdb_result result;
  duckdb_state state = duckdb_query(c_, sql.c_str(), &result);
  Status st = state == DuckDBSuccess ? Status::OK() : SqlError(duckdb_result_error(&result));
  duckdb_destroy_result(&result);
  return st;
}

Result<std::vector<std::vector<std::string>>> Connection::QueryRows(const std::string& sql) {
  duckdb_result result;
  if (duckdb_query(c_, sql.c_str(), &result) != DuckDBSuccess) {
    Status st = SqlError(duckdb_result_error(&result));
    duckdb_destroy_result(&result);
    return st;
  }
  std::vector<std::vector<std::string>> rows;
  idx_t columns = duckdb_column_count(&result);
  // duckdb_value_varchar is deprecated but the simplest exact text of a small result.
  for (idx_t r = 0; r < duckdb_row_count(&result); ++r) {
    auto& row = rows.emplace_back();
    for (idx_t c = 0; c < columns; ++c) {
      char* text = duckdb_value_varchar(&result, c, r);
      row.emplace_back(text ? text : "");
      duckdb_free(text);
    }
  }
  duckdb_destroy_result(&result);
  return rows;
}

Result<std::string> Connection::QueryText(const std::string& sql) {
  ARROW_ASSIGN_OR_RAISE(auto rows, QueryRows(sql));
  if (rows.empty() || rows[0].empty()) return Status::IOError("DuckDB: no result for ", sql);
  return rows[0][0];
}

Result<std::unique_ptr<Statement>> Statement::Prepare(Connection* conn, const std::string& sql) {
  auto s = std::unique_ptr<Statement>(new Statement());
  s->conn_ = conn;
  if (duckdb_prepare(conn->get(), sql.c_str(), &s->prepared_) != DuckDBSuccess) {
    return SqlError(duckdb_prepare_error(s->prepared_));
  }
  idx_t n = duckdb_prepared_statement_column_count(s->prepared_);
  std::vector<duckdb_logical_type> types;
  std::vector<std::string> names;
  for (idx_t i = 0; i < n; ++i) {
    types.push_back(duckdb_prepared_statement_column_logical_type(s->prepared_, i));
    const char* name = duckdb_prepared_statement_column_name(s->prepared_, i);
    names.emplace_back(name ? name : "");
  }
  std::vector<const char*> name_ptrs;
  for (const auto& name : names) name_ptrs.push_back(name.c_str());
  duckdb_connection_get_arrow_options(conn->get(), &s->options_);
  ArrowSchema c_schema;
  Status st = FromErrorData(duckdb_to_arrow_schema(s->options_, types.data(), name_ptrs.data(), n, &c_schema),
                            "DuckDB: the result's Arrow schema");
  for (auto& t : types) duckdb_destroy_logical_type(&t);
  ARROW_RETURN_NOT_OK(st);
  ARROW_ASSIGN_OR_RAISE(s->schema_, arrow::ImportSchema(&c_schema));
  return s;
}

Statement::~Statement() {
  if (executed_) duckdb_destroy_result(&result_);
  if (prepared_ != nullptr) duckdb_destroy_prepare(&prepared_);
  if (options_ != nullptr) duckdb_destroy_arrow_options(&options_);
}

Status Statement::Execute(const std::atomic<bool>& stop) {
  duckdb_pending_result pending;
  if (duckdb_pending_prepared_streaming(prepared_, &pending) != DuckDBSuccess) {
    Status st = SqlError(duckdb_pending_error(pending));
    duckdb_destroy_pending(&pending);
    return st;
  }
  // Task by task, so a stop requested before DuckDB began (when an interrupt
  // would be lost) still ends the run.
  while (true) {
    duckdb_pending_state ps = duckdb_pending_execute_task(pending);
    if (ps == DUCKDB_PENDING_RESULT_READY || ps == DUCKDB_PENDING_ERROR) break;
    if (stop.load()) {
      duckdb_destroy_pending(&pending);
      return Status::Cancelled("the query was cancelled");
    }
  }
  duckdb_state state = duckdb_execute_pending(pending, &result_);
  Status st = state == DuckDBSuccess ? Status::OK() : SqlError(duckdb_result_error(&result_));
  duckdb_destroy_pending(&pending);
  executed_ = true;
  return st;
}

Result<std::shared_ptr<arrow::RecordBatch>> Statement::Next() {
  duckdb_data_chunk chunk = duckdb_fetch_chunk(result_);
  if (chunk == nullptr) {
    // The end, or an error (an interrupt, the memory limit) the result now holds.
    const char* error = duckdb_result_error(&result_);
    if (error != nullptr && *error != '\0') return SqlError(error);
    return nullptr;
  }
  ArrowArray c_array;
  Status st = FromErrorData(duckdb_data_chunk_to_arrow(options_, chunk, &c_array), "DuckDB: a chunk to Arrow");
  duckdb_destroy_data_chunk(&chunk);
  ARROW_RETURN_NOT_OK(st);
  return arrow::ImportRecordBatch(&c_array, schema_);
}

std::string Identifier(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string Literal(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

}  // namespace sediment::query::duck
