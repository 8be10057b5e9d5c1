// Catalog: construction, the background drop of dead staging tokens (and the
// cleanup of deleted repositories), and the helpers every part of the catalog
// shares (see catalog.h for the split).
#include "catalog/catalog.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "base/executor.h"
#include "base/failpoint.h"
#include "base/metrics.h"
#include "base/wildcard.h"
#include "catalog/catalog_internal.h"
#include "catalog/keys.h"
#include "kv/kv.h"

namespace sediment::catalog {

namespace internal {

namespace {

Status DeletePrefixImpl(kv::KvStore& kv, const std::string& prefix, const std::optional<kv::Precondition>& still) {
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto page, kv.Scan(prefix, "", 1000));
    if (page.items.empty()) return Status::OK();
    kv::Batch b;
    if (still) b.Require(*still);
    for (const auto& item : page.items) b.Delete(item.key);
    ARROW_RETURN_NOT_OK(kv.Apply(b));
    if (!page.has_more) return Status::OK();
  }
}

}  // namespace

Status DeletePrefix(kv::KvStore& kv, const std::string& prefix) { return DeletePrefixImpl(kv, prefix, std::nullopt); }

Status DeletePrefixWhile(kv::KvStore& kv, const std::string& prefix, const kv::Precondition& still) {
  return DeletePrefixImpl(kv, prefix, still);
}

Result<bool> HasStagedEntries(kv::KvStore& kv, const Branch& branch, StagedProbe probe) {
  std::vector<std::string> tokens = branch.sealed_tokens;
  tokens.push_back(branch.staging_token);
  bool staged = false;
  for (const auto& t : tokens) {
    ARROW_ASSIGN_OR_RAISE(auto page, kv.Scan(StagingPrefix(t), "", 1));
    staged = staged || !page.items.empty();
    if (staged && probe == StagedProbe::kStopAtFirst) return true;
  }
  return staged;
}

}  // namespace internal

Catalog::Catalog(std::shared_ptr<kv::KvStore> kv, std::shared_ptr<Clock> clock, CatalogOptions options)
    : kv_(std::move(kv)), clock_(std::move(clock)), options_(std::move(options)) {}

Catalog::~Catalog() { Stop(); }

Status Catalog::Start(bool background) {
  ARROW_ASSIGN_OR_RAISE(ranges_, RangeStore::Open(options_.cache_dir, options_.cache_bytes, options_.ranges));
  if (background) {
    {
      // From now on a deletion's cleanup may run: every module's prefixes must be known (AddRepositoryKeyOwner).
      std::lock_guard<std::mutex> lock(key_owners_.mu);
      key_owners_.closed = true;
    }
    dropper_ = std::make_unique<PeriodicTask>("catalog-drop", std::chrono::seconds(2), [this] {
      Status st = DropDeadTokens();
      if (!st.ok()) spdlog::warn("catalog: dropping dead staging tokens failed (will retry): {}", st.ToString());
      if (options_.drop_passes) options_.drop_passes->Add();
    });
    dropper_->Start();
  }
  return Status::OK();
}

void Catalog::Stop() {
  if (dropper_) dropper_->Stop();
  dropper_.reset();
}

Status Catalog::DropDeadTokens() {
  // Repository deletions cut off before their cleanup finished (it queues their tokens).
  const std::string deletions_prefix = RepoDeletionsPrefix();
  ARROW_ASSIGN_OR_RAISE(auto deletions, kv_->Scan(deletions_prefix, "", 100));
  for (const auto& item : deletions.items) {
    ARROW_RETURN_NOT_OK(FinishRepositoryDeletion(item.key.substr(deletions_prefix.size())));
  }
  // A retired token stays readable for dropped_token_grace: a reader that
  // loaded the branch just before a commit or compaction swapped still reads
  // it. The grace runs from the dropper's first sight of the record, which it
  // stamps (records are written without a time by every retiring batch).
  std::vector<kv::KeyValue> records;
  const std::string drops_prefix = DropsPrefix();
  ARROW_RETURN_NOT_OK(kv_->ScanAll(drops_prefix, "", [&](const kv::KeyValue& item) -> Result<bool> {
    records.push_back(item);
    return true;
  }));
  const int64_t now_us = ToUnixMicros(clock_->Now());
  const int64_t grace_us = std::chrono::duration_cast<std::chrono::microseconds>(options_.dropped_token_grace).count();
  for (const auto& item : records) {
    int64_t seen_us = internal::DropRecordTime(item.value);
    if (seen_us < 0) {
      if (grace_us > 0) {
        Status st = kv_->SetIf(item.key, internal::DropRecord(now_us), item.value);
        if (!st.ok() && !IsPreconditionFailed(st)) return st;
        continue;
      }
    } else if (now_us - seen_us < grace_us) {
      continue;
    }
    std::string token = item.key.substr(drops_prefix.size());
    ARROW_RETURN_NOT_OK(internal::DeletePrefix(*kv_, StagingPrefix(token)));
    SEDIMENT_FAILPOINT("catalog.tokens.after_drop");
    // A writer that re-queued the token meanwhile (its late entry) keeps the record for the next round.
    kv::Batch done;
    done.Require(kv::Precondition::Equals(item.key, item.value)).Delete(item.key);
    Status st = kv_->Apply(done);
    if (!st.ok() && !IsPreconditionFailed(st)) return st;
  }
  return Status::OK();
}

Status Catalog::CheckProtection(const Repository& repo, const std::string& branch, bool commit) {
  for (const auto& pattern : repo.protected_branches) {
    if (WildcardMatch(pattern, branch)) {
      return Forbidden(commit ? "cannot commit to protected branch" : "cannot write to protected branch");
    }
  }
  return Status::OK();
}

Status Catalog::CheckWritable(const Repository& repo) {
  if (repo.read_only) return Forbidden(fmt::format("repository \"{}\" is read-only", repo.id));
  return Status::OK();
}

}  // namespace sediment::catalog
