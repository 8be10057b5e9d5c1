// StagingCompactor: runs staging compactions (Catalog::CompactStaging) for a
// server — on demand and, when `auto_trigger` is on, once a branch's count of
// staged mutations crosses `threshold` (spec staging-compaction.md).
//
// - A bounded worker pool: Submit() fails with Busy when no worker is free, so
//   no request ever waits for a compaction.
// - One compaction per branch at a time, across servers: a KV lease
//   c/cl/<repo>/<branch> (with expiry, renewed while it runs) is held while one runs.
// - Staged mutations are counted per branch in memory and flushed as deltas
//   to a KV counter c/m/<repo>/<branch> shared by every server on the store;
//   the counter is tied to the branch's (commit, compacted meta-range), so it
//   restarts when a compaction or commit changes either.
// - The last compaction of a branch is recorded at c/cs/<repo>/<branch>
//   (state, times, message) for `GET .../compact` and `sediment branch compact --wait`.
// - Metrics: graveler_compaction_seconds{outcome=completed|failed|discarded},
//   graveler_staged_mutations{repository,branch}.
//
// Thread-safety: all public methods are safe from many threads.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "base/clock.h"
#include "base/status.h"

namespace sediment {
class MetricsRegistry;
class GaugeMetric;
template <typename M>
class MetricFamily;
class PeriodicTask;
class ThreadPool;
namespace kv {
class KvStore;
}
}  // namespace sediment

namespace sediment::catalog {

class Catalog;

struct StagingCompactorOptions {
  bool auto_trigger = false;
  int64_t threshold = 50000;
  int workers = 2;
  std::string owner;  // this server's name, for leases
  std::chrono::milliseconds flush_interval{1000};
  Duration lease_ttl = std::chrono::seconds(60);  // renewed every third of it while a compaction runs
  int recheck_every_flushes = 30;                 // with auto_trigger: re-read every counter this often
};

struct CompactionStatus {
  std::string state;  // "" (never), running, completed, failed, discarded
  int64_t started_us = 0;
  int64_t finished_us = 0;
  std::string message;
};

class StagingCompactor {
 public:
  StagingCompactor(Catalog* catalog, std::shared_ptr<kv::KvStore> kv, std::shared_ptr<Clock> clock,
                   MetricsRegistry* metrics, StagingCompactorOptions options);
  ~StagingCompactor();  // Stop()

  // Starts the workers and the counter flush; with auto_trigger, re-checks
  // every stored counter once (a compaction cut off by a restart re-triggers).
  Status Start(bool background = true);
  void Stop();

  // Queues a compaction of the branch on a free worker. Busy if none is free;
  // NotFound / Forbidden (read-only) checked before queueing.
  Status Submit(const std::string& repo, const std::string& branch);
  // Runs one now on the calling thread (tests, benchmarks). Busy if the branch's
  // lease is held elsewhere.
  Status CompactNow(const std::string& repo, const std::string& branch);

  // Counts staged mutations written into staging token `token` (the catalog's
  // mutation listener). Writes into a token that a commit or compaction has
  // folded by the next flush are not counted: they left staging.
  void RecordMutations(const std::string& repo, const std::string& branch, const std::string& token, int64_t n);
  // Flushes counted mutations to the shared counters and triggers compactions.
  Status Flush();
  // The shared count for a branch.
  Result<int64_t> StagedMutations(const std::string& repo, const std::string& branch);

  Result<CompactionStatus> LastStatus(const std::string& repo, const std::string& branch);

  // Runs after a compaction sealed its staging token (tests interleave with it).
  void SetAfterSealHookForTesting(std::function<void()> hook) { after_seal_ = std::move(hook); }

 private:
  using BranchKey = std::pair<std::string, std::string>;
  Status Run(const std::string& repo, const std::string& branch);
  Status WriteStatus(const std::string& repo, const std::string& branch, const CompactionStatus& st);
  Result<std::string> CounterEpoch(const std::string& repo, const std::string& branch);
  // With auto_trigger: submits every branch whose stored count is over the threshold
  // (a compaction cut off by a crash, or refused while another server held the lease).
  Status RecheckCounters();
  // Drops a deleted branch's pending count and gauge series ("" : every branch of the repository).
  void ForgetBranch(const std::string& repo, const std::string& branch);
  MetricFamily<GaugeMetric>& StagedGauge();

  Catalog* catalog_;
  std::shared_ptr<kv::KvStore> kv_;
  std::shared_ptr<Clock> clock_;
  MetricsRegistry* metrics_;
  const StagingCompactorOptions options_;
  std::function<void()> after_seal_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<PeriodicTask> flusher_;

  std::mutex mu_;
  // Per branch, mutations counted but not flushed, by the staging token they
  // went to: at a flush, a token a commit or compaction folded (neither the
  // branch's current token nor one of its sealed ones) is staged no more.
  using Deltas = std::map<std::string, int64_t>;
  std::map<BranchKey, Deltas> deltas_;  // GUARDED_BY(mu_)
  std::set<BranchKey> running_;         // GUARDED_BY(mu_): compactions queued or running here
  int flushes_ = 0;                     // GUARDED_BY(mu_)
};

}  // namespace sediment::catalog
