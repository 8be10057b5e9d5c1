#include "query/engine.h"

#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "base/metrics.h"
#include "query/duck_internal.h"
#include "query/views_internal.h"
#include "table/table_service.h"

namespace sediment::query {

using SteadyClock = std::chrono::steady_clock;

struct QueryRun::State {
  enum class Mode { kExecute, kPrepare, kExplain };
  QueryEngine* engine = nullptr;
  Mode mode = Mode::kExecute;
  std::string sql;
  std::vector<TableView> views;  // each with its pinned snapshot
  SteadyClock::time_point deadline;

  std::mutex mu;
  std::condition_variable cv;
  bool prepared = false;                                  // GUARDED_BY(mu): schema or status is set
  bool done = false;                                      // GUARDED_BY(mu): no more batches will come
  bool stop = false;                                      // GUARDED_BY(mu): cancelled, timed out or destroyed
  std::atomic<bool> stopping{false};                      // `stop`, read without the lock by DuckDB's task loop
  Status status;                                          // GUARDED_BY(mu): the run's error
  std::shared_ptr<arrow::Schema> schema;                  // GUARDED_BY(mu)
  std::deque<std::shared_ptr<arrow::RecordBatch>> queue;  // GUARDED_BY(mu)
  std::vector<std::vector<std::string>> plan;             // GUARDED_BY(mu): EXPLAIN's rows (kExplain)
  duck::Connection* conn = nullptr;                       // GUARDED_BY(mu): to interrupt
  std::thread worker;

  static constexpr size_t kQueueBatches = 4;

  // Stops the run with `why` (the first reason wins) and interrupts DuckDB.
  void Stop(Status why) {
    std::lock_guard<std::mutex> lock(mu);
    if (!stop && status.ok()) status = std::move(why);
    stop = true;
    stopping = true;
    if (conn != nullptr) conn->Interrupt();
    cv.notify_all();
  }
  void Finish(Status st) {
    std::lock_guard<std::mutex> lock(mu);
    if (status.ok()) status = std::move(st);
    prepared = done = true;
    cv.notify_all();
  }
  Status TimedOut() const {
    return Busy(fmt::format("the query ran longer than its time limit ({} s, [query] timeout_secs)",
                            engine->limits().timeout_secs));
  }
  void Work();
  Status Execute(duck::Connection* conn);
};

namespace {

// Lowers this thread's CPU priority by `nice` (Linux: niceness is per thread
// and inherited by the threads it starts, DuckDB's workers among them).
void LowerPriority(int nice) {
  if (nice <= 0) return;
  pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  errno = 0;
  int now = getpriority(PRIO_PROCESS, tid);
  if (errno == 0) setpriority(PRIO_PROCESS, tid, std::min(19, now + nice));
}

// The settings of a query's database: its limits, no extensions loaded from
// disk, no spilling (a query over its memory limit fails rather than filling a disk).
std::vector<std::pair<std::string, std::string>> DatabaseSettings(const QueryLimits& limits) {
  return {{"threads", std::to_string(limits.threads)},
          {"memory_limit", fmt::format("{}KiB", std::max<int64_t>(limits.memory_bytes / 1024, 1))},
          {"autoinstall_known_extensions", "false"},
          {"autoload_known_extensions", "false"},
          {"allow_community_extensions", "false"},
          {"temp_directory", ""}};
}

}  // namespace

void QueryRun::State::Work() {
  LowerPriority(engine->limits().nice);
  auto db = duck::Database::Open(DatabaseSettings(engine->limits()));
  if (!db.ok()) return Finish(db.status());
  auto conn = duck::Connection::Open(**db);
  if (!conn.ok()) return Finish(conn.status());
  bool stopped;
  {
    std::lock_guard<std::mutex> lock(mu);
    stopped = stop;
    if (!stopped) this->conn = conn->get();
  }
  if (stopped) return Finish(Status::OK());
  Status st = Execute(conn->get());
  {
    std::lock_guard<std::mutex> lock(mu);
    this->conn = nullptr;
  }
  Finish(st);
}

Status QueryRun::State::Execute(duck::Connection* conn) {
  // The plan as written: the optimizer would fold the empty views a plan check reads.
  if (mode == Mode::kExplain) ARROW_RETURN_NOT_OK(conn->Exec("PRAGMA disable_optimizer"));
  // Only the snapshot's files can be read, and nothing can change that.
  ARROW_RETURN_NOT_OK(conn->Exec(LockDownSql(views)));
  for (const auto& view : views) ARROW_RETURN_NOT_OK(conn->Exec(view.create_sql));
  if (mode == Mode::kExplain) {
    ARROW_ASSIGN_OR_RAISE(auto rows, conn->QueryRows("EXPLAIN " + sql));
    std::lock_guard<std::mutex> lock(mu);
    plan = std::move(rows);
    return Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(auto statement, duck::Statement::Prepare(conn, sql));
  {
    std::lock_guard<std::mutex> lock(mu);
    schema = TableTypes(statement->schema(), views);
    prepared = true;
    cv.notify_all();
  }
  if (mode == Mode::kPrepare) return Status::OK();
  ARROW_RETURN_NOT_OK(statement->Execute(stopping));
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto batch, statement->Next());
    std::unique_lock<std::mutex> lock(mu);
    if (stop) return Status::OK();
    if (batch == nullptr) return Status::OK();
    if (batch->num_rows() == 0) continue;
    lock.unlock();
    ARROW_ASSIGN_OR_RAISE(batch, Retyped(batch, schema));
    lock.lock();
    // Backpressure: a client that reads slowly holds a few batches, not the result.
    if (!cv.wait_until(lock, deadline, [&] { return stop || queue.size() < kQueueBatches; })) {
      return TimedOut();
    }
    if (stop) return Status::OK();
    queue.push_back(std::move(batch));
    cv.notify_all();
  }
}

