// CommittedManager: the catalog's committed data (graveler's
// CommittedManager): meta-ranges and ranges in each repository's storage
// namespace, read through the range cache (RangeStore), and the blob store of
// each namespace. It knows meta-ranges, not commits: which meta-range a commit
// or branch has is the refs' (RefManager), and the Catalog composes the two.
// Its operations are committed.h's free functions bound to its RangeStore.
//
// Owns: the RangeStore (opened by Open, from Catalog::Start) and the cache of
// namespaces' blob stores, by location.
//
// Thread-safety: every method is safe to call from many threads once Open
// has returned (the namespace cache is under its own mutex; the RangeStore is
// thread-safe); iterators belong to one thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/config.h"
#include "base/status.h"
#include "catalog/committed.h"
#include "catalog/iterator.h"
#include "catalog/range_store.h"
#include "catalog/records.h"

namespace sediment::catalog {

class CommittedManager {
 public:
  // `s3`: how to reach S3 namespaces (CatalogOptions::s3).
  explicit CommittedManager(S3Config s3);

  // Opens the range cache. REQUIRES: called once, before any other method.
  Status Open(const std::string& cache_dir, int64_t cache_bytes, const RangeSettings& settings);
  RangeStore& ranges() { return *ranges_; }

  // The blob store behind a repository's storage namespace (its location), cached.
  Result<Namespace> RepositoryNamespace(const Repository& repo);
  // The meta-range `id` of `repo`'s namespace.
  Result<std::shared_ptr<const MetaRange>> LoadMetaRange(const Repository& repo, const std::string& id);
  Result<std::shared_ptr<const MetaRange>> LoadMetaRange(const Namespace& ns, const std::string& id);

  // Every entry of `mr`, in key order.
  std::unique_ptr<ValueIterator> NewIterator(const Namespace& ns, const std::shared_ptr<const MetaRange>& mr);
  // The encoded entry at `path` in `mr`, or nullopt.
  Result<std::optional<std::string>> Get(const Namespace& ns, const MetaRange& mr, const std::string& path);
  // ApplyChanges: `base` with `changes` (sorted; "" deletes) applied, as a new meta-range.
  Result<std::shared_ptr<const MetaRange>> Apply(const Namespace& ns, const std::shared_ptr<const MetaRange>& base,
                                                 ValueIterator& changes, ApplyStats* stats = nullptr);
  // DiffMetaRanges: the keys whose entries differ from `left` to `right`.
  std::unique_ptr<DiffIterator> Diff(const Namespace& ns, const std::shared_ptr<const MetaRange>& left,
                                     const std::shared_ptr<const MetaRange>& right);
  // The changes that turn dest into dest + (source - base), streamed in key
  // order from the two diffs (memory does not grow with them). Conflict on a
  // path changed differently on both sides, unless `strategy` settles it:
  // with kNone a first pass over the diffs looks for conflicts and changes
  // (*any_change) before anything is written.
  // `resolve`, if given, is offered each conflict first (encoded entries, ""
  // absent: base, source, dest): its value is the merged one, nullopt an
  // ordinary conflict, its Conflict a conflict with a reason; it is called
  // once per path.
  using Resolve = std::function<Result<std::optional<std::string>>(const std::string& path, const std::string& base,
                                                                   const std::string& source, const std::string& dest)>;
  Result<std::unique_ptr<ValueIterator>> ThreeWay(const Namespace& ns, const std::shared_ptr<const MetaRange>& base,
                                                  const std::shared_ptr<const MetaRange>& source,
                                                  const std::shared_ptr<const MetaRange>& dest, MergeStrategy strategy,
                                                  bool* any_change, Resolve resolve = nullptr);

 private:
  const S3Config s3_;
  std::unique_ptr<RangeStore> ranges_;  // set by Open

  std::mutex ns_mu_;
  std::map<std::string, Namespace> namespaces_;  // GUARDED_BY(ns_mu_), by location
};

}  // namespace sediment::catalog
