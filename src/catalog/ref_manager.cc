// RefManager: repository, branch, commit and tag records (see ref_manager.h);
// ResolveRef, Log and MergeBase are in ref_manager_history.cc.
#include "catalog/ref_manager.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "base/crypto.h"
#include "catalog/catalog_internal.h"
#include "catalog/catalog_refs_internal.h"
#include "catalog/keys.h"
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
using internal::NewToken;
using internal::ParseBranch;

using namespace refs_internal;  // NOLINT: the records' JSON shapes

RefManager::RefManager(std::shared_ptr<kv::KvStore> kv) : kv_(std::move(kv)) {}

// ---------------------------------------------------------------------------
// Validation

Status RefManager::ValidateRepositoryName(const std::string& name) {
  static const std::regex re("^[a-z0-9][a-z0-9-]{2,62}$");
  if (!std::regex_match(name, re)) {
    return InvalidArgument(fmt::format(
        "invalid repository name \"{}\": use 3-63 lowercase letters, digits and '-', starting with a letter or digit",
        name));
  }
  return Status::OK();
}

Status RefManager::ValidateTagName(const std::string& name) {
  auto bad = [&](const char* why) { return InvalidArgument(fmt::format("invalid tag name \"{}\": {}", name, why)); };
  if (name.empty() || name == "@") return bad("it must not be empty or \"@\"");
  if (name.size() > 256) return bad("at most 256 characters");
  if (name.back() == '.' || name.ends_with(".lock")) return bad("it must not end in \".\" or \".lock\"");
  if (name.find("..") != std::string::npos || name.find("@{") != std::string::npos) {
    return bad("it must not contain \"..\" or \"@{\"");
  }
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f || c == ' ' ||
        std::string_view("/~^:?*[\\").find(static_cast<char>(c)) != std::string_view::npos) {
      return bad("it must not contain spaces, control characters or any of / ~ ^ : ? * [ \\");
    }
  }
  return Status::OK();
}

Status RefManager::ValidateBranchName(const std::string& name) {
  static const std::regex re("^\\w[-\\w]*$");
  if (name.size() > 256 || !std::regex_match(name, re)) {
    return InvalidArgument(
        fmt::format("invalid branch name \"{}\": use letters, digits, '_' and '-', not starting with '-'", name));
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Repositories

Result<RepositoryRecord> RefManager::LoadRepository(const std::string& id) {
  ARROW_RETURN_NOT_OK(ValidateRepositoryName(id));
  auto raw = kv_->Get(RepoKey(id));
  if (IsNotFound(raw.status())) return NotFound("repository not found");  // lakeFS's words; the request names it
  ARROW_RETURN_NOT_OK(raw.status());
  try {
    auto j = json::parse(*raw);
    Repository repo{id,
                    j.at("storage_namespace").get<std::string>(),
                    j.at("default_branch").get<std::string>(),
                    j.at("creation_date").get<int64_t>(),
                    j.value("read_only", false),
                    j.value("location", ""),
                    {}};
    if (repo.location.empty()) repo.location = repo.storage_namespace;
    repo.protected_branches = j.value("protected_branches", std::vector<std::string>{});
    repo.metadata = j.value("metadata", std::map<std::string, std::string>{});
    if (j.contains("gc_rules")) {
      GcRules rules;
      rules.default_retention_days = j["gc_rules"].at("default_retention_days").get<int64_t>();
      rules.branches = j["gc_rules"].value("branches", std::map<std::string, int64_t>{});
      repo.gc_rules = std::move(rules);
    }
    return RepositoryRecord{std::move(repo), std::move(*raw)};
  } catch (const std::exception& e) {
    return Status::IOError(fmt::format("corrupt repository record {}: {}", id, e.what()));
  }
}

Result<Repository> RefManager::GetRepository(const std::string& id) {
  ARROW_ASSIGN_OR_RAISE(auto rec, LoadRepository(id));
  return std::move(rec.repo);
}

Result<Page<Repository>> RefManager::ListRepositories(const std::string& prefix, const std::string& after,
                                                      int64_t amount) {
  const std::string repositories = RepositoriesPrefix();
  ARROW_ASSIGN_OR_RAISE(auto keys, ListKeys(*kv_, repositories, prefix, after, ClampAmount(amount)));
  Page<Repository> out;
  out.has_more = keys.has_more;
  for (const auto& kv : keys.items) {
    ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(kv.key.substr(repositories.size())));
    out.items.push_back(std::move(repo));
  }
  return out;
}
Status RefManager::UpdateRepository(const std::string& id, const std::function<Status(Repository*)>& change) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    ARROW_ASSIGN_OR_RAISE(auto rec, LoadRepository(id));
    Repository next = rec.repo;
    ARROW_RETURN_NOT_OK(change(&next));
    kv::Batch b;
    b.Require(kv::Precondition::Equals(RepoKey(id), rec.raw)).Put(RepoKey(id), RepoJson(next).dump());
    Status st = kv_->Apply(b);
    if (!IsPreconditionFailed(st)) return st;
  }
  return Busy(fmt::format("repository \"{}\" kept changing; retry", id));
}

