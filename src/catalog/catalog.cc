#include "catalog/catalog.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <queue>
#include <regex>
#include <set>
#include <unordered_set>

#include "base/executor.h"
#include "blob/blob.h"
#include "kv/kv.h"

namespace sediment::catalog {

using nlohmann::json;

namespace {

constexpr int kCasRetries = 20;
constexpr int64_t kMaxPathBytes = 1024;

std::string NewToken() { return RandomHex(16); }

std::string NamespaceKey(const std::string& ns) { return "c/n/" + ns; }
std::string CommitKey(const std::string& repo, const std::string& id) { return "c/c/" + repo + "/" + id; }
std::string TagKey(const std::string& repo, const std::string& id) { return "c/t/" + repo + "/" + id; }
std::string DropKey(const std::string& token) { return "c/d/" + token; }

json RepoJson(const Repository& r) {
  return {{"version", 1},
          {"storage_namespace", r.storage_namespace},
          {"default_branch", r.default_branch},
          {"creation_date", r.creation_date},
          {"read_only", r.read_only}};
}

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

Status NoChanges(const std::string& what) { return InvalidArgument(fmt::format("no changes: {}", what)); }

Status DirtyBranch(const std::string& branch) {
  return InvalidArgument(fmt::format("branch \"{}\" has uncommitted changes (dirty branch)", branch));
}

// Strips one trailing '/' so "s3://b/p/" and "s3://b/p" name the same namespace.
std::string NormalizeNamespace(std::string ns) {
  while (ns.size() > 1 && ns.back() == '/') ns.pop_back();
  return ns;
}

int64_t ClampAmount(int64_t amount) {
  if (amount <= 0) return 100;
  return std::min<int64_t>(amount, 1000);
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

// Deletes every key under `prefix`, in batches.
Status DeletePrefix(kv::KvStore& kv, const std::string& prefix) {
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto page, kv.Scan(prefix, "", 1000));
    if (page.items.empty()) return Status::OK();
    kv::Batch b;
    for (const auto& item : page.items) b.Delete(item.key);
    ARROW_RETURN_NOT_OK(kv.Apply(b));
    if (!page.has_more) return Status::OK();
  }
}

// Where a listing page starts: the prefix, or just past `after` — past all of it
// when a delimited page ended on a common prefix. nullopt if nothing can follow.
std::optional<std::string> ListStart(const ListOptions& opts) {
  if (opts.after.empty() || opts.after < opts.prefix) return opts.prefix;
  if (opts.delimiter.empty() || !opts.after.ends_with(opts.delimiter)) return opts.after + '\0';
  std::string past = kv::PrefixEnd(opts.after);
  if (past.empty()) return std::nullopt;
  return past;
}

}  // namespace

std::string RepoKey(const std::string& repo) { return "c/r/" + repo; }
std::string BranchKey(const std::string& repo, const std::string& branch) { return "c/b/" + repo + "/" + branch; }
std::string StagingPrefix(const std::string& token) { return "c/s/" + token + "/"; }

Catalog::Catalog(std::shared_ptr<kv::KvStore> kv, std::shared_ptr<Clock> clock, CatalogOptions options)
    : kv_(std::move(kv)), clock_(std::move(clock)), options_(std::move(options)) {}

Catalog::~Catalog() { Stop(); }

Status Catalog::Start(bool background) {
  ARROW_ASSIGN_OR_RAISE(ranges_, RangeStore::Open(options_.cache_dir, options_.cache_bytes, options_.ranges));
  if (background) {
    dropper_ = std::make_unique<PeriodicTask>("catalog-drop", std::chrono::seconds(2), [this] {
      Status st = DropDeadTokens();
      if (!st.ok()) spdlog::warn("catalog: dropping dead staging tokens failed (will retry): {}", st.ToString());
    });
    dropper_->Start();
  }
  return Status::OK();
}

void Catalog::Stop() {
  if (dropper_) dropper_->Stop();
  dropper_.reset();
}

Status Catalog::DropDeadTokens() {
  ARROW_ASSIGN_OR_RAISE(auto page, kv_->Scan("c/d/", "", 100));
  for (const auto& item : page.items) {
    std::string token = item.key.substr(4);
    ARROW_RETURN_NOT_OK(DeletePrefix(*kv_, StagingPrefix(token)));
    ARROW_RETURN_NOT_OK(kv_->Delete(item.key));
  }
  return Status::OK();
}

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

