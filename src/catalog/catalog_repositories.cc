// Catalog, repositories: their namespaces (checked before anything is
// written), creation, deletion in one deciding batch with a cleanup that
// finishes even if cut off, and the rules kept in the record (protection, GC,
// metadata; written through RefManager::UpdateRepository).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>

#include "base/crypto.h"
#include "base/executor.h"
#include "blob/blob.h"
#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "catalog/catalog_refs_internal.h"
#include "catalog/committed_manager.h"
#include "catalog/keys.h"
#include "catalog/ref_manager.h"
#include "catalog/staging_manager.h"
#include "kv/kv.h"

namespace sediment::catalog {

using internal::BranchJson;
using internal::ClampAmount;
using internal::DeletePrefixWhile;
using internal::kCasRetries;
using internal::NewToken;
using internal::ParseBranch;
using nlohmann::json;
using namespace refs_internal;  // NOLINT: the shared helpers

// ---------------------------------------------------------------------------
// Repositories

Result<Namespace> Catalog::RepositoryNamespace(const Repository& repo) { return committed_->RepositoryNamespace(repo); }

Status Catalog::CheckNamespaceFree(const std::string& ns, const NamespaceLocation& where) {
  for (const auto& outer : where.Ancestors()) {
    auto owner = kv_->Get(NamespaceKey(outer.Uri()));
    if (owner.ok()) {
      return Conflict(fmt::format("storage namespace \"{}\" lies inside {}, the namespace of repository \"{}\"", ns,
                                  outer.Uri(), *owner));
    }
    if (!IsNotFound(owner.status())) return owner.status();
  }
  ARROW_ASSIGN_OR_RAISE(auto inner, kv_->Scan(NamespaceKey(where.Uri() + "/"), "", 1));
  if (!inner.items.empty()) {
    return Conflict(fmt::format("storage namespace \"{}\" holds {}, the namespace of repository \"{}\"", ns,
                                inner.items[0].key.substr(NamespaceKey("").size()), inner.items[0].value));
  }
  ARROW_ASSIGN_OR_RAISE(auto found, blob::FindStoredObject(where.Uri(), options_.s3, {kNamespaceMarker}));
  if (found) {
    return Conflict(fmt::format(
        "storage namespace \"{}\" already holds data (\"{}\"); a new repository needs an empty namespace", ns, *found));
  }
  return Status::OK();
}

Result<Repository> Catalog::CreateRepository(const std::string& id, const std::string& storage_namespace,
                                             const std::string& default_branch_in, bool read_only) {
  ARROW_RETURN_NOT_OK(ValidateRepositoryName(id));
  std::string default_branch = default_branch_in.empty() ? "main" : default_branch_in;
  ARROW_RETURN_NOT_OK(ValidateBranchName(default_branch));
  std::string ns = NormalizeNamespace(storage_namespace);
  if (ns.empty()) return InvalidArgument("storage_namespace is required");
  // Everything is checked before anything is written: where the namespace is
  // and that it may be there (rules 1-3 of storage_namespace.h), then that it
  // is free and empty (rule 4). A refused creation leaves no trace.
  NamespaceRules rules = options_.namespaces;
  if (!options_.cache_dir.empty()) rules.reserved_paths.push_back(options_.cache_dir);
  ARROW_ASSIGN_OR_RAISE(NamespaceLocation where, ResolveNamespace(ns, rules));
  Repository repo{id, ns, default_branch, ToUnixMicros(clock_->Now()) / 1000000, read_only, where.Uri(), {}};
  auto conflict = [&]() -> Status {
    if (kv_->Get(RepoKey(id)).ok()) return Conflict(fmt::format("repository \"{}\" already exists", id));
    auto owner = kv_->Get(NamespaceKey(repo.location));
    if (owner.ok()) {
      return Conflict(fmt::format("storage namespace \"{}\" is already used by repository \"{}\"", ns, *owner));
    }
    return Status::OK();
  };
  ARROW_RETURN_NOT_OK(conflict());
  ARROW_RETURN_NOT_OK(CheckNamespaceFree(ns, where));
  // A deletion of a repository of this name that was cut off: finish it first,
  // so nothing of the old repository shows through the new one.
  ARROW_RETURN_NOT_OK(FinishRepositoryDeletion(id));
  // Reachability: a namespace we cannot write to fails before anything is recorded.
  ARROW_ASSIGN_OR_RAISE(auto store, RepositoryNamespace(repo));
  ARROW_RETURN_NOT_OK(WithContext(store->Put(kNamespaceMarker, ""), "storage_namespace " + ns + " is not writable"));

  Commit initial;
  initial.message = "Repository created";
  initial.creation_date = repo.creation_date;
  std::string initial_body = CommitBody(initial).dump();
  initial.id = Sha256Hex(initial_body);
  Branch b{default_branch, initial.id, NewToken(), {}, ""};
  kv::Batch batch;
  batch.Require(kv::Precondition::Absent(RepoKey(id)))
      .Require(kv::Precondition::Absent(NamespaceKey(repo.location)))
      .Require(kv::Precondition::Absent(RepoDeletionKey(id)))
      .Put(CommitKey(id, initial.id), initial_body)
      .Put(RepoKey(id), RepoJson(repo).dump())
      .Put(NamespaceKey(repo.location), id)
      .Delete(RetiredNamespaceKey(repo.location))  // empty (CheckNamespaceFree): its past is over
      .Put(BranchKey(id, default_branch), BranchJson(b));
  for (const auto& outer : where.Ancestors()) batch.Require(kv::Precondition::Absent(NamespaceKey(outer.Uri())));
  ARROW_RETURN_NOT_OK(ApplyNewRepository(batch, ns, where, conflict, id));
  return repo;
}

// Every creation moves the namespace epoch: two creations that checked the
// namespaces at the same moment cannot both commit (a repository created
// meanwhile inside this one's namespace is otherwise named by no key the
// batch reads). The one that loses checks again, and retries if still free.
Status Catalog::ApplyNewRepository(const kv::Batch& batch, const std::string& ns, const NamespaceLocation& where,
                                   const std::function<Status()>& conflict, const std::string& id) {
  const std::string epoch_key = NamespaceEpochKey();
  for (int attempt = 0; attempt < kCasRetries; ++attempt) {
    auto epoch = kv_->Get(epoch_key);
    if (!epoch.ok() && !IsNotFound(epoch.status())) return epoch.status();
    ARROW_RETURN_NOT_OK(conflict());
    ARROW_RETURN_NOT_OK(CheckNamespaceFree(ns, where));  // after the epoch is read
    kv::Batch b = batch;
    b.Require(epoch.ok() ? kv::Precondition::Equals(epoch_key, *epoch) : kv::Precondition::Absent(epoch_key))
        .Put(epoch_key, RandomHex(8));
    Status st = kv_->Apply(b);
    if (!IsPreconditionFailed(st)) return st;
    if (kv_->Get(RepoDeletionKey(id)).ok()) {
      return Conflict(fmt::format("repository \"{}\" is being deleted concurrently; retry", id));
    }
  }
  return Conflict(fmt::format("repository \"{}\": too many repositories created at the same moment; retry", id));
}

// Deciding is one atomic batch: the repository record (as read), its namespace,
// every branch (as read; its tokens queued for the dropper) and tag, and a
// deletion record c/rd/<repo>. From then on the repository is gone for every
// call, and its name and namespace are free. The bulk cleanup follows
// (FinishRepositoryDeletion); if it is cut off, DropDeadTokens or a re-create of
// the name finishes it.
Status Catalog::DeleteRepository(const std::string& id) {
  for (int attempt = 0;; ++attempt) {
    ARROW_ASSIGN_OR_RAISE(auto rec, refs_->LoadRepository(id));
    kv::Batch batch;
    batch.Require(kv::Precondition::Equals(RepoKey(id), rec.raw))
        .Delete(RepoKey(id))
        .Delete(NamespaceKey(LocationOf(rec.repo)))
        .Put(RetiredNamespaceKey(LocationOf(rec.repo)), id)
        .Put(RepoDeletionKey(id), RandomHex(8));
    ARROW_RETURN_NOT_OK(kv_->ScanAll(BranchesPrefix(id), "", [&](const kv::KeyValue& item) -> Result<bool> {
      ARROW_ASSIGN_OR_RAISE(auto b, ParseBranch(item.key, item.value));
      batch.Require(kv::Precondition::Equals(item.key, item.value)).Delete(item.key);
      StagingManager::Retire(&batch, b.staging_token);
      for (const auto& t : b.sealed_tokens) StagingManager::Retire(&batch, t);
      return true;
    }));
    ARROW_RETURN_NOT_OK(kv_->ScanAll(TagsPrefix(id), "", [&](const kv::KeyValue& item) -> Result<bool> {
      batch.Delete(item.key);
      return true;
    }));
    Status st = kv_->Apply(batch);
    if (st.ok()) break;
    if (!IsPreconditionFailed(st)) return st;
    if (attempt + 1 >= kCasRetries) {
      return Busy(fmt::format("repository \"{}\" kept changing while being deleted; retry", id));
    }
  }
  staging_->TriggerDrop();
  if (on_branch_gone_) on_branch_gone_(id, "");
  // The repository is deleted; what remains is cleanup, which the background task retries.
  Status cleanup = FinishRepositoryDeletion(id);
  if (!cleanup.ok()) {
    spdlog::warn("catalog: repository \"{}\" deleted; its cleanup failed and will be retried: {}", id,
                 cleanup.ToString());
  }
  return Status::OK();
}

Status Catalog::AddRepositoryKeyOwner(std::string module, KeyOwner prefixes) {
  std::lock_guard<std::mutex> lock(key_owners_.mu);
  if (key_owners_.closed) {
    return Status::Invalid(fmt::format(
        "module {} names its repository keys after the catalog's background cleanup started: it must do so before "
        "Catalog::Start, or a deleted repository's records of it could be left behind",
        module));
  }
  key_owners_.by_module[std::move(module)] = std::move(prefixes);
  return Status::OK();
}

Status Catalog::FinishRepositoryDeletion(const std::string& id) {
  auto deletion = kv_->Get(RepoDeletionKey(id));
  if (IsNotFound(deletion.status())) return Status::OK();
  ARROW_RETURN_NOT_OK(deletion.status());
  // Tags, commits, the staging-compaction bookkeeping (counters, last status,
  // leases), multipart uploads, link addresses, imports (a job still running
  // finds its record gone and commits nothing: Catalog::CommitImport), then
  // what other modules keep of the repository (actions' runs).
  std::vector<std::string> prefixes = RepositoryKeyPrefixes(id);
  {
    std::lock_guard<std::mutex> lock(key_owners_.mu);
    for (const auto& [module, owned] : key_owners_.by_module) {
      for (std::string& p : owned(id)) {
        // Anything else could name other repositories' records, or every key.
        if (!p.ends_with("/") || p.find("/" + id + "/") == std::string::npos) {
          return Status::Invalid(
              fmt::format("module {} names \"{}\" as a prefix of repository \"{}\"'s keys: it "
                          "must end in '/' and hold the repository's name as a component",
                          module, p, id));
        }
        prefixes.push_back(std::move(p));
      }
    }
  }
  // Every batch requires this deletion still pending: once another cleanup has
  // finished it (and the name may be in use again), this one deletes nothing.
  const auto still = kv::Precondition::Equals(RepoDeletionKey(id), *deletion);
  auto finished_elsewhere = [&](const Status& st) {
    if (!IsPreconditionFailed(st)) return false;
    auto now = kv_->Get(RepoDeletionKey(id));
    return IsNotFound(now.status()) || (now.ok() && *now != *deletion);
  };
  refs_->ForgetCommits(id);
  // Branches created while the deletion was decided: their tokens go to the dropper too.
  for (int failures = 0;;) {
    ARROW_ASSIGN_OR_RAISE(auto page, kv_->Scan(BranchesPrefix(id), "", 1000));
    if (page.items.empty()) break;
    kv::Batch batch;
    batch.Require(still);
    for (const auto& item : page.items) {
      ARROW_ASSIGN_OR_RAISE(auto b, ParseBranch(item.key, item.value));
      batch.Require(kv::Precondition::Equals(item.key, item.value)).Delete(item.key);
      StagingManager::Retire(&batch, b.staging_token);
      for (const auto& t : b.sealed_tokens) StagingManager::Retire(&batch, t);
    }
    Status st = kv_->Apply(batch);
    if (finished_elsewhere(st)) return Status::OK();
    if (st.ok()) continue;
    if (!IsPreconditionFailed(st)) return st;
    if (++failures >= kCasRetries) {
      return Busy(fmt::format("branches of deleted repository \"{}\" kept changing; the cleanup will retry", id));
    }
  }
  for (const auto& p : prefixes) {
    Status st = DeletePrefixWhile(*kv_, p, still);
    if (finished_elsewhere(st)) return Status::OK();
    ARROW_RETURN_NOT_OK(st);
  }
  kv::Batch done;
  done.Require(still).Delete(RepoDeletionKey(id));
  Status st = kv_->Apply(done);
  if (IsPreconditionFailed(st)) return Status::OK();
  ARROW_RETURN_NOT_OK(st);
  staging_->TriggerDrop();
  return Status::OK();
}

}  // namespace sediment::catalog

