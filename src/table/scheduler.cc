#include "table/scheduler.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <thread>
#include <vector>

#include "kv/lease.h"
#include "table/keys.h"

namespace sediment::table {

// ---------------------------------------------------------------- leases

// Held for half its time or more: not written again (a pass and its GC each
// ask; the keeper renews it in full every third of it while a pass runs).
Result<bool> TableLeases::Hold(const TableId& id) { return Acquire(id, ttl_ / 2); }

Result<bool> TableLeases::Renew(const TableId& id) { return Acquire(id, ttl_); }

Result<bool> TableLeases::Acquire(const TableId& id, Duration at_least) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    taken_.insert(id);  // remembered, so ReleaseAll() releases it
  }
  kv::Lease lease(kv_, TableLeaseKey(id), server_id_, ttl_);
  return lease.TryAcquire(clock_->Now(), at_least);
}

Result<std::string> TableLeases::Holder(const TableId& id) {
  kv::Lease lease(kv_, TableLeaseKey(id), server_id_, ttl_);
  return lease.Holder(clock_->Now());
}

void TableLeases::ReleaseAll() {
  std::set<TableId> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ids.swap(taken_);
  }
  for (const auto& id : ids) {
    kv::Lease lease(kv_, TableLeaseKey(id), server_id_, ttl_);
    Status st = lease.Release();
    if (!st.ok()) spdlog::warn("table {}: cannot release the compaction lease: {}", id.ToString(), st.ToString());
  }
}

// ---------------------------------------------------------------- lease keeper

// Renews the leases of the tables whose passes run here, every ttl/3, from
// one thread for the server (a thread per pass cost more than a quiet
// table's pass), so a pass longer than the lease does not let another server
// run the same plan. A pass starts with at least half the lease left
// (TableLeases::Hold), so the first renewal comes in time.
class LeaseKeeper {
 public:
  explicit LeaseKeeper(TableLeases* leases) : leases_(leases) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~LeaseKeeper() { Stop(); }
  // No renewal runs after this returns (the server is handing its tables over).
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // Renewed from now until the returned guard goes.
  std::shared_ptr<void> Keep(const TableId& id) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      passes_[id]++;
    }
    return std::shared_ptr<void>(nullptr, [this, id](void*) {
      std::lock_guard<std::mutex> lock(mu_);
      if (--passes_[id] == 0) passes_.erase(id);
    });
  }

 private:
  void Loop() {
    auto period = std::max<Duration>(leases_->ttl() / 3, std::chrono::milliseconds(10));
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, period, [&] { return done_; })) {
      // Under the lock: a pass that ended is not renewed after its guard went.
      for (const auto& [id, n] : passes_) Renew(id);
    }
  }
  void Renew(const TableId& id) {
    auto held = leases_->Renew(id);
    if (!held.ok()) {
      spdlog::warn("table {}: cannot renew the compaction lease: {}", id.ToString(), held.status().ToString());
    } else if (!*held) {
      spdlog::error("table {}: lost the compaction lease during a pass; its swaps are checked by the registry",
                    id.ToString());
    }
  }

  TableLeases* const leases_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;              // GUARDED_BY(mu_)
  std::map<TableId, int> passes_;  // GUARDED_BY(mu_): passes running, by table
  std::thread thread_;
};

// ---------------------------------------------------------------- scheduler

CompactionScheduler::CompactionScheduler(const CompactorConfig& config, Clock* clock, TableLeases* leases, PassFn pass)
    : config_(config),
      clock_(clock),
      leases_(leases),
      pass_(std::move(pass)),
      keeper_(std::make_unique<LeaseKeeper>(leases)),
      pass_pool_(std::make_unique<ThreadPool>("table-passes", 2, 1024)) {}

CompactionScheduler::~CompactionScheduler() { Stop(); }

void CompactionScheduler::Start(std::function<void()> tick) {
  started_ = true;
  double interval = std::max(1.0, config_.min_interval);
  timer_ = std::make_unique<PeriodicTask>(
      "table-timer", std::chrono::milliseconds(static_cast<int64_t>(interval * 1000)), std::move(tick));
  timer_->Start();
}

void CompactionScheduler::Stop() {
  stopping_ = true;
  if (timer_) timer_->Stop();
  pass_pool_->Shutdown();
  keeper_->Stop();
}

std::shared_ptr<CompactionScheduler::TableState> CompactionScheduler::State(const TableId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& s = states_[id];
  if (!s) s = std::make_shared<TableState>();
  return s;
}

void CompactionScheduler::Request(const TableId& id) {
  if (!config_.active || stopping_ || !started_) return;
  auto state = State(id);
  {
    std::lock_guard<std::mutex> lock(mu_);
    TimePoint now = clock_->Now();
    if (state->scheduled) return;
    if (state->last_started != TimePoint{} && now - state->last_started < SecondsToDuration(config_.min_interval)) {
      return;
    }
    state->scheduled = true;
    state->last_started = now;
  }
  Status st = pass_pool_->TrySubmit([this, id, state] { RunScheduled(id, state); });
  if (!st.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    state->scheduled = false;
  }
}

void CompactionScheduler::RunScheduled(const TableId& id, const std::shared_ptr<TableState>& state) {
  {
    std::unique_lock<std::mutex> pass(state->pass_mu, std::try_to_lock);
    auto mine = leases_->Hold(id);  // one server at a time compacts a table
    if (!mine.ok()) {
      spdlog::warn("table {}: pass skipped: cannot take the compaction lease: {}", id.ToString(),
                   mine.status().ToString());
    } else if (pass.owns_lock() && !stopping_ && *mine) {
      auto kept = keeper_->Keep(id);
      auto r = pass_(id, nullptr);
      if (!r.ok()) spdlog::warn("table {}: compaction pass failed: {}", id.ToString(), r.status().ToString());
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  state->scheduled = false;
}

void CompactionScheduler::WaitIdle() { pass_pool_->WaitIdle(); }

Result<PassResult> CompactionScheduler::RunNow(const TableId& id, const ProgressFn& progress) {
  ARROW_ASSIGN_OR_RAISE(bool mine, leases_->Hold(id));
  if (!mine) {
    auto holder = leases_->Holder(id);
    return Busy(fmt::format("table {} is being compacted by another server ({}); try again later", id.ToString(),
                            holder.ok() ? *holder : "?"));
  }
  auto kept = keeper_->Keep(id);  // renewed while this waits for a pass already running
  auto state = State(id);
  std::lock_guard<std::mutex> pass(state->pass_mu);
  {
    std::lock_guard<std::mutex> lock(mu_);
    state->last_started = clock_->Now();
  }
  return pass_(id, progress);
}

}  // namespace sediment::table