Status Catalog::CheckWritable(const Repository& repo) {
  if (repo.read_only) return Forbidden(fmt::format("repository \"{}\" is read-only", repo.id));
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
  // Reachability first: a namespace we cannot write to fails before anything is recorded.
  ARROW_ASSIGN_OR_RAISE(auto store, RepositoryNamespace(repo));
  ARROW_RETURN_NOT_OK(WithContext(store->Put("_lakefs/dummy", ""), "storage_namespace " + ns + " is not writable"));

  Commit initial;
  initial.message = "Repository created";
  initial.creation_date = repo.creation_date;
  // The commit record may outlive a lost race below; it is tiny and unreachable.
  ARROW_ASSIGN_OR_RAISE(auto commit_id, StoreCommit(id, &initial));
  Branch b{default_branch, commit_id, NewToken(), {}, ""};
  kv::Batch batch;
  batch.Require(kv::Precondition::Absent(RepoKey(id)))
      .Require(kv::Precondition::Absent(NamespaceKey(ns)))
      .Put(RepoKey(id), RepoJson(repo).dump())
      .Put(NamespaceKey(ns), id)
      .Put(BranchKey(id, default_branch), BranchJson(b));
  Status st = kv_->Apply(batch);
  if (IsPreconditionFailed(st)) {
    ARROW_RETURN_NOT_OK(conflict());
    return Conflict(fmt::format("repository \"{}\" was created concurrently", id));
  }
  ARROW_RETURN_NOT_OK(st);
  return repo;
}

Result<Repository> Catalog::GetRepository(const std::string& id) {
  ARROW_RETURN_NOT_OK(ValidateRepositoryName(id));
  auto raw = kv_->Get(RepoKey(id));
  if (IsNotFound(raw.status())) return NotFound(fmt::format("repository \"{}\" not found", id));
  ARROW_RETURN_NOT_OK(raw.status());
  try {
    auto j = json::parse(*raw);
    return Repository{id, j.at("storage_namespace").get<std::string>(), j.at("default_branch").get<std::string>(),
                      j.at("creation_date").get<int64_t>(), j.value("read_only", false)};
  } catch (const std::exception& e) {
    return Status::IOError(fmt::format("corrupt repository record {}: {}", id, e.what()));
  }
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

Status Catalog::DeleteRepository(const std::string& id) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(id));
  // Branch tokens go to the background dropper; then refs; the repository record last.
  ARROW_RETURN_NOT_OK(kv_->ScanAll("c/b/" + id + "/", "", [&](const kv::KeyValue& item) -> Result<bool> {
    ARROW_ASSIGN_OR_RAISE(auto b, ParseBranch(item.key, item.value));
    kv::Batch batch;
    batch.Put(DropKey(b.staging_token), "");
    for (const auto& t : b.sealed_tokens) batch.Put(DropKey(t), "");
    ARROW_RETURN_NOT_OK(kv_->Apply(batch));
    return true;
  }));
  kv::Batch batch;
  batch.Require(kv::Precondition::Present(RepoKey(id)))
      .Delete(RepoKey(id))
      .Delete(NamespaceKey(repo.storage_namespace));
  ARROW_RETURN_NOT_OK(kv_->Apply(batch));
  // Refs, then the staging-compaction bookkeeping (counters, last status, leases).
  for (const auto& p : {"c/b/", "c/c/", "c/t/", "c/m/", "c/cs/", "c/cl/"}) {
    ARROW_RETURN_NOT_OK(DeletePrefix(*kv_, p + id + "/"));
  }
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
      while (j < tail.size() && isdigit(static_cast<unsigned char>(tail[j]))) ++j;
      int n = j > i ? std::stoi(tail.substr(i, j - i)) : 1;
      mods.emplace_back(op, n);
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

Result<std::shared_ptr<const MetaRange>> Catalog::CommitMetaRange(const Repository& repo,
                                                                  const std::string& commit_id) {
  ARROW_ASSIGN_OR_RAISE(auto c, GetCommit(repo.id, commit_id));
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  return ranges_->LoadMetaRange(ns, c.meta_range_id);
}

Result<std::shared_ptr<const MetaRange>> Catalog::BaseMetaRange(const Repository& repo, const Branch& branch) {
  if (!branch.compacted_meta_range_id.empty()) {
    ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
    return ranges_->LoadMetaRange(ns, branch.compacted_meta_range_id);
  }
  return CommitMetaRange(repo, branch.commit_id);
}

std::unique_ptr<ValueIterator> Catalog::StagingView(const Branch& branch, bool include_current) {
  std::vector<std::unique_ptr<ValueIterator>> sources;
  if (include_current) sources.push_back(NewKvPrefixIterator(kv_, StagingPrefix(branch.staging_token)));
  for (const auto& t : branch.sealed_tokens) sources.push_back(NewKvPrefixIterator(kv_, StagingPrefix(t)));
  if (sources.empty()) return NewVectorIterator({});
  return NewCombinedIterator(std::move(sources));
}

Result<std::unique_ptr<ValueIterator>> Catalog::View(const Repository& repo, const ResolvedRef& ref) {
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  if (!ref.branch) {
    ARROW_ASSIGN_OR_RAISE(auto mr, CommitMetaRange(repo, ref.commit_id));
    return ranges_->NewIterator(ns, mr);
  }
  ARROW_ASSIGN_OR_RAISE(auto mr, BaseMetaRange(repo, *ref.branch));
  std::vector<std::unique_ptr<ValueIterator>> sources;
  sources.push_back(StagingView(*ref.branch));
  sources.push_back(ranges_->NewIterator(ns, mr));
  return NewTombstoneFilter(NewCombinedIterator(std::move(sources)));
}

