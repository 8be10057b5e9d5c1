// ActionsService: loads a ref's action files, runs the hooks an event
// matches, and records runs (KV: keys.h; outputs in the repository's
// namespace under _lakefs/actions/log/). docs/actions.md and docs/formats.md.
#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "actions/action.h"
#include "actions/actions.h"
#include "actions/hook_pool_internal.h"
#include "actions/keys.h"
#include "actions/webhook_client_internal.h"
#include "base/clock.h"
#include "base/crypto.h"
#include "blob/blob.h"
#include "catalog/catalog.h"
#include "kv/kv.h"

namespace sediment::actions {
namespace {

using nlohmann::json;

constexpr const char* kActionsDir = "_lakefs_actions/";
constexpr size_t kParallelActions = 4;  // actions of one event that run at once
constexpr size_t kMaxHooks = 50;        // hooks in one action

std::string LogPath(const std::string& run, const std::string& hook_run) {
  return "_lakefs/actions/log/" + run + "/" + hook_run + ".log";
}

json RunJson(const RunResult& r) {
  return {{"v", 1},
          {"run_id", r.run_id},
          {"branch_id", r.branch_id},
          {"source_ref", r.source_ref},
          {"event_type", r.event_type},
          {"commit_id", r.commit_id},
          {"start", r.start_micros},
          {"end", r.end_micros},
          {"passed", r.passed}};
}
json TaskJson(const TaskResult& t) {
  return {{"v", 1},
          {"run_id", t.run_id},
          {"hook_run_id", t.hook_run_id},
          {"hook_id", t.hook_id},
          {"action_name", t.action_name},
          {"start", t.start_micros},
          {"end", t.end_micros},
          {"passed", t.passed}};
}

Result<RunResult> ParseRun(const std::string& raw) {
  json j = json::parse(raw, nullptr, false);
  if (j.is_discarded() || j.value("v", 0) != 1) return Status::IOError("actions: a run record it cannot read");
  RunResult r;
  r.run_id = j.value("run_id", "");
  r.branch_id = j.value("branch_id", "");
  r.source_ref = j.value("source_ref", "");
  r.event_type = j.value("event_type", "");
  r.commit_id = j.value("commit_id", "");
  r.start_micros = j.value("start", int64_t{0});
  r.end_micros = j.value("end", int64_t{0});
  r.passed = j.value("passed", false);
  return r;
}
Result<TaskResult> ParseTask(const std::string& raw) {
  json j = json::parse(raw, nullptr, false);
  if (j.is_discarded() || j.value("v", 0) != 1) return Status::IOError("actions: a hook record it cannot read");
  TaskResult t;
  t.run_id = j.value("run_id", "");
  t.hook_run_id = j.value("hook_run_id", "");
  t.hook_id = j.value("hook_id", "");
  t.action_name = j.value("action_name", "");
  t.start_micros = j.value("start", int64_t{0});
  t.end_micros = j.value("end", int64_t{0});
  t.passed = j.value("passed", false);
  return t;
}

std::string ErrorList(const std::vector<std::string>& errors) {
  std::string out = errors.size() == 1 ? "1 error occurred:" : fmt::format("{} errors occurred:", errors.size());
  for (const auto& e : errors) out += "\n\t* " + e;
  return out + "\n\n";
}

}  // namespace

struct ActionsService::Impl {
  catalog::Catalog* cat;
  kv::KvStore* kv;
  ActionsOptions options;
  std::mutex mu;
  std::shared_ptr<ApiClient> api;     // GUARDED_BY(mu)
  std::atomic<bool> stopping{false};  // queued post-event runs are dropped
  AddressPolicy address_policy;
  HookPool pool;

  Impl(catalog::Catalog* c, kv::KvStore* k, ActionsOptions o, AddressPolicy policy)
      : cat(c),
        kv(k),
        options(std::move(o)),
        address_policy(std::move(policy)),
        pool(static_cast<size_t>(options.hook_workers), static_cast<size_t>(options.hook_runs_per_repository),
             static_cast<size_t>(options.post_queue)) {}

  std::shared_ptr<ApiClient> Api() {
    std::lock_guard<std::mutex> lock(mu);
    return api;
  }