struct QueryEngine::Metrics {
  GaugeMetric* running = nullptr;
  GaugeMetric* streams = nullptr;
  CounterMetric* refused = nullptr;
  CounterMetric* started = nullptr;
};

QueryEngine::QueryEngine(table::TableService* tables, QueryLimits limits, MetricsRegistry* metrics)
    : tables_(tables), limits_(limits), metrics_(metrics), parser_(MakeParser()), m_(std::make_unique<Metrics>()) {
  static GaugeMetric unused_gauge;
  static CounterMetric unused_counter;
  m_->running =
      metrics ? &metrics->Gauge("query_running", "Queries (and microbatches) running now.").With({}) : &unused_gauge;
  m_->streams = metrics ? &metrics->Gauge("query_streams_open", "Streaming queries open now.").With({}) : &unused_gauge;
  m_->refused = metrics ? &metrics
                               ->Counter("query_refused_total",
                                         "Queries refused because [query] max_concurrent or max_streams were reached.")
                               .With({})
                        : &unused_counter;
  m_->started =
      metrics ? &metrics->Counter("query_runs_total", "Queries and microbatches started.").With({}) : &unused_counter;
}

QueryEngine::~QueryEngine() = default;

Result<std::unique_ptr<QueryRun>> QueryEngine::Run(const ParsedQuery& query, std::optional<BlockRange> range,
                                                   bool execute) {
  using Mode = QueryRun::State::Mode;
  return Start(query, range, static_cast<int>(execute ? Mode::kExecute : Mode::kPrepare));
}

