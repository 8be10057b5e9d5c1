// Catalog, refs and names: validation of names and paths, branches, commit
// records, ResolveRef and tags (repositories: catalog_repositories.cc).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "base/crypto.h"
#include "base/executor.h"
#include "blob/blob.h"
#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "catalog/catalog_refs_internal.h"
#include "catalog/keys.h"
#include "catalog/staging_manager.h"
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
using internal::kCasRetries;
using internal::NewToken;
using internal::ParseBranch;

using namespace refs_internal;  // NOLINT: the helpers of this file

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

Status Catalog::ValidateTagName(const std::string& name) {
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
  // Paths are JSON strings in the API and S3 keys: text, not bytes.
  if (!IsUtf8(path)) return InvalidArgument("invalid path: not valid UTF-8");
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

namespace {

// Splits "name~N^M..." into the name (in *ref) and its modifiers: "~N" (N-th
// first parent), "^N" (N-th parent).
Result<std::vector<std::pair<char, int>>> SplitModifiers(const std::string& ref_in, std::string* ref) {
  std::vector<std::pair<char, int>> mods;
  *ref = ref_in;
  size_t mod_pos = ref->find_first_of("~^");
  if (mod_pos == std::string::npos) return mods;
  std::string tail = ref->substr(mod_pos);
  ref->resize(mod_pos);
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
  return mods;
}

}  // namespace

Result<ResolvedRef> Catalog::ResolveRef(const std::string& repo, const std::string& ref_in) {
  if (ref_in.empty()) return InvalidArgument("empty ref");
  // Modifiers "~N", "^N"; a trailing "@" means the committed state of a branch.
  std::string ref;
  ARROW_ASSIGN_OR_RAISE(auto mods, SplitModifiers(ref_in, &ref));
  bool committed_only = false;
  if (!ref.empty() && ref.back() == '@') {
    committed_only = true;
    ref.pop_back();
  }
  ResolvedRef out;
  if (!ValidateBranchName(ref).ok() && ValidateTagName(ref).ok()) {  // only a tag can have this name
    auto tag = kv_->Get(TagKey(repo, ref));
    if (tag.ok()) {
      out.commit_id = *tag;
    } else if (!IsNotFound(tag.status())) {
      return tag.status();
    }
  } else if (ValidateBranchName(ref).ok()) {
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
      if (page.items.size() == 1) out.commit_id = page.items[0].key.substr(CommitsPrefix(repo).size());
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

Result<Branch> Catalog::DoCreateBranch(const std::string& repo_id, const std::string& name,
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

Status Catalog::DoDeleteBranch(const std::string& repo_id, const std::string& name) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  if (name == repo.default_branch) {
    return Forbidden(fmt::format("cannot delete the default branch \"{}\" of \"{}\"", name, repo_id));
  }
  ARROW_ASSIGN_OR_RAISE(auto rec, LoadBranch(repo_id, name));
  kv::Batch batch;
  batch.Require(kv::Precondition::Equals(BranchKey(repo_id, name), rec.raw))
      .Delete(BranchKey(repo_id, name))
      .Delete(MutationCounterKey(repo_id, name))
      .Delete(CompactionStatusKey(repo_id, name))
      .Delete(CompactionLeaseKey(repo_id, name));
  StagingManager::Retire(&batch, rec.branch.staging_token);
  for (const auto& t : rec.branch.sealed_tokens) StagingManager::Retire(&batch, t);
  Status st = kv_->Apply(batch);
  if (IsPreconditionFailed(st)) return Conflict(fmt::format("branch \"{}\" changed while deleting; retry", name));
  ARROW_RETURN_NOT_OK(st);
  staging_->TriggerDrop();
  if (on_branch_gone_) on_branch_gone_(repo_id, name);
  return Status::OK();
}

Result<bool> Catalog::IsDirty(const std::string& repo, const Branch& branch) {
  (void)repo;
  if (!branch.compacted_meta_range_id.empty()) return true;
  return staging_->HasStagedEntries(branch, StagedProbe::kStopAtFirst);
}

// ---------------------------------------------------------------------------
// Tags

Result<Tag> Catalog::DoCreateTag(const std::string& repo_id, const std::string& id, const std::string& ref,
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
  std::string kprefix = TagsPrefix(repo_id);
  ARROW_ASSIGN_OR_RAISE(auto keys, ListKeys(*kv_, kprefix, prefix, after, ClampAmount(amount)));
  Page<Tag> out;
  out.has_more = keys.has_more;
  for (const auto& kv : keys.items) out.items.push_back({kv.key.substr(kprefix.size()), kv.value});
  return out;
}

Status Catalog::DoDeleteTag(const std::string& repo_id, const std::string& id) {
  ARROW_RETURN_NOT_OK(GetTag(repo_id, id).status());
  return kv_->Delete(TagKey(repo_id, id));
}

}  // namespace sediment::catalog
