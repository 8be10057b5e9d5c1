// CommittedManager: meta-ranges in the repositories' namespaces, through the
// range cache (see committed_manager.h).
#include "catalog/committed_manager.h"

#include <fmt/format.h>

#include <map>

#include "blob/blob.h"
#include "catalog/catalog_refs_internal.h"

namespace sediment::catalog {

using refs_internal::LocationOf;

namespace {

// The changes of a three-way merge, one at a time: every key source changed
// since base, except where dest changed it too (the same way: nothing to do;
// another way: source's value if source wins, else skipped and, with kNone,
// counted as a conflict).
// With a resolver, a conflict it merges yields its merged value instead
// (remembered in `resolved`, shared by the check pass and the writing pass).
class ThreeWayChanges final : public ValueIterator {
 public:
  using Resolved = std::map<std::string, Result<std::optional<std::string>>>;
  ThreeWayChanges(std::unique_ptr<DiffIterator> source, std::unique_ptr<DiffIterator> dest, MergeStrategy strategy,
                  CommittedManager::Resolve resolve, std::shared_ptr<Resolved> resolved)
      : sd_(std::move(source)),
        dd_(std::move(dest)),
        strategy_(strategy),
        resolve_(std::move(resolve)),
        resolved_(std::move(resolved)) {}

  bool Next() override {
    merged_ = false;
    if (!started_) {
      started_ = true;
      d_ok_ = dd_->Next();
    }
    for (bool s_ok = sd_->Next(); s_ok; s_ok = sd_->Next()) {
      while (d_ok_ && dd_->key() < sd_->key()) d_ok_ = dd_->Next();
      if (!d_ok_ || dd_->key() != sd_->key()) return true;
      bool same = SameObject(sd_->right(), dd_->right());
      std::string dest_value = dd_->right();
      d_ok_ = dd_->Next();
      if (same) continue;
      if (strategy_ == MergeStrategy::kSourceWins) return true;
      if (strategy_ != MergeStrategy::kNone) continue;
      if (resolve_) {
        auto at = resolved_->find(sd_->key());
        if (at == resolved_->end()) {
          at = resolved_->emplace(sd_->key(), resolve_(sd_->key(), sd_->left(), sd_->right(), dest_value)).first;
        }
        if (at->second.ok() && !at->second->has_value()) {
          AddConflict(sd_->key());  // not the resolver's
          continue;
        }
        if (at->second.ok()) {
          merged_ = true;
          merged_value_ = **at->second;
          return true;
        }
        if (!IsConflict(at->second.status())) {
          error_ = at->second.status();
          return false;
        }
        AddConflict(sd_->key() + " (" + at->second.status().message() + ")");
        continue;
      }
      AddConflict(sd_->key());
    }
    return false;
  }
  void SeekGE(std::string_view) override { error_ = Status::NotImplemented("three-way changes are read in order"); }
  const std::string& key() const override { return sd_->key(); }
  const std::string& value() const override { return merged_ ? merged_value_ : sd_->right(); }
  Status status() const override {
    if (!error_.ok()) return error_;
    ARROW_RETURN_NOT_OK(sd_->status());
    return dd_->status();
  }

  void AddConflict(std::string what) {
    if (conflict_sample_.size() < 5) conflict_sample_.push_back(std::move(what));
    conflicts_++;
  }
  int64_t conflicts() const { return conflicts_; }
  Status ConflictError() const {
    std::string list;
    for (size_t i = 0; i < conflict_sample_.size(); ++i) list += (i ? ", " : "") + conflict_sample_[i];
    if (conflicts_ > static_cast<int64_t>(conflict_sample_.size())) {
      list += fmt::format(" and {} more", conflicts_ - static_cast<int64_t>(conflict_sample_.size()));
    }
    return Conflict(fmt::format("conflict: {} path(s) changed on both sides: {}", conflicts_, list));
  }