// ---------------------------------------------------------------------------
// Commits and branches

Result<std::string> RefManager::StoreCommit(const std::string& repo, Commit* commit) {
  std::string body = CommitBody(*commit).dump();
  commit->id = Sha256Hex(body);
  ARROW_RETURN_NOT_OK(kv_->Set(CommitKey(repo, commit->id), body));
  return commit->id;
}

Result<Commit> RefManager::GetCommit(const std::string& repo, const std::string& commit_id) {
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

Result<BranchRecord> RefManager::LoadBranch(const std::string& repo, const std::string& name) {
  ARROW_RETURN_NOT_OK(ValidateBranchName(name));
  auto raw = kv_->Get(BranchKey(repo, name));
  if (IsNotFound(raw.status())) return NotFound(fmt::format("branch \"{}\" not found in \"{}\"", name, repo));
  ARROW_RETURN_NOT_OK(raw.status());
  ARROW_ASSIGN_OR_RAISE(auto b, ParseBranch(name, *raw));
  return BranchRecord{std::move(b), std::move(*raw)};
}
Result<Branch> RefManager::CreateBranch(const std::string& repo_id, const std::string& name,
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

Status RefManager::RefCollision(const std::string& repo_id, const std::string& name, RefKind creating) {
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

Result<Branch> RefManager::GetBranch(const std::string& repo, const std::string& name) {
  ARROW_RETURN_NOT_OK(GetRepository(repo).status());
  ARROW_ASSIGN_OR_RAISE(auto rec, LoadBranch(repo, name));
  return rec.branch;
}

Result<Page<Branch>> RefManager::ListBranches(const std::string& repo, const std::string& prefix,
                                              const std::string& after, int64_t amount) {
  ARROW_RETURN_NOT_OK(GetRepository(repo).status());
  std::string kprefix = BranchesPrefix(repo);
  ARROW_ASSIGN_OR_RAISE(auto keys, ListKeys(*kv_, kprefix, prefix, after, ClampAmount(amount)));
  Page<Branch> out;
  out.has_more = keys.has_more;
  for (const auto& kv : keys.items) {
    ARROW_ASSIGN_OR_RAISE(auto b, ParseBranch(kv.key.substr(kprefix.size()), kv.value));
    out.items.push_back(std::move(b));
  }
  return out;
}

// ---------------------------------------------------------------------------
// Tags

Result<Tag> RefManager::CreateTag(const std::string& repo_id, const std::string& id, const std::string& ref,
                                  bool force) {
  ARROW_ASSIGN_OR_RAISE(auto repo, LoadRepository(repo_id));
  ARROW_RETURN_NOT_OK(ValidateTagName(id));
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

Result<Tag> RefManager::GetTag(const std::string& repo_id, const std::string& id) {
  ARROW_RETURN_NOT_OK(GetRepository(repo_id).status());
  auto v = kv_->Get(TagKey(repo_id, id));
  if (IsNotFound(v.status())) return NotFound(fmt::format("tag \"{}\" not found in \"{}\"", id, repo_id));
  ARROW_RETURN_NOT_OK(v.status());
  return Tag{id, *v};
}

Result<Page<Tag>> RefManager::ListTags(const std::string& repo_id, const std::string& prefix, const std::string& after,
                                       int64_t amount) {
  ARROW_RETURN_NOT_OK(GetRepository(repo_id).status());
  std::string kprefix = TagsPrefix(repo_id);
  ARROW_ASSIGN_OR_RAISE(auto keys, ListKeys(*kv_, kprefix, prefix, after, ClampAmount(amount)));
  Page<Tag> out;
  out.has_more = keys.has_more;
  for (const auto& kv : keys.items) out.items.push_back({kv.key.substr(kprefix.size()), kv.value});
  return out;
}

Status RefManager::DeleteTag(const std::string& repo_id, const std::string& id) {
  ARROW_RETURN_NOT_OK(GetTag(repo_id, id).status());
  return kv_->Delete(TagKey(repo_id, id));
}

Result<std::vector<std::string>> RefManager::CommitIds(const std::string& repo) {
  std::vector<std::string> ids;
  std::string prefix = CommitsPrefix(repo);
  ARROW_RETURN_NOT_OK(kv_->ScanAll(prefix, "", [&](const kv::KeyValue& e) -> Result<bool> {
    ids.push_back(e.key.substr(prefix.size()));
    return true;
  }));
  return ids;
}

void RefManager::ForgetCommits(const std::string& repo) {
  std::lock_guard<std::mutex> lock(commits_mu_);
  std::erase_if(commits_, [&](const auto& c) { return c.first.rfind(repo + "/", 0) == 0; });
}

}  // namespace sediment::catalog
