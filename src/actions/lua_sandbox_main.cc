// sediment-lua: the process a Lua hook runs in. The server starts one per
// hook (lua_hook.cc) with two pipes as its stdin and stdout, sends the script
// (sandbox_protocol_internal.h), and kills it at the hook's deadline; nothing
// a script does in here (a loop inside a message handler, a pattern match
// that backtracks in C) can hold the server.
//
// Before any script byte runs, the process takes away what it does not need:
// no new file descriptors (RLIMIT_NOFILE 0), no files written, no core, an
// address-space cap, a CPU-time cap, the lowest CPU priority, and a seccomp
// filter that lets through only reading and writing its pipes, memory and
// clocks; any other system call kills it.
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "actions/lua_library_internal.h"
#include "actions/sandbox_protocol_internal.h"
#include "base/crypto.h"

namespace sediment::actions {
namespace {

using nlohmann::json;
namespace proto = sandbox;

bool WriteAll(int fd, const std::string& data) {
  size_t at = 0;
  while (at < data.size()) {
    ssize_t n = ::write(fd, data.data() + at, data.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += static_cast<size_t>(n);
  }
  return true;
}

// The next whole frame from the server (it is trusted; its frames may be large).
bool ReadFrame(std::string* buffer, proto::Message* out) {
  char chunk[64 << 10];
  for (;;) {
    bool broken = false;
    if (auto m = proto::TakeFrame(buffer, 256u << 20, &broken)) {
      *out = std::move(*m);
      return true;
    }
    if (broken) return false;
    ssize_t n = ::read(0, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer->append(chunk, static_cast<size_t>(n));
  }
}

void Send(proto::Kind kind, const std::vector<std::string_view>& fields) {
  if (!WriteAll(1, proto::Frame(kind, fields))) std::_Exit(3);  // the server is gone
}

void Limit(int resource, rlim_t value) {
  rlimit rl{value, value};
  ::setrlimit(resource, &rl);
}

#if defined(__x86_64__)
constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
#error "the Lua sandbox's system-call filter knows x86_64 and aarch64 only"
#endif

// Only what a Lua state and our pipes need; anything else kills the process.
bool Seccomp() {
  std::vector<sock_filter> f = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
  };
  const int allowed[] = {SYS_read,         SYS_write,          SYS_exit,   SYS_exit_group,    SYS_brk,
                         SYS_mmap,         SYS_munmap,         SYS_mremap, SYS_madvise,       SYS_mprotect,
                         SYS_rt_sigreturn, SYS_rt_sigprocmask, SYS_futex,  SYS_clock_gettime, SYS_gettimeofday,
                         SYS_getrandom,    SYS_close};
  for (int nr : allowed) {
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  }
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  sock_fprog prog{static_cast<unsigned short>(f.size()), f.data()};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// Limits taken before the script runs: memory for the state plus room for
// the program itself, CPU time a little past the server's deadline.
void TakeAwayTheRest(int64_t memory_bytes, int64_t cpu_secs) {
  // OpenSSL reads its configuration file on first use: use it once now,
  // while files may still be opened.
  (void)Sha256("");
  (void)HmacSha256("k", "");
  (void)HmacSha1("k", "");
  Limit(RLIMIT_AS, static_cast<rlim_t>(memory_bytes + (256 << 20)));
  Limit(RLIMIT_CPU, static_cast<rlim_t>(cpu_secs));
  Limit(RLIMIT_FSIZE, 0);
  Limit(RLIMIT_CORE, 0);
  Limit(RLIMIT_NOFILE, 0);
  ::setpriority(PRIO_PROCESS, 0, 19);
  ::close(2);
  if (!Seccomp()) {
    Send(proto::Kind::kDone, {"error", "the Lua sandbox could not install its system-call filter"});
    std::_Exit(2);
  }
}

std::pair<int, std::string> CallServer(std::string* inbox, const std::string& method, const std::string& path,
                                       const std::multimap<std::string, std::string>& query, const std::string& body) {
  json q = json::array();
  for (const auto& [k, v] : query) q.push_back({k, v});
  Send(proto::Kind::kApi, {method, path, q.dump(-1, ' ', false, json::error_handler_t::replace), body});
  proto::Message reply;
  if (!ReadFrame(inbox, &reply) || reply.kind != proto::Kind::kReply || reply.fields.size() != 2) std::_Exit(3);
  int status = 0;
  std::from_chars(reply.fields[0].data(), reply.fields[0].data() + reply.fields[0].size(), status);
  return {status, std::move(reply.fields[1])};
}

// Said and done: the process ends here, without lua_close (whose finalizers
// are the script's code) or any other clean-up.
void SendDone(std::string_view outcome, std::string_view message) {
  Send(proto::Kind::kDone, {outcome, message});
  std::_Exit(0);
}

// Runs the script of `run` (fields: script, chunk name, globals, args, memory) and says how it ended.
void RunScript(std::string* inbox, proto::Message& run) {
  const std::string& script = run.fields[0];
  json globals = json::parse(run.fields[2], nullptr, false);
  json args = json::parse(run.fields[3], nullptr, false);
  lua::LuaRun state;
  std::from_chars(run.fields[4].data(), run.fields[4].data() + run.fields[4].size(), state.limit);
  state.repository_id = globals.value("action", json::object()).value("repository_id", "");
  state.user = globals.value("username", "");
  state.print = [](std::string_view text) {
    for (size_t at = 0; at < text.size(); at += proto::kPrintPart)
      Send(proto::Kind::kPrint, {text.substr(at, proto::kPrintPart)});
  };
  if (globals.value("api", false)) {
    state.api = [inbox](const std::string& m, const std::string& p, const std::multimap<std::string, std::string>& q,
                        const std::string& b) { return CallServer(inbox, m, p, q, b); };
  }
  lua_State* L = lua_newstate(lua::Alloc, &state);
  if (L == nullptr) {
    SendDone("memory", "could not create a Lua state");
    return;
  }
  std::unique_ptr<lua_State, void (*)(lua_State*)> closer(L, lua_close);
  *static_cast<lua::LuaRun**>(lua_getextraspace(L)) = &state;
  auto done = [&](const char* stage) {
    std::string msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "error object is not a string";
    if (auto at = msg.find(lua::kFailOpen); at != std::string::npos) {
      SendDone("fail", msg.substr(at + std::string_view(lua::kFailOpen).size()));
    } else if (state.out_of_memory) {
      SendDone("memory", msg);
    } else {
      SendDone("error", std::string(stage) + ": " + msg);
    }
  };
  lua_pushcfunction(L, lua::Prepare);
  lua_pushlightuserdata(L, &globals);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) return done("setting up Lua");
  lua_pushcfunction(L, lua::SetArgs);
  lua_pushlightuserdata(L, &args);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) return done("setting up Lua");
  lua_pushcfunction(L, lua::Traceback);
  int handler = lua_gettop(L);
  if (luaL_loadbufferx(L, script.data(), script.size(), run.fields[1].c_str(), "t") != LUA_OK) {
    return done("loading the script");
  }
  if (lua_pcall(L, 0, 0, handler) != LUA_OK) return done("running the script");
  SendDone("ok", "");
}

}  // namespace
}  // namespace sediment::actions

int main() {
  using namespace sediment::actions;
  std::string inbox;
  sandbox::Message run;
  if (!ReadFrame(&inbox, &run) || run.kind != sandbox::Kind::kRun || run.fields.size() != 6) return 2;
  int64_t memory = 0, cpu = 1;
  std::from_chars(run.fields[4].data(), run.fields[4].data() + run.fields[4].size(), memory);
  std::from_chars(run.fields[5].data(), run.fields[5].data() + run.fields[5].size(), cpu);
  TakeAwayTheRest(memory, cpu);
  try {
    RunScript(&inbox, run);
  } catch (const std::exception& e) {  // a C++ error the library let through
    Send(sandbox::Kind::kDone, {"error", e.what()});
  }
  return 0;
}