 private:
  std::unique_ptr<DiffIterator> sd_, dd_;
  const MergeStrategy strategy_;
  bool started_ = false;
  bool d_ok_ = false;
  int64_t conflicts_ = 0;
  std::vector<std::string> conflict_sample_;  // the first few
  Status error_;
  const CommittedManager::Resolve resolve_;
  const std::shared_ptr<Resolved> resolved_;
  bool merged_ = false;  // value() is merged_value_
  std::string merged_value_;
};

}  // namespace

CommittedManager::CommittedManager(S3Config s3) : s3_(std::move(s3)) {}

Status CommittedManager::Open(const std::string& cache_dir, int64_t cache_bytes, const RangeSettings& settings) {
  ARROW_ASSIGN_OR_RAISE(ranges_, RangeStore::Open(cache_dir, cache_bytes, settings));
  return Status::OK();
}

Result<Namespace> CommittedManager::RepositoryNamespace(const Repository& repo) {
  const std::string& location = LocationOf(repo);
  std::lock_guard<std::mutex> lock(ns_mu_);
  auto it = namespaces_.find(location);
  if (it != namespaces_.end()) return it->second;
  ARROW_ASSIGN_OR_RAISE(auto store, blob::OpenBlobStore(location, s3_));
  namespaces_[location] = store;
  return store;
}

Result<std::shared_ptr<const MetaRange>> CommittedManager::LoadMetaRange(const Repository& repo,
                                                                         const std::string& id) {
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  return ranges_->LoadMetaRange(ns, id);
}

Result<std::shared_ptr<const MetaRange>> CommittedManager::LoadMetaRange(const Namespace& ns, const std::string& id) {
  return ranges_->LoadMetaRange(ns, id);
}

std::unique_ptr<ValueIterator> CommittedManager::NewIterator(const Namespace& ns,
                                                             const std::shared_ptr<const MetaRange>& mr) {
  return ranges_->NewIterator(ns, mr);
}

Result<std::optional<std::string>> CommittedManager::Get(const Namespace& ns, const MetaRange& mr,
                                                         const std::string& path) {
  return ranges_->Get(ns, mr, path);
}

Result<std::shared_ptr<const MetaRange>> CommittedManager::Apply(const Namespace& ns,
                                                                 const std::shared_ptr<const MetaRange>& base,
                                                                 ValueIterator& changes, ApplyStats* stats) {
  return ApplyChanges(*ranges_, ns, base, changes, stats);
}

std::unique_ptr<DiffIterator> CommittedManager::Diff(const Namespace& ns, const std::shared_ptr<const MetaRange>& left,
                                                     const std::shared_ptr<const MetaRange>& right) {
  return DiffMetaRanges(*ranges_, ns, left, right);
}

Result<std::unique_ptr<ValueIterator>> CommittedManager::ThreeWay(const Namespace& ns,
                                                                  const std::shared_ptr<const MetaRange>& base_mr,
                                                                  const std::shared_ptr<const MetaRange>& src_mr,
                                                                  const std::shared_ptr<const MetaRange>& dst_mr,
                                                                  MergeStrategy strategy, bool* any_change,
                                                                  Resolve resolve) {
  auto resolved = std::make_shared<ThreeWayChanges::Resolved>();
  auto open = [&] {
    return std::make_unique<ThreeWayChanges>(DiffMetaRanges(*ranges_, ns, base_mr, src_mr),
                                             DiffMetaRanges(*ranges_, ns, base_mr, dst_mr), strategy, resolve,
                                             resolved);
  };
  *any_change = true;  // not known without a pass; merges with a strategy allow an empty commit
  if (strategy == MergeStrategy::kNone) {
    // Conflicts are found before anything is written, in a pass of their own.
    auto check = open();
    int64_t changes = 0;
    while (check->Next()) changes++;
    ARROW_RETURN_NOT_OK(check->status());
    if (check->conflicts() > 0) return check->ConflictError();
    *any_change = changes > 0;
  }
  return std::unique_ptr<ValueIterator>(open());
}

}  // namespace sediment::catalog
