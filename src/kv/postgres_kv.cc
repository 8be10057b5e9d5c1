// PostgreSQL KvStore: the metadata store many servers share.
//
// One table `sediment_kv(key bytea primary key, value bytea)`; bytea sorts
// bytewise, like every other driver. Batches with preconditions run in one
// SERIALIZABLE transaction, so two conflicting batches can't both pass their
// checks: the loser gets a serialization failure and is retried (re-checking
// its preconditions), bounded. Connection loss is retried too, on a fresh
// connection; a database that stays down gives Unavailable, never a
// half-applied batch (a transaction commits whole or not at all), and a
// batch whose COMMIT answer was lost is never applied twice (Apply).
//
// The schema is created and versioned on open (table sediment_schema); a
// database whose schema is newer than this build knows is refused.
#include <fmt/format.h>
#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "base/crypto.h"
#include "base/failpoint.h"
#include "kv/kv.h"
#include "kv/kv_internal.h"

namespace sediment::kv {
namespace {

constexpr int kSchemaVersion = 1;
constexpr int kPoolSize = 8;
constexpr int kAttempts = 8;

struct PgResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, PgResultDeleter>;

bool IsUniqueViolation(const PGresult* r) {
  const char* state = r == nullptr ? nullptr : PQresultErrorField(r, PG_DIAG_SQLSTATE);
  return state != nullptr && std::string(state) == "23505";
}

std::string RandomBatchId() { return RandomBytes(16); }

bool IsRetryable(const PGresult* r) {
  const char* state = r == nullptr ? nullptr : PQresultErrorField(r, PG_DIAG_SQLSTATE);
  if (state == nullptr) return false;
  std::string s(state);
  return s == "40001" || s == "40P01";  // serialization failure, deadlock
}

class Connection {
 public:
  explicit Connection(PGconn* c) : conn_(c) {}
  ~Connection() { PQfinish(conn_); }
  PGconn* get() { return conn_; }
  bool ok() const { return PQstatus(conn_) == CONNECTION_OK; }

  // Runs a statement with binary parameters and results.
  PgResult Exec(const char* sql, const std::vector<std::string_view>& params) {
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    for (const auto& p : params) {
      values.push_back(p.data());
      lengths.push_back(static_cast<int>(p.size()));
      formats.push_back(1);
    }
    return PgResult(PQexecParams(conn_, sql, static_cast<int>(params.size()), nullptr, values.data(), lengths.data(),
                                 formats.data(), 1));
  }
  PgResult Exec(const char* sql) { return PgResult(PQexec(conn_, sql)); }

 private:
  PGconn* conn_;
};

class PostgresStore final : public KvStore {
 public:
  PostgresStore(std::string dsn, std::string schema) : dsn_(std::move(dsn)), schema_(std::move(schema)) {}

  // Creates or checks the schema. Servers started together on a fresh database
  // take turns: CREATE ... IF NOT EXISTS is not safe against a concurrent
  // CREATE (both see nothing, one fails on a unique index), so the whole
  // set-up runs in one transaction under an advisory lock named by the schema.
  Status Init() {
    return WithConnection([&](Connection& c) -> Status {
      PgResult r = c.Exec("BEGIN");
      if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) return Error(c, "starting the schema set-up", r.get());
      Status st = InitLocked(c);
      r = c.Exec(st.ok() ? "COMMIT" : "ROLLBACK");
      if (st.ok() && PQresultStatus(r.get()) != PGRES_COMMAND_OK) return Error(c, "committing the schema", r.get());
      return st;
    });
  }

