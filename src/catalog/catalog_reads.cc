// Catalog, reads: the view of a ref (a commit's meta-range, or a branch's
// staging over its base), GetEntry and ListEntries.
#include <fmt/format.h>

#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "catalog/committed_manager.h"
#include "catalog/staging_manager.h"

namespace sediment::catalog {

Result<std::shared_ptr<const MetaRange>> Catalog::CommitMetaRange(const Repository& repo,
                                                                  const std::string& commit_id) {
  ARROW_ASSIGN_OR_RAISE(auto c, GetCommit(repo.id, commit_id));
  return committed_->LoadMetaRange(repo, c.meta_range_id);
}

Result<std::shared_ptr<const MetaRange>> Catalog::BaseMetaRange(const Repository& repo, const Branch& branch) {
  if (!branch.compacted_meta_range_id.empty()) return committed_->LoadMetaRange(repo, branch.compacted_meta_range_id);
  return CommitMetaRange(repo, branch.commit_id);
}

Result<std::unique_ptr<ValueIterator>> Catalog::View(const Repository& repo, const ResolvedRef& ref) {
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  if (!ref.branch) {
    ARROW_ASSIGN_OR_RAISE(auto mr, CommitMetaRange(repo, ref.commit_id));
    return committed_->NewIterator(ns, mr);
  }
  ARROW_ASSIGN_OR_RAISE(auto mr, BaseMetaRange(repo, *ref.branch));
  std::vector<std::unique_ptr<ValueIterator>> sources;
  sources.push_back(staging_->View(*ref.branch));
  sources.push_back(committed_->NewIterator(ns, mr));
  return NewTombstoneFilter(NewCombinedIterator(std::move(sources)));
}

// ---------------------------------------------------------------------------
// Objects

Result<std::optional<std::string>> Catalog::LookupOnBranch(const Repository& repo, const Branch& branch,
                                                           const std::string& path, bool include_current) {
  ARROW_ASSIGN_OR_RAISE(auto staged, staging_->Lookup(branch, path, include_current));
  if (staged) {
    if (staged->empty()) return std::nullopt;  // a tombstone hides what is below
    return std::move(*staged);
  }
  ARROW_ASSIGN_OR_RAISE(auto mr, BaseMetaRange(repo, branch));
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  return committed_->Get(ns, *mr, path);
}

Result<Entry> Catalog::GetEntry(const std::string& repo_id, const std::string& ref, const std::string& path) {
  ARROW_RETURN_NOT_OK(ValidatePath(path));
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_ASSIGN_OR_RAISE(auto resolved, ResolveRef(repo_id, ref));
  std::optional<std::string> v;
  if (resolved.branch) {
    ARROW_ASSIGN_OR_RAISE(v, LookupOnBranch(repo, *resolved.branch, path, /*include_current=*/true));
  } else {
    ARROW_ASSIGN_OR_RAISE(auto mr, CommitMetaRange(repo, resolved.commit_id));
    ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
    ARROW_ASSIGN_OR_RAISE(v, committed_->Get(ns, *mr, path));
  }
  if (!v) return NotFound(fmt::format("object \"{}\" not found at \"{}\"", path, ref));
  return DecodeEntry(*v);
}

Result<Page<ListItem>> Catalog::ListEntries(const std::string& repo_id, const std::string& ref,
                                            const ListOptions& opts) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  return ListEntries(repo, ref, opts);
}

Result<Page<ListItem>> Catalog::ListEntries(const Repository& repo, const std::string& ref, const ListOptions& opts) {
  ARROW_ASSIGN_OR_RAISE(auto resolved, ResolveRef(repo.id, ref));
  ARROW_ASSIGN_OR_RAISE(auto it, View(repo, resolved));
  auto common_prefix = [](std::string path) {
    ListItem item;
    item.path = std::move(path);
    item.common_prefix = true;
    return item;
  };
  auto object = [&it](const std::string& key) -> Result<ListItem> {
    ListItem item;
    item.path = key;
    ARROW_ASSIGN_OR_RAISE(item.entry, DecodeEntry(it->value()));
    return item;
  };
  return internal::PageDelimited<ListItem>(*it, opts, common_prefix, object);
}

}  // namespace sediment::catalog
