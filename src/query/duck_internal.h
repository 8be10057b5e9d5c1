// Owners of DuckDB C API handles and the few calls the query module makes
// through them. Only the query module's .cc files include duckdb.h.
//
// Thread-safety: a Connection is used by one thread at a time, except
// Interrupt(), which any thread may call.
#pragma once

#include <duckdb.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace arrow {
class RecordBatch;
class Schema;
}  // namespace arrow

namespace sediment::query::duck {

// An in-memory database with `settings` (name, value) applied at open.
class Database {
 public:
  static Result<std::unique_ptr<Database>> Open(const std::vector<std::pair<std::string, std::string>>& settings);
  ~Database();
  duckdb_database get() const { return db_; }

 private:
  duckdb_database db_ = nullptr;
};

class Connection {
 public:
  static Result<std::unique_ptr<Connection>> Open(const Database& db);
  ~Connection();
  duckdb_connection get() const { return c_; }
  // Runs statements whose results are not needed; InvalidArgument with DuckDB's message.
  Status Exec(const std::string& sql);
  // The first column of the first row of `sql`'s result, as text.
  Result<std::string> QueryText(const std::string& sql);
  // Every row's columns as text (EXPLAIN's plan).
  Result<std::vector<std::vector<std::string>>> QueryRows(const std::string& sql);
  void Interrupt() { duckdb_interrupt(c_); }

 private:
  duckdb_connection c_ = nullptr;
};

// A prepared statement run as a stream of Arrow record batches.
class Statement {
 public:
  static Result<std::unique_ptr<Statement>> Prepare(Connection* conn, const std::string& sql);
  ~Statement();
  // The result's columns (known once prepared).
  const std::shared_ptr<arrow::Schema>& schema() const { return schema_; }
  // Starts execution (streaming: rows are produced as they are fetched);
  // Cancelled once `stop` is set.
  Status Execute(const std::atomic<bool>& stop);
  // The next batch of rows (up to DuckDB's vector size), or nullptr at the end.
  Result<std::shared_ptr<arrow::RecordBatch>> Next();

 private:
  Connection* conn_ = nullptr;
  duckdb_prepared_statement prepared_ = nullptr;
  duckdb_result result_{};
  bool executed_ = false;
  duckdb_arrow_options options_ = nullptr;
  std::shared_ptr<arrow::Schema> schema_;
};

// `name` as a quoted SQL identifier, `text` as a string literal.
std::string Identifier(std::string_view name);
std::string Literal(std::string_view text);

}  // namespace sediment::query::duck
