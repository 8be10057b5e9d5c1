// Catalog, three-way changes: Merge, Revert and CherryPick, each applied to a
// clean branch's commit as a new commit (the changes themselves are
// CommittedManager::ThreeWay's).
#include <fmt/format.h>

#include <algorithm>

#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "catalog/committed_manager.h"
#include "catalog/keys.h"
#include "catalog/ref_manager.h"
#include "kv/kv.h"

namespace sediment::catalog {

using internal::BranchJson;
using internal::NoChanges;

namespace {

Status DirtyBranch(const std::string& branch) {
  return InvalidArgument(fmt::format("branch \"{}\" has uncommitted changes (dirty branch)", branch));
}

}  // namespace

Result<std::unique_ptr<ValueIterator>> Catalog::ThreeWay(const Repository& repo, const std::string& base,
                                                         const std::string& source, const std::string& dest,
                                                         MergeStrategy strategy, bool* any_change, bool resolve) {
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  ARROW_ASSIGN_OR_RAISE(auto base_mr, CommitMetaRange(repo, base));
  ARROW_ASSIGN_OR_RAISE(auto src_mr, CommitMetaRange(repo, source));
  ARROW_ASSIGN_OR_RAISE(auto dst_mr, CommitMetaRange(repo, dest));
  CommittedManager::Resolve resolver;
  if (resolve && merge_resolver_ != nullptr) {
    MergeResolver* r = merge_resolver_;
    resolver = [r, repo](const std::string& path, const std::string& base_value, const std::string& source_value,
                         const std::string& dest_value) -> Result<std::optional<std::string>> {
      if (!r->Handles(path)) return std::nullopt;
      auto decode = [](const std::string& v) -> Result<std::optional<Entry>> {
        if (v.empty()) return std::nullopt;
        ARROW_ASSIGN_OR_RAISE(auto e, DecodeEntry(v));
        return std::optional<Entry>(std::move(e));
      };
      ARROW_ASSIGN_OR_RAISE(auto b, decode(base_value));
      ARROW_ASSIGN_OR_RAISE(auto s, decode(source_value));
      ARROW_ASSIGN_OR_RAISE(auto d, decode(dest_value));
      ARROW_ASSIGN_OR_RAISE(auto merged, r->Resolve(repo, path, b, s, d));
      return std::optional<std::string>(EncodeEntry(merged));
    };
  }
  return committed_->ThreeWay(ns, base_mr, src_mr, dst_mr, strategy, any_change, std::move(resolver));
}

Result<Catalog::BranchRecord> Catalog::RequireClean(const Repository& repo, const std::string& branch) {
  ARROW_ASSIGN_OR_RAISE(auto rec, refs_->LoadBranch(repo.id, branch));
  ARROW_ASSIGN_OR_RAISE(bool dirty, IsDirty(repo.id, rec.branch));
  if (dirty) return DirtyBranch(branch);
  return rec;
}

Result<Commit> Catalog::CommitChanges(const Repository& repo, const BranchRecord& rec, ValueIterator& changes, Commit c,
                                      const std::function<void(const Commit&, kv::Batch*)>& also,
                                      const std::function<Status(const Commit&)>& before) {
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  ARROW_ASSIGN_OR_RAISE(auto head, GetCommit(repo.id, rec.branch.commit_id));
  ARROW_ASSIGN_OR_RAISE(auto head_mr, committed_->LoadMetaRange(ns, head.meta_range_id));
  ARROW_ASSIGN_OR_RAISE(auto mr, committed_->Apply(ns, head_mr, changes));
  c.meta_range_id = mr->id;
  c.generation = head.generation;
  for (const auto& p : c.parents) {
    ARROW_ASSIGN_OR_RAISE(auto pc, GetCommit(repo.id, p));
    c.generation = std::max(c.generation, pc.generation);
  }
  c.generation += 1;
  if (c.creation_date == 0) c.creation_date = ToUnixMicros(clock_->Now()) / 1000000;
  ARROW_RETURN_NOT_OK(refs_->StoreCommit(repo.id, &c).status());
  if (before) ARROW_RETURN_NOT_OK(before(c));
  Branch next = rec.branch;
  next.commit_id = c.id;
  kv::Batch b;
  b.Require(kv::Precondition::Equals(BranchKey(repo.id, rec.branch.id), rec.raw))
      .Put(BranchKey(repo.id, rec.branch.id), BranchJson(next));
  if (also) also(c, &b);
  Status st = kv_->Apply(b);
  if (IsPreconditionFailed(st)) {
    return Conflict(fmt::format("branch \"{}\" changed meanwhile; retry", rec.branch.id));
  }
  ARROW_RETURN_NOT_OK(st);
  return c;
}

Result<Commit> Catalog::DoMerge(const std::string& repo_id, const std::string& source_ref,
                                const std::string& dest_branch, const CommitParams& params, MergeStrategy strategy) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  if (!params.force) ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_ASSIGN_OR_RAISE(auto src, ResolveRef(repo_id, source_ref));
  ARROW_ASSIGN_OR_RAISE(auto rec, RequireClean(repo, dest_branch));
  ARROW_ASSIGN_OR_RAISE(auto base, refs_->MergeBase(repo_id, src.commit_id, rec.branch.commit_id));
  if (base == src.commit_id && !params.allow_empty) {
    return NoChanges(fmt::format("\"{}\" is already merged into \"{}\"", source_ref, dest_branch));
  }
  bool any_change = false;
  ARROW_ASSIGN_OR_RAISE(auto changes, ThreeWay(repo, base, src.commit_id, rec.branch.commit_id, strategy, &any_change,
                                               /*resolve=*/true));
  Commit c;
  c.parents = {rec.branch.commit_id};
  if (!params.squash) c.parents.push_back(src.commit_id);
  c.committer = params.committer;
  c.message = params.message.empty() ? fmt::format("Merge '{}' into '{}'", source_ref, dest_branch) : params.message;
  c.metadata = params.metadata;
  c.metadata[".lakefs.merge.strategy"] = strategy == MergeStrategy::kSourceWins ? "source-wins"
                                         : strategy == MergeStrategy::kDestWins ? "dest-wins"
                                                                                : "default";
  if (params.date) c.creation_date = *params.date;
  return CommitChanges(repo, rec, *changes, std::move(c), nullptr, params.before_publish);
}

