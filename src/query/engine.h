// QueryEngine: SQL over the chain tables, as Amp's query server serves it
// (docs/query.md). Each query runs in an embedded DuckDB database of its own
// over one pinned snapshot of every table it names: the same live sets the
// Iceberg catalog publishes, held against GC until the run ends.
//
// Data flow of a run:
//   Parse(text)       SETTINGS stripped, DuckDB's parser names the tables
//                     (`<dataset>.<table>`); anything but one SELECT refused
//   Run(query, range) pins each table's snapshot (restricted to `range` for a
//                     streaming microbatch), then on a worker thread of its own
//                     at a lower CPU priority: opens a database limited to the
//                     query's memory and threads that may read exactly the
//                     snapshot's files, defines each table as a view over them,
//                     prepares (the schema), executes, and hands Arrow batches
//                     to the caller through a queue of a few batches.
// A run ends at its last batch, at an error, on Cancel(), at the time limit,
// or when it is destroyed; its slot among the concurrent queries is then free.
//
// Thread-safety: QueryEngine is safe from many threads; a QueryRun is read by
// one thread at a time (Cancel() from any).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "table/names.h"

namespace arrow {
class RecordBatch;
class Schema;
}  // namespace arrow

namespace sediment {
class MetricsRegistry;
namespace table {
class TableService;
}
}  // namespace sediment

namespace sediment::query {

struct QueryLimits {
  int64_t memory_bytes = int64_t{1} << 30;  // per query: DuckDB's memory_limit
  double timeout_secs = 300;                // per query, from its start to its last batch
  int threads = 1;                          // DuckDB threads per query
  int max_concurrent = 4;                   // queries running at once on this server
  int max_streams = 256;                    // streaming queries open at once (QueryStream)
  int nice = 10;                            // added to a query thread's CPU niceness
};

struct ParsedQuery {
  std::string sql;                     // what DuckDB runs: the text without Amp's SETTINGS clause
  bool stream = false;                 // SETTINGS stream = true
  std::vector<table::TableId> tables;  // the tables it names, once each, in the order first named
};

// Blocks [from, to] of every table a microbatch reads.
struct BlockRange {
  uint64_t from = 0;
  uint64_t to = 0;
};

class QueryRun;

class QueryEngine {
 public:
  QueryEngine(table::TableService* tables, QueryLimits limits, MetricsRegistry* metrics);
  ~QueryEngine();

  // InvalidArgument naming what is wrong: not one SELECT, a catalog or
  // unqualified name that is no CTE, a table function, time travel.
  Result<ParsedQuery> Parse(std::string_view text);

  // Starts `query` (NotFound for a table that does not exist, Busy when
  // max_concurrent queries run). `execute` false: only prepares it, for its schema.
  Result<std::unique_ptr<QueryRun>> Run(const ParsedQuery& query, std::optional<BlockRange> range = std::nullopt,
                                        bool execute = true);

  // InvalidArgument naming the first operator of `query`'s plan that cannot
  // run incrementally over block ranges (aggregates, DISTINCT, LIMIT, ORDER BY, windows).
  Status CheckIncremental(const ParsedQuery& query);

  const QueryLimits& limits() const { return limits_; }
  int running() const { return running_.load(); }
  // A place among the open streams (false: max_streams are open); CloseStream gives it back.
  bool OpenStream();
  void CloseStream();
  int streams() const { return streams_.load(); }

 private:
  friend class QueryRun;
  struct Parser;
  static std::unique_ptr<Parser> MakeParser();
  // Run() and CheckIncremental(); `mode` is a QueryRun::State::Mode.
  Result<std::unique_ptr<QueryRun>> Start(const ParsedQuery& query, std::optional<BlockRange> range, int mode);
  table::TableService* tables_;
  const QueryLimits limits_;
  MetricsRegistry* metrics_;
  std::unique_ptr<Parser> parser_;
  struct Metrics;  // the gauges of running queries and open streams, and the refusals for load
  std::unique_ptr<Metrics> m_;
  std::atomic<int> running_{0};
  std::atomic<int> streams_{0};
};

class QueryRun {
 public:
  ~QueryRun();
  // The result's columns; waits until the query is prepared (or failed).
  Result<std::shared_ptr<arrow::Schema>> Schema();
  // The next batch, or nullptr after the last; the run's error, if it failed.
  // `cancelled` (asked a few times a second while waiting): the client went
  // away, and the run stops at once rather than at its time limit.
  Result<std::shared_ptr<arrow::RecordBatch>> Next(const std::function<bool()>& cancelled = nullptr);
  // Stops the run; Next() then answers Cancelled.
  void Cancel();

 private:
  friend class QueryEngine;
  struct State;
  QueryRun() = default;
  static Status Cancelled();
  // EXPLAIN's rows of a plan-only run.
  Result<std::vector<std::vector<std::string>>> Plan();
  QueryEngine* engine_ = nullptr;
  std::shared_ptr<State> state_;
};

}  // namespace sediment::query
