// Hooks around the catalog's operations, as lakeFS's actions fire them from
// graveler, below every API: a commit, merge, revert, cherry-pick, import,
// branch or tag change made through any API (lakeFS REST, a hook's own Lua
// calls excepted, the CLI, a benchmark) runs the same pre- and post-events.
//
// The catalog builds each event and calls a `HookRunner` (the actions
// service, src/actions, which reads action files and runs hooks); a failing
// pre-event stops the operation before it changes anything (or, for merges
// and imports, after the commit is stored and before the branch moves to it).
//
// Thread-safety: HookRunner implementations are called from many threads.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "base/status.h"

namespace sediment::catalog {

// One event of lakeFS's actions (its names: prepare-commit, pre-commit,
// post-commit, pre-merge, ..., pre-delete-tag).
struct HookEvent {
  std::string event_type;
  std::string repository_id;
  std::string branch_id;
  std::string source_ref;  // where the action files are read from
  std::string commit_id;
  std::string tag_id;
  std::string merge_source;
  std::string commit_message;
  std::string committer;
  std::map<std::string, std::string> commit_metadata;
  std::string user;        // who caused the event: Lua's lakefs calls act as them
  std::string pre_run_id;  // post events: the run of the matching pre event
};

class HookRunner {
 public:
  virtual ~HookRunner() = default;
  // Runs a pre-event's hooks: PreconditionFailed when one fails (the
  // operation must not happen), Busy when no hook slot is free. The run's id
  // ("" when nothing ran).
  virtual Result<std::string> RunPre(const HookEvent& event) = 0;
  // Queues a post-event's hooks (the operation is done); `set_pre_run_commit`
  // gives the pre-event's run (event.pre_run_id) the new commit's id.
  virtual void RunPost(HookEvent event, bool set_pre_run_commit) = 0;
};

// While one lives, this thread's catalog operations fire no hooks: a hook's
// own calls into the API (Lua's `lakefs` module) would otherwise fire hooks,
// and so themselves.
class NoHooksOnThisThread {
 public:
  NoHooksOnThisThread();
  ~NoHooksOnThisThread();
  NoHooksOnThisThread(const NoHooksOnThisThread&) = delete;
  NoHooksOnThisThread& operator=(const NoHooksOnThisThread&) = delete;

  static bool Active();

 private:
  bool outer_;  // nested scopes restore the outer state
};

// Merges what the three-way merge cannot: a path both sides changed
// differently, which the resolver may merge into a new entry (writing its
// data first) instead of a conflict. Iceberg tables in repositories merge
// appends this way (repo_tables/table_merge.h). Called only for merges without
// a strategy, once per path per merge.
struct Repository;
struct Entry;
class MergeResolver {
 public:
  virtual ~MergeResolver() = default;
  // Whether `path` is one this resolver merges (cheap; no I/O).
  virtual bool Handles(const std::string& path) const = 0;
  // The merged entry of `path` (nullopt on a side: absent there), or
  // Conflict saying why it does not merge.
  virtual Result<Entry> Resolve(const Repository& repo, const std::string& path, const std::optional<Entry>& base,
                                const std::optional<Entry>& source, const std::optional<Entry>& dest) = 0;
};

// Files an entry's data names besides itself, which catalog GC keeps as long
// as it keeps the entry (an Iceberg table's metadata file names its manifest
// lists, manifests and data files), and the directory of such files GC may
// collect once nothing names them. Without a walker GC never touches it.
class ReferenceWalker {
 public:
  virtual ~ReferenceWalker() = default;
  // "dir/": files under it are collectable (relative to the namespace).
  virtual std::string CollectableDir() const = 0;
  // Whether `e`'s data names other files (cheap; no I/O).
  virtual bool Names(const Entry& e) const = 0;
  // Calls `keep` with each file `e` names (relative to the namespace), or a
  // directory ("dir/": everything under it) when it cannot tell which;
  // `keep` answers false for a file already kept, whose own references need
  // not be read again.
  virtual Status ForEachReference(const Repository& repo, const Entry& e,
                                  const std::function<bool(const std::string&)>& keep) = 0;
};

}  // namespace sediment::catalog