  // The action files at `ref` in file order; an unreadable or invalid one
  // fails the event (its message names the file).
  Result<std::vector<Action>> Load(const catalog::Repository& repo, const std::string& ref) {
    catalog::ListOptions o;
    o.prefix = kActionsDir;
    o.delimiter = "/";
    o.amount = options.max_action_files + 1;
    auto page = cat->ListEntries(repo, ref, o);
    if (IsNotFound(page.status())) return std::vector<Action>{};  // the operation reports the missing ref
    ARROW_RETURN_NOT_OK(page.status());
    if (static_cast<int64_t>(page->items.size()) > options.max_action_files) {
      return InvalidArgument(fmt::format("{} holds more than {} action files", kActionsDir, options.max_action_files));
    }
    std::vector<Action> out;
    std::set<std::string> names;
    for (const auto& item : page->items) {
      if (item.common_prefix) continue;  // folders under _lakefs_actions/ hold no actions
      if (item.entry.size > options.action_file_bytes) {
        return InvalidArgument(fmt::format("loading file {}: {} bytes, more than the {} an action file may have",
                                           item.path, item.entry.size, options.action_file_bytes));
      }
      auto file = cat->OpenEntry(repo, item.entry);
      if (!file.ok()) return InvalidArgument(fmt::format("loading file {}: {}", item.path, file.status().message()));
      auto bytes = (*file)->ReadAt(0, item.entry.size);
      if (!bytes.ok()) return InvalidArgument(fmt::format("loading file {}: {}", item.path, bytes.status().message()));
      auto action = ParseAction((*bytes)->ToString());
      if (!action.ok()) {
        return InvalidArgument(fmt::format("parsing file {}: {}", item.path, action.status().message()));
      }
      if (action->hooks.size() > kMaxHooks) {
        return InvalidArgument(fmt::format("parsing file {}: {} hooks, more than the {} an action may have", item.path,
                                           action->hooks.size(), kMaxHooks));
      }
      if (!names.insert(action->name).second) {
        return InvalidArgument(fmt::format("action name '{}' already loaded: invalid action", action->name));
      }
      out.push_back(std::move(*action));
    }
    return out;
  }

  struct ActionRun {
    const Action* action;
    std::vector<TaskResult> tasks;
    std::string error;  // the first hook failure
  };

  // Runs one action's hooks in order; each hook's output is stored as soon as
  // it ends (the run holds no more than one output per running action).
  void RunAction(ActionRun* ar, int index, const HookRecord& record, const HookEnv& base,
                 const catalog::Namespace& ns) {
    bool failed = false;
    for (size_t h = 0; h < ar->action->hooks.size(); ++h) {
      const Hook& hook = ar->action->hooks[h];
      TaskResult t;
      t.run_id = base.run_id;
      t.hook_run_id = fmt::format("{:04}_{:04}", index, h);
      t.hook_id = hook.id;
      t.action_name = ar->action->name;
      if (ShouldRun(hook.if_expr, failed)) {
        OutputLog log(options.output_bytes);
        HookEnv env = base;
        env.action_name = ar->action->name;
        // The operator's hook_timeout_secs is a ceiling: an action file may only lower it.
        int64_t timeout_ms = options.hook_timeout_ms;
        Status st;
        if (hook.properties.contains("timeout") && hook.properties["timeout"].is_string()) {
          auto parsed = ParseGoDuration(hook.properties["timeout"].get<std::string>());
          if (parsed.ok()) timeout_ms = std::min(*parsed, options.hook_timeout_ms);
          st = parsed.status();
        }
        // And the event's hooks together get no more than it (base.deadline_micros).
        timeout_ms = std::min(timeout_ms, (base.deadline_micros - SteadyMicros() + 999) / 1000);
        if (st.ok() && timeout_ms <= 0) {
          st = Status::IOError(
              fmt::format("the event's hooks together ran longer than [actions] hook_timeout_secs ({}ms)",
                          options.hook_timeout_ms));
        }
        env.deadline_micros = SteadyMicros() + std::max<int64_t>(timeout_ms, 0) * 1000;
        env.timeout_ms = timeout_ms;
        t.start_micros = ToUnixMicros(options.clock->Now());
        if (st.ok()) {
          try {
            st = hook.type == "webhook" ? RunWebhook(hook, record, env, &log) : RunLua(hook, record, env, &log);
          } catch (const std::exception& e) {  // a hook's failure, never the server's
            st = Status::IOError(fmt::format("the hook failed: {}", e.what()));
          }
        }
        t.end_micros = std::max(ToUnixMicros(options.clock->Now()), t.start_micros + 1);
        t.passed = st.ok();
        if (!st.ok()) {
          log.AppendAlways(fmt::format("Error: action failed: {}\n", st.message()));
          if (!failed) {
            ar->error = fmt::format("hook run id '{}' failed on action '{}' hook '{}': action failed: {}",
                                    t.hook_run_id, ar->action->name, hook.id, st.message());
          }
          failed = true;
        }
        Status put = ns->Put(LogPath(base.run_id, t.hook_run_id), log.text());
        if (!put.ok()) {
          spdlog::warn("actions: the output of {}/{} was not stored: {}", base.run_id, t.hook_run_id, put.ToString());
        }
      }
      ar->tasks.push_back(std::move(t));
    }
  }

