// Catalog, resets: ResetBranch (drop all uncommitted changes), ResetPath (drop
// those to one path or prefix) and HardReset (move a clean branch to a ref).
#include <fmt/format.h>

#include "base/executor.h"
#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "catalog/committed_manager.h"
#include "catalog/keys.h"
#include "catalog/ref_manager.h"
#include "catalog/staging_manager.h"
#include "kv/kv.h"

namespace sediment::catalog {

using internal::BranchJson;
using internal::kCasRetries;
using internal::NewToken;

Status Catalog::ResetBranch(const std::string& repo_id, const std::string& branch) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_RETURN_NOT_OK(CheckProtection(repo, branch, /*commit=*/false));
  for (int i = 0; i < kCasRetries; ++i) {
    ARROW_ASSIGN_OR_RAISE(auto rec, refs_->LoadBranch(repo_id, branch));
    Branch next = rec.branch;
    next.staging_token = NewToken();
    next.sealed_tokens.clear();
    next.compacted_meta_range_id.clear();
    kv::Batch batch;
    batch.Require(kv::Precondition::Equals(BranchKey(repo_id, branch), rec.raw))
        .Put(BranchKey(repo_id, branch), BranchJson(next));
    StagingManager::Retire(&batch, rec.branch.staging_token);
    for (const auto& t : rec.branch.sealed_tokens) StagingManager::Retire(&batch, t);
    Status st = kv_->Apply(batch);
    if (st.ok()) {
      staging_->TriggerDrop();
      return Status::OK();
    }
    if (!IsPreconditionFailed(st)) return st;
  }
  return Busy(fmt::format("branch \"{}\" kept changing; retry the reset", branch));
}

// A reset never touches sealed tokens: a commit or compaction may be folding
// them, and would then carry the change back over the reset when it swaps. It
// deletes the path (or prefix) from the current token and, where the sealed
// tokens or a compacted meta-range still change a path, stages the committed
// value (or a tombstone) over them in the current token — written like any
// staged write, re-checked against a concurrent seal or commit (WriteStaged).
Status Catalog::ResetPath(const std::string& repo_id, const std::string& branch, const std::string& path, bool prefix) {
  if (!prefix) ARROW_RETURN_NOT_OK(ValidatePath(path));
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_RETURN_NOT_OK(CheckProtection(repo, branch, /*commit=*/false));
  auto reset = [&](const Branch& b) { return ResetPathOn(repo, b, path, prefix); };
  return WriteStaged(repo_id, branch, reset, "reset");
}

Status Catalog::ResetPathOn(const Repository& repo, const Branch& b, const std::string& path, bool prefix) {
  auto in_scope = [&](const std::string& key) { return prefix ? key.compare(0, path.size(), path) == 0 : key == path; };
  // 1. The current token's own changes.
  ARROW_RETURN_NOT_OK(staging_->Unstage(b.staging_token, path, prefix));
  if (b.sealed_tokens.empty() && b.compacted_meta_range_id.empty()) return Status::OK();

  // 2. What the sealed tokens over the base still change: the committed value over it.
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  ARROW_ASSIGN_OR_RAISE(auto commit_mr, CommitMetaRange(repo, b.commit_id));
  std::vector<std::unique_ptr<ValueIterator>> below;
  below.push_back(staging_->View(b, /*include_current=*/false));
  if (!b.compacted_meta_range_id.empty()) {
    ARROW_ASSIGN_OR_RAISE(auto compacted, committed_->LoadMetaRange(ns, b.compacted_meta_range_id));
    below.push_back(DiffAsChanges(committed_->Diff(ns, commit_mr, compacted)));
  }
  auto diff = NewLookupDiff(NewCombinedIterator(std::move(below)), committed_->NewIterator(ns, commit_mr));
  diff->SeekGE(path);
  return staging_->StageLeft(b.staging_token, *diff, in_scope);
}

Status Catalog::HardReset(const std::string& repo_id, const std::string& branch, const std::string& ref) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_RETURN_NOT_OK(CheckProtection(repo, branch, /*commit=*/false));
  ARROW_ASSIGN_OR_RAISE(auto target, ResolveRef(repo_id, ref));
  ARROW_ASSIGN_OR_RAISE(auto rec, RequireClean(repo, branch));
  Branch next = rec.branch;
  next.commit_id = target.commit_id;
  Status st = kv_->SetIf(BranchKey(repo_id, branch), BranchJson(next), rec.raw);
  if (IsPreconditionFailed(st)) return Conflict(fmt::format("branch \"{}\" changed meanwhile; retry", branch));
  return st;
}

}  // namespace sediment::catalog