// ---------------------------------------------------------------------------
// Branches

Result<Branch> Catalog::CreateBranch(const std::string& repo_id, const std::string& name,
                                     const std::string& source_ref) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(ValidateBranchName(name));
  ARROW_ASSIGN_OR_RAISE(auto src, ResolveRef(repo_id, source_ref));
  Branch b{name, src.commit_id, NewToken(), {}, ""};
  kv::Batch batch;
  batch.Require(kv::Precondition::Absent(BranchKey(repo_id, name))).Put(BranchKey(repo_id, name), BranchJson(b));
  if (kv_->Get(TagKey(repo_id, name)).ok()) {
    return Conflict(fmt::format("a tag named \"{}\" already exists in \"{}\"", name, repo_id));
  }
  Status st = kv_->Apply(batch);
  if (IsPreconditionFailed(st)) return Conflict(fmt::format("branch \"{}\" already exists in \"{}\"", name, repo_id));
  ARROW_RETURN_NOT_OK(st);
  (void)repo;
  return b;
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
  batch.Require(kv::Precondition::Equals(BranchKey(repo_id, name), rec.raw)).Delete(BranchKey(repo_id, name));
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
  std::vector<std::string> tokens = branch.sealed_tokens;
  tokens.push_back(branch.staging_token);
  for (const auto& t : tokens) {
    ARROW_ASSIGN_OR_RAISE(auto page, kv_->Scan(StagingPrefix(t), "", 1));
    if (!page.items.empty()) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------
// Objects

Result<Entry> Catalog::GetEntry(const std::string& repo_id, const std::string& ref, const std::string& path) {
  ARROW_RETURN_NOT_OK(ValidatePath(path));
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_ASSIGN_OR_RAISE(auto resolved, ResolveRef(repo_id, ref));
  auto not_found = [&] { return NotFound(fmt::format("object \"{}\" not found at \"{}\"", path, ref)); };
  std::shared_ptr<const MetaRange> mr;
  if (resolved.branch) {
    std::vector<std::string> tokens = {resolved.branch->staging_token};
    tokens.insert(tokens.end(), resolved.branch->sealed_tokens.begin(), resolved.branch->sealed_tokens.end());
    for (const auto& t : tokens) {
      auto v = kv_->Get(StagingPrefix(t) + path);
      if (v.ok()) {
        if (v->empty()) return not_found();
        return DecodeEntry(*v);
      }
      if (!IsNotFound(v.status())) return v.status();
    }
    ARROW_ASSIGN_OR_RAISE(mr, BaseMetaRange(repo, *resolved.branch));
  } else {
    ARROW_ASSIGN_OR_RAISE(mr, CommitMetaRange(repo, resolved.commit_id));
  }
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  ARROW_ASSIGN_OR_RAISE(auto v, ranges_->Get(ns, *mr, path));
  if (!v) return not_found();
  return DecodeEntry(*v);
}

Status Catalog::PutEntry(const std::string& repo_id, const std::string& branch, const std::string& path,
                         const Entry& entry, bool if_absent) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  return PutEntry(repo, branch, path, entry, if_absent);
}

Status Catalog::PutEntry(const Repository& repo, const std::string& branch, const std::string& path, const Entry& entry,
                         bool if_absent) {
  const std::string& repo_id = repo.id;
  ARROW_RETURN_NOT_OK(ValidatePath(path));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  std::string value = EncodeEntry(entry);
  if (if_absent) {
    auto existing = GetEntry(repo_id, branch, path);
    if (existing.ok()) return PreconditionFailed(fmt::format("object \"{}\" already exists", path));
    if (!IsNotFound(existing.status())) return existing.status();
  }
  ARROW_ASSIGN_OR_RAISE(auto rec, LoadBranch(repo_id, branch));
  for (int i = 0; i < kCasRetries; ++i) {
    std::string token = rec.branch.staging_token;
    ARROW_RETURN_NOT_OK(kv_->Set(StagingPrefix(token) + path, value));
    // A commit may have sealed the token meanwhile: then write again to the new one.
    ARROW_ASSIGN_OR_RAISE(rec, LoadBranch(repo_id, branch));
    if (rec.branch.staging_token == token) {
      if (on_mutation_) on_mutation_(repo_id, branch, 1);
      return Status::OK();
    }
  }
  return Busy(fmt::format("branch \"{}\" kept changing; retry the write", branch));
}