  // What an event runs: its repository and the actions it matches.
  struct Matched {
    catalog::Repository repo;
    std::string run_id;
    std::vector<Action> actions;
    std::vector<ActionRun> runs;
  };

  // Loads and matches on the caller's thread (no slot is needed for an event
  // that runs nothing). Null when nothing runs.
  Result<std::unique_ptr<Matched>> Match(const HookRecord& record) {
    if (!options.enabled) return nullptr;
    auto m = std::make_unique<Matched>();
    ARROW_ASSIGN_OR_RAISE(m->repo, cat->GetRepository(record.repository_id));
    if (m->repo.read_only) return nullptr;  // as lakeFS: no hooks on read-only repositories
    m->run_id = NewRunId(options.clock->Now());
    auto actions = Load(m->repo, record.source_ref);
    if (!actions.ok()) {
      if (!IsInvalidArgument(actions.status())) return actions.status();
      return PreconditionFailed(fmt::format("{} hook aborted, run id '{}': {}", record.event_type, m->run_id,
                                            ErrorList({actions.status().message()})));
    }
    m->actions = std::move(*actions);
    for (const auto& a : m->actions) {
      if (Matches(a, record.event_type, record.branch_id) && !a.hooks.empty()) m->runs.push_back({&a, {}, ""});
    }
    if (m->runs.empty()) return nullptr;
    return m;
  }

  // Matches and runs on this thread (a post-event run, on the pool).
  Result<std::string> RunHere(const HookRecord& record) {
    ARROW_ASSIGN_OR_RAISE(auto m, Match(record));
    if (m == nullptr) return std::string();
    return Execute(record, m.get());
  }

  // A pre-event run: matched here, executed on the pool while this thread waits.
  Result<std::string> RunGuarded(const HookRecord& record) {
    ARROW_ASSIGN_OR_RAISE(auto m, Match(record));
    if (m == nullptr) return std::string();
    Result<std::string> result = std::string();
    ARROW_RETURN_NOT_OK(pool.RunAndWait(record.repository_id, [&] { result = Execute(record, m.get()); }));
    return result;
  }

  Result<std::string> Execute(const HookRecord& record, Matched* m) {
    const catalog::Repository& repo = m->repo;
    const std::string& run_id = m->run_id;
    std::vector<ActionRun>& runs = m->runs;
    HookEnv env;
    env.options = &options;
    env.address_policy = &address_policy;
    env.clock = options.clock.get();
    auto api_ref = Api();
    env.api = api_ref.get();
    env.run_id = run_id;
    env.storage_namespace = repo.storage_namespace;
    env.deadline_micros = SteadyMicros() + options.hook_timeout_ms * 1000;  // the whole run's
    ARROW_ASSIGN_OR_RAISE(auto ns, cat->RepositoryNamespace(repo));
    // Actions run side by side (at most kParallelActions at once); the hooks of one action in order.
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i; (i = next++) < runs.size();) RunAction(&runs[i], static_cast<int>(i), record, env, ns);
    };
    std::vector<std::thread> threads;
    for (size_t t = 1; t < std::min(runs.size(), kParallelActions); ++t) threads.emplace_back(worker);
    worker();
    for (auto& t : threads) t.join();
    RunResult run;
    run.run_id = run_id;
    run.branch_id = record.branch_id;
    run.source_ref = record.source_ref;
    run.event_type = record.event_type;
    run.commit_id = record.commit_id;
    run.passed = true;
    std::vector<std::string> errors;
    json manifest_hooks = json::array();
    kv::Batch batch;
    for (const auto& ar : runs) {
      if (!ar.error.empty()) errors.push_back(ar.error);
      for (size_t i = 0; i < ar.tasks.size(); ++i) {
        const TaskResult& t = ar.tasks[i];
        if (t.start_micros != 0) {
          if (run.start_micros == 0 || t.start_micros < run.start_micros) run.start_micros = t.start_micros;
          run.end_micros = std::max(run.end_micros, t.end_micros);
        }
        if (t.start_micros != 0 && !t.passed) run.passed = false;
        batch.Put(TaskKey(record.repository_id, run_id, t.hook_run_id), TaskJson(t).dump());
        manifest_hooks.push_back(TaskJson(t));
      }
    }
    batch.Put(RunKey(record.repository_id, run_id), RunJson(run).dump());
    if (!run.branch_id.empty()) batch.Put(BranchRunKey(record.repository_id, run.branch_id, run_id), "");
    if (!run.commit_id.empty()) batch.Put(CommitRunKey(record.repository_id, run.commit_id, run_id), "");
    Status manifest = ns->Put("_lakefs/actions/log/" + run_id + "/run.manifest",
                              json{{"run", RunJson(run)}, {"hooks", manifest_hooks}}.dump());
    if (!manifest.ok()) spdlog::warn("actions: the manifest of run {} was not stored: {}", run_id, manifest.ToString());
    ARROW_RETURN_NOT_OK(kv->Apply(batch));
    if (!errors.empty()) {
      return PreconditionFailed(
          fmt::format("{} hook aborted, run id '{}': {}", record.event_type, run_id, ErrorList(errors)));
    }
    return run_id;
  }

  Status SetCommit(const std::string& repo, const std::string& run_id, const std::string& commit_id) {
    const std::string key = RunKey(repo, run_id);
    auto raw = kv->Get(key);
    if (IsNotFound(raw.status())) return Status::OK();
    ARROW_RETURN_NOT_OK(raw.status());
    ARROW_ASSIGN_OR_RAISE(auto run, ParseRun(*raw));
    if (run.commit_id == commit_id) return Status::OK();
    run.commit_id = commit_id;
    kv::Batch b;
    b.Require(kv::Precondition::Equals(key, *raw))
        .Put(key, RunJson(run).dump())
        .Put(CommitRunKey(repo, commit_id, run_id), "");
    return kv->Apply(b);
  }
};

