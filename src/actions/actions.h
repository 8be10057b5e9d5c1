// lakeFS actions: `_lakefs_actions/*` files in a repository name hooks
// (webhooks, Lua scripts) that run on its events (pre/post commit, merge,
// create/delete branch and tag, revert, cherry-pick). A pre-event hook that
// fails stops the operation; every run is recorded with each hook's output,
// for the lakeFS API's /actions/runs (docs/actions.md).
//
// Data flow: the server's handler builds a HookRecord and calls Run before the
// operation (a failed run aborts it) and RunPostAsync after it. Run reads the
// action files from the record's source ref (a branch's reads include its
// staged changes, so an action uploaded with a commit already guards it),
// matches them, runs each matching action's hooks in order, writes each hook's
// output to the repository's namespace (`_lakefs/actions/log/<run>/<hook>.log`)
// and the run's records to the KV store (keys.h).
//
// Thread-safety: every method may be called from many threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "catalog/hooks.h"

namespace sediment::catalog {
class Catalog;
}

namespace sediment::kv {
class KvStore;
}

namespace sediment::actions {

// What a hook learns of the event (lakeFS's HookRecord / webhook body): the
// catalog's event (catalog/hooks.h), which the catalog fires.
using HookRecord = catalog::HookEvent;

// The 17 event names of lakeFS (prepare-commit, pre-commit, post-commit, ...).
const std::vector<std::string>& EventTypes();

struct TaskResult {
  std::string run_id;
  std::string hook_run_id;  // "%04d_%04d": matched action, hook within it
  std::string hook_id;
  std::string action_name;
  int64_t start_micros = 0;  // 0 = skipped (an earlier hook of its action failed)
  int64_t end_micros = 0;
  bool passed = false;
};

struct RunResult {
  std::string run_id;
  std::string branch_id;
  std::string source_ref;
  std::string event_type;
  std::string commit_id;
  int64_t start_micros = 0;
  int64_t end_micros = 0;
  bool passed = false;
};

template <typename T>
struct RunPage {
  std::vector<T> items;
  bool has_more = false;
};

// The lakeFS API, called in-process as a user (Lua's `lakefs` module). The
// server implements it over its own handlers, so each call is authorized as
// that user exactly as an HTTP request would be.
class ApiClient {
 public:
  struct Reply {
    int status = 0;
    std::string body;
  };
  virtual ~ApiClient() = default;
  // `path` is absolute (/api/v1/...) without a query; `query` its parameters.
  virtual Reply Call(const std::string& user, const std::string& method, const std::string& path,
                     const std::multimap<std::string, std::string>& query, const std::string& body) = 0;
};

struct ActionsOptions {
  bool enabled = true;
  // {{ ENV.NAME }} in webhook headers and query parameters reads the server's
  // environment, only for names with this prefix ("" = none may be read).
  std::string env_prefix = "LAKEFSACTION_";
  // A hook's time limit; a hook's `timeout` property may only lower it.
  int64_t hook_timeout_ms = 60000;
  int64_t hook_workers = 4;              // hook runs at once (threads of their own)
  int64_t hook_runs_per_repository = 2;  // hook runs at once for one repository
  // [actions] webhook_allowed_hosts: internal addresses webhooks may reach.
  std::vector<std::string> webhook_allowed_hosts;
  // The Lua sandbox program (sediment-lua, beside the server's binary).
  std::string lua_sandbox;
  int64_t lua_memory_bytes = 64 << 20;   // a Lua state's allocation cap
  int64_t output_bytes = 1 << 20;        // a hook's recorded output (print, request log) is cut here
  int64_t action_file_bytes = 64 << 10;  // a larger action file is refused
  int64_t max_action_files = 100;        // more files in _lakefs_actions/ are refused
  int64_t post_queue = 1000;             // post-event runs waiting; beyond it they are dropped (logged)
  // Where runs' and hooks' times, run ids and webhooks' event_time come from
  // (null = the system clock). Hooks' time limits are on the steady clock.
  std::shared_ptr<Clock> clock;
};

// A pre-event run that failed: the operation must not happen. `message` is
// lakeFS's ("<event> hook aborted, run id '<id>': ...").
// The catalog's hook runner (catalog::Catalog::SetHooks).
class ActionsService final : public catalog::HookRunner {
 public:
  // InvalidArgument for a bad webhook_allowed_hosts entry or a sandbox
  // program that cannot be run. Registers the runs' keys with `catalog`
  // (Catalog::AddRepositoryKeyOwner), so it comes before catalog->Start(true).
  static Result<std::unique_ptr<ActionsService>> Make(catalog::Catalog* catalog, kv::KvStore* kv,
                                                      ActionsOptions options);
  ~ActionsService() override;  // finishes queued post-event runs
  ActionsService(const ActionsService&) = delete;
  ActionsService& operator=(const ActionsService&) = delete;

  void SetApiClient(std::shared_ptr<ApiClient> api);
  // Finishes the queued post-event runs and takes no more (the server stops).
  void Stop();

  // Runs the hooks `record` matches, on the hook pool (this thread waits).
  // Returns the run id ("" when nothing ran). PreconditionFailed with
  // lakeFS's message when a hook failed or an action file is invalid; the
  // run (if any hook ran) is recorded either way. Busy, at once, when the
  // repository or the server runs as many hooks as it may.
  Result<std::string> Run(const HookRecord& record);
  // Post events: after `commit_id` is known, the pre-run (if any) gets it
  // (post-commit, post-revert); then the post run goes to the background.
  void RunPostAsync(HookRecord record, bool set_pre_run_commit);
  // catalog::HookRunner: Run and RunPostAsync.
  Result<std::string> RunPre(const HookRecord& event) override { return Run(event); }
  void RunPost(HookRecord event, bool set_pre_run_commit) override {
    RunPostAsync(std::move(event), set_pre_run_commit);
  }
  // Waits until no post-event run is queued or running (tests).
  void WaitIdle();

  Result<RunPage<RunResult>> ListRuns(const std::string& repo, const std::string& branch, const std::string& commit,
                                      const std::string& after, int64_t amount);
  Result<RunResult> GetRun(const std::string& repo, const std::string& run_id);
  // Hooks of a run in hook_run_id order (an unknown run has none).
  Result<RunPage<TaskResult>> ListTasks(const std::string& repo, const std::string& run_id, const std::string& after,
                                        int64_t amount);
  // A hook's output: NotFound for an unknown hook; "" for a skipped one.
  Result<std::string> TaskOutput(const std::string& repo, const std::string& run_id, const std::string& hook_run_id);

  // A new run id made at `now`: 20 characters of [0-9a-v] whose order is
  // newest first.
  static std::string NewRunId(TimePoint now);

 private:
  ActionsService() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sediment::actions
