// The Lua hook, on the server's side: a script (inline `script`, or
// `script_path` read from the event's source ref as the user) runs in a
// sandbox process of its own (`sediment-lua`, lua_sandbox_main.cc) that is
// killed at the hook's deadline, so no script can hold a server thread or a
// core past it. The server answers the script's `lakefs` calls as the event's
// user, only on the event's own repository, and records what it prints, with
// the action's secrets masked.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "actions/action.h"
#include "actions/sandbox_protocol_internal.h"

extern char** environ;

namespace sediment::actions {
namespace {

using nlohmann::json;
namespace proto = sandbox;

// Replaces {{ ENV.X }} in every string of `args`; the values read are secrets.
Status ExpandArgs(json* j, const std::string& prefix, std::vector<std::string>* secrets) {
  if (j->is_string()) {
    bool secret = false;
    ARROW_ASSIGN_OR_RAISE(auto v, ExpandEnv(j->get<std::string>(), prefix, &secret, secrets));
    *j = v;
  } else if (j->is_structured()) {
    for (auto& item : *j) ARROW_RETURN_NOT_OK(ExpandArgs(&item, prefix, secrets));
  }
  return Status::OK();
}

json Globals(const HookRecord& r, const HookEnv& env) {
  json action = {{"action_name", env.action_name},
                 {"run_id", env.run_id},
                 {"pre_run_id", r.pre_run_id},
                 {"event_type", r.event_type},
                 {"commit_id", r.commit_id},
                 {"branch_id", r.branch_id},
                 {"source_ref", r.source_ref},
                 {"tag_id", r.tag_id},
                 {"merge_source", r.merge_source},
                 {"repository_id", r.repository_id},
                 {"storage_namespace", env.storage_namespace},
                 {"commit", {{"message", r.commit_message}, {"committer", r.committer}, {"metadata", json::object()}}}};
  for (const auto& [k, v] : r.commit_metadata) action["commit"]["metadata"][k] = v;
  return {{"action", action}, {"username", r.user}, {"api", env.api != nullptr && !r.user.empty()}};
}

// A started sandbox: killed and reaped when it goes out of scope.
class Sandbox {
 public:
  ~Sandbox() {
    if (to_ >= 0) ::close(to_);
    if (from_ >= 0) ::close(from_);
    End(0);
  }
  Status Start(const std::string& program);
  // Kills the child unless it ends by itself within `grace_ms`, and reaps
  // it. Its fate: "" when it exited with 0, else what ended it.
  std::string End(int grace_ms);
  int to() const { return to_; }
  int from() const { return from_; }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string fate_;
};

Status Sandbox::Start(const std::string& program) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return Status::IOError(fmt::format("pipe: {}", std::strerror(errno)));
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]), ::close(in[1]);
    return Status::IOError(fmt::format("pipe: {}", std::strerror(errno)));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  char* argv[] = {const_cast<char*>("sediment-lua"), nullptr};
  char* envp[] = {nullptr};
  int rc = ::posix_spawn(&pid_, program.c_str(), &fa, nullptr, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  to_ = in[1];
  from_ = out[0];
  if (rc != 0) {
    pid_ = -1;
    return Status::IOError(fmt::format("starting the Lua sandbox {}: {}", program, std::strerror(rc)));
  }
  ::fcntl(to_, F_SETFL, O_NONBLOCK);
  ::fcntl(from_, F_SETFL, O_NONBLOCK);
  return Status::OK();
}

std::string Sandbox::End(int grace_ms) {
  if (pid_ <= 0) return fate_;
  int status = 0;
  pid_t got = 0;
  for (int waited = 0; (got = ::waitpid(pid_, &status, WNOHANG)) == 0 && waited < grace_ms; waited += 5) {
    ::usleep(5000);
  }
  if (got == 0) {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    fate_ = sig == SIGSYS    ? "it made a system call the sandbox does not allow"
            : sig == SIGXCPU ? "it used more CPU time than its timeout"
                             : fmt::format("it was ended by signal {} ({})", sig, ::strsignal(sig));
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    fate_ = fmt::format("it exited with status {}", WEXITSTATUS(status));
  }
  return fate_;
}

