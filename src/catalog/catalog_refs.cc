// Catalog, refs and names: validation of names and paths, repositories,
// branches, commit records, ResolveRef and tags.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "base/executor.h"
#include "blob/blob.h"
#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "kv/kv.h"

namespace sediment::catalog {

using nlohmann::json;

namespace internal {

std::string BranchJson(const Branch& b) {
  return json{{"version", 1},
              {"commit_id", b.commit_id},
              {"staging_token", b.staging_token},
              {"sealed_tokens", b.sealed_tokens},
              {"compacted_meta_range_id", b.compacted_meta_range_id}}
      .dump();
}

Result<Branch> ParseBranch(const std::string& name, const std::string& raw) {
  try {
    auto j = json::parse(raw);
    Branch b;
    b.id = name;
    b.commit_id = j.at("commit_id").get<std::string>();
    b.staging_token = j.at("staging_token").get<std::string>();
    b.sealed_tokens = j.at("sealed_tokens").get<std::vector<std::string>>();
    b.compacted_meta_range_id = j.value("compacted_meta_range_id", "");
    return b;
  } catch (const std::exception& e) {
    return Status::IOError(fmt::format("corrupt branch record {}: {}", name, e.what()));
  }
}

}  // namespace internal

using internal::BranchJson;
using internal::ClampAmount;
using internal::DeletePrefixWhile;
using internal::DropKey;
using internal::kCasRetries;
using internal::NewToken;
using internal::ParseBranch;
using internal::RepoDeletionKey;

namespace {

constexpr int64_t kMaxPathBytes = 1024;
// The largest N of a ref's "~N" or "^N".
constexpr int64_t kMaxAncestorCount = 1'000'000;

std::string NamespaceKey(const std::string& ns) { return "c/n/" + ns; }
std::string CommitKey(const std::string& repo, const std::string& id) { return "c/c/" + repo + "/" + id; }
std::string TagKey(const std::string& repo, const std::string& id) { return "c/t/" + repo + "/" + id; }

json RepoJson(const Repository& r) {
  return {{"version", 1},
          {"storage_namespace", r.storage_namespace},
          {"default_branch", r.default_branch},
          {"creation_date", r.creation_date},
          {"read_only", r.read_only}};
}

json CommitBody(const Commit& c) {
  return {{"version", 1},
          {"parents", c.parents},
          {"committer", c.committer},
          {"message", c.message},
          {"creation_date", c.creation_date},
          {"meta_range_id", c.meta_range_id},
          {"metadata", c.metadata},
          {"generation", c.generation}};
}

Result<Commit> ParseCommit(const std::string& id, const std::string& raw) {
  try {
    auto j = json::parse(raw);
    Commit c;
    c.id = id;
    c.parents = j.at("parents").get<std::vector<std::string>>();
    c.committer = j.at("committer").get<std::string>();
    c.message = j.at("message").get<std::string>();
    c.creation_date = j.at("creation_date").get<int64_t>();
    c.meta_range_id = j.at("meta_range_id").get<std::string>();
    c.metadata = j.at("metadata").get<std::map<std::string, std::string>>();
    c.generation = j.at("generation").get<int64_t>();
    return c;
  } catch (const std::exception& e) {
    return Status::IOError(fmt::format("corrupt commit record {}: {}", id, e.what()));
  }
}

// Strips one trailing '/' so "s3://b/p/" and "s3://b/p" name the same namespace.
std::string NormalizeNamespace(std::string ns) {
  while (ns.size() > 1 && ns.back() == '/') ns.pop_back();
  return ns;
}

// Lists keys under `prefix` after `after` (exclusive), up to `amount`.
Result<Page<kv::KeyValue>> ListKeys(kv::KvStore& kv, const std::string& prefix, const std::string& name_prefix,
                                    const std::string& after, int64_t amount) {
  std::string from = prefix + name_prefix;
  if (!after.empty() && prefix + after >= from) from = prefix + after + '\0';
  ARROW_ASSIGN_OR_RAISE(auto page, kv.Scan(prefix + name_prefix, from, static_cast<size_t>(amount) + 1));
  Page<kv::KeyValue> out;
  out.has_more = page.items.size() > static_cast<size_t>(amount) || page.has_more;
  if (page.items.size() > static_cast<size_t>(amount)) page.items.resize(static_cast<size_t>(amount));
  out.items = std::move(page.items);
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------
// Validation

Status Catalog::ValidateRepositoryName(const std::string& name) {
  static const std::regex re("^[a-z0-9][a-z0-9-]{2,62}$");
  if (!std::regex_match(name, re)) {
    return InvalidArgument(fmt::format(
        "invalid repository name \"{}\": use 3-63 lowercase letters, digits and '-', starting with a letter or digit",
        name));
  }
  return Status::OK();
}

Status Catalog::ValidateBranchName(const std::string& name) {
  static const std::regex re("^\\w[-\\w]*$");
  if (name.size() > 256 || !std::regex_match(name, re)) {
    return InvalidArgument(
        fmt::format("invalid branch name \"{}\": use letters, digits, '_' and '-', not starting with '-'", name));
  }
  return Status::OK();
}

Status Catalog::ValidatePath(const std::string& path) {
  if (path.empty()) return InvalidArgument("invalid path: empty");
  if (static_cast<int64_t>(path.size()) > kMaxPathBytes) {
    return InvalidArgument(fmt::format("invalid path: {} bytes, at most {} allowed", path.size(), kMaxPathBytes));
  }
  if (path.find('\0') != std::string::npos) return InvalidArgument("invalid path: contains a NUL byte");
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Repositories

Result<Namespace> Catalog::RepositoryNamespace(const Repository& repo) {
  std::lock_guard<std::mutex> lock(ns_mu_);
  auto it = namespaces_.find(repo.storage_namespace);
  if (it != namespaces_.end()) return it->second;
  ARROW_ASSIGN_OR_RAISE(auto store, blob::OpenBlobStore(repo.storage_namespace, options_.s3));
  namespaces_[repo.storage_namespace] = store;
  return store;
}

Result<Repository> Catalog::CreateRepository(const std::string& id, const std::string& storage_namespace,
                                             const std::string& default_branch_in, bool read_only) {
  ARROW_RETURN_NOT_OK(ValidateRepositoryName(id));
  std::string default_branch = default_branch_in.empty() ? "main" : default_branch_in;
  ARROW_RETURN_NOT_OK(ValidateBranchName(default_branch));
  std::string ns = NormalizeNamespace(storage_namespace);
  if (ns.empty()) return InvalidArgument("storage_namespace is required");
  auto scheme_end = ns.find("://");
  if (scheme_end != std::string::npos) {
    std::string scheme = ns.substr(0, scheme_end);
    if (scheme != "local" && scheme != "s3" && scheme != "file") {
      return InvalidArgument(
          fmt::format("storage_namespace \"{}\": unsupported scheme (use s3://, local:// or a path)", ns));
    }
  } else if (ns[0] != '/') {
    return InvalidArgument(fmt::format("storage_namespace \"{}\": a local namespace must be an absolute path", ns));
  }
  Repository repo{id, ns, default_branch, ToUnixMicros(clock_->Now()) / 1000000, read_only};
  auto conflict = [&]() -> Status {
    if (kv_->Get(RepoKey(id)).ok()) return Conflict(fmt::format("repository \"{}\" already exists", id));
    auto owner = kv_->Get(NamespaceKey(ns));
    if (owner.ok()) {
      return Conflict(fmt::format("storage namespace \"{}\" is already used by repository \"{}\"", ns, *owner));
    }
    return Status::OK();
  };
  ARROW_RETURN_NOT_OK(conflict());
  // A deletion of a repository of this name that was cut off: finish it first,
  // so nothing of the old repository shows through the new one.
  ARROW_RETURN_NOT_OK(FinishRepositoryDeletion(id));
  // Reachability first: a namespace we cannot write to fails before anything is recorded.
  ARROW_ASSIGN_OR_RAISE(auto store, RepositoryNamespace(repo));
  ARROW_RETURN_NOT_OK(WithContext(store->Put("_lakefs/dummy", ""), "storage_namespace " + ns + " is not writable"));

  Commit initial;
  initial.message = "Repository created";
  initial.creation_date = repo.creation_date;
  std::string initial_body = CommitBody(initial).dump();
  initial.id = Sha256Hex(initial_body);
  Branch b{default_branch, initial.id, NewToken(), {}, ""};
  kv::Batch batch;
  batch.Require(kv::Precondition::Absent(RepoKey(id)))
      .Require(kv::Precondition::Absent(NamespaceKey(ns)))
      .Require(kv::Precondition::Absent(RepoDeletionKey(id)))
      .Put(CommitKey(id, initial.id), initial_body)
      .Put(RepoKey(id), RepoJson(repo).dump())
      .Put(NamespaceKey(ns), id)
      .Put(BranchKey(id, default_branch), BranchJson(b));
  Status st = kv_->Apply(batch);
  if (IsPreconditionFailed(st)) {
    ARROW_RETURN_NOT_OK(conflict());
    if (kv_->Get(RepoDeletionKey(id)).ok()) {
      return Conflict(fmt::format("repository \"{}\" is being deleted concurrently; retry", id));
    }
    return Conflict(fmt::format("repository \"{}\" was created concurrently", id));
  }
  ARROW_RETURN_NOT_OK(st);
  return repo;
}

Result<Catalog::RepositoryRecord> Catalog::LoadRepository(const std::string& id) {
  ARROW_RETURN_NOT_OK(ValidateRepositoryName(id));
  auto raw = kv_->Get(RepoKey(id));
  if (IsNotFound(raw.status())) return NotFound(fmt::format("repository \"{}\" not found", id));
  ARROW_RETURN_NOT_OK(raw.status());
  try {
    auto j = json::parse(*raw);
    Repository repo{id, j.at("storage_namespace").get<std::string>(), j.at("default_branch").get<std::string>(),
                    j.at("creation_date").get<int64_t>(), j.value("read_only", false)};
    return RepositoryRecord{std::move(repo), std::move(*raw)};
  } catch (const std::exception& e) {
    return Status::IOError(fmt::format("corrupt repository record {}: {}", id, e.what()));
  }
}

Result<Repository> Catalog::GetRepository(const std::string& id) {
  ARROW_ASSIGN_OR_RAISE(auto rec, LoadRepository(id));
  return std::move(rec.repo);
}

Result<Page<Repository>> Catalog::ListRepositories(const std::string& prefix, const std::string& after,
                                                   int64_t amount) {
  ARROW_ASSIGN_OR_RAISE(auto keys, ListKeys(*kv_, "c/r/", prefix, after, ClampAmount(amount)));
  Page<Repository> out;
  out.has_more = keys.has_more;
  for (const auto& kv : keys.items) {
    ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(kv.key.substr(4)));
    out.items.push_back(std::move(repo));
  }
  return out;
}

// Deciding is one atomic batch: the repository record (as read), its namespace,
// every branch (as read; its tokens queued for the dropper) and tag, and a
// deletion record c/rd/<repo>. From then on the repository is gone for every
// call, and its name and namespace are free. The bulk cleanup follows
// (FinishRepositoryDeletion); if it is cut off, DropDeadTokens or a re-create of
// the name finishes it.
Status Catalog::DeleteRepository(const std::string& id) {
  for (int attempt = 0;; ++attempt) {
    ARROW_ASSIGN_OR_RAISE(auto rec, LoadRepository(id));
    kv::Batch batch;
    batch.Require(kv::Precondition::Equals(RepoKey(id), rec.raw))
        .Delete(RepoKey(id))
        .Delete(NamespaceKey(rec.repo.storage_namespace))
        .Put(RepoDeletionKey(id), RandomHex(8));
    ARROW_RETURN_NOT_OK(kv_->ScanAll(BranchKey(id, ""), "", [&](const kv::KeyValue& item) -> Result<bool> {
      ARROW_ASSIGN_OR_RAISE(auto b, ParseBranch(item.key, item.value));
      batch.Require(kv::Precondition::Equals(item.key, item.value)).Delete(item.key).Put(DropKey(b.staging_token), "");
      for (const auto& t : b.sealed_tokens) batch.Put(DropKey(t), "");
      return true;
    }));
    ARROW_RETURN_NOT_OK(kv_->ScanAll(TagKey(id, ""), "", [&](const kv::KeyValue& item) -> Result<bool> {
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
  if (dropper_) dropper_->Trigger();
  // The repository is deleted; what remains is cleanup, which the background task retries.
  Status cleanup = FinishRepositoryDeletion(id);
  if (!cleanup.ok()) {
    spdlog::warn("catalog: repository \"{}\" deleted; its cleanup failed and will be retried: {}", id,
                 cleanup.ToString());
  }
  return Status::OK();
}

Status Catalog::FinishRepositoryDeletion(const std::string& id) {
  auto deletion = kv_->Get(RepoDeletionKey(id));
  if (IsNotFound(deletion.status())) return Status::OK();
  ARROW_RETURN_NOT_OK(deletion.status());
  // Every batch requires this deletion still pending: once another cleanup has
  // finished it (and the name may be in use again), this one deletes nothing.
  const auto still = kv::Precondition::Equals(RepoDeletionKey(id), *deletion);
  auto finished_elsewhere = [&](const Status& st) {
    if (!IsPreconditionFailed(st)) return false;
    auto now = kv_->Get(RepoDeletionKey(id));
    return IsNotFound(now.status()) || (now.ok() && *now != *deletion);
  };
  {
    std::lock_guard<std::mutex> lock(commits_mu_);
    std::erase_if(commits_, [&](const auto& c) { return c.first.rfind(id + "/", 0) == 0; });
  }
  // Branches created while the deletion was decided: their tokens go to the dropper too.
  for (int failures = 0;;) {
    ARROW_ASSIGN_OR_RAISE(auto page, kv_->Scan(BranchKey(id, ""), "", 1000));
    if (page.items.empty()) break;
    kv::Batch batch;
    batch.Require(still);
    for (const auto& item : page.items) {
      ARROW_ASSIGN_OR_RAISE(auto b, ParseBranch(item.key, item.value));
      batch.Require(kv::Precondition::Equals(item.key, item.value)).Delete(item.key).Put(DropKey(b.staging_token), "");
      for (const auto& t : b.sealed_tokens) batch.Put(DropKey(t), "");
    }
    Status st = kv_->Apply(batch);
    if (finished_elsewhere(st)) return Status::OK();
    if (st.ok()) continue;
    if (!IsPreconditionFailed(st)) return st;
    if (++failures >= kCasRetries) {
      return Busy(fmt::format("branches of deleted repository \"{}\" kept changing; the cleanup will retry", id));
    }
  }
  // Tags, commits, then the staging-compaction bookkeeping (counters, last status, leases).
  for (const auto& p : {"c/t/", "c/c/", "c/m/", "c/cs/", "c/cl/"}) {
    Status st = DeletePrefixWhile(*kv_, p + id + "/", still);
    if (finished_elsewhere(st)) return Status::OK();
    ARROW_RETURN_NOT_OK(st);
  }
  kv::Batch done;
  done.Require(still).Delete(RepoDeletionKey(id));
  Status st = kv_->Apply(done);
  if (IsPreconditionFailed(st)) return Status::OK();
  ARROW_RETURN_NOT_OK(st);
  if (dropper_) dropper_->Trigger();
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Commits and refs

Result<std::string> Catalog::StoreCommit(const std::string& repo, Commit* commit) {
  std::string body = CommitBody(*commit).dump();
  commit->id = Sha256Hex(body);
  ARROW_RETURN_NOT_OK(kv_->Set(CommitKey(repo, commit->id), body));
  return commit->id;
}

Result<Commit> Catalog::GetCommit(const std::string& repo, const std::string& commit_id) {
  // Commits are immutable and named by their content: a cached one is never stale.
  std::string cache_key = repo + "/" + commit_id;
  {
    std::lock_guard<std::mutex> lock(commits_mu_);
    auto it = commits_.find(cache_key);
    if (it != commits_.end()) return it->second;
  }
  auto raw = kv_->Get(CommitKey(repo, commit_id));
  if (IsNotFound(raw.status())) return NotFound(fmt::format("commit \"{}\" not found in \"{}\"", commit_id, repo));
  ARROW_RETURN_NOT_OK(raw.status());
  ARROW_ASSIGN_OR_RAISE(auto c, ParseCommit(commit_id, *raw));
  std::lock_guard<std::mutex> lock(commits_mu_);
  if (commits_.size() >= 10000) commits_.clear();
  commits_[cache_key] = c;
  return c;
}

Result<Catalog::BranchRecord> Catalog::LoadBranch(const std::string& repo, const std::string& name) {
  ARROW_RETURN_NOT_OK(ValidateBranchName(name));
  auto raw = kv_->Get(BranchKey(repo, name));
  if (IsNotFound(raw.status())) return NotFound(fmt::format("branch \"{}\" not found in \"{}\"", name, repo));
  ARROW_RETURN_NOT_OK(raw.status());
  ARROW_ASSIGN_OR_RAISE(auto b, ParseBranch(name, *raw));
  return BranchRecord{std::move(b), std::move(*raw)};
}

Result<ResolvedRef> Catalog::ResolveRef(const std::string& repo, const std::string& ref_in) {
  if (ref_in.empty()) return InvalidArgument("empty ref");
  // Modifiers: "~N" (N-th first parent), "^N" (N-th parent), trailing "@" (committed state of a branch).
  std::string ref = ref_in;
  std::vector<std::pair<char, int>> mods;
  size_t mod_pos = ref.find_first_of("~^");
  if (mod_pos != std::string::npos) {
    std::string tail = ref.substr(mod_pos);
    ref = ref.substr(0, mod_pos);
    for (size_t i = 0; i < tail.size();) {
      char op = tail[i++];
      if (op != '~' && op != '^') return InvalidArgument(fmt::format("invalid ref \"{}\"", ref_in));
      size_t j = i;
      int64_t n = 0;
      while (j < tail.size() && isdigit(static_cast<unsigned char>(tail[j]))) {
        n = std::min(n * 10 + (tail[j] - '0'), kMaxAncestorCount + 1);  // saturates: never overflows
        ++j;
      }
      if (j == i) n = 1;
      if (n > kMaxAncestorCount) {
        return InvalidArgument(fmt::format("invalid ref \"{}\": {}{} is too large (at most {}{})", ref_in, op,
                                           tail.substr(i, j - i), op, kMaxAncestorCount));
      }
      mods.emplace_back(op, static_cast<int>(n));
      i = j;
    }
  }
  bool committed_only = false;
  if (!ref.empty() && ref.back() == '@') {
    committed_only = true;
    ref.pop_back();
  }
  ResolvedRef out;
  if (ValidateBranchName(ref).ok()) {
    auto raw = kv_->Get(BranchKey(repo, ref));
    if (raw.ok()) {
      ARROW_ASSIGN_OR_RAISE(auto b, ParseBranch(ref, *raw));
      out.commit_id = b.commit_id;
      if (!committed_only && mods.empty()) out.branch = std::move(b);
    } else if (!IsNotFound(raw.status())) {
      return raw.status();
    } else {
      auto tag = kv_->Get(TagKey(repo, ref));
      if (tag.ok()) {
        out.commit_id = *tag;
      } else if (!IsNotFound(tag.status())) {
        return tag.status();
      }
    }
  }
  if (out.commit_id.empty()) {
    static const std::regex hex("^[0-9a-f]{4,64}$");
    if (std::regex_match(ref, hex)) {
      ARROW_ASSIGN_OR_RAISE(auto page, kv_->Scan(CommitKey(repo, ref), "", 2));
      if (page.items.size() == 1) out.commit_id = page.items[0].key.substr(CommitKey(repo, "").size());
      if (page.items.size() > 1) return InvalidArgument(fmt::format("ambiguous commit prefix \"{}\"", ref));
    }
  }
  if (out.commit_id.empty()) return NotFound(fmt::format("ref \"{}\" not found in \"{}\"", ref_in, repo));
  for (auto [op, n] : mods) {
    ARROW_ASSIGN_OR_RAISE(auto c, GetCommit(repo, out.commit_id));
    if (op == '^') {
      if (n == 0) continue;
      if (n > static_cast<int>(c.parents.size())) return NotFound(fmt::format("ref \"{}\" not found", ref_in));
      out.commit_id = c.parents[n - 1];
    } else {
      for (int i = 0; i < n; ++i) {
        if (c.parents.empty()) return NotFound(fmt::format("ref \"{}\" not found", ref_in));
        out.commit_id = c.parents[0];
        if (i + 1 < n) {
          ARROW_ASSIGN_OR_RAISE(c, GetCommit(repo, out.commit_id));
        }
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Branches

Result<Branch> Catalog::CreateBranch(const std::string& repo_id, const std::string& name,
                                     const std::string& source_ref) {
  ARROW_ASSIGN_OR_RAISE(auto repo, LoadRepository(repo_id));
  ARROW_RETURN_NOT_OK(ValidateBranchName(name));
  ARROW_ASSIGN_OR_RAISE(auto src, ResolveRef(repo_id, source_ref));
  Branch b{name, src.commit_id, NewToken(), {}, ""};
  // The name must be free of branches and tags, in the same batch as the write,
  // in a repository that is still the one we read (not deleted meanwhile).
  kv::Batch batch;
  batch.Require(kv::Precondition::Equals(RepoKey(repo_id), repo.raw))
      .Require(kv::Precondition::Absent(BranchKey(repo_id, name)))
      .Require(kv::Precondition::Absent(TagKey(repo_id, name)))
      .Put(BranchKey(repo_id, name), BranchJson(b));
  Status st = kv_->Apply(batch);
  if (IsPreconditionFailed(st)) return RefCollision(repo_id, name, RefKind::kBranch);
  ARROW_RETURN_NOT_OK(st);
  return b;
}

Status Catalog::RefCollision(const std::string& repo_id, const std::string& name, RefKind creating) {
  ARROW_RETURN_NOT_OK(GetRepository(repo_id).status());  // NotFound if deleted meanwhile
  bool tag = creating == RefKind::kTag;
  if (kv_->Get(BranchKey(repo_id, name)).ok()) {
    return Conflict(
        fmt::format("{} \"{}\" already exists in \"{}\"", tag ? "a branch named" : "branch", name, repo_id));
  }
  if (kv_->Get(TagKey(repo_id, name)).ok()) {
    return Conflict(fmt::format("{} \"{}\" already exists in \"{}\"", tag ? "tag" : "a tag named", name, repo_id));
  }
  return Conflict(
      fmt::format("repository \"{}\" changed while creating {} \"{}\"; retry", repo_id, tag ? "tag" : "branch", name));
}

Result<Branch> Catalog::GetBranch(const std::string& repo, const std::string& name) {
  ARROW_RETURN_NOT_OK(GetRepository(repo).status());
  ARROW_ASSIGN_OR_RAISE(auto rec, LoadBranch(repo, name));
  return rec.branch;
}

Result<Page<Branch>> Catalog::ListBranches(const std::string& repo, const std::string& prefix, const std::string& after,
                                           int64_t amount) {
  ARROW_RETURN_NOT_OK(GetRepository(repo).status());
  std::string kprefix = BranchKey(repo, "");
  ARROW_ASSIGN_OR_RAISE(auto keys, ListKeys(*kv_, kprefix, prefix, after, ClampAmount(amount)));
  Page<Branch> out;
  out.has_more = keys.has_more;
  for (const auto& kv : keys.items) {
    ARROW_ASSIGN_OR_RAISE(auto b, ParseBranch(kv.key.substr(kprefix.size()), kv.value));
    out.items.push_back(std::move(b));
  }
  return out;
}

Status Catalog::DeleteBranch(const std::string& repo_id, const std::string& name) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  if (name == repo.default_branch) {
    return Forbidden(fmt::format("cannot delete the default branch \"{}\" of \"{}\"", name, repo_id));
  }
  ARROW_ASSIGN_OR_RAISE(auto rec, LoadBranch(repo_id, name));
  kv::Batch batch;
  batch.Require(kv::Precondition::Equals(BranchKey(repo_id, name), rec.raw))
      .Delete(BranchKey(repo_id, name))
      .Delete(internal::CounterKey(repo_id, name))
      .Delete(internal::StatusKey(repo_id, name))
      .Delete(internal::LeaseKey(repo_id, name));
  batch.Put(DropKey(rec.branch.staging_token), "");
  for (const auto& t : rec.branch.sealed_tokens) batch.Put(DropKey(t), "");
  Status st = kv_->Apply(batch);
  if (IsPreconditionFailed(st)) return Conflict(fmt::format("branch \"{}\" changed while deleting; retry", name));
  ARROW_RETURN_NOT_OK(st);
  if (dropper_) dropper_->Trigger();
  return Status::OK();
}

Result<bool> Catalog::IsDirty(const std::string& repo, const Branch& branch) {
  (void)repo;
  if (!branch.compacted_meta_range_id.empty()) return true;
  return internal::HasStagedEntries(*kv_, branch, internal::StagedProbe::kStopAtFirst);
}

// ---------------------------------------------------------------------------
// Tags

Result<Tag> Catalog::CreateTag(const std::string& repo_id, const std::string& id, const std::string& ref, bool force) {
  ARROW_ASSIGN_OR_RAISE(auto repo, LoadRepository(repo_id));
  if (!ValidateBranchName(id).ok()) {
    return InvalidArgument(fmt::format("invalid tag name \"{}\": use letters, digits, '_' and '-'", id));
  }
  ARROW_ASSIGN_OR_RAISE(auto target, ResolveRef(repo_id, ref));
  // As for branches: no branch of that name (nor, unless forced, a tag), checked in the write's batch.
  kv::Batch batch;
  batch.Require(kv::Precondition::Equals(RepoKey(repo_id), repo.raw))
      .Require(kv::Precondition::Absent(BranchKey(repo_id, id)));
  if (!force) batch.Require(kv::Precondition::Absent(TagKey(repo_id, id)));
  batch.Put(TagKey(repo_id, id), target.commit_id);
  Status st = kv_->Apply(batch);
  if (IsPreconditionFailed(st)) return RefCollision(repo_id, id, RefKind::kTag);
  ARROW_RETURN_NOT_OK(st);
  return Tag{id, target.commit_id};
}

Result<Tag> Catalog::GetTag(const std::string& repo_id, const std::string& id) {
  ARROW_RETURN_NOT_OK(GetRepository(repo_id).status());
  auto v = kv_->Get(TagKey(repo_id, id));
  if (IsNotFound(v.status())) return NotFound(fmt::format("tag \"{}\" not found in \"{}\"", id, repo_id));
  ARROW_RETURN_NOT_OK(v.status());
  return Tag{id, *v};
}

Result<Page<Tag>> Catalog::ListTags(const std::string& repo_id, const std::string& prefix, const std::string& after,
                                    int64_t amount) {
  ARROW_RETURN_NOT_OK(GetRepository(repo_id).status());
  std::string kprefix = TagKey(repo_id, "");
  ARROW_ASSIGN_OR_RAISE(auto keys, ListKeys(*kv_, kprefix, prefix, after, ClampAmount(amount)));
  Page<Tag> out;
  out.has_more = keys.has_more;
  for (const auto& kv : keys.items) out.items.push_back({kv.key.substr(kprefix.size()), kv.value});
  return out;
}

Status Catalog::DeleteTag(const std::string& repo_id, const std::string& id) {
  ARROW_RETURN_NOT_OK(GetTag(repo_id, id).status());
  return kv_->Delete(TagKey(repo_id, id));
}

}  // namespace sediment::catalog
