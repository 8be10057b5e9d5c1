// Catalog, diffs: DiffUncommitted and DiffRefs (the merge base of a three-dot
// diff is RefManager::MergeBase's).
#include <fmt/format.h>

#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "catalog/committed_manager.h"
#include "catalog/ref_manager.h"
#include "catalog/staging_manager.h"

namespace sediment::catalog {

Result<Page<DiffItem>> Catalog::CollectDiff(DiffIterator& diff, const ListOptions& opts) {
  auto common_prefix = [](std::string path) {
    DiffItem item;
    item.type = "changed";
    item.path = std::move(path);
    item.common_prefix = true;
    return item;
  };
  auto object = [&diff](const std::string& key) -> Result<DiffItem> {
    DiffItem item;
    item.type = diff.conflict()        ? "conflict"
                : diff.left().empty()  ? "added"
                : diff.right().empty() ? "removed"
                                       : "changed";
    item.path = key;
    const std::string& v = diff.right().empty() ? diff.left() : diff.right();
    ARROW_ASSIGN_OR_RAISE(auto e, DecodeEntry(v));
    item.size_bytes = e.size;
    return item;
  };
  return internal::PageDelimited<DiffItem>(diff, opts, common_prefix, object);
}

Result<Page<DiffItem>> Catalog::DiffUncommitted(const std::string& repo_id, const std::string& branch,
                                                const ListOptions& opts) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_ASSIGN_OR_RAISE(auto rec, refs_->LoadBranch(repo_id, branch));
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  ARROW_ASSIGN_OR_RAISE(auto commit_mr, CommitMetaRange(repo, rec.branch.commit_id));
  // Candidates: every staged key, plus every key the compacted meta-range changed.
  std::vector<std::unique_ptr<ValueIterator>> sources;
  sources.push_back(staging_->View(rec.branch));
  if (!rec.branch.compacted_meta_range_id.empty()) {
    ARROW_ASSIGN_OR_RAISE(auto compacted, committed_->LoadMetaRange(ns, rec.branch.compacted_meta_range_id));
    sources.push_back(DiffAsChanges(committed_->Diff(ns, commit_mr, compacted)));
  }
  auto diff = NewLookupDiff(NewCombinedIterator(std::move(sources)), committed_->NewIterator(ns, commit_mr));
  return CollectDiff(*diff, opts);
}

Result<Page<DiffItem>> Catalog::DiffRefs(const std::string& repo_id, const std::string& left, const std::string& right,
                                         bool three_dot, const ListOptions& opts) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_ASSIGN_OR_RAISE(auto l, ResolveRef(repo_id, left));
  ARROW_ASSIGN_OR_RAISE(auto r, ResolveRef(repo_id, right));
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  ARROW_ASSIGN_OR_RAISE(auto lmr, CommitMetaRange(repo, l.commit_id));
  ARROW_ASSIGN_OR_RAISE(auto rmr, CommitMetaRange(repo, r.commit_id));
  auto diff = committed_->Diff(ns, lmr, rmr);
  if (!three_dot) return CollectDiff(*diff, opts);
  // Three dots: what the right side changed since the merge base, compared
  // with the left side (an object both sides changed alike is no change).
  ARROW_ASSIGN_OR_RAISE(auto base, refs_->MergeBase(repo_id, l.commit_id, r.commit_id));
  ARROW_ASSIGN_OR_RAISE(auto bmr, CommitMetaRange(repo, base));
  auto compare = NewCompareIterator(std::move(diff), committed_->NewIterator(ns, bmr));
  return CollectDiff(*compare, opts);
}

}  // namespace sediment::catalog
