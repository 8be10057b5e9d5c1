// The catalog's records and the parameters of its operations, as the API
// sees them: repositories, branches, commits, tags, listings, diffs, pages,
// multipart uploads, commit parameters, staging-compaction results, refs.
// Plain values; the Catalog (catalog.h) reads and writes them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "catalog/committed.h"
#include "catalog/entry.h"

namespace sediment::catalog {

// lakeFS's garbage-collection rules of a repository: how many days a commit
// keeps its objects, by default and per branch.
struct GcRules {
  int64_t default_retention_days = 0;
  std::map<std::string, int64_t> branches;
  bool operator==(const GcRules&) const = default;
};

struct Repository {
  std::string id;
  std::string storage_namespace;  // as the creator wrote it
  std::string default_branch;
  int64_t creation_date = 0;
  bool read_only = false;
  // Where its files are: the namespace as resolved and checked at creation
  // (NamespaceLocation::Uri). "" = storage_namespace (records written before).
  std::string location;
  // Branch protection: glob patterns ('*', '?') of branches no one may write
  // or commit to directly (merges into them are allowed), as lakeFS's rules.
  std::vector<std::string> protected_branches;
  // lakeFS's repository metadata: the users' key-value pairs.
  std::map<std::string, std::string> metadata;
  std::optional<GcRules> gc_rules;  // none = the collector's retention
};

struct Branch {
  std::string id;
  std::string commit_id;
  std::string staging_token;
  std::vector<std::string> sealed_tokens;  // newest first
  std::string compacted_meta_range_id;     // "" = not compacted
};

struct Commit {
  std::string id;
  std::vector<std::string> parents;
  std::string committer;
  std::string message;
  int64_t creation_date = 0;
  std::string meta_range_id;
  std::map<std::string, std::string> metadata;
  int64_t generation = 0;
};

struct Tag {
  std::string id;
  std::string commit_id;
};

struct ListOptions {
  std::string prefix;
  std::string after;
  std::string delimiter;
  int64_t amount = 100;
};

struct ListItem {
  std::string path;
  bool common_prefix = false;
  Entry entry;  // objects only
};

struct DiffItem {
  std::string type;  // added | removed | changed
  std::string path;
  bool common_prefix = false;
  int64_t size_bytes = 0;
};

template <typename T>
struct Page {
  std::vector<T> items;
  bool has_more = false;
};

// An S3 multipart upload in progress (the gateway's). Its parts' data lives in
// the repository's namespace under _lakefs/multipart/, which GC never takes;
// completing or aborting the upload deletes it.
struct MultipartUpload {
  std::string id;
  std::string branch, path;
  std::string content_type;
  std::map<std::string, std::string> metadata;
  std::string initiator;  // user id
  int64_t created = 0;    // unix seconds
};

struct UploadedPart {
  int number = 0;
  std::string etag;  // hex MD5 of the part's data, unquoted
  int64_t size = 0;
  std::string address;  // relative to the namespace
  int64_t mtime = 0;
};

struct CommitParams {
  std::string committer;
  std::string message;
  std::map<std::string, std::string> metadata;
  std::optional<int64_t> date;
  bool allow_empty = false;
  bool force = false;   // write into a read-only repository
  bool squash = false;  // merge: one parent (the destination), as lakeFS's squash_merge
  // Merge and import: runs once the commit is stored, before the branch moves
  // to it (lakeFS's pre-merge hooks see the merge commit's id; an import's
  // pre-commit hooks run here); a failure leaves the branch where it was.
  std::function<Status(const Commit&)> before_publish;
  // Import: runs once the import's commit moved the branch (post-commit hooks).
  std::function<void(const Commit&)> after_publish;
};

enum class MergeStrategy { kNone, kSourceWins, kDestWins };

enum class CompactionOutcome {
  kCompleted,    // the branch now holds the new compacted meta-range
  kDiscarded,    // the branch was committed or reset meanwhile: the work was dropped
  kNothingToDo,  // no staged entries
};

struct CompactionResult {
  CompactionOutcome outcome = CompactionOutcome::kNothingToDo;
  std::string meta_range_id;   // what the branch holds afterwards ("" = not compacted)
  int64_t staged_entries = 0;  // entries folded in (tombstones included)
  ApplyStats stats;
};

// What a ref names: a commit, and the branch when the ref is a branch name
// (then reads include its staging, unless the ref ended in '@').
struct ResolvedRef {
  std::string commit_id;
  std::optional<Branch> branch;
};

}  // namespace sediment::catalog
