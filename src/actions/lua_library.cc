// The Lua library of a hook, as the sandbox process (lua_sandbox_main.cc)
// opens it: lakeFS's globals (action, args, username) and the parts of
// lakeFS's Lua library listed in docs/actions.md. No io, os, debug, package,
// file loading or binary chunks; allocations are capped (LuaRun::limit), and
// C++ work done for a script (JSON, string building) is held to that cap too.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "actions/lua_library_internal.h"
#include "base/crypto.h"

namespace sediment::actions::lua {
namespace {

using nlohmann::json;

// What the state may still allocate: C++ work on a script's behalf (JSON,
// string building) is held to it too.
int64_t Budget(lua_State* L) {
  LuaRun* run = RunOf(L);
  return std::max<int64_t>(run->limit - run->used, 0);
}

void* AllocImpl(void* ud, void* ptr, size_t osize, size_t nsize) {
  auto* run = static_cast<LuaRun*>(ud);
  size_t old = ptr != nullptr ? osize : 0;
  if (nsize == 0) {
    run->used -= static_cast<int64_t>(old);
    std::free(ptr);
    return nullptr;
  }
  if (run->used - static_cast<int64_t>(old) + static_cast<int64_t>(nsize) > run->limit) {
    run->out_of_memory = true;
    return nullptr;
  }
  void* p = std::realloc(ptr, nsize);
  if (p != nullptr) run->used += static_cast<int64_t>(nsize) - static_cast<int64_t>(old);
  return p;
}

// --- base library ------------------------------------------------------------

int Print(lua_State* L) {
  int n = lua_gettop(L);
  std::string line;
  for (int i = 1; i <= n; ++i) {
    size_t len = 0;
    const char* s = luaL_tolstring(L, i, &len);
    if (i > 1) line += '\t';
    line.append(s, len);
    lua_pop(L, 1);
  }
  line += '\n';
  RunOf(L)->print(line);
  return 0;
}

// load(chunk [, chunkname [, mode [, env]]]) with mode forced to text: a
// binary chunk can crash the virtual machine.
int TextLoad(lua_State* L) {
  int n = lua_gettop(L);
  while (lua_gettop(L) < 2) lua_pushnil(L);
  lua_pushliteral(L, "t");
  if (n >= 3) {
    lua_replace(L, 3);
  } else {
    n = 3;
  }
  lua_settop(L, n);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, n, LUA_MULTRET);
  return lua_gettop(L);
}

int MakeArray(lua_State* L) {
  lua_newtable(L);
  luaL_setmetatable(L, kArrayMark);
  return 1;
}

// --- modules -------------------------------------------------------------------

std::string CheckString(lua_State* L, int i) {
  size_t n = 0;
  const char* s = luaL_checklstring(L, i, &n);
  return std::string(s, n);
}

int JsonMarshal(lua_State* L) {
  int64_t budget = Budget(L) / 4;
  json j = ToJson(L, 1, &budget);
  int indent = -1;
  if (lua_istable(L, 2)) {
    lua_getfield(L, 2, "indent");
    if (lua_isstring(L, -1)) indent = static_cast<int>(lua_rawlen(L, -1));
    lua_pop(L, 1);
  }
  std::string s = j.dump(indent, ' ', false, json::error_handler_t::replace) + "\n";
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

int JsonUnmarshal(lua_State* L) {
  std::string s = CheckString(L, 1);
  // A parsed document takes several times its text: refuse what cannot fit.
  if (static_cast<int64_t>(s.size()) * 16 > Budget(L)) {
    return luaL_error(L, "json: %d bytes of text are too many for the hook's memory limit", static_cast<int>(s.size()));
  }
  json j = json::parse(s, nullptr, false);
  if (j.is_discarded()) return luaL_error(L, "json: the text is not JSON");
  PushJson(L, j);
  return 1;
}

int B64Encode(lua_State* L) {
  std::string s = Base64(CheckString(L, 1));
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}
int B64Decode(lua_State* L) {
  auto s = Base64Decode(CheckString(L, 1));
  if (!s) return luaL_error(L, "base64: illegal data");
  lua_pushlstring(L, s->data(), s->size());
  return 1;
}
int B64UrlEncode(lua_State* L) {
  std::string s = Base64(CheckString(L, 1));
  for (char& c : s) c = c == '+' ? '-' : c == '/' ? '_' : c;
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}
int B64UrlDecode(lua_State* L) {
  std::string in = CheckString(L, 1);
  for (char& c : in) c = c == '-' ? '+' : c == '_' ? '/' : c;
  auto s = Base64Decode(in);
  if (!s) return luaL_error(L, "base64: illegal data");
  lua_pushlstring(L, s->data(), s->size());
  return 1;
}
int HexEncode(lua_State* L) {
  std::string s = Hex(CheckString(L, 1));
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}
int HexDecodeFn(lua_State* L) {
  auto s = HexDecode(CheckString(L, 1));
  if (!s) return luaL_error(L, "hex: invalid byte");
  lua_pushlstring(L, s->data(), s->size());
  return 1;
}
int Sha256Digest(lua_State* L) {
  std::string s = Sha256(CheckString(L, 1));
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}
int HmacSign256(lua_State* L) {
  std::string s = HmacSha256(CheckString(L, 2), CheckString(L, 1));  // (message, key)
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}
int HmacSign1(lua_State* L) {
  std::string s = HmacSha1(CheckString(L, 2), CheckString(L, 1));
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

int StrSplit(lua_State* L) {
  std::string s = CheckString(L, 1), sep = CheckString(L, 2);
  lua_newtable(L);
  lua_Integer i = 1;
  if (sep.empty()) {  // Go: after each UTF-8 sequence; bytes are close enough for ASCII
    for (char c : s) {
      lua_pushlstring(L, &c, 1);
      lua_rawseti(L, -2, i++);
    }
    return 1;
  }
  size_t start = 0;
  for (;;) {
    size_t at = s.find(sep, start);
    std::string part = s.substr(start, at == std::string::npos ? std::string::npos : at - start);
    lua_pushlstring(L, part.data(), part.size());
    lua_rawseti(L, -2, i++);
    if (at == std::string::npos) break;
    start = at + sep.size();
  }
  return 1;
}
int StrTrim(lua_State* L) {
  std::string s = CheckString(L, 1);
  const char* ws = " \t\n\r\v\f";
  size_t b = s.find_first_not_of(ws);
  s = b == std::string::npos ? "" : s.substr(b, s.find_last_not_of(ws) - b + 1);
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}
// Go's strings.Replace: the first n (all when n < 0) non-overlapping `from`;
// an empty `from` matches before each byte and at the end.
int StrReplace(lua_State* L) {
  std::string s = CheckString(L, 1), from = CheckString(L, 2), to = CheckString(L, 3);
  lua_Integer n = luaL_checkinteger(L, 4);
  std::vector<size_t> at;
  for (size_t pos = 0; (n < 0 || static_cast<lua_Integer>(at.size()) < n);) {
    size_t found = from.empty() ? pos : s.find(from, pos);
    if (found == std::string::npos || found > s.size()) break;
    at.push_back(found);
    pos = found + std::max<size_t>(from.size(), 1);
  }
  int64_t size = static_cast<int64_t>(s.size()) + static_cast<int64_t>(at.size()) * (static_cast<int64_t>(to.size()) -
                                                                                     static_cast<int64_t>(from.size()));
  if (size > Budget(L)) return luaL_error(L, "strings.replace: the result would exceed the hook's memory limit");
  std::string out;
  size_t pos = 0;
  for (size_t a : at) {
    out.append(s, pos, a - pos);
    out += to;
    pos = a + from.size();
  }
  out.append(s, std::min(pos, s.size()), std::string::npos);
  lua_pushlstring(L, out.data(), out.size());
  return 1;
}
int StrHasPrefix(lua_State* L) {
  lua_pushboolean(L, CheckString(L, 1).starts_with(CheckString(L, 2)));
  return 1;
}
int StrHasSuffix(lua_State* L) {
  lua_pushboolean(L, CheckString(L, 1).ends_with(CheckString(L, 2)));
  return 1;
}
int StrContains(lua_State* L) {
  lua_pushboolean(L, CheckString(L, 1).find(CheckString(L, 2)) != std::string::npos);
  return 1;
}

int PathJoin(lua_State* L) {
  std::string sep = CheckString(L, 1);
  if (sep.empty()) return luaL_error(L, "path.join: the separator must not be empty");
  std::string out;
  for (int i = 2; i <= lua_gettop(L); ++i) {
    std::string part = CheckString(L, i);
    if (part.empty()) continue;
    if (!out.empty() && !out.ends_with(sep)) out += sep;
    if (!out.empty() && part.starts_with(sep)) part = part.substr(sep.size());
    out += part;
  }
  lua_pushlstring(L, out.data(), out.size());
  return 1;
}
int PathParse(lua_State* L) {
  std::string p = CheckString(L, 1);
  std::string sep = lua_gettop(L) >= 2 ? CheckString(L, 2) : "/";
  if (sep.empty()) return luaL_error(L, "path.parse: the separator must not be empty");
  std::string trimmed = p;
  while (!trimmed.empty() && trimmed.ends_with(sep)) trimmed.resize(trimmed.size() - sep.size());
  size_t at = trimmed.rfind(sep);
  std::string parent = at == std::string::npos ? "" : trimmed.substr(0, at + sep.size());
  std::string base = at == std::string::npos ? trimmed : trimmed.substr(at + sep.size());
  lua_newtable(L);
  lua_pushlstring(L, parent.data(), parent.size());
  lua_setfield(L, -2, "parent");
  lua_pushlstring(L, base.data(), base.size());
  lua_setfield(L, -2, "base_name");
  return 1;
}
int PathIsHidden(lua_State* L) {
  std::string p = CheckString(L, 1);
  std::string sep = lua_gettop(L) >= 2 ? CheckString(L, 2) : "/";
  std::string prefix = lua_gettop(L) >= 3 ? CheckString(L, 3) : "_";
  if (sep.empty()) return luaL_error(L, "path.is_hidden: the separator must not be empty");
  bool hidden = false;
  size_t start = 0;
  while (start <= p.size()) {
    size_t at = p.find(sep, start);
    std::string part = p.substr(start, at == std::string::npos ? std::string::npos : at - start);
    if (!part.empty() && part.starts_with(prefix)) hidden = true;
    if (at == std::string::npos) break;
    start = at + sep.size();
  }
  lua_pushboolean(L, hidden);
  return 1;
}

int HookFail(lua_State* L) {
  LuaRun* run = RunOf(L);
  run->failure = lua_gettop(L) >= 1 ? CheckString(L, 1) : "";
  return luaL_error(L, "%s%s", kFailOpen, run->failure.c_str());
}

// lakefs: the lakeFS API, called by the server as the user whose event this is.
int ApiCall(lua_State* L, const std::string& method, const std::string& path,
            const std::multimap<std::string, std::string>& query, const std::string& body, bool raw_body) {
  LuaRun* run = RunOf(L);
  if (!run->api) return luaL_error(L, "the lakefs module is not available in this server");
  if (run->user.empty()) return luaL_error(L, "the lakefs module needs the event's user");
  // A hook reads and writes its own repository only: an action file planted
  // in one repository must not reach others through whoever fires it. (The
  // server checks it again: this process is not trusted.)
  if (path.size() > 4096) return luaL_error(L, "lakefs: a ref or path longer than 4096 bytes");
  for (const auto& [k, v] : query) {
    if (v.size() > 4096) return luaL_error(L, "lakefs: parameter %s is longer than 4096 bytes", k.c_str());
  }
  const std::string own = "/api/v1/repositories/" + run->repository_id + "/";
  if (path.rfind(own, 0) != 0) {
    lua_pushinteger(L, 403);
    PushJson(L, json{{"message", "a hook may call the API only on its own repository (" + run->repository_id + ")"}});
    return 2;
  }
  auto [status, reply] = run->api(method, path, query, body);
  lua_pushinteger(L, status);
  if (raw_body) {
    lua_pushlstring(L, reply.data(), reply.size());
    return 2;
  }
  if (reply.empty()) return 1;
  json j = json::parse(reply, nullptr, false);
  if (j.is_discarded()) {
    lua_pushlstring(L, reply.data(), reply.size());
  } else {
    PushJson(L, j);
  }
  return 2;
}

std::string RepoPath(lua_State* L) { return "/api/v1/repositories/" + CheckString(L, 1) + "/"; }

void OptQuery(lua_State* L, int i, const char* name, std::multimap<std::string, std::string>* q) {
  if (lua_isnoneornil(L, i)) return;
  if (lua_isboolean(L, i)) {
    q->emplace(name, lua_toboolean(L, i) ? "true" : "false");
  } else {
    q->emplace(name, CheckString(L, i));
  }
}

int LakefsCreateTag(lua_State* L) {
  json body = {{"id", CheckString(L, 3)}, {"ref", CheckString(L, 2)}};
  return ApiCall(L, "POST", RepoPath(L) + "tags", {}, body.dump(), false);
}
int LakefsDiffRefs(lua_State* L) {
  std::multimap<std::string, std::string> q;
  OptQuery(L, 4, "after", &q);
  OptQuery(L, 5, "prefix", &q);
  OptQuery(L, 6, "delimiter", &q);
  OptQuery(L, 7, "amount", &q);
  return ApiCall(L, "GET", RepoPath(L) + "refs/" + CheckString(L, 2) + "/diff/" + CheckString(L, 3), q, "", false);
}
int LakefsListObjects(lua_State* L) {
  std::multimap<std::string, std::string> q;
  OptQuery(L, 3, "after", &q);
  OptQuery(L, 4, "prefix", &q);
  OptQuery(L, 5, "delimiter", &q);
  OptQuery(L, 6, "amount", &q);
  OptQuery(L, 7, "user_metadata", &q);
  return ApiCall(L, "GET", RepoPath(L) + "refs/" + CheckString(L, 2) + "/objects/ls", q, "", false);
}
int LakefsGetObject(lua_State* L) {
  return ApiCall(L, "GET", RepoPath(L) + "refs/" + CheckString(L, 2) + "/objects", {{"path", CheckString(L, 3)}}, "",
                 true);
}
int LakefsStatObject(lua_State* L) {
  std::multimap<std::string, std::string> q{{"path", CheckString(L, 3)}};
  OptQuery(L, 4, "user_metadata", &q);
  return ApiCall(L, "GET", RepoPath(L) + "refs/" + CheckString(L, 2) + "/objects/stat", q, "", true);
}
int LakefsDiffBranch(lua_State* L) {
  std::multimap<std::string, std::string> q;
  OptQuery(L, 3, "after", &q);
  OptQuery(L, 4, "amount", &q);
  OptQuery(L, 5, "prefix", &q);
  OptQuery(L, 6, "delimiter", &q);
  return ApiCall(L, "GET", RepoPath(L) + "branches/" + CheckString(L, 2) + "/diff", q, "", false);
}

struct Module {
  const char* name;
  std::vector<luaL_Reg> functions;
};

const std::vector<Module>& Modules() {
  static const std::vector<Module> kModules = {
      {"lakefs",
       {{"create_tag", LakefsCreateTag},
        {"diff_refs", LakefsDiffRefs},
        {"list_objects", LakefsListObjects},
        {"get_object", LakefsGetObject},
        {"stat_object", LakefsStatObject},
        {"diff_branch", LakefsDiffBranch}}},
      {"hook", {{"fail", HookFail}}},
      {"encoding/json", {{"marshal", JsonMarshal}, {"unmarshal", JsonUnmarshal}}},
      {"encoding/base64",
       {{"encode", B64Encode}, {"decode", B64Decode}, {"url_encode", B64UrlEncode}, {"url_decode", B64UrlDecode}}},
      {"encoding/hex", {{"encode", HexEncode}, {"decode", HexDecodeFn}}},
      {"crypto/sha256", {{"digest", Sha256Digest}}},
      {"crypto/hmac", {{"sign_sha256", HmacSign256}, {"sign_sha1", HmacSign1}}},
      {"strings",
       {{"split", StrSplit},
        {"trim", StrTrim},
        {"replace", StrReplace},
        {"has_prefix", StrHasPrefix},
        {"has_suffix", StrHasSuffix},
        {"contains", StrContains}}},
      {"path", {{"join", PathJoin}, {"parse", PathParse}, {"is_hidden", PathIsHidden}}},
  };
  return kModules;
}

int Require(lua_State* L) {
  std::string name = CheckString(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, "sediment.loaded");
  if (lua_getfield(L, -1, name.c_str()) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  for (const auto& m : Modules()) {
    if (name != m.name) continue;
    lua_createtable(L, 0, static_cast<int>(m.functions.size()));
    for (const auto& f : m.functions) {
      lua_pushcfunction(L, f.func);
      lua_setfield(L, -2, f.name);
    }
    if (name == "path") {
      lua_pushliteral(L, "/");
      lua_setfield(L, -2, "default_separator");
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, name.c_str());
    return 1;
  }
  return luaL_error(L, "module '%s' not found (docs/actions.md lists the modules Sediment offers)", name.c_str());
}

// Opens the sandbox's libraries and globals; runs under lua_pcall.
int PrepareImpl(lua_State* L) {
  const json& globals = *static_cast<const json*>(lua_touserdata(L, 1));  // before the stack is cleared
  luaL_requiref(L, LUA_GNAME, luaopen_base, 1);
  luaL_requiref(L, LUA_TABLIBNAME, luaopen_table, 1);
  luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 1);
  luaL_requiref(L, LUA_MATHLIBNAME, luaopen_math, 1);
  luaL_requiref(L, LUA_UTF8LIBNAME, luaopen_utf8, 1);
  luaL_requiref(L, LUA_COLIBNAME, luaopen_coroutine, 1);
  lua_settop(L, 0);
  luaL_newmetatable(L, kArrayMark);
  lua_pop(L, 1);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, "sediment.loaded");
  lua_pushnil(L);
  lua_setglobal(L, "dofile");
  lua_pushnil(L);
  lua_setglobal(L, "loadfile");
  lua_getglobal(L, LUA_STRLIBNAME);
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
  lua_pop(L, 1);
  lua_getglobal(L, "load");
  lua_pushcclosure(L, TextLoad, 1);
  lua_setglobal(L, "load");
  lua_register(L, "print", Print);
  lua_register(L, "require", Require);
  lua_register(L, "array", MakeArray);

  // `action` and `username`, from the JSON at light userdata 1.
  PushJson(L, globals.value("action", json::object()));
  lua_setglobal(L, "action");
  std::string user = globals.value("username", "");
  lua_pushlstring(L, user.data(), user.size());
  lua_setglobal(L, "username");
  return 0;
}

// The global `args`, from the JSON at light userdata 1.
int SetArgsImpl(lua_State* L) {
  PushJson(L, *static_cast<const json*>(lua_touserdata(L, 1)));
  lua_setglobal(L, "args");
  return 0;
}

// The message handler of the script's pcall: a traceback, except for hook.fail.
int TracebackImpl(lua_State* L) {
  const char* msg = lua_tostring(L, 1);
  if (msg != nullptr && std::string_view(msg).find(kFailOpen) != std::string_view::npos) return 1;
  luaL_traceback(L, L, msg, 1);
  return 1;
}

}  // namespace

void* Alloc(void* ud, void* ptr, size_t osize, size_t nsize) { return AllocImpl(ud, ptr, osize, nsize); }
int Prepare(lua_State* L) { return PrepareImpl(L); }
int SetArgs(lua_State* L) { return SetArgsImpl(L); }
int Traceback(lua_State* L) { return TracebackImpl(L); }

}  // namespace sediment::actions::lua