Result<std::unique_ptr<QueryRun>> QueryEngine::Start(const ParsedQuery& query, std::optional<BlockRange> range,
                                                     int mode) {
  // A slot first: a query refused for load pins nothing.
  int now = running_.load();
  do {
    if (now >= limits_.max_concurrent) {
      m_->refused->Add();
      return Busy(
          fmt::format("{} queries are running, the most this server runs at once ([query] max_concurrent)", now));
    }
  } while (!running_.compare_exchange_weak(now, now + 1));
  m_->running->Add(1);
  m_->started->Add();
  auto run = std::unique_ptr<QueryRun>(new QueryRun());
  run->engine_ = this;  // releases the slot when destroyed
  auto state = std::make_shared<QueryRun::State>();
  state->engine = this;
  state->mode = static_cast<QueryRun::State::Mode>(mode);
  state->sql = query.sql;
  state->deadline = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                             std::chrono::duration<double>(limits_.timeout_secs));
  for (const auto& id : query.tables) {
    ARROW_ASSIGN_OR_RAISE(auto view, OpenView(tables_, id, range));
    state->views.push_back(std::move(view));
  }
  state->worker = std::thread([s = state.get()] { s->Work(); });
  run->state_ = std::move(state);
  return run;
}

bool QueryEngine::OpenStream() {
  int now = streams_.load();
  do {
    if (now >= limits_.max_streams) {
      m_->refused->Add();
      return false;
    }
  } while (!streams_.compare_exchange_weak(now, now + 1));
  m_->streams->Add(1);
  return true;
}

void QueryEngine::CloseStream() {
  streams_.fetch_sub(1);
  m_->streams->Add(-1);
}

Status QueryEngine::CheckIncremental(const ParsedQuery& query) {
  ARROW_ASSIGN_OR_RAISE(auto run, Start(query, BlockRange{0, 0}, static_cast<int>(QueryRun::State::Mode::kExplain)));
  ARROW_ASSIGN_OR_RAISE(auto plan, run->Plan());
  return CheckPlanIncremental(plan);
}

QueryRun::~QueryRun() {
  if (state_ != nullptr) {
    state_->Stop(Cancelled());
    if (state_->worker.joinable()) state_->worker.join();
  }
  if (engine_ != nullptr) {
    engine_->running_.fetch_sub(1);
    engine_->m_->running->Add(-1);
  }
}

Status QueryRun::Cancelled() { return Status::Cancelled("the query was cancelled"); }

void QueryRun::Cancel() { state_->Stop(Cancelled()); }

Result<std::shared_ptr<arrow::Schema>> QueryRun::Schema() {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  if (!s.cv.wait_until(lock, s.deadline, [&] { return s.prepared || s.stop; })) {
    lock.unlock();
    s.Stop(s.TimedOut());
    lock.lock();
  }
  if (!s.status.ok()) return s.status;
  if (s.schema == nullptr) return Status::Invalid("the query was stopped before it was prepared");
  return s.schema;
}

Result<std::vector<std::vector<std::string>>> QueryRun::Plan() {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  if (!s.cv.wait_until(lock, s.deadline, [&] { return s.done; })) return s.TimedOut();
  if (!s.status.ok()) return s.status;
  return s.plan;
}

Result<std::shared_ptr<arrow::RecordBatch>> QueryRun::Next(const std::function<bool()>& cancelled) {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  auto ready = [&] { return !s.queue.empty() || s.done || s.stop; };
  while (!ready()) {
    auto slice = std::min(s.deadline, SteadyClock::now() + std::chrono::milliseconds(250));
    if (s.cv.wait_until(lock, slice, ready)) break;
    Status why;
    if (SteadyClock::now() >= s.deadline) {
      why = s.TimedOut();
    } else if (cancelled && cancelled()) {
      why = Status::Cancelled("the client went away");
    } else {
      continue;
    }
    lock.unlock();
    s.Stop(why);
    lock.lock();
  }
  if (s.stop) return s.status.ok() ? Cancelled() : s.status;
  if (!s.queue.empty()) {
    auto batch = std::move(s.queue.front());
    s.queue.pop_front();
    s.cv.notify_all();
    return batch;
  }
  if (!s.status.ok()) return s.status;
  return nullptr;
}

}  // namespace sediment::query
