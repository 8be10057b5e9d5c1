#include "catalog/staging_compactor.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/crypto.h"
#include "base/executor.h"
#include "base/metrics.h"
#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "catalog/entry.h"
#include "catalog/keys.h"
#include "kv/kv.h"
#include "kv/lease.h"

namespace sediment::catalog {

using nlohmann::json;

namespace {

const char* OutcomeName(CompactionOutcome o) {
  switch (o) {
    case CompactionOutcome::kCompleted:
      return "completed";
    case CompactionOutcome::kDiscarded:
      return "discarded";
    case CompactionOutcome::kNothingToDo:
      return "completed";
  }
  return "completed";
}

}  // namespace

StagingCompactor::StagingCompactor(Catalog* catalog, std::shared_ptr<kv::KvStore> kv, std::shared_ptr<Clock> clock,
                                   MetricsRegistry* metrics, StagingCompactorOptions options)
    : catalog_(catalog), kv_(std::move(kv)), clock_(std::move(clock)), metrics_(metrics), options_(std::move(options)) {
  metrics_->Histogram("graveler_compaction_seconds", "Staging compactions by outcome, and how long they took.",
                      {"outcome"});
  metrics_->Gauge("graveler_staged_mutations",
                  "Staged mutations counted on a branch since its last compaction or commit (shared, approximate).",
                  {"repository", "branch"});
}

StagingCompactor::~StagingCompactor() { Stop(); }

Status StagingCompactor::Start(bool background) {
  pool_ = std::make_unique<ThreadPool>("staging-compact", options_.workers, /*max_queued=*/0);
  catalog_->SetMutationListener([this](const std::string& repo, const std::string& branch, const std::string& token,
                                       int64_t n) { RecordMutations(repo, branch, token, n); });
  catalog_->SetBranchGoneListener(
      [this](const std::string& repo, const std::string& branch) { ForgetBranch(repo, branch); });
  if (background) {
    flusher_ = std::make_unique<PeriodicTask>("staging-count", options_.flush_interval, [this] {
      Status st = Flush();
      if (!st.ok()) spdlog::warn("staging compaction: flushing mutation counts failed (will retry): {}", st.ToString());
    });
    flusher_->Start();
  }
  if (options_.auto_trigger) ARROW_RETURN_NOT_OK(RecheckCounters());
  return Status::OK();
}

Status StagingCompactor::RecheckCounters() {
  // Series of branches deleted elsewhere (another server, or a race with a flush) go too.
  for (const auto& [labels, gauge] : StagedGauge().Series()) {
    if (IsNotFound(CounterEpoch(labels[0], labels[1]).status())) StagedGauge().Remove(labels);
  }
  const std::string counters = MutationCountersPrefix();
  return kv_->ScanAll(counters, "", [&](const kv::KeyValue& item) -> Result<bool> {
    auto j = json::parse(item.value, nullptr, false);
    if (j.is_discarded() || j.value("count", int64_t{0}) < options_.threshold) return true;
    std::string rest = item.key.substr(counters.size());
    auto slash = rest.find('/');
    if (slash == std::string::npos) return true;
    std::string repo = rest.substr(0, slash), branch = rest.substr(slash + 1);
    auto epoch = CounterEpoch(repo, branch);
    if (epoch.ok() && *epoch == j.value("epoch", "")) {
      Status st = Submit(repo, branch);
      if (!st.ok()) spdlog::debug("staging compaction of {}/{} not started: {}", repo, branch, st.message());
    }
    return true;
  });
}

void StagingCompactor::Stop() {
  if (flusher_) flusher_->Stop();
  flusher_.reset();
  if (pool_) pool_->Shutdown();
  catalog_->SetMutationListener(nullptr);
  catalog_->SetBranchGoneListener(nullptr);
}

MetricFamily<GaugeMetric>& StagingCompactor::StagedGauge() {
  return metrics_->Gauge("graveler_staged_mutations", "", {"repository", "branch"});
}

void StagingCompactor::ForgetBranch(const std::string& repo, const std::string& branch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = deltas_.begin(); it != deltas_.end();) {
      it =
          it->first.first == repo && (branch.empty() || it->first.second == branch) ? deltas_.erase(it) : std::next(it);
    }
  }
  if (branch.empty()) {
    StagedGauge().RemoveWhere(0, repo);
  } else {
    StagedGauge().Remove({repo, branch});
  }
}

void StagingCompactor::RecordMutations(const std::string& repo, const std::string& branch, const std::string& token,
                                       int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  deltas_[{repo, branch}][token] += n;
}