Status Catalog::PutEntries(const std::string& repo_id, const std::string& branch,
                           const std::vector<std::pair<std::string, Entry>>& entries) {
  for (const auto& [path, e] : entries) ARROW_RETURN_NOT_OK(ValidatePath(path));
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  constexpr size_t kBatch = 1000;
  for (size_t start = 0; start < entries.size(); start += kBatch) {
    size_t end = std::min(entries.size(), start + kBatch);
    ARROW_ASSIGN_OR_RAISE(auto rec, LoadBranch(repo_id, branch));
    bool done = false;
    for (int i = 0; i < kCasRetries && !done; ++i) {
      std::string token = rec.branch.staging_token;
      kv::Batch batch;
      for (size_t j = start; j < end; ++j) {
        batch.Put(StagingPrefix(token) + entries[j].first, EncodeEntry(entries[j].second));
      }
      ARROW_RETURN_NOT_OK(kv_->Apply(batch));
      ARROW_ASSIGN_OR_RAISE(rec, LoadBranch(repo_id, branch));
      done = rec.branch.staging_token == token;
    }
    if (!done) return Busy(fmt::format("branch \"{}\" kept changing; retry the write", branch));
    if (on_mutation_) on_mutation_(repo_id, branch, static_cast<int64_t>(end - start));
  }
  return Status::OK();
}

Status Catalog::DeleteEntry(const std::string& repo_id, const std::string& branch, const std::string& path) {
  ARROW_RETURN_NOT_OK(GetEntry(repo_id, branch, path).status());
  ARROW_ASSIGN_OR_RAISE(auto n, DeleteEntries(repo_id, branch, {path}));
  (void)n;
  return Status::OK();
}

Result<int64_t> Catalog::DeleteEntries(const std::string& repo_id, const std::string& branch,
                                       const std::vector<std::string>& paths) {
  for (const auto& p : paths) ARROW_RETURN_NOT_OK(ValidatePath(p));
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  int64_t deleted = 0;
  for (const auto& p : paths) {
    auto e = GetEntry(repo_id, branch, p);
    if (IsNotFound(e.status())) continue;
    ARROW_RETURN_NOT_OK(e.status());
    ARROW_ASSIGN_OR_RAISE(auto rec, LoadBranch(repo_id, branch));
    bool done = false;
    for (int i = 0; i < kCasRetries && !done; ++i) {
      std::string token = rec.branch.staging_token;
      ARROW_RETURN_NOT_OK(kv_->Set(StagingPrefix(token) + p, ""));
      ARROW_ASSIGN_OR_RAISE(rec, LoadBranch(repo_id, branch));
      done = rec.branch.staging_token == token;
    }
    if (!done) return Busy(fmt::format("branch \"{}\" kept changing; retry the delete", branch));
    ++deleted;
  }
  if (on_mutation_ && deleted > 0) on_mutation_(repo_id, branch, deleted);
  return deleted;
}

Result<Page<ListItem>> Catalog::ListEntries(const std::string& repo_id, const std::string& ref,
                                            const ListOptions& opts) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  return ListEntries(repo, ref, opts);
}

Result<Page<ListItem>> Catalog::ListEntries(const Repository& repo, const std::string& ref, const ListOptions& opts) {
  ARROW_ASSIGN_OR_RAISE(auto resolved, ResolveRef(repo.id, ref));
  ARROW_ASSIGN_OR_RAISE(auto it, View(repo, resolved));
  int64_t amount = ClampAmount(opts.amount);
  Page<ListItem> out;
  auto start = ListStart(opts);
  if (!start) return out;
  it->SeekGE(*start);
  while (it->Next()) {
    const std::string& k = it->key();
    if (k.compare(0, opts.prefix.size(), opts.prefix) != 0) break;
    if (static_cast<int64_t>(out.items.size()) == amount) {
      out.has_more = true;
      break;
    }
    if (!opts.delimiter.empty()) {
      size_t pos = k.find(opts.delimiter, opts.prefix.size());
      if (pos != std::string::npos) {
        ListItem item;
        item.path = k.substr(0, pos + opts.delimiter.size());
        item.common_prefix = true;
        std::string past = kv::PrefixEnd(item.path);
        out.items.push_back(std::move(item));
        if (past.empty()) break;  // nothing sorts after a prefix of 0xff bytes
        it->SeekGE(past);
        continue;
      }
    }
    ListItem item;
    item.path = k;
    ARROW_ASSIGN_OR_RAISE(item.entry, DecodeEntry(it->value()));
    out.items.push_back(std::move(item));
  }
  ARROW_RETURN_NOT_OK(it->status());
  return out;
}

// ---------------------------------------------------------------------------
// Commit

