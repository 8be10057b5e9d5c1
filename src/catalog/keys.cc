#include "catalog/keys.h"

#include <fmt/format.h>

#include <string_view>

namespace sediment::catalog {
namespace {

constexpr std::string_view kRepositories = "c/r/";
constexpr std::string_view kRepoDeletions = "c/rd/";
constexpr std::string_view kNamespaces = "c/n/";
constexpr std::string_view kRetiredNamespaces = "c/nr/";
constexpr std::string_view kBranches = "c/b/";
constexpr std::string_view kCommits = "c/c/";
constexpr std::string_view kTags = "c/t/";
constexpr std::string_view kStaging = "c/s/";
constexpr std::string_view kDrops = "c/d/";
constexpr std::string_view kMutationCounters = "c/m/";
constexpr std::string_view kCompactionStatuses = "c/cs/";
constexpr std::string_view kCompactionLeases = "c/cl/";
constexpr std::string_view kUploads = "c/mp/";
constexpr std::string_view kLinkAddresses = "c/la/";
constexpr std::string_view kImports = "c/imp/";
constexpr std::string_view kGcLeases = "c/gcl/";

// <kind><a>/ : the records of kind `kind` under `a` (a repository, a token).
std::string PrefixOf(std::string_view kind, const std::string& a) { return std::string(kind).append(a).append("/"); }
// <kind><a>/<b>
std::string KeyOf(std::string_view kind, const std::string& a, const std::string& b) {
  return PrefixOf(kind, a).append(b);
}

}  // namespace

std::string RepoKey(const std::string& repo) { return std::string(kRepositories) + repo; }
std::string RepositoriesPrefix() { return std::string(kRepositories); }
std::string RepoDeletionKey(const std::string& repo) { return std::string(kRepoDeletions) + repo; }
std::string RepoDeletionsPrefix() { return std::string(kRepoDeletions); }
std::string NamespaceKey(const std::string& ns) { return std::string(kNamespaces) + ns; }
std::string RetiredNamespaceKey(const std::string& ns) { return std::string(kRetiredNamespaces) + ns; }
std::string NamespaceEpochKey() { return "c/ne"; }

std::string BranchKey(const std::string& repo, const std::string& branch) { return KeyOf(kBranches, repo, branch); }
std::string BranchesPrefix(const std::string& repo) { return PrefixOf(kBranches, repo); }
std::string CommitKey(const std::string& repo, const std::string& commit_id) {
  return KeyOf(kCommits, repo, commit_id);
}
std::string CommitsPrefix(const std::string& repo) { return PrefixOf(kCommits, repo); }
std::string TagKey(const std::string& repo, const std::string& tag) { return KeyOf(kTags, repo, tag); }
std::string TagsPrefix(const std::string& repo) { return PrefixOf(kTags, repo); }

std::string StagedEntryKey(const std::string& token, const std::string& path) { return KeyOf(kStaging, token, path); }
std::string StagingPrefix(const std::string& token) { return PrefixOf(kStaging, token); }
std::string DropKey(const std::string& token) { return std::string(kDrops) + token; }
std::string DropsPrefix() { return std::string(kDrops); }

std::string MutationCounterKey(const std::string& repo, const std::string& branch) {
  return KeyOf(kMutationCounters, repo, branch);
}
std::string MutationCountersPrefix() { return std::string(kMutationCounters); }
std::string CompactionStatusKey(const std::string& repo, const std::string& branch) {
  return KeyOf(kCompactionStatuses, repo, branch);
}
std::string CompactionLeaseKey(const std::string& repo, const std::string& branch) {
  return KeyOf(kCompactionLeases, repo, branch);
}

std::string UploadKey(const std::string& repo, const std::string& upload_id) {
  return KeyOf(kUploads, repo, upload_id);
}
std::string UploadsPrefix(const std::string& repo) { return PrefixOf(kUploads, repo); }
std::string UploadPartKey(const std::string& repo, const std::string& upload_id, int part) {
  return fmt::format("{}{:05d}", UploadPartsPrefix(repo, upload_id), part);
}
std::string UploadPartsPrefix(const std::string& repo, const std::string& upload_id) {
  return UploadKey(repo, upload_id) + "/";
}

std::string LinkAddressKey(const std::string& repo, const std::string& address) {
  return KeyOf(kLinkAddresses, repo, address);
}
std::string LinkAddressesPrefix(const std::string& repo) { return PrefixOf(kLinkAddresses, repo); }

std::string ImportKey(const std::string& repo, const std::string& import_id) {
  return KeyOf(kImports, repo, import_id);
}
std::string ImportEndKey(const std::string& repo, const std::string& import_id) {
  return ImportKey(repo, import_id) + "/end";
}
std::string ImportsPrefix(const std::string& repo) { return PrefixOf(kImports, repo); }

std::string GcLeaseKey(const std::string& repo) { return std::string(kGcLeases) + repo; }

std::vector<std::string> RepositoryKeyPrefixes(const std::string& repo) {
  return {TagsPrefix(repo),
          CommitsPrefix(repo),
          PrefixOf(kMutationCounters, repo),
          PrefixOf(kCompactionStatuses, repo),
          PrefixOf(kCompactionLeases, repo),
          UploadsPrefix(repo),
          LinkAddressesPrefix(repo),
          ImportsPrefix(repo)};
}

}  // namespace sediment::catalog
