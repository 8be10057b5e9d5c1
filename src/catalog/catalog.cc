// Catalog: construction, the background drop of dead staging tokens (and the
// cleanup of deleted repositories), and the helpers every part of the catalog
// shares (see catalog.h for the split).
#include "catalog/catalog.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "base/metrics.h"
#include "base/wildcard.h"
#include "catalog/committed_manager.h"
#include "catalog/keys.h"
#include "catalog/ref_manager.h"
#include "catalog/staging_manager.h"
#include "kv/kv.h"

namespace sediment::catalog {

Catalog::Catalog(std::shared_ptr<kv::KvStore> kv, std::shared_ptr<Clock> clock, CatalogOptions options)
    : kv_(std::move(kv)), clock_(std::move(clock)), options_(std::move(options)) {
  staging_ = std::make_unique<StagingManager>(kv_, clock_, options_.dropped_token_grace);
  committed_ = std::make_unique<CommittedManager>(options_.s3);
  refs_ = std::make_unique<RefManager>(kv_);
}

Catalog::~Catalog() { Stop(); }

Status Catalog::Start(bool background) {
  ARROW_RETURN_NOT_OK(committed_->Open(options_.cache_dir, options_.cache_bytes, options_.ranges));
  if (background) {
    {
      // From now on a deletion's cleanup may run: every module's prefixes must be known (AddRepositoryKeyOwner).
      std::lock_guard<std::mutex> lock(key_owners_.mu);
      key_owners_.closed = true;
    }
    staging_->StartDropper([this] {
      Status st = DropDeadTokens();
      if (!st.ok()) spdlog::warn("catalog: dropping dead staging tokens failed (will retry): {}", st.ToString());
      if (options_.drop_passes) options_.drop_passes->Add();
    });
  }
  return Status::OK();
}

void Catalog::Stop() { staging_->StopDropper(); }

RangeStore& Catalog::ranges() { return committed_->ranges(); }

Status Catalog::DropDeadTokens() {
  // Repository deletions cut off before their cleanup finished (it queues their tokens).
  const std::string deletions_prefix = RepoDeletionsPrefix();
  ARROW_ASSIGN_OR_RAISE(auto deletions, kv_->Scan(deletions_prefix, "", 100));
  for (const auto& item : deletions.items) {
    ARROW_RETURN_NOT_OK(FinishRepositoryDeletion(item.key.substr(deletions_prefix.size())));
  }
  return staging_->DropRetiredTokens();
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