Result<Catalog::BranchRecord> Catalog::Seal(const std::string& repo_id, const std::string& branch) {
  for (int i = 0;; ++i) {
    ARROW_ASSIGN_OR_RAISE(auto rec, LoadBranch(repo_id, branch));
    Branch next = rec.branch;
    next.sealed_tokens.insert(next.sealed_tokens.begin(), rec.branch.staging_token);
    next.staging_token = NewToken();
    std::string raw = BranchJson(next);
    Status st = kv_->SetIf(BranchKey(repo_id, branch), raw, rec.raw);
    if (st.ok()) return BranchRecord{std::move(next), std::move(raw)};
    if (!IsPreconditionFailed(st) || i + 1 >= kCasRetries) return st;
  }
}

Result<CompactionResult> Catalog::CompactStaging(const std::string& repo_id, const std::string& branch,
                                                 const std::function<void()>& after_seal) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  if (repo.read_only) return Forbidden(fmt::format("repository \"{}\" is read-only: it is never compacted", repo_id));
  CompactionResult result;
  ARROW_ASSIGN_OR_RAISE(auto probe, LoadBranch(repo_id, branch));
  bool staged = false;
  for (const auto& t : probe.branch.sealed_tokens) {
    ARROW_ASSIGN_OR_RAISE(auto page, kv_->Scan(StagingPrefix(t), "", 1));
    staged = staged || !page.items.empty();
  }
  ARROW_ASSIGN_OR_RAISE(auto page, kv_->Scan(StagingPrefix(probe.branch.staging_token), "", 1));
  staged = staged || !page.items.empty();
  if (!staged) {
    result.meta_range_id = probe.branch.compacted_meta_range_id;
    return result;
  }

  // 1. Seal: writes from now on go to a fresh token and stay staged over the result.
  ARROW_ASSIGN_OR_RAISE(auto sealed, Seal(repo_id, branch));
  if (after_seal) after_seal();
  const Branch& b = sealed.branch;

  // 2. Fold every sealed token into the base: the previous compaction, else the commit.
  ARROW_ASSIGN_OR_RAISE(auto base, BaseMetaRange(repo, b));
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  auto changes = StagingView(b, /*include_current=*/false);
  ARROW_ASSIGN_OR_RAISE(auto mr, ApplyChanges(*ranges_, ns, base, *changes, &result.stats));
  result.staged_entries = result.stats.changes;

  // 3. Swap, unless a commit or reset made the work stale; later seals are kept.
  std::set<std::string> folded(b.sealed_tokens.begin(), b.sealed_tokens.end());
  for (int i = 0; i < kCasRetries; ++i) {
    ARROW_ASSIGN_OR_RAISE(auto now, LoadBranch(repo_id, branch));
    size_t still_sealed = 0;
    for (const auto& t : now.branch.sealed_tokens) still_sealed += folded.count(t);
    if (now.branch.commit_id != b.commit_id || now.branch.compacted_meta_range_id != b.compacted_meta_range_id ||
        still_sealed != folded.size()) {
      result.outcome = CompactionOutcome::kDiscarded;
      result.meta_range_id = now.branch.compacted_meta_range_id;
      return result;
    }
    Branch next = now.branch;
    std::erase_if(next.sealed_tokens, [&](const std::string& t) { return folded.count(t) > 0; });
    next.compacted_meta_range_id = mr->id;
    kv::Batch batch;
    batch.Require(kv::Precondition::Equals(BranchKey(repo_id, branch), now.raw))
        .Put(BranchKey(repo_id, branch), BranchJson(next));
    for (const auto& t : folded) batch.Put(DropKey(t), "");
    Status st = kv_->Apply(batch);
    if (st.ok()) {
      if (dropper_) dropper_->Trigger();
      result.outcome = CompactionOutcome::kCompleted;
      result.meta_range_id = mr->id;
      return result;
    }
    if (!IsPreconditionFailed(st)) return st;
  }
  return Busy(fmt::format("branch \"{}\" kept changing; compaction not applied", branch));
}

Result<Commit> Catalog::CommitBranch(const std::string& repo_id, const std::string& branch,
                                     const CommitParams& params) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  if (!params.force) ARROW_RETURN_NOT_OK(CheckWritable(repo));
  if (params.message.empty()) return InvalidArgument("commit message is required");

  // A staging compaction that lands between our seal and our swap folded some of
  // our tokens into a new compacted meta-range: nothing is lost, so start over
  // from it rather than fail the user's commit.
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    bool raced = false;
    auto c = CommitOnce(repo, branch, params, &raced);
    if (!raced || attempt == kAttempts) return c;
  }
}

