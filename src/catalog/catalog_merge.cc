// Catalog, three-way changes: Merge, Revert and CherryPick, each applied to a
// clean branch's commit as a new commit.
#include <fmt/format.h>

#include <algorithm>

#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "catalog/committed.h"
#include "kv/kv.h"

namespace sediment::catalog {

using internal::BranchJson;
using internal::NoChanges;

namespace {

Status DirtyBranch(const std::string& branch) {
  return InvalidArgument(fmt::format("branch \"{}\" has uncommitted changes (dirty branch)", branch));
}

}  // namespace

Result<std::vector<KeyValueEntry>> Catalog::ThreeWay(const Repository& repo, const std::string& base,
                                                     const std::string& source, const std::string& dest,
                                                     MergeStrategy strategy) {
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  ARROW_ASSIGN_OR_RAISE(auto base_mr, CommitMetaRange(repo, base));
  ARROW_ASSIGN_OR_RAISE(auto src_mr, CommitMetaRange(repo, source));
  ARROW_ASSIGN_OR_RAISE(auto dst_mr, CommitMetaRange(repo, dest));
  auto sd = DiffMetaRanges(*ranges_, ns, base_mr, src_mr);
  auto dd = DiffMetaRanges(*ranges_, ns, base_mr, dst_mr);
  std::vector<KeyValueEntry> changes;
  std::vector<std::string> conflicts;
  bool s_ok = sd->Next(), d_ok = dd->Next();
  while (s_ok) {
    if (d_ok && dd->key() < sd->key()) {
      d_ok = dd->Next();
      continue;
    }
    if (d_ok && dd->key() == sd->key()) {
      if (!SameObject(sd->right(), dd->right())) {
        if (strategy == MergeStrategy::kSourceWins) {
          changes.push_back({sd->key(), sd->right()});
        } else if (strategy == MergeStrategy::kNone) {
          conflicts.push_back(sd->key());
        }
      }
      d_ok = dd->Next();
    } else {
      changes.push_back({sd->key(), sd->right()});
    }
    s_ok = sd->Next();
  }
  ARROW_RETURN_NOT_OK(sd->status());
  ARROW_RETURN_NOT_OK(dd->status());
  if (!conflicts.empty()) {
    std::string list;
    for (size_t i = 0; i < conflicts.size() && i < 5; ++i) list += (i ? ", " : "") + conflicts[i];
    if (conflicts.size() > 5) list += fmt::format(" and {} more", conflicts.size() - 5);
    return Conflict(fmt::format("conflict: {} path(s) changed on both sides: {}", conflicts.size(), list));
  }
  return changes;
}

Result<Catalog::BranchRecord> Catalog::RequireClean(const Repository& repo, const std::string& branch) {
  ARROW_ASSIGN_OR_RAISE(auto rec, LoadBranch(repo.id, branch));
  ARROW_ASSIGN_OR_RAISE(bool dirty, IsDirty(repo.id, rec.branch));
  if (dirty) return DirtyBranch(branch);
  return rec;
}

Result<Commit> Catalog::CommitChanges(const Repository& repo, const BranchRecord& rec,
                                      std::vector<KeyValueEntry> changes, Commit c, bool allow_empty) {
  if (changes.empty() && !allow_empty) return NoChanges("nothing to apply");
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  ARROW_ASSIGN_OR_RAISE(auto head, GetCommit(repo.id, rec.branch.commit_id));
  ARROW_ASSIGN_OR_RAISE(auto head_mr, ranges_->LoadMetaRange(ns, head.meta_range_id));
  auto it = NewVectorIterator(std::move(changes));
  ARROW_ASSIGN_OR_RAISE(auto mr, ApplyChanges(*ranges_, ns, head_mr, *it));
  c.meta_range_id = mr->id;
  c.generation = head.generation;
  for (const auto& p : c.parents) {
    ARROW_ASSIGN_OR_RAISE(auto pc, GetCommit(repo.id, p));
    c.generation = std::max(c.generation, pc.generation);
  }
  c.generation += 1;
  if (c.creation_date == 0) c.creation_date = ToUnixMicros(clock_->Now()) / 1000000;
  ARROW_RETURN_NOT_OK(StoreCommit(repo.id, &c).status());
  Branch next = rec.branch;
  next.commit_id = c.id;
  Status st = kv_->SetIf(BranchKey(repo.id, rec.branch.id), BranchJson(next), rec.raw);
  if (IsPreconditionFailed(st)) {
    return Conflict(fmt::format("branch \"{}\" changed meanwhile; retry", rec.branch.id));
  }
  ARROW_RETURN_NOT_OK(st);
  return c;
}

Result<Commit> Catalog::Merge(const std::string& repo_id, const std::string& source_ref, const std::string& dest_branch,
                              const CommitParams& params, MergeStrategy strategy) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  if (!params.force) ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_ASSIGN_OR_RAISE(auto src, ResolveRef(repo_id, source_ref));
  ARROW_ASSIGN_OR_RAISE(auto rec, RequireClean(repo, dest_branch));
  ARROW_ASSIGN_OR_RAISE(auto base, MergeBase(repo_id, src.commit_id, rec.branch.commit_id));
  if (base == src.commit_id && !params.allow_empty) {
    return NoChanges(fmt::format("\"{}\" is already merged into \"{}\"", source_ref, dest_branch));
  }
  ARROW_ASSIGN_OR_RAISE(auto changes, ThreeWay(repo, base, src.commit_id, rec.branch.commit_id, strategy));
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
  return CommitChanges(repo, rec, std::move(changes), std::move(c), /*allow_empty=*/true);
}