Result<Commit> Catalog::DoRevert(const std::string& repo_id, const std::string& branch, const std::string& ref,
                                 int parent_number, const CommitParams& params) {
  return ReplayCommit(Replay::kRevert, repo_id, branch, ref, parent_number, params);
}

Result<Commit> Catalog::DoCherryPick(const std::string& repo_id, const std::string& branch, const std::string& ref,
                                     int parent_number, const CommitParams& params) {
  return ReplayCommit(Replay::kCherryPick, repo_id, branch, ref, parent_number, params);
}

Result<Commit> Catalog::ReplayCommit(Replay how, const std::string& repo_id, const std::string& branch,
                                     const std::string& ref, int parent_number, const CommitParams& params) {
  const bool revert = how == Replay::kRevert;
  const char* what = revert ? "revert" : "cherry-pick";
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  if (!params.force) ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_ASSIGN_OR_RAISE(auto target, ResolveRef(repo_id, ref));
  ARROW_ASSIGN_OR_RAISE(auto c, GetCommit(repo_id, target.commit_id));
  if (c.parents.empty()) return InvalidArgument(fmt::format("commit {} has no parent to {} against", c.id, what));
  if (c.parents.size() > 1 && parent_number < 1) {
    return InvalidArgument(fmt::format("must specify 1-based parent number for {}ing merge commit {} (1..{})",
                                       revert ? "revert" : "cherry-pick", c.id, c.parents.size()));
  }
  int pn = std::max(parent_number, 1);
  if (pn > static_cast<int>(c.parents.size())) {
    return InvalidArgument(fmt::format("parent_number {} out of range for commit {}", pn, c.id));
  }
  const std::string& parent = c.parents[pn - 1];
  ARROW_ASSIGN_OR_RAISE(auto rec, RequireClean(repo, branch));
  bool any_change = false;
  // A revert applies commit -> parent to the branch; a cherry-pick, parent -> commit.
  ARROW_ASSIGN_OR_RAISE(auto changes, ThreeWay(repo, revert ? c.id : parent, revert ? parent : c.id,
                                               rec.branch.commit_id, MergeStrategy::kNone, &any_change));
  if (!any_change && !(revert && params.allow_empty)) return NoChanges("nothing to apply");
  Commit out;
  out.parents = {rec.branch.commit_id};
  out.committer = params.committer;
  if (revert) {
    out.message = params.message.empty() ? fmt::format("Revert {}", c.id) : params.message;
    out.metadata = params.metadata;
  } else {
    out.message = params.message.empty() ? c.message : params.message;
    out.metadata = params.metadata.empty() ? c.metadata : params.metadata;
    out.metadata["cherry-pick-origin"] = c.id;
    out.metadata["cherry-pick-committer"] = c.committer;
  }
  return CommitChanges(repo, rec, *changes, std::move(out));
}

}  // namespace sediment::catalog
