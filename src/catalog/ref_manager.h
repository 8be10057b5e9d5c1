// RefManager: the catalog's refs (graveler's RefManager): the records of
// repositories, branches, commits and tags in the KV store (c/r/, c/b/, c/c/,
// c/t/; keys.h), ResolveRef, and walks of the commit graph (Log, MergeBase).
// It knows records, not data: a branch's staging tokens are names to it (the
// StagingManager's), a commit's meta-range an id (the CommittedManager's);
// the Catalog composes them, and builds the batches that span them (a commit's
// swap retires tokens in the branch's own batch).
//
// Owns: the cache of commit records (immutable and named by their content, so
// never stale) and the log cursors (where Log pages stopped), each under its
// own mutex.
//
// Thread-safety: every method is safe to call from many threads and servers;
// records change only by compare-and-swap or in atomic batches.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "catalog/records.h"

namespace sediment::kv {
class KvStore;
}  // namespace sediment::kv

namespace sediment::catalog {

struct BranchRecord {
  Branch branch;
  std::string raw;  // the stored bytes, for compare-and-swap
};

struct RepositoryRecord {
  Repository repo;
  std::string raw;  // the stored bytes, a precondition of refs created in it
};

class RefManager {
 public:
  explicit RefManager(std::shared_ptr<kv::KvStore> kv);

  // Names (Catalog::Validate... are these).
  static Status ValidateRepositoryName(const std::string& name);
  static Status ValidateBranchName(const std::string& name);
  static Status ValidateTagName(const std::string& name);

  // Repositories. Creating and deleting one spans the managers: the Catalog's.
  Result<RepositoryRecord> LoadRepository(const std::string& id);
  Result<Repository> GetRepository(const std::string& id);
  Result<Page<Repository>> ListRepositories(const std::string& prefix, const std::string& after, int64_t amount);
  // Rewrites the repository record with what `change` makes of it, on the
  // condition that it is still as read (read again and retried if not).
  Status UpdateRepository(const std::string& id, const std::function<Status(Repository*)>& change);

  // Branches. Deleting one retires its tokens: the Catalog's.
  Result<BranchRecord> LoadBranch(const std::string& repo, const std::string& name);
  Result<Branch> GetBranch(const std::string& repo, const std::string& name);
  Result<Page<Branch>> ListBranches(const std::string& repo, const std::string& prefix, const std::string& after,
                                    int64_t amount);
  // A branch at `source_ref`'s commit with a fresh staging token, if no branch
  // or tag has the name, in a repository still as read.
  Result<Branch> CreateBranch(const std::string& repo, const std::string& name, const std::string& source_ref);

  // Commits: stored under the SHA-256 of their record, which sets commit->id.
  Result<std::string> StoreCommit(const std::string& repo, Commit* commit);
  Result<Commit> GetCommit(const std::string& repo, const std::string& commit_id);
  // Every commit id of the repository (GC keeps their meta-ranges).
  Result<std::vector<std::string>> CommitIds(const std::string& repo);
  // Drops the repository's commits from the cache (its deletion).
  void ForgetCommits(const std::string& repo);

  // Refs and history (ref_manager_history.cc).
  Result<ResolvedRef> ResolveRef(const std::string& repo, const std::string& ref);
  Result<Page<Commit>> Log(const std::string& repo, const std::string& ref, const std::string& after, int64_t amount,
                           bool first_parent);
  Result<std::string> MergeBase(const std::string& repo, const std::string& a, const std::string& b);

  // Tags. `force` replaces a tag of that name.
  Result<Tag> CreateTag(const std::string& repo, const std::string& id, const std::string& ref, bool force);
  Result<Tag> GetTag(const std::string& repo, const std::string& id);
  Result<Page<Tag>> ListTags(const std::string& repo, const std::string& prefix, const std::string& after,
                             int64_t amount);
  Status DeleteTag(const std::string& repo, const std::string& id);

 private:
  // Why creating a branch or tag named `name` failed its preconditions.
  enum class RefKind { kBranch, kTag };
  Status RefCollision(const std::string& repo, const std::string& name, RefKind creating);

  const std::shared_ptr<kv::KvStore> kv_;

  std::mutex commits_mu_;
  std::unordered_map<std::string, Commit> commits_;  // GUARDED_BY(commits_mu_), "<repo>/<id>"

  // Where `log` pages stop: (repo, head, last listed commit, first_parent) ->
  // the commits the walk would look at next. A page that starts after one
  // resumes there instead of walking again from the head; exact, since
  // commits never change. Bounded; a miss (another server, evicted) walks.
  struct LogCursors {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<std::string>> frontier;  // GUARDED_BY(mu)
    std::vector<std::string> order;                                      // GUARDED_BY(mu): FIFO eviction
  };
  LogCursors log_cursors_;
};

}  // namespace sediment::catalog