namespace sediment::catalog {

Result<std::pair<std::vector<std::string>, std::string>> Catalog::GetBranchProtection(const std::string& repo_id) {
  ARROW_ASSIGN_OR_RAISE(auto rec, refs_->LoadRepository(repo_id));
  const auto& rules = rec.repo.protected_branches;
  std::string etag = rules.empty() ? "" : Sha256Hex(json(rules).dump()).substr(0, 32);
  return std::make_pair(rules, etag);
}

Status Catalog::SetBranchProtection(const std::string& repo_id, const std::vector<std::string>& patterns,
                                    const std::optional<std::string>& if_match) {
  for (const auto& p : patterns) {
    if (p.empty()) return InvalidArgument("a branch protection pattern must not be empty");
  }
  return refs_->UpdateRepository(repo_id, [&](Repository* repo) -> Status {
    const auto& rules = repo->protected_branches;
    std::string etag = rules.empty() ? "" : Sha256Hex(json(rules).dump()).substr(0, 32);
    if (if_match && *if_match != etag) return PreconditionFailed("Precondition failed");
    repo->protected_branches = patterns;
    return Status::OK();
  });
}

Status Catalog::ChangeBranchProtectionRule(const std::string& repo_id, const std::string& pattern, bool add) {
  if (pattern.empty()) return InvalidArgument("a branch protection pattern must not be empty");
  return refs_->UpdateRepository(repo_id, [&](Repository* repo) -> Status {
    auto& rules = repo->protected_branches;
    auto at = std::find(rules.begin(), rules.end(), pattern);
    if (add) {
      if (at != rules.end()) return Conflict(fmt::format("branch protection rule \"{}\" already exists", pattern));
      rules.push_back(pattern);
    } else {
      if (at == rules.end()) return NotFound(fmt::format("branch protection rule \"{}\" not found", pattern));
      rules.erase(at);
    }
    return Status::OK();
  });
}

Status Catalog::SetGcRules(const std::string& repo_id, const std::optional<GcRules>& rules) {
  constexpr int64_t kMaxDays = 365 * 1000;
  constexpr size_t kMaxBranches = 1000;
  if (rules) {
    auto check_days = [&](int64_t days, const std::string& what) -> Status {
      if (days < 0 || days > kMaxDays) {
        return InvalidArgument(fmt::format("{}: retention_days {} must be 0 to {}", what, days, kMaxDays));
      }
      return Status::OK();
    };
    ARROW_RETURN_NOT_OK(check_days(rules->default_retention_days, "default_retention_days"));
    if (rules->branches.size() > kMaxBranches) {
      return InvalidArgument(
          fmt::format("GC rules name {} branches, more than {}", rules->branches.size(), kMaxBranches));
    }
    for (const auto& [branch, days] : rules->branches) {
      ARROW_RETURN_NOT_OK(ValidateBranchName(branch));
      ARROW_RETURN_NOT_OK(check_days(days, fmt::format("branch \"{}\"", branch)));
    }
  }
  return refs_->UpdateRepository(repo_id, [&](Repository* repo) -> Status {
    repo->gc_rules = rules;
    return Status::OK();
  });
}

Status Catalog::UpdateRepositoryMetadata(const std::string& repo_id, const std::map<std::string, std::string>& set,
                                         const std::vector<std::string>& remove) {
  constexpr size_t kMaxKey = 256, kMaxValue = 4096, kMaxPairs = 256;
  for (const auto& [k, v] : set) {
    if (k.empty() || k.size() > kMaxKey) {
      return InvalidArgument(fmt::format("metadata key \"{}\" must have 1 to {} bytes", k.substr(0, 300), kMaxKey));
    }
    if (v.size() > kMaxValue) {
      return InvalidArgument(
          fmt::format("metadata value of \"{}\" has {} bytes, more than {}", k, v.size(), kMaxValue));
    }
  }
  return refs_->UpdateRepository(repo_id, [&](Repository* repo) -> Status {
    for (const auto& k : remove) repo->metadata.erase(k);
    for (const auto& [k, v] : set) repo->metadata[k] = v;
    if (repo->metadata.size() > kMaxPairs) {
      return InvalidArgument(fmt::format("a repository holds at most {} metadata keys", kMaxPairs));
    }
    return Status::OK();
  });
}

}  // namespace sediment::catalog