namespace {

// A count holds while the branch's commit and compacted meta-range do.
std::string EpochOf(const catalog::Branch& b) { return b.commit_id + "/" + b.compacted_meta_range_id; }

}  // namespace

Result<std::string> StagingCompactor::CounterEpoch(const std::string& repo, const std::string& branch) {
  ARROW_ASSIGN_OR_RAISE(auto b, catalog_->GetBranch(repo, branch));
  return EpochOf(b);
}

Result<int64_t> StagingCompactor::StagedMutations(const std::string& repo, const std::string& branch) {
  auto raw = kv_->Get(MutationCounterKey(repo, branch));
  if (IsNotFound(raw.status())) return 0;
  ARROW_RETURN_NOT_OK(raw.status());
  auto j = json::parse(*raw, nullptr, false);
  ARROW_ASSIGN_OR_RAISE(auto epoch, CounterEpoch(repo, branch));
  if (j.is_discarded() || j.value("epoch", "") != epoch) return 0;
  return j.value("count", int64_t{0});
}

Status StagingCompactor::Flush() {
  std::map<BranchKey, Deltas> deltas;
  bool recheck;
  {
    std::lock_guard<std::mutex> lock(mu_);
    deltas.swap(deltas_);
    recheck = options_.auto_trigger && ++flushes_ % options_.recheck_every_flushes == 0;
  }
  if (recheck) ARROW_RETURN_NOT_OK(RecheckCounters());
  Status first_error;
  for (const auto& [key, delta] : deltas) {
    const auto& [repo, branch] = key;
    int64_t count = 0;
    bool gone = false;
    Status st = [&]() -> Status {
      for (int attempt = 0; attempt < 10; ++attempt) {
        auto b = catalog_->GetBranch(repo, branch);
        if (IsNotFound(b.status())) {  // branch or repository gone
          gone = true;
          return Status::OK();
        }
        ARROW_RETURN_NOT_OK(b.status());
        const std::string epoch = EpochOf(*b);
        auto raw = kv_->Get(MutationCounterKey(repo, branch));
        std::optional<std::string> expected;
        // Writes into a token folded since (committed or compacted) are not staged any more.
        count = 0;
        for (const auto& [token, n] : delta) {
          const auto& sealed = b->sealed_tokens;
          if (token == b->staging_token || std::find(sealed.begin(), sealed.end(), token) != sealed.end()) count += n;
        }
        if (raw.ok()) {
          expected = *raw;
          auto j = json::parse(*raw, nullptr, false);
          if (!j.is_discarded() && j.value("epoch", "") == epoch) count += j.value("count", int64_t{0});
        } else if (!IsNotFound(raw.status())) {
          return raw.status();
        }
        // Only while the branch exists: a count must not outlive a deleted branch.
        kv::Batch batch;
        batch.Require(kv::Precondition::Present(catalog::BranchKey(repo, branch)))
            .Require(expected ? kv::Precondition::Equals(MutationCounterKey(repo, branch), *expected)
                              : kv::Precondition::Absent(MutationCounterKey(repo, branch)))
            .Put(MutationCounterKey(repo, branch), json{{"epoch", epoch}, {"count", count}}.dump());
        Status set = kv_->Apply(batch);
        if (!IsPreconditionFailed(set)) return set;
      }
      return Busy("mutation counter contended");
    }();
    if (!st.ok()) {
      // Keep the delta for the next flush.
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [token, n] : delta) deltas_[key][token] += n;
      if (first_error.ok()) first_error = st;
      continue;
    }
    if (gone) {
      StagedGauge().Remove({repo, branch});
      continue;
    }
    StagedGauge().With({repo, branch}).Set(static_cast<double>(count));
    if (options_.auto_trigger && count >= options_.threshold) {
      Status sub = Submit(repo, branch);
      if (!sub.ok() && !IsBusy(sub)) spdlog::warn("staging compaction of {}/{}: {}", repo, branch, sub.message());
    }
  }
  return first_error;
}