// How a run went, as the sandbox said (or did not).
struct Outcome {
  std::string kind;  // ok | fail | memory | error | timeout | died
  std::string message;
};

// Talks to the sandbox until it says it is done, dies or the deadline passes.
class Session {
 public:
  Session(Sandbox* box, const HookRecord& record, const HookEnv& env, OutputLog* log)
      : box_(box), record_(record), env_(env), log_(log) {}

  Outcome Run(const std::string& run_frame);

 private:
  bool Flush();  // writes what is pending without blocking; false if the pipe broke
  // Handles one message; false once the run is over (`out` says how).
  bool Handle(proto::Message& m, Outcome* out);

  Sandbox* box_;
  const HookRecord& record_;
  const HookEnv& env_;
  OutputLog* log_;
  std::string pending_, inbox_;
};

bool Session::Flush() {
  while (!pending_.empty()) {
    ssize_t n = ::write(box_->to(), pending_.data(), pending_.size());
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (n <= 0) return false;
    pending_.erase(0, static_cast<size_t>(n));
  }
  return true;
}

bool Session::Handle(proto::Message& m, Outcome* out) {
  if (m.kind == proto::Kind::kPrint && m.fields.size() == 1) {
    log_->Append(m.fields[0]);
    return true;
  }
  if (m.kind == proto::Kind::kDone && m.fields.size() == 2) {
    *out = {m.fields[0], m.fields[1]};
    return false;
  }
  if (m.kind == proto::Kind::kApi && m.fields.size() == 4 && env_.api != nullptr && !record_.user.empty()) {
    std::multimap<std::string, std::string> query;
    json q = json::parse(m.fields[2], nullptr, false);
    if (q.is_array()) {
      for (const auto& kv : q) {
        if (kv.is_array() && kv.size() == 2 && kv[0].is_string() && kv[1].is_string()) query.emplace(kv[0], kv[1]);
      }
    }
    // The sandbox is not trusted: its own-repository rule is checked again here.
    const std::string own = "/api/v1/repositories/" + record_.repository_id + "/";
    ApiClient::Reply reply{403, json{{"message", "a hook may call the API only on its own repository"}}.dump()};
    // And only the calls its library makes: reads, and creating a tag.
    const bool known = m.fields[0] == "GET" || (m.fields[0] == "POST" && m.fields[1] == own + "tags");
    if (known && m.fields[1].rfind(own, 0) == 0) {
      reply = env_.api->Call(record_.user, m.fields[0], m.fields[1], query, m.fields[3]);
    }
    if (static_cast<int64_t>(reply.body.size()) > env_.options->lua_memory_bytes) {
      reply = {413, json{{"message", "the answer is larger than the hook's memory limit"}}.dump()};
    }
    pending_ += proto::Frame(proto::Kind::kReply, {std::to_string(reply.status), reply.body});
    return true;
  }
  *out = {"error", "the Lua sandbox sent a message the server does not expect"};
  return false;
}

Outcome Session::Run(const std::string& run_frame) {
  pending_ = run_frame;
  char chunk[64 << 10];
  for (;;) {
    if (!Flush()) return {"died", ""};
    int64_t left_ms = (env_.deadline_micros - SteadyMicros()) / 1000;
    if (left_ms <= 0) return {"timeout", ""};
    // While a reply is on its way to the child, nothing more is read from
    // it: one call at a time, so a child that never reads holds one reply.
    const bool replying = !pending_.empty();
    pollfd p[2] = {{box_->from(), static_cast<short>(replying ? 0 : POLLIN), 0},
                   {box_->to(), static_cast<short>(replying ? POLLOUT : 0), 0}};
    int rc = ::poll(p, 2, static_cast<int>(std::min<int64_t>(left_ms, 1000)));
    if (rc < 0 && errno != EINTR) return {"died", ""};
    if (rc <= 0 || replying || (p[0].revents & (POLLIN | POLLHUP)) == 0) continue;
    ssize_t n = ::read(box_->from(), chunk, sizeof(chunk));
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return {"died", ""};
    inbox_.append(chunk, static_cast<size_t>(n));
    for (;;) {
      bool broken = false;
      auto m = proto::TakeFrame(&inbox_, proto::kMaxFrame, &broken);
      if (broken) return {"error", "the Lua sandbox sent a frame larger than the server takes"};
      if (!m) break;
      Outcome out;
      if (!Handle(*m, &out)) return out;
    }
  }
}