Result<Commit> Catalog::CommitOnce(const Repository& repo, const std::string& branch, const CommitParams& params,
                                   bool* raced_compaction) {
  const std::string& repo_id = repo.id;
  // 1. Seal: new writes go to a fresh token from here on.
  ARROW_ASSIGN_OR_RAISE(auto probe, LoadBranch(repo_id, branch));
  ARROW_ASSIGN_OR_RAISE(bool dirty, IsDirty(repo_id, probe.branch));
  if (!dirty && !params.allow_empty) return NoChanges(fmt::format("branch \"{}\" has nothing to commit", branch));
  ARROW_ASSIGN_OR_RAISE(auto sealed, Seal(repo_id, branch));
  if (after_commit_seal_) after_commit_seal_();
  const Branch& b = sealed.branch;

  // 2. Apply the sealed tokens to the base meta-range.
  ARROW_ASSIGN_OR_RAISE(auto parent, GetCommit(repo_id, b.commit_id));
  ARROW_ASSIGN_OR_RAISE(auto base, BaseMetaRange(repo, b));
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  auto changes = StagingView(b, /*include_current=*/false);
  ARROW_ASSIGN_OR_RAISE(auto mr, ApplyChanges(*ranges_, ns, base, *changes));
  if (SameMetaRange(mr->id, parent.meta_range_id) && !params.allow_empty) {
    return NoChanges(fmt::format("the staged changes on \"{}\" leave its content as committed", branch));
  }

  // 3. Record the commit and swap the branch to it.
  Commit c;
  c.parents = {b.commit_id};
  c.committer = params.committer;
  c.message = params.message;
  c.creation_date = params.date ? *params.date : ToUnixMicros(clock_->Now()) / 1000000;
  c.meta_range_id = mr->id;
  c.metadata = params.metadata;
  c.generation = parent.generation + 1;
  ARROW_RETURN_NOT_OK(StoreCommit(repo_id, &c).status());
  auto changed = [&] {
    return Conflict(
        fmt::format("branch \"{}\" changed during the commit; its changes are still staged, retry", branch));
  };
  std::set<std::string> applied(b.sealed_tokens.begin(), b.sealed_tokens.end());
  ARROW_ASSIGN_OR_RAISE(auto now, LoadBranch(repo_id, branch));
  if (now.branch.commit_id != b.commit_id) return changed();  // another commit, hard reset or merge
  if (now.branch.compacted_meta_range_id != b.compacted_meta_range_id) {
    *raced_compaction = true;
    return changed();
  }
  size_t still_sealed = 0;
  for (const auto& t : now.branch.sealed_tokens) still_sealed += applied.count(t);
  if (still_sealed != applied.size()) return changed();  // reset meanwhile: do not commit what it dropped
  // Only the tokens this commit applied leave the branch; any sealed since stay.
  Branch next = now.branch;
  std::erase_if(next.sealed_tokens, [&](const std::string& t) { return applied.count(t) > 0; });
  next.commit_id = c.id;
  next.compacted_meta_range_id.clear();
  kv::Batch batch;
  batch.Require(kv::Precondition::Equals(BranchKey(repo_id, branch), now.raw))
      .Put(BranchKey(repo_id, branch), BranchJson(next));
  for (const auto& t : applied) batch.Put(DropKey(t), "");
  Status st = kv_->Apply(batch);
  if (IsPreconditionFailed(st)) return changed();
  ARROW_RETURN_NOT_OK(st);
  if (dropper_) dropper_->Trigger();
  return c;
}

Result<Page<Commit>> Catalog::Log(const std::string& repo_id, const std::string& ref, const std::string& after,
                                  int64_t amount_in, bool first_parent) {
  ARROW_RETURN_NOT_OK(GetRepository(repo_id).status());
  ARROW_ASSIGN_OR_RAISE(auto resolved, ResolveRef(repo_id, ref));
  int64_t amount = ClampAmount(amount_in);
  // Newest generation first, then newest date: a topological order of the history.
  auto cmp = [](const Commit& a, const Commit& b) {
    if (a.generation != b.generation) return a.generation < b.generation;
    if (a.creation_date != b.creation_date) return a.creation_date < b.creation_date;
    return a.id < b.id;
  };
  std::priority_queue<Commit, std::vector<Commit>, decltype(cmp)> queue(cmp);
  std::unordered_set<std::string> seen;
  ARROW_ASSIGN_OR_RAISE(auto head, GetCommit(repo_id, resolved.commit_id));
  seen.insert(head.id);
  queue.push(std::move(head));
  Page<Commit> out;
  bool emitting = after.empty();
  while (!queue.empty()) {
    Commit c = queue.top();
    queue.pop();
    size_t n_parents = first_parent ? std::min<size_t>(1, c.parents.size()) : c.parents.size();
    for (size_t i = 0; i < n_parents; ++i) {
      if (!seen.insert(c.parents[i]).second) continue;
      ARROW_ASSIGN_OR_RAISE(auto p, GetCommit(repo_id, c.parents[i]));
      queue.push(std::move(p));
    }
    if (!emitting) {
      if (c.id == after) emitting = true;
      continue;
    }
    if (static_cast<int64_t>(out.items.size()) == amount) {
      out.has_more = true;
      break;
    }
    out.items.push_back(std::move(c));
  }
  return out;
}

