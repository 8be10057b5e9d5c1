// Catalog, refs: the public calls on repositories, branches, commits, refs and
// tags that RefManager answers alone, name and path checks, and the branch
// operations that also touch staging (DoDeleteBranch, IsDirty). Repositories'
// life cycle: catalog_repositories.cc.
#include <fmt/format.h>

#include "base/crypto.h"
#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "catalog/catalog_refs_internal.h"
#include "catalog/keys.h"
#include "catalog/ref_manager.h"
#include "catalog/staging_manager.h"
#include "kv/kv.h"

namespace sediment::catalog {

using refs_internal::kMaxPathBytes;

// ---------------------------------------------------------------------------
// Validation

Status Catalog::ValidateRepositoryName(const std::string& name) { return RefManager::ValidateRepositoryName(name); }
Status Catalog::ValidateBranchName(const std::string& name) { return RefManager::ValidateBranchName(name); }
Status Catalog::ValidateTagName(const std::string& name) { return RefManager::ValidateTagName(name); }

Status Catalog::ValidatePath(const std::string& path) {
  if (path.empty()) return InvalidArgument("invalid path: empty");
  if (static_cast<int64_t>(path.size()) > kMaxPathBytes) {
    return InvalidArgument(fmt::format("invalid path: {} bytes, at most {} allowed", path.size(), kMaxPathBytes));
  }
  if (path.find('\0') != std::string::npos) return InvalidArgument("invalid path: contains a NUL byte");
  // Paths are JSON strings in the API and S3 keys: text, not bytes.
  if (!IsUtf8(path)) return InvalidArgument("invalid path: not valid UTF-8");
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Repositories, commits and refs

Result<Repository> Catalog::GetRepository(const std::string& id) { return refs_->GetRepository(id); }

Result<Page<Repository>> Catalog::ListRepositories(const std::string& prefix, const std::string& after,
                                                   int64_t amount) {
  return refs_->ListRepositories(prefix, after, amount);
}

Result<Commit> Catalog::GetCommit(const std::string& repo, const std::string& commit_id) {
  return refs_->GetCommit(repo, commit_id);
}

Result<ResolvedRef> Catalog::ResolveRef(const std::string& repo, const std::string& ref) {
  return refs_->ResolveRef(repo, ref);
}

Result<Page<Commit>> Catalog::Log(const std::string& repo, const std::string& ref, const std::string& after,
                                  int64_t amount, bool first_parent) {
  return refs_->Log(repo, ref, after, amount, first_parent);
}

// ---------------------------------------------------------------------------
// Branches

Result<Branch> Catalog::DoCreateBranch(const std::string& repo, const std::string& name,
                                       const std::string& source_ref) {
  return refs_->CreateBranch(repo, name, source_ref);
}

Result<Branch> Catalog::GetBranch(const std::string& repo, const std::string& name) {
  return refs_->GetBranch(repo, name);
}

Result<Page<Branch>> Catalog::ListBranches(const std::string& repo, const std::string& prefix, const std::string& after,
                                           int64_t amount) {
  return refs_->ListBranches(repo, prefix, after, amount);
}

Status Catalog::DoDeleteBranch(const std::string& repo_id, const std::string& name) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  if (name == repo.default_branch) {
    return Forbidden(fmt::format("cannot delete the default branch \"{}\" of \"{}\"", name, repo_id));
  }
  ARROW_ASSIGN_OR_RAISE(auto rec, refs_->LoadBranch(repo_id, name));
  kv::Batch batch;
  batch.Require(kv::Precondition::Equals(BranchKey(repo_id, name), rec.raw))
      .Delete(BranchKey(repo_id, name))
      .Delete(MutationCounterKey(repo_id, name))
      .Delete(CompactionStatusKey(repo_id, name))
      .Delete(CompactionLeaseKey(repo_id, name));
  StagingManager::Retire(&batch, rec.branch.staging_token);
  for (const auto& t : rec.branch.sealed_tokens) StagingManager::Retire(&batch, t);
  Status st = kv_->Apply(batch);
  if (IsPreconditionFailed(st)) return Conflict(fmt::format("branch \"{}\" changed while deleting; retry", name));
  ARROW_RETURN_NOT_OK(st);
  staging_->TriggerDrop();
  if (on_branch_gone_) on_branch_gone_(repo_id, name);
  return Status::OK();
}

Result<bool> Catalog::IsDirty(const std::string& repo, const Branch& branch) {
  (void)repo;
  if (!branch.compacted_meta_range_id.empty()) return true;
  return staging_->HasStagedEntries(branch, StagedProbe::kStopAtFirst);
}

// ---------------------------------------------------------------------------
// Tags

Result<Tag> Catalog::DoCreateTag(const std::string& repo, const std::string& id, const std::string& ref, bool force) {
  return refs_->CreateTag(repo, id, ref, force);
}

Result<Tag> Catalog::GetTag(const std::string& repo, const std::string& id) { return refs_->GetTag(repo, id); }

Result<Page<Tag>> Catalog::ListTags(const std::string& repo, const std::string& prefix, const std::string& after,
                                    int64_t amount) {
  return refs_->ListTags(repo, prefix, after, amount);
}

Status Catalog::DoDeleteTag(const std::string& repo, const std::string& id) { return refs_->DeleteTag(repo, id); }

}  // namespace sediment::catalog
