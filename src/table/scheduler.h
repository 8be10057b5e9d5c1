// When compaction passes run (spec: "after a job writes a file, it starts a
// compaction pass on the table, unless one is already running, or the last
// one started less than min_interval ago"), and which server may run them.
//
// TableLeases: one server at a time compacts and collects a table. The claim
// is a kv::Lease under t/lease/<ds>/<t> that lasts lease_ttl unless renewed;
// every lease taken is remembered so ReleaseAll() hands the tables over at
// once when the server stops.
//
// CompactionScheduler: serializes passes per table on this server, starts a
// background pass on request (Request, after each append and on the timer)
// unless one is queued or running or min_interval has not passed, and runs a
// pass at once on demand (RunNow, for POST .../compact), renewing the table's
// lease every lease_ttl/3 while a pass runs. The pass itself is
// a function it is given (Compactor plus GC); a timer calls `tick` every
// max(1 s, min_interval) so tables compact even when no writer runs.
//
// Thread-safety: all methods are safe from many threads. Stop() joins the
// timer and the pass pool.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "base/clock.h"
#include "base/config.h"
#include "base/executor.h"
#include "kv/kv.h"
#include "table/compactor.h"
#include "table/names.h"

namespace sediment::table {

class TableLeases {
 public:
  TableLeases(std::shared_ptr<kv::KvStore> kv, Clock* clock, std::string server_id, Duration ttl)
      : kv_(std::move(kv)), clock_(clock), server_id_(std::move(server_id)), ttl_(ttl) {}

  // Takes or renews the table's lease; false if another server holds it.
  Result<bool> Hold(const TableId& id);
  // Like Hold, but written again for the full ttl whatever is left (the
  // keeper's renewal during a pass).
  Result<bool> Renew(const TableId& id);
  // Who holds it now ("" if nobody).
  Result<std::string> Holder(const TableId& id);
  // Gives up every lease this server took.
  void ReleaseAll();

  const std::string& server_id() const { return server_id_; }
  Duration ttl() const { return ttl_; }

 private:
  std::shared_ptr<kv::KvStore> kv_;
  Clock* const clock_;
  const std::string server_id_;
  const Duration ttl_;
  // Held until at least now + `at_least` (renewed to now + ttl if less is left).
  Result<bool> Acquire(const TableId& id, Duration at_least);
  std::mutex mu_;
  std::set<TableId> taken_;  // GUARDED_BY(mu_)
};

class LeaseKeeper;  // scheduler.cc

class CompactionScheduler {
 public:
  using PassFn = std::function<Result<PassResult>(const TableId&, const ProgressFn&)>;

  CompactionScheduler(const CompactorConfig& config, Clock* clock, TableLeases* leases, PassFn pass);
  ~CompactionScheduler();

  // Starts the timer; without Start, Request does nothing (tests run passes
  // through RunNow only).
  void Start(std::function<void()> tick);
  void Stop();

  // Starts a pass in the background unless one is queued or running on the
  // table, or one started less than min_interval ago.
  void Request(const TableId& id);
  // Runs a pass now, after a running one on this server finishes. Busy if
  // another server holds the table's lease.
  Result<PassResult> RunNow(const TableId& id, const ProgressFn& progress);
  // Waits until no background pass is queued or running (tests).
  void WaitIdle();

 private:
  struct TableState {
    std::mutex pass_mu;        // one pass at a time per table on this server
    bool scheduled = false;    // GUARDED_BY(mu_)
    TimePoint last_started{};  // GUARDED_BY(mu_)
  };
  std::shared_ptr<TableState> State(const TableId& id);
  void RunScheduled(const TableId& id, const std::shared_ptr<TableState>& state);

  const CompactorConfig config_;
  Clock* const clock_;
  TableLeases* const leases_;
  const PassFn pass_;
  std::atomic<bool> started_{false};
  std::atomic<bool> stopping_{false};
  std::unique_ptr<LeaseKeeper> keeper_;  // before pass_pool_: outlives the passes it renews for
  std::unique_ptr<ThreadPool> pass_pool_;
  std::unique_ptr<PeriodicTask> timer_;
  std::mutex mu_;
  std::map<TableId, std::shared_ptr<TableState>> states_;  // GUARDED_BY(mu_)
};

}  // namespace sediment::table