Result<std::unique_ptr<ActionsService>> ActionsService::Make(catalog::Catalog* catalog, kv::KvStore* kv,
                                                             ActionsOptions options) {
  ARROW_ASSIGN_OR_RAISE(auto policy, AddressPolicy::Parse(options.webhook_allowed_hosts));
  if (options.enabled && ::access(options.lua_sandbox.c_str(), X_OK) != 0) {
    return InvalidArgument(
        fmt::format("the Lua sandbox program {} cannot be run: {}", options.lua_sandbox, std::strerror(errno)));
  }
  if (!options.clock) options.clock = SystemClock::Default();
  // Deleting a repository deletes its runs: the catalog asks for their prefixes.
  ARROW_RETURN_NOT_OK(catalog->AddRepositoryKeyOwner("actions", &RepositoryKeyPrefixes));
  std::unique_ptr<ActionsService> s(new ActionsService());
  s->impl_ = std::make_unique<Impl>(catalog, kv, std::move(options), std::move(policy));
  return s;
}

ActionsService::~ActionsService() { Stop(); }

void ActionsService::Stop() {
  impl_->stopping = true;
  impl_->pool.Shutdown();
}

void ActionsService::SetApiClient(std::shared_ptr<ApiClient> api) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->api = std::move(api);
}

Result<std::string> ActionsService::Run(const HookRecord& record) { return impl_->RunGuarded(record); }

void ActionsService::RunPostAsync(HookRecord record, bool set_pre_run_commit) {
  if (!impl_->options.enabled) return;
  if (set_pre_run_commit && !record.pre_run_id.empty() && !record.commit_id.empty()) {
    Status st = impl_->SetCommit(record.repository_id, record.pre_run_id, record.commit_id);
    if (!st.ok()) spdlog::warn("actions: run {} did not get its commit: {}", record.pre_run_id, st.ToString());
  }
  Impl* impl = impl_.get();
  const std::string repo = record.repository_id;
  Status queued = impl->pool.Submit(repo, [impl, record = std::move(record)] {
    if (impl->stopping) {
      spdlog::warn("actions: {} on {} not run: the server is stopping", record.event_type, record.repository_id);
      return;
    }
    auto r = impl->RunHere(record);
    if (!r.ok()) spdlog::warn("actions: {} on {}: {}", record.event_type, record.repository_id, r.status().message());
  });
  if (!queued.ok()) spdlog::warn("actions: a post-event run was dropped: {}", queued.ToString());
}

void ActionsService::WaitIdle() { impl_->pool.WaitIdle(); }