// The script and where it came from (its chunk name).
Result<std::pair<std::string, std::string>> Script(const Hook& hook, const HookRecord& record, const HookEnv& env) {
  const auto& p = hook.properties;
  if (p.contains("script") && p["script"].is_string())
    return std::make_pair(p["script"].get<std::string>(), "=" + hook.id);
  if (!p.contains("script_path") || !p["script_path"].is_string()) {
    return InvalidArgument("'script' or 'script_path' must be a string");
  }
  std::string path = p["script_path"].get<std::string>();
  if (env.api == nullptr) return InvalidArgument("script_path needs the lakeFS API, which this server lacks");
  auto reply = env.api->Call(record.user, "GET",
                             "/api/v1/repositories/" + record.repository_id + "/refs/" + record.source_ref + "/objects",
                             {{"path", path}}, "");
  if (reply.status != 200) {
    return InvalidArgument(fmt::format("could not load script_path {}: HTTP {}: invalid action", path, reply.status));
  }
  return std::make_pair(std::move(reply.body), "@" + path);
}

}  // namespace

Status RunLua(const Hook& hook, const HookRecord& record, const HookEnv& env, OutputLog* log) {
  ARROW_ASSIGN_OR_RAISE(auto script, Script(hook, record, env));
  const auto& p = hook.properties;
  json args = p.contains("args") && p["args"].is_object() ? p["args"] : json::object();
  std::vector<std::string> secrets;
  ARROW_RETURN_NOT_OK(ExpandArgs(&args, env.options->env_prefix, &secrets));
  for (auto& s : secrets) log->AddSecret(std::move(s));
  const int64_t timeout_ms = env.timeout_ms;
  const auto dump = [](const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); };
  std::string frame = proto::Frame(
      proto::Kind::kRun, {script.first, script.second, dump(Globals(record, env)), dump(args),
                          std::to_string(env.options->lua_memory_bytes), std::to_string(timeout_ms / 1000 + 2)});
  Sandbox box;
  ARROW_RETURN_NOT_OK(box.Start(env.options->lua_sandbox));
  Session session(&box, record, env, log);
  Outcome out = session.Run(frame);
  // Whatever it said, the sandbox's work is over: it is killed, never waited
  // for (a finalizer run by lua_close could otherwise keep it, and this
  // thread, for ever). One that died by itself is given a moment to say why.
  std::string fate = box.End(out.kind == "died" ? 200 : 0);
  const std::string message = log->Mask(out.message);
  if (out.kind == "ok") return Status::OK();
  if (out.kind == "fail") return Status::IOError(message);
  if (out.kind == "timeout") {
    return Status::IOError(fmt::format("the Lua hook ran longer than its timeout ({}ms) and was stopped", timeout_ms));
  }
  if (out.kind == "memory") {
    return Status::IOError(fmt::format("the Lua hook used more than its memory limit ({} bytes): {}",
                                       env.options->lua_memory_bytes, message));
  }
  if (out.kind == "died") {
    return Status::IOError(
        fmt::format("the Lua sandbox ended before the script did: {}", fate.empty() ? "it closed its pipe" : fate));
  }
  return Status::IOError(message);
}

}  // namespace sediment::actions
