// Catalog, resets: ResetBranch (drop all uncommitted changes), ResetPath (drop
// those to one path or prefix) and HardReset (move a clean branch to a ref).
#include <fmt/format.h>

#include "base/executor.h"
#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "catalog/committed.h"
#include "kv/kv.h"

namespace sediment::catalog {

using internal::BranchJson;
using internal::DropKey;
using internal::kCasRetries;
using internal::NewToken;

Status Catalog::ResetBranch(const std::string& repo_id, const std::string& branch) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  for (int i = 0; i < kCasRetries; ++i) {
    ARROW_ASSIGN_OR_RAISE(auto rec, LoadBranch(repo_id, branch));
    Branch next = rec.branch;
    next.staging_token = NewToken();
    next.sealed_tokens.clear();
    next.compacted_meta_range_id.clear();
    kv::Batch batch;
    batch.Require(kv::Precondition::Equals(BranchKey(repo_id, branch), rec.raw))
        .Put(BranchKey(repo_id, branch), BranchJson(next))
        .Put(DropKey(rec.branch.staging_token), "");
    for (const auto& t : rec.branch.sealed_tokens) batch.Put(DropKey(t), "");
    Status st = kv_->Apply(batch);
    if (st.ok()) {
      if (dropper_) dropper_->Trigger();
      return Status::OK();
    }
    if (!IsPreconditionFailed(st)) return st;
  }
  return Busy(fmt::format("branch \"{}\" kept changing; retry the reset", branch));
}

Status Catalog::ResetPath(const std::string& repo_id, const std::string& branch, const std::string& path, bool prefix) {
  if (!prefix) ARROW_RETURN_NOT_OK(ValidatePath(path));
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_ASSIGN_OR_RAISE(auto rec, LoadBranch(repo_id, branch));
  const Branch& b = rec.branch;
  std::vector<std::string> tokens = b.sealed_tokens;
  tokens.push_back(b.staging_token);
  for (const auto& t : tokens) {
    if (prefix) {
      kv::Batch batch;
      ARROW_RETURN_NOT_OK(kv_->ScanAll(StagingPrefix(t) + path, "", [&](const kv::KeyValue& item) -> Result<bool> {
        batch.Delete(item.key);
        if (batch.mutations.size() >= 1000) {
          ARROW_RETURN_NOT_OK(kv_->Apply(batch));
          batch = {};
        }
        return true;
      }));
      if (!batch.mutations.empty()) ARROW_RETURN_NOT_OK(kv_->Apply(batch));
    } else {
      ARROW_RETURN_NOT_OK(kv_->Delete(StagingPrefix(t) + path));
    }
  }
  if (!b.compacted_meta_range_id.empty()) {
    // The compacted meta-range still carries the change: restage the committed value over it.
    ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
    ARROW_ASSIGN_OR_RAISE(auto commit_mr, CommitMetaRange(repo, b.commit_id));
    ARROW_ASSIGN_OR_RAISE(auto compacted, ranges_->LoadMetaRange(ns, b.compacted_meta_range_id));
    auto diff = DiffMetaRanges(*ranges_, ns, commit_mr, compacted);
    diff->SeekGE(path);
    while (diff->Next()) {
      if (prefix ? diff->key().compare(0, path.size(), path) != 0 : diff->key() != path) break;
      ARROW_RETURN_NOT_OK(kv_->Set(StagingPrefix(b.staging_token) + diff->key(), diff->left()));
    }
    ARROW_RETURN_NOT_OK(diff->status());
  }
  return Status::OK();
}

Status Catalog::HardReset(const std::string& repo_id, const std::string& branch, const std::string& ref) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_ASSIGN_OR_RAISE(auto target, ResolveRef(repo_id, ref));
  ARROW_ASSIGN_OR_RAISE(auto rec, RequireClean(repo, branch));
  Branch next = rec.branch;
  next.commit_id = target.commit_id;
  Status st = kv_->SetIf(BranchKey(repo_id, branch), BranchJson(next), rec.raw);
  if (IsPreconditionFailed(st)) return Conflict(fmt::format("branch \"{}\" changed meanwhile; retry", branch));
  return st;
}

}  // namespace sediment::catalog