  // REQUIRES: in a transaction on `c`.
  Status InitLocked(Connection& c) {
    {
      std::string lock_name = "sediment schema " + schema_;
      PgResult r = c.Exec("SELECT pg_advisory_xact_lock(hashtext($1))", {lock_name});
      if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) return Error(c, "locking the schema set-up", r.get());
    }
    {
      std::string create = fmt::format(
          "CREATE SCHEMA IF NOT EXISTS {0};"
          "CREATE TABLE IF NOT EXISTS {0}.sediment_schema (version integer NOT NULL);"
          "CREATE TABLE IF NOT EXISTS {0}.sediment_kv (key bytea PRIMARY KEY, value bytea NOT NULL);"
          // Added within schema version 1 (older builds ignore it): ids of
          // committed batches, kept a day, so a retried COMMIT learns it landed.
          "CREATE TABLE IF NOT EXISTS {0}.sediment_batches (id bytea PRIMARY KEY, at timestamptz NOT NULL);",
          schema_);
      PgResult r = c.Exec(create.c_str());
      if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) return Error(c, "creating the schema", r.get());
      r = c.Exec(fmt::format("SELECT max(version) FROM {}.sediment_schema", schema_).c_str());
      if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) return Error(c, "reading the schema version", r.get());
      if (PQgetisnull(r.get(), 0, 0)) {
        r = c.Exec(fmt::format("INSERT INTO {}.sediment_schema VALUES ({})", schema_, kSchemaVersion).c_str());
        if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) return Error(c, "recording the schema version", r.get());
        return Status::OK();
      }
      int version = std::atoi(PQgetvalue(r.get(), 0, 0));
      if (version > kSchemaVersion) {
        return InvalidArgument(fmt::format(
            "the database's Sediment schema is version {}, newer than this build knows ({}): upgrade sediment", version,
            kSchemaVersion));
      }
      return Status::OK();
    }
  }

  Result<std::string> Get(std::string_view key) override {
    std::string value;
    ARROW_RETURN_NOT_OK(WithConnection([&](Connection& c) -> Status {
      PgResult r = c.Exec(sql_get_.c_str(), {key});
      if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) return Error(c, "get", r.get());
      if (PQntuples(r.get()) == 0) return NotFound(fmt::format("key \"{}\" not found", Printable(key)));
      value.assign(PQgetvalue(r.get(), 0, 0), static_cast<size_t>(PQgetlength(r.get(), 0, 0)));
      return Status::OK();
    }));
    return value;
  }

  Status Set(std::string_view key, std::string_view value) override {
    return WithConnection([&](Connection& c) -> Status {
      PgResult r = c.Exec(sql_put_.c_str(), {key, value});
      return PQresultStatus(r.get()) == PGRES_COMMAND_OK ? Status::OK() : Error(c, "set", r.get());
    });
  }

  Status Delete(std::string_view key) override {
    return WithConnection([&](Connection& c) -> Status {
      PgResult r = c.Exec(sql_delete_.c_str(), {key});
      return PQresultStatus(r.get()) == PGRES_COMMAND_OK ? Status::OK() : Error(c, "delete", r.get());
    });
  }

  Result<ScanPage> Scan(std::string_view prefix, std::string_view from, size_t limit) override {
    ScanPage page;
    std::string start(from > prefix ? from : prefix);
    std::string end = PrefixEnd(prefix);
    ARROW_RETURN_NOT_OK(WithConnection([&](Connection& c) -> Status {
      page.items.clear();
      PgResult r = end.empty() ? c.Exec(sql_scan_open_.c_str(), {start, Int8(limit + 1)})
                               : c.Exec(sql_scan_.c_str(), {start, end, Int8(limit + 1)});
      if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) return Error(c, "scan", r.get());
      int rows = PQntuples(r.get());
      for (int i = 0; i < rows && page.items.size() < limit; ++i) {
        page.items.push_back({std::string(PQgetvalue(r.get(), i, 0), static_cast<size_t>(PQgetlength(r.get(), i, 0))),
                              std::string(PQgetvalue(r.get(), i, 1), static_cast<size_t>(PQgetlength(r.get(), i, 1)))});
      }
      page.has_more = static_cast<size_t>(rows) > limit;
      return Status::OK();
    }));
    return page;
  }

  Result<std::optional<KeyValue>> Floor(std::string_view prefix, std::string_view at) override {
    std::optional<KeyValue> out;
    ARROW_RETURN_NOT_OK(WithConnection([&](Connection& c) -> Status {
      out.reset();
      PgResult r = c.Exec(sql_floor_.c_str(), {prefix, at});
      if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) return Error(c, "floor", r.get());
      if (PQntuples(r.get()) == 0) return Status::OK();
      out = KeyValue{std::string(PQgetvalue(r.get(), 0, 0), static_cast<size_t>(PQgetlength(r.get(), 0, 0))),
                     std::string(PQgetvalue(r.get(), 0, 1), static_cast<size_t>(PQgetlength(r.get(), 0, 1)))};
      return Status::OK();
    }));
    return out;
  }

  // A batch commits whole or not at all, and exactly once: its first
  // statement records a random batch id in sediment_batches. If a COMMIT's
  // answer is lost (the connection drops), the retry's insert of the same id
  // fails with a unique violation exactly when the first attempt landed —
  // after waiting for it if it is still committing — so the caller learns the
  // truth instead of re-running the batch against its own result.
  Status Apply(const Batch& batch) override {
    const std::string id = RandomBatchId();
    PruneBatchIdsNow();
    return WithConnection([&](Connection& c) -> Status {
      PgResult r = c.Exec("BEGIN ISOLATION LEVEL SERIALIZABLE");
      if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) return Error(c, "begin", r.get());
      r = c.Exec(sql_batch_id_.c_str(), {id});
      if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
        bool landed = IsUniqueViolation(r.get());
        Status err = landed ? Status::OK() : Error(c, "recording the batch", r.get());
        c.Exec("ROLLBACK");
        return err;
      }
      Status st = ApplyInTransaction(c, batch);
      if (!st.ok()) {
        c.Exec("ROLLBACK");
        return st;
      }
      r = c.Exec("COMMIT");
      if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
        Status err = Error(c, "commit", r.get());
        c.Exec("ROLLBACK");
        return err;
      }
      if (!failpoint::Hit("kv.postgres.commit_lost").ok()) {
        return Status::Cancelled(kRetry, ": commit: the answer was lost (failpoint kv.postgres.commit_lost)");
      }
      return Status::OK();
    });
  }

  std::string Describe() const override { return "postgres:" + schema_; }

  ~PostgresStore() override {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.clear();
  }

 private:
  // A retryable error (serialization failure, lost connection) marks itself
  // with this code so WithConnection runs the whole operation again.
  static constexpr const char* kRetry = "retry";

  static std::string Int8(size_t v) {
    uint64_t be = 0;
    for (int i = 0; i < 8; ++i) be |= static_cast<uint64_t>((v >> (8 * i)) & 0xff) << (8 * (7 - i));
    return std::string(reinterpret_cast<const char*>(&be), 8);
  }

  Status Error(Connection& c, const char* what, const PGresult* r) {
    if (IsRetryable(r) || !c.ok()) return Status::Cancelled(kRetry, ": ", what, ": ", PQerrorMessage(c.get()));
    const char* msg = r != nullptr ? PQresultErrorMessage(r) : PQerrorMessage(c.get());
    return Status::IOError(fmt::format("postgres {}: {}", what, msg));
  }

  Status ApplyInTransaction(Connection& c, const Batch& batch) {
    for (const auto& p : batch.preconditions) {
      PgResult r = c.Exec(sql_get_.c_str(), {p.key});
      if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) return Error(c, "precondition", r.get());
      std::string value;
      bool present = PQntuples(r.get()) > 0;
      if (present) value.assign(PQgetvalue(r.get(), 0, 0), static_cast<size_t>(PQgetlength(r.get(), 0, 0)));
      ARROW_RETURN_NOT_OK(CheckPrecondition(p, present ? &value : nullptr));
    }
    for (const auto& m : batch.mutations) {
      PgResult r = m.kind == Mutation::Kind::kPut ? c.Exec(sql_put_.c_str(), {m.key, m.value})
                                                  : c.Exec(sql_delete_.c_str(), {m.key});
      if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) return Error(c, "write", r.get());
    }
    return Status::OK();
  }

  Result<std::unique_ptr<Connection>> Connect() {
    auto c = std::make_unique<Connection>(PQconnectdb(dsn_.c_str()));
    if (!c->ok()) {
      return Unavailable(fmt::format("cannot connect to PostgreSQL: {}", PQerrorMessage(c->get())));
    }
    PgResult r = c->Exec("SET client_min_messages = warning");
    return c;
  }

  Result<std::unique_ptr<Connection>> Acquire() {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !idle_.empty() || open_ < kPoolSize; });
      if (!idle_.empty()) {
        auto c = std::move(idle_.front());
        idle_.pop_front();
        return c;
      }
      open_++;
    }
    auto c = Connect();
    if (!c.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      open_--;
      cv_.notify_one();
    }
    return c;
  }

  void Release(std::unique_ptr<Connection> c) {
    std::lock_guard<std::mutex> lock(mu_);
    if (c && c->ok()) {
      idle_.push_back(std::move(c));
    } else {
      open_--;
    }
    cv_.notify_one();
  }

  // Runs `op` on a pooled connection, retrying transient failures with backoff.
  Status WithConnection(const std::function<Status(Connection&)>& op) {
    Status last;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5 << std::min(attempt, 7)));
      auto c = Acquire();
      if (!c.ok()) {
        last = c.status();
        continue;
      }
      Status st = op(**c);
      bool retry = st.IsCancelled() && st.message().rfind(kRetry, 0) == 0;
      if (retry && !(*c)->ok()) PQreset((*c)->get());
      Release(std::move(*c));
      if (!retry) return st;
      last = st;
    }
    if (last.IsCancelled()) {
      return Unavailable(fmt::format("PostgreSQL: gave up after {} attempts: {}", kAttempts, last.message()));
    }
    return IsUnavailable(last) ? last : Unavailable(last.message());
  }

  const std::string dsn_;
  const std::string schema_;
  const std::string table_ = schema_ + ".sediment_kv";
  const std::string sql_get_ = "SELECT value FROM " + table_ + " WHERE key = $1";
  const std::string sql_put_ =
      "INSERT INTO " + table_ + " (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value";
  const std::string sql_delete_ = "DELETE FROM " + table_ + " WHERE key = $1";
  const std::string sql_batch_id_ = "INSERT INTO " + schema_ + ".sediment_batches (id, at) VALUES ($1, now())";
  const std::string sql_prune_batches_ =
      "DELETE FROM " + schema_ + ".sediment_batches WHERE at < now() - interval '1 day'";
  const std::string sql_scan_ =
      "SELECT key, value FROM " + table_ + " WHERE key >= $1 AND key < $2 ORDER BY key LIMIT $3";
  // The index is scanned backwards from `at`; the prefix is the lower bound.
  const std::string sql_floor_ =
      "SELECT key, value FROM " + table_ + " WHERE key >= $1 AND key <= $2 ORDER BY key DESC LIMIT 1";
  const std::string sql_scan_open_ = "SELECT key, value FROM " + table_ + " WHERE key >= $1 ORDER BY key LIMIT $2";

  // Every 4096th batch of this process deletes batch ids older than a day.
  void PruneBatchIdsNow() {
    if (applied_.fetch_add(1, std::memory_order_relaxed) % 4096 != 4095) return;
    Status st = WithConnection([&](Connection& c) -> Status {
      PgResult r = c.Exec(sql_prune_batches_.c_str(), {});
      return PQresultStatus(r.get()) == PGRES_COMMAND_OK ? Status::OK() : Error(c, "pruning batch ids", r.get());
    });
    (void)st;  // best effort: the next prune catches up
  }

  std::atomic<uint64_t> applied_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Connection>> idle_;  // GUARDED_BY(mu_)
  int open_ = 0;                                  // GUARDED_BY(mu_)
};

}  // namespace

Result<std::shared_ptr<KvStore>> OpenPostgres(const std::string& dsn, const std::string& schema) {
  for (char ch : schema) {
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_')) {
      return InvalidArgument(fmt::format("postgres schema name \"{}\" must be [a-z0-9_]+", schema));
    }
  }
  if (schema.empty()) return InvalidArgument("postgres schema name is empty");
  auto store = std::make_shared<PostgresStore>(dsn, schema);
  ARROW_RETURN_NOT_OK(store->Init());
  return std::shared_ptr<KvStore>(store);
}

}  // namespace sediment::kv