Result<Commit> Catalog::Revert(const std::string& repo_id, const std::string& branch, const std::string& ref,
                               int parent_number, const CommitParams& params) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  if (!params.force) ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_ASSIGN_OR_RAISE(auto target, ResolveRef(repo_id, ref));
  ARROW_ASSIGN_OR_RAISE(auto c, GetCommit(repo_id, target.commit_id));
  if (c.parents.empty()) return InvalidArgument(fmt::format("commit {} has no parent to revert to", c.id));
  if (c.parents.size() > 1 && parent_number < 1) {
    return InvalidArgument(fmt::format("commit {} is a merge: give parent_number (1..{})", c.id, c.parents.size()));
  }
  int pn = std::max(parent_number, 1);
  if (pn > static_cast<int>(c.parents.size())) {
    return InvalidArgument(fmt::format("parent_number {} out of range for commit {}", pn, c.id));
  }
  ARROW_ASSIGN_OR_RAISE(auto rec, RequireClean(repo, branch));
  ARROW_ASSIGN_OR_RAISE(auto changes,
                        ThreeWay(repo, c.id, c.parents[pn - 1], rec.branch.commit_id, MergeStrategy::kNone));
  Commit out;
  out.parents = {rec.branch.commit_id};
  out.committer = params.committer;
  out.message = params.message.empty() ? fmt::format("Revert {}", c.id) : params.message;
  out.metadata = params.metadata;
  return CommitChanges(repo, rec, std::move(changes), std::move(out), params.allow_empty);
}

Result<Commit> Catalog::CherryPick(const std::string& repo_id, const std::string& branch, const std::string& ref,
                                   int parent_number, const std::string& committer) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_ASSIGN_OR_RAISE(auto target, ResolveRef(repo_id, ref));
  ARROW_ASSIGN_OR_RAISE(auto c, GetCommit(repo_id, target.commit_id));
  if (c.parents.empty()) return InvalidArgument(fmt::format("commit {} has no parent", c.id));
  int pn = std::max(parent_number, 1);
  if (pn > static_cast<int>(c.parents.size())) {
    return InvalidArgument(fmt::format("parent_number {} out of range for commit {}", pn, c.id));
  }
  ARROW_ASSIGN_OR_RAISE(auto rec, RequireClean(repo, branch));
  ARROW_ASSIGN_OR_RAISE(auto changes,
                        ThreeWay(repo, c.parents[pn - 1], c.id, rec.branch.commit_id, MergeStrategy::kNone));
  Commit out;
  out.parents = {rec.branch.commit_id};
  out.committer = committer;
  out.message = c.message;
  out.metadata = c.metadata;
  return CommitChanges(repo, rec, std::move(changes), std::move(out), false);
}

}  // namespace sediment::catalog