Status StagingCompactor::Submit(const std::string& repo_id, const std::string& branch) {
  ARROW_ASSIGN_OR_RAISE(auto repo, catalog_->GetRepository(repo_id));
  if (repo.read_only) return Forbidden(fmt::format("repository \"{}\" is read-only: it is never compacted", repo_id));
  ARROW_RETURN_NOT_OK(catalog_->GetBranch(repo_id, branch).status());
  if (!pool_) return Busy("staging compaction is not running");
  BranchKey key{repo_id, branch};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_.count(key)) return Status::OK();  // already queued or running here
    running_.insert(key);
  }
  Status st = pool_->TrySubmit([this, key] {
    Status s = Run(key.first, key.second);
    if (!s.ok() && !IsBusy(s)) {
      spdlog::warn("staging compaction of {}/{} failed: {}", key.first, key.second, s.ToString());
    }
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(key);
  });
  if (!st.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(key);
    return Busy(fmt::format("no staging-compaction worker is free ({} busy); retry later", options_.workers));
  }
  return Status::OK();
}

Status StagingCompactor::CompactNow(const std::string& repo, const std::string& branch) { return Run(repo, branch); }

Status StagingCompactor::WriteStatus(const std::string& repo, const std::string& branch, const CompactionStatus& st) {
  // Only while the branch exists: DeleteBranch removes the status with the branch.
  kv::Batch batch;
  batch.Require(kv::Precondition::Present(catalog::BranchKey(repo, branch)))
      .Put(CompactionStatusKey(repo, branch), json{{"state", st.state},
                                                   {"started_us", st.started_us},
                                                   {"finished_us", st.finished_us},
                                                   {"message", st.message}}
                                                  .dump());
  Status s = kv_->Apply(batch);
  return IsPreconditionFailed(s) ? Status::OK() : s;
}

Result<CompactionStatus> StagingCompactor::LastStatus(const std::string& repo, const std::string& branch) {
  auto raw = kv_->Get(CompactionStatusKey(repo, branch));
  if (IsNotFound(raw.status())) return CompactionStatus{};
  ARROW_RETURN_NOT_OK(raw.status());
  auto j = json::parse(*raw, nullptr, false);
  if (j.is_discarded()) return CompactionStatus{};
  return CompactionStatus{j.value("state", ""), j.value("started_us", int64_t{0}), j.value("finished_us", int64_t{0}),
                          j.value("message", "")};
}

Status StagingCompactor::Run(const std::string& repo, const std::string& branch) {
  // A lease per run (not per server), so two runs in one process exclude each other too.
  kv::Lease lease(kv_, CompactionLeaseKey(repo, branch), options_.owner + "#" + RandomHex(4), options_.lease_ttl);
  ARROW_ASSIGN_OR_RAISE(bool held, lease.TryAcquire(clock_->Now()));
  if (!held) {
    auto holder = lease.Holder(clock_->Now());
    return Busy(fmt::format("a compaction of {}/{} is already running on {}", repo, branch,
                            holder.ok() ? *holder : std::string("another server")));
  }
  CompactionStatus status{"running", ToUnixMicros(clock_->Now()), 0, ""};
  (void)WriteStatus(repo, branch, status);
  // Renew the lease while the work runs, so a long compaction keeps it and a
  // dead server's lease expires within a TTL.
  auto renew_every = std::chrono::duration_cast<std::chrono::milliseconds>(options_.lease_ttl / 3);
  PeriodicTask renewer("staging-lease", std::max(renew_every, std::chrono::milliseconds(10)), [&] {
    auto ok = lease.TryAcquire(clock_->Now());
    if (!ok.ok() || !*ok) spdlog::warn("staging compaction of {}/{}: lost its lease", repo, branch);
  });
  renewer.Start();
  auto t0 = std::chrono::steady_clock::now();
  auto result = catalog_->CompactStaging(repo, branch, after_seal_);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  renewer.Stop();
  std::string outcome = result.ok() ? OutcomeName(result->outcome) : "failed";
  metrics_->Histogram("graveler_compaction_seconds", "", {"outcome"}).With({outcome}).Observe(secs);
  status.state = outcome;
  status.finished_us = ToUnixMicros(clock_->Now());
  if (result.ok() && result->outcome == CompactionOutcome::kNothingToDo) {
    // Nothing staged (e.g. reset since it was counted): a stale count must not trigger again.
    (void)kv_->Delete(MutationCounterKey(repo, branch));
  }
  if (result.ok()) {
    status.message = fmt::format("{} entries folded, {} ranges written, {} reused", result->staged_entries,
                                 result->stats.ranges_written, result->stats.ranges_reused);
    spdlog::info("staging compaction of {}/{} {} in {:.2f}s: {}", repo, branch, outcome, secs, status.message);
  } else {
    status.message = result.status().message();
  }
  (void)WriteStatus(repo, branch, status);
  (void)lease.Release();
  return result.ok() ? Status::OK() : result.status();
}

}  // namespace sediment::catalog