Result<Page<DiffItem>> Catalog::CollectDiff(DiffIterator& diff, const ListOptions& opts) {
  int64_t amount = ClampAmount(opts.amount);
  Page<DiffItem> out;
  auto start = ListStart(opts);
  if (!start) return out;
  diff.SeekGE(*start);
  while (diff.Next()) {
    const std::string& k = diff.key();
    if (k.compare(0, opts.prefix.size(), opts.prefix) != 0) break;
    if (static_cast<int64_t>(out.items.size()) == amount) {
      out.has_more = true;
      break;
    }
    DiffItem item;
    item.type = diff.left().empty() ? "added" : diff.right().empty() ? "removed" : "changed";
    if (!opts.delimiter.empty()) {
      size_t pos = k.find(opts.delimiter, opts.prefix.size());
      if (pos != std::string::npos) {
        item.path = k.substr(0, pos + opts.delimiter.size());
        item.common_prefix = true;
        item.type = "changed";
        std::string past = kv::PrefixEnd(item.path);
        out.items.push_back(std::move(item));
        if (past.empty()) break;  // nothing sorts after a prefix of 0xff bytes
        diff.SeekGE(past);
        continue;
      }
    }
    item.path = k;
    const std::string& v = diff.right().empty() ? diff.left() : diff.right();
    ARROW_ASSIGN_OR_RAISE(auto e, DecodeEntry(v));
    item.size_bytes = e.size;
    out.items.push_back(std::move(item));
  }
  ARROW_RETURN_NOT_OK(diff.status());
  return out;
}

Result<Page<DiffItem>> Catalog::DiffUncommitted(const std::string& repo_id, const std::string& branch,
                                                const ListOptions& opts) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_ASSIGN_OR_RAISE(auto rec, LoadBranch(repo_id, branch));
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  ARROW_ASSIGN_OR_RAISE(auto commit_mr, CommitMetaRange(repo, rec.branch.commit_id));
  // Candidates: every staged key, plus every key the compacted meta-range changed.
  std::vector<std::unique_ptr<ValueIterator>> sources;
  sources.push_back(StagingView(rec.branch));
  if (!rec.branch.compacted_meta_range_id.empty()) {
    ARROW_ASSIGN_OR_RAISE(auto compacted, ranges_->LoadMetaRange(ns, rec.branch.compacted_meta_range_id));
    sources.push_back(DiffAsChanges(DiffMetaRanges(*ranges_, ns, commit_mr, compacted)));
  }
  auto diff = NewLookupDiff(NewCombinedIterator(std::move(sources)), ranges_->NewIterator(ns, commit_mr));
  return CollectDiff(*diff, opts);
}

Result<std::string> Catalog::MergeBase(const std::string& repo, const std::string& a, const std::string& b) {
  std::unordered_set<std::string> ancestors;
  std::vector<std::string> stack = {a};
  while (!stack.empty()) {
    std::string id = stack.back();
    stack.pop_back();
    if (!ancestors.insert(id).second) continue;
    ARROW_ASSIGN_OR_RAISE(auto c, GetCommit(repo, id));
    for (const auto& p : c.parents) stack.push_back(p);
  }
  auto cmp = [](const Commit& x, const Commit& y) { return x.generation < y.generation; };
  std::priority_queue<Commit, std::vector<Commit>, decltype(cmp)> queue(cmp);
  std::unordered_set<std::string> seen = {b};
  ARROW_ASSIGN_OR_RAISE(auto head, GetCommit(repo, b));
  queue.push(std::move(head));
  while (!queue.empty()) {
    Commit c = queue.top();
    queue.pop();
    if (ancestors.count(c.id)) return c.id;
    for (const auto& p : c.parents) {
      if (!seen.insert(p).second) continue;
      ARROW_ASSIGN_OR_RAISE(auto pc, GetCommit(repo, p));
      queue.push(std::move(pc));
    }
  }
  return NotFound(fmt::format("commits {} and {} have no common ancestor", a, b));
}

Result<Page<DiffItem>> Catalog::DiffRefs(const std::string& repo_id, const std::string& left, const std::string& right,
                                         bool three_dot, const ListOptions& opts) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_ASSIGN_OR_RAISE(auto l, ResolveRef(repo_id, left));
  ARROW_ASSIGN_OR_RAISE(auto r, ResolveRef(repo_id, right));
  std::string left_commit = l.commit_id;
  if (three_dot) {
    ARROW_ASSIGN_OR_RAISE(left_commit, MergeBase(repo_id, l.commit_id, r.commit_id));
  }
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  ARROW_ASSIGN_OR_RAISE(auto lmr, CommitMetaRange(repo, left_commit));
  ARROW_ASSIGN_OR_RAISE(auto rmr, CommitMetaRange(repo, r.commit_id));
  auto diff = DiffMetaRanges(*ranges_, ns, lmr, rmr);
  return CollectDiff(*diff, opts);
}

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
  c.parents = {rec.branch.commit_id, src.commit_id};
  c.committer = params.committer;
  c.message = params.message.empty() ? fmt::format("Merge '{}' into '{}'", source_ref, dest_branch) : params.message;
  c.metadata = params.metadata;
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