Result<RunPage<RunResult>> ActionsService::ListRuns(const std::string& repo, const std::string& branch,
                                                    const std::string& commit, const std::string& after,
                                                    int64_t amount) {
  if (!branch.empty() && !commit.empty()) {
    return InvalidArgument("can't use both branchID and MergedCommitID: parameters conflict");
  }
  const std::string prefix = !branch.empty()   ? BranchRunsPrefix(repo, branch)
                             : !commit.empty() ? CommitRunsPrefix(repo, commit)
                                               : RunsPrefix(repo);
  const bool index = !branch.empty() || !commit.empty();
  RunPage<RunResult> out;
  std::string from = after.empty() ? "" : prefix + after + '\x01';
  // An index key whose run is gone (never written: a failed batch) is passed
  // over; the scan goes on until the page is full or the prefix ends.
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto page, impl_->kv->Scan(prefix, from, static_cast<size_t>(amount) + 1));
    for (const auto& item : page.items) {
      if (static_cast<int64_t>(out.items.size()) == amount) {
        out.has_more = true;
        return out;
      }
      if (index) {
        auto run = GetRun(repo, item.key.substr(prefix.size()));
        if (IsNotFound(run.status())) continue;
        ARROW_RETURN_NOT_OK(run.status());
        out.items.push_back(std::move(*run));
      } else {
        ARROW_ASSIGN_OR_RAISE(auto run, ParseRun(item.value));
        out.items.push_back(std::move(run));
      }
    }
    if (!page.has_more || page.items.empty()) return out;
    from = page.items.back().key + '\x01';
  }
}

Result<RunResult> ActionsService::GetRun(const std::string& repo, const std::string& run_id) {
  auto raw = impl_->kv->Get(RunKey(repo, run_id));
  if (IsNotFound(raw.status())) return NotFound(fmt::format("action run \"{}\" not found", run_id));
  ARROW_RETURN_NOT_OK(raw.status());
  return ParseRun(*raw);
}

Result<RunPage<TaskResult>> ActionsService::ListTasks(const std::string& repo, const std::string& run_id,
                                                      const std::string& after, int64_t amount) {
  const std::string prefix = TasksPrefix(repo, run_id);
  std::string from = after.empty() ? "" : prefix + after + '\x01';
  ARROW_ASSIGN_OR_RAISE(auto page, impl_->kv->Scan(prefix, from, static_cast<size_t>(amount) + 1));
  RunPage<TaskResult> out;
  for (const auto& item : page.items) {
    if (static_cast<int64_t>(out.items.size()) == amount) {
      out.has_more = true;
      break;
    }
    ARROW_ASSIGN_OR_RAISE(auto t, ParseTask(item.value));
    out.items.push_back(std::move(t));
  }
  return out;
}

Result<std::string> ActionsService::TaskOutput(const std::string& repo_id, const std::string& run_id,
                                               const std::string& hook_run_id) {
  auto raw = impl_->kv->Get(TaskKey(repo_id, run_id, hook_run_id));
  if (IsNotFound(raw.status()))
    return NotFound(fmt::format("hook run \"{}\" of run \"{}\" not found", hook_run_id, run_id));
  ARROW_RETURN_NOT_OK(raw.status());
  ARROW_ASSIGN_OR_RAISE(auto task, ParseTask(*raw));
  if (task.start_micros == 0) return std::string();
  ARROW_ASSIGN_OR_RAISE(auto repo, impl_->cat->GetRepository(repo_id));
  ARROW_ASSIGN_OR_RAISE(auto ns, impl_->cat->RepositoryNamespace(repo));
  auto data = ns->Get(LogPath(run_id, hook_run_id));
  if (IsNotFound(data.status())) {
    return NotFound(fmt::format("the output of hook run \"{}\" is gone", hook_run_id));
  }
  ARROW_RETURN_NOT_OK(data.status());
  return (*data)->ToString();
}

std::string ActionsService::NewRunId(TimePoint now) {
  // Newest first: the time left until year 3000, in microseconds (11 digits
  // of base 32), then 9 random digits so runs of many servers never collide.
  static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuv";
  constexpr int64_t kYear3000 = 32503680000LL * 1000000;
  uint64_t left = static_cast<uint64_t>(kYear3000 - ToUnixMicros(now));
  std::string id(20, '0');
  for (int i = 10; i >= 0; --i, left >>= 5) id[i] = kDigits[left & 31];
  std::string random = RandomBytes(9);
  for (int i = 0; i < 9; ++i) id[11 + i] = kDigits[static_cast<unsigned char>(random[i]) & 31];
  return id;
}

}  // namespace sediment::actions