Status Catalog::ResetBranch(const std::string& repo_id, const std::string& branch) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  for (int i = 0; i < kCasRetries; ++i) {
    ARROW_ASSIGN_OR_RAISE(auto rec, LoadBranch(repo_id, branch));
    Branch next = rec.branch;
    next.staging_token = NewToken();
    next.sealed_tokens.clear();
    next.compacted_meta_range_id.clear();
    kv::Batch batch;
    batch.Require(kv::Precondition::Equals(BranchKey(repo_id, branch), rec.raw))
        .Put(BranchKey(repo_id, branch), BranchJson(next))
        .Put(DropKey(rec.branch.staging_token), "");
    for (const auto& t : rec.branch.sealed_tokens) batch.Put(DropKey(t), "");
    Status st = kv_->Apply(batch);
    if (st.ok()) {
      if (dropper_) dropper_->Trigger();
      return Status::OK();
    }
    if (!IsPreconditionFailed(st)) return st;
  }
  return Busy(fmt::format("branch \"{}\" kept changing; retry the reset", branch));
}

Status Catalog::ResetPath(const std::string& repo_id, const std::string& branch, const std::string& path, bool prefix) {
  if (!prefix) ARROW_RETURN_NOT_OK(ValidatePath(path));
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_ASSIGN_OR_RAISE(auto rec, LoadBranch(repo_id, branch));
  const Branch& b = rec.branch;
  std::vector<std::string> tokens = b.sealed_tokens;
  tokens.push_back(b.staging_token);
  for (const auto& t : tokens) {
    if (prefix) {
      kv::Batch batch;
      ARROW_RETURN_NOT_OK(kv_->ScanAll(StagingPrefix(t) + path, "", [&](const kv::KeyValue& item) -> Result<bool> {
        batch.Delete(item.key);
        if (batch.mutations.size() >= 1000) {
          ARROW_RETURN_NOT_OK(kv_->Apply(batch));
          batch = {};
        }
        return true;
      }));
      if (!batch.mutations.empty()) ARROW_RETURN_NOT_OK(kv_->Apply(batch));
    } else {
      ARROW_RETURN_NOT_OK(kv_->Delete(StagingPrefix(t) + path));
    }
  }
  if (!b.compacted_meta_range_id.empty()) {
    // The compacted meta-range still carries the change: restage the committed value over it.
    ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
    ARROW_ASSIGN_OR_RAISE(auto commit_mr, CommitMetaRange(repo, b.commit_id));
    ARROW_ASSIGN_OR_RAISE(auto compacted, ranges_->LoadMetaRange(ns, b.compacted_meta_range_id));
    auto diff = DiffMetaRanges(*ranges_, ns, commit_mr, compacted);
    diff->SeekGE(path);
    while (diff->Next()) {
      if (prefix ? diff->key().compare(0, path.size(), path) != 0 : diff->key() != path) break;
      ARROW_RETURN_NOT_OK(kv_->Set(StagingPrefix(b.staging_token) + diff->key(), diff->left()));
    }
    ARROW_RETURN_NOT_OK(diff->status());
  }
  return Status::OK();
}

Status Catalog::HardReset(const std::string& repo_id, const std::string& branch, const std::string& ref) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_ASSIGN_OR_RAISE(auto target, ResolveRef(repo_id, ref));
  ARROW_ASSIGN_OR_RAISE(auto rec, RequireClean(repo, branch));
  Branch next = rec.branch;
  next.commit_id = target.commit_id;
  Status st = kv_->SetIf(BranchKey(repo_id, branch), BranchJson(next), rec.raw);
  if (IsPreconditionFailed(st)) return Conflict(fmt::format("branch \"{}\" changed meanwhile; retry", branch));
  return st;
}

// ---------------------------------------------------------------------------
// Tags

Result<Tag> Catalog::CreateTag(const std::string& repo_id, const std::string& id, const std::string& ref, bool force) {
  ARROW_RETURN_NOT_OK(GetRepository(repo_id).status());
  if (!ValidateBranchName(id).ok()) {
    return InvalidArgument(fmt::format("invalid tag name \"{}\": use letters, digits, '_' and '-'", id));
  }
  ARROW_ASSIGN_OR_RAISE(auto target, ResolveRef(repo_id, ref));
  if (kv_->Get(BranchKey(repo_id, id)).ok()) {
    return Conflict(fmt::format("a branch named \"{}\" already exists in \"{}\"", id, repo_id));
  }
  Status st = force ? kv_->Set(TagKey(repo_id, id), target.commit_id)
                    : kv_->SetIf(TagKey(repo_id, id), target.commit_id, std::nullopt);
  if (IsPreconditionFailed(st)) return Conflict(fmt::format("tag \"{}\" already exists in \"{}\"", id, repo_id));
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
