// The Lua hook: runs a script (inline `script`, or `script_path` read from the
// event's source ref as the user) in an embedded Lua 5.4 with lakeFS's globals
// (action, args, username) and the parts of lakeFS's Lua library listed in
// docs/actions.md. The state is a sandbox: no io, os, debug, package, file
// loading or binary chunks; its allocations are capped (ActionsOptions::
// lua_memory_bytes) and a count hook cuts it off at the hook's deadline.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <lua.hpp>
#include <nlohmann/json.hpp>
#include <vector>

#include "actions/action.h"
#include "base/crypto.h"

namespace sediment::actions {
namespace {

using nlohmann::json;

constexpr const char* kFailOpen = "<HookFailure>";
constexpr const char* kArrayMark = "sediment.array";  // registry: the metatable that marks a JSON array
constexpr int kMaxDepth = 64;

struct LuaRun {
  const HookEnv* env;
  const HookRecord* record;
  OutputLog* log;
  int64_t used = 0;
  int64_t limit = 0;
  bool out_of_memory = false;
  bool timed_out = false;
  std::string failure;  // hook.fail's message
};

LuaRun* RunOf(lua_State* L) { return *static_cast<LuaRun**>(lua_getextraspace(L)); }

// What the state may still allocate: C++ work on a script's behalf (JSON,
// string building) is held to it too.
int64_t Budget(lua_State* L) {
  LuaRun* run = RunOf(L);
  return std::max<int64_t>(run->limit - run->used, 0);
}

void* Alloc(void* ud, void* ptr, size_t osize, size_t nsize) {
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

void Deadline(lua_State* L, lua_Debug*) {
  LuaRun* run = RunOf(L);
  if (SteadyMicros() <= run->env->deadline_micros) return;
  run->timed_out = true;
  // From now on every instruction fails, so a pcall loop cannot outlast it.
  lua_sethook(L, Deadline, LUA_MASKCOUNT, 1);
  luaL_error(L, "the hook ran longer than its timeout");
}

// --- JSON <-> Lua ------------------------------------------------------------

void PushJson(lua_State* L, const json& j, int depth = 0) {
  if (depth > kMaxDepth) luaL_error(L, "value nested too deeply");
  luaL_checkstack(L, 4, "json");
  switch (j.type()) {
    case json::value_t::null:
    case json::value_t::discarded:
      lua_pushnil(L);
      break;
    case json::value_t::boolean:
      lua_pushboolean(L, j.get<bool>());
      break;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      lua_pushinteger(L, j.get<lua_Integer>());
      break;
    case json::value_t::number_float:
      lua_pushnumber(L, j.get<double>());
      break;
    case json::value_t::string:
    case json::value_t::binary: {
      const std::string& s = j.get_ref<const std::string&>();
      lua_pushlstring(L, s.data(), s.size());
      break;
    }
    case json::value_t::array: {
      lua_createtable(L, static_cast<int>(j.size()), 0);
      lua_Integer i = 1;
      for (const auto& item : j) {
        PushJson(L, item, depth + 1);
        lua_rawseti(L, -2, i++);
      }
      luaL_setmetatable(L, kArrayMark);
      break;
    }
    case json::value_t::object:
      lua_createtable(L, 0, static_cast<int>(j.size()));
      for (const auto& [k, v] : j.items()) {
        PushJson(L, v, depth + 1);
        lua_setfield(L, -2, k.c_str());
      }
      break;
  }
}

// `budget`: bytes the JSON may take (each value counts 64, strings their size),
// so a table shared many times over cannot make an exponential document.
json ToJson(lua_State* L, int idx, int64_t* budget, int depth = 0) {
  if (depth > kMaxDepth) luaL_error(L, "value nested too deeply (or a table that holds itself)");
  *budget -= 64;
  if (lua_type(L, idx) == LUA_TSTRING) *budget -= static_cast<int64_t>(lua_rawlen(L, idx));
  if (*budget < 0) luaL_error(L, "the value is too large to convert to JSON within the hook's memory limit");
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
    case LUA_TNIL:
      return nullptr;
    case LUA_TBOOLEAN:
      return static_cast<bool>(lua_toboolean(L, idx));
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) return static_cast<int64_t>(lua_tointeger(L, idx));
      return lua_tonumber(L, idx);
    case LUA_TSTRING: {
      size_t n = 0;
      const char* s = lua_tolstring(L, idx, &n);
      return std::string(s, n);
    }
    case LUA_TTABLE: {
      luaL_checkstack(L, 4, "json");
      bool marked = false;
      if (lua_getmetatable(L, idx)) {
        luaL_getmetatable(L, kArrayMark);
        marked = lua_rawequal(L, -1, -2);
        lua_pop(L, 2);
      }
      lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, idx));
      lua_Integer count = 0;
      lua_pushnil(L);
      while (lua_next(L, idx) != 0) {
        ++count;
        lua_pop(L, 1);
      }
      if (marked || (n > 0 && count == n)) {
        json out = json::array();
        for (lua_Integer i = 1; i <= n; ++i) {
          lua_rawgeti(L, idx, i);
          out.push_back(ToJson(L, -1, budget, depth + 1));
          lua_pop(L, 1);
        }
        return out;
      }
      json out = json::object();
      lua_pushnil(L);
      while (lua_next(L, idx) != 0) {
        std::string key;
        if (lua_type(L, -2) == LUA_TSTRING) {
          key = lua_tostring(L, -2);
        } else if (lua_type(L, -2) == LUA_TNUMBER) {
          lua_pushvalue(L, -2);
          key = lua_tostring(L, -1);
          lua_pop(L, 1);
        } else {
          luaL_error(L, "a table key of type %s cannot be JSON", luaL_typename(L, -2));
        }
        out[key] = ToJson(L, -1, budget, depth + 1);
        lua_pop(L, 1);
      }
      return out;
    }
    default:
      luaL_error(L, "a %s cannot be JSON", luaL_typename(L, idx));
      return nullptr;
  }
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
  RunOf(L)->log->Append(line);
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

// lakefs: the lakeFS API in-process, as the user whose event this is.
int ApiCall(lua_State* L, const std::string& method, const std::string& path,
            const std::multimap<std::string, std::string>& query, const std::string& body, bool raw_body) {
  LuaRun* run = RunOf(L);
  if (run->env->api == nullptr) return luaL_error(L, "the lakefs module is not available in this server");
  if (run->record->user.empty()) return luaL_error(L, "the lakefs module needs the event's user");
  // A hook reads and writes its own repository only: an action file planted
  // in one repository must not reach others through whoever fires it.
  if (path.size() > 4096) return luaL_error(L, "lakefs: a ref or path longer than 4096 bytes");
  for (const auto& [k, v] : query) {
    if (v.size() > 4096) return luaL_error(L, "lakefs: parameter %s is longer than 4096 bytes", k.c_str());
  }
  const std::string own = "/api/v1/repositories/" + run->record->repository_id + "/";
  if (path.rfind(own, 0) != 0) {
    lua_pushinteger(L, 403);
    PushJson(L, json{{"message",
                      "a hook may call the API only on its own repository (" + run->record->repository_id + ")"}});
    return 2;
  }
  ApiClient::Reply reply = run->env->api->Call(run->record->user, method, path, query, body);
  lua_pushinteger(L, reply.status);
  if (raw_body) {
    lua_pushlstring(L, reply.body.data(), reply.body.size());
    return 2;
  }
  if (reply.body.empty()) return 1;
  json j = json::parse(reply.body, nullptr, false);
  if (j.is_discarded()) {
    lua_pushlstring(L, reply.body.data(), reply.body.size());
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

void SetString(lua_State* L, const char* key, const std::string& v) {
  lua_pushlstring(L, v.data(), v.size());
  lua_setfield(L, -2, key);
}

// Opens the sandbox's libraries and globals; runs under lua_pcall.
int Prepare(lua_State* L) {
  LuaRun* run = RunOf(L);
  const HookRecord& r = *run->record;
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

  lua_newtable(L);
  SetString(L, "action_name", run->env->action_name);
  SetString(L, "run_id", run->env->run_id);
  SetString(L, "pre_run_id", r.pre_run_id);
  SetString(L, "event_type", r.event_type);
  SetString(L, "commit_id", r.commit_id);
  SetString(L, "branch_id", r.branch_id);
  SetString(L, "source_ref", r.source_ref);
  SetString(L, "tag_id", r.tag_id);
  SetString(L, "merge_source", r.merge_source);
  SetString(L, "repository_id", r.repository_id);
  SetString(L, "storage_namespace", run->env->storage_namespace);
  lua_newtable(L);
  SetString(L, "message", r.commit_message);
  SetString(L, "committer", r.committer);
  PushJson(L, json(r.commit_metadata));
  lua_setfield(L, -2, "metadata");
  lua_setfield(L, -2, "commit");
  lua_setglobal(L, "action");
  lua_pushlstring(L, r.user.data(), r.user.size());
  lua_setglobal(L, "username");
  return 0;
}

// The global `args`, from the JSON at light userdata 1.
int SetArgs(lua_State* L) {
  PushJson(L, *static_cast<const json*>(lua_touserdata(L, 1)));
  lua_setglobal(L, "args");
  return 0;
}

// The message handler of the script's pcall: a traceback, except for hook.fail.
int Traceback(lua_State* L) {
  const char* msg = lua_tostring(L, 1);
  if (msg != nullptr && std::string_view(msg).find(kFailOpen) != std::string_view::npos) return 1;
  luaL_traceback(L, L, msg, 1);
  return 1;
}

// Replaces {{ ENV.X }} in every string of `args`.
Status ExpandArgs(json* j, const std::string& prefix) {
  if (j->is_string()) {
    bool secret = false;
    ARROW_ASSIGN_OR_RAISE(auto v, ExpandEnv(j->get<std::string>(), prefix, &secret));
    *j = v;
  } else if (j->is_structured()) {
    for (auto& item : *j) ARROW_RETURN_NOT_OK(ExpandArgs(&item, prefix));
  }
  return Status::OK();
}

}  // namespace

Status RunLua(const Hook& hook, const HookRecord& record, const HookEnv& env, OutputLog* log) {
  const auto& p = hook.properties;
  std::string script;
  std::string chunk_name = "=" + hook.id;
  if (p.contains("script") && p["script"].is_string()) {
    script = p["script"].get<std::string>();
  } else {
    if (!p.contains("script_path") || !p["script_path"].is_string()) {
      return InvalidArgument("'script' or 'script_path' must be a string");
    }
    std::string path = p["script_path"].get<std::string>();
    if (env.api == nullptr) return InvalidArgument("script_path needs the lakeFS API, which this server lacks");
    auto reply = env.api->Call(
        record.user, "GET", "/api/v1/repositories/" + record.repository_id + "/refs/" + record.source_ref + "/objects",
        {{"path", path}}, "");
    if (reply.status != 200) {
      return InvalidArgument(fmt::format("could not load script_path {}: HTTP {}: invalid action", path, reply.status));
    }
    script = std::move(reply.body);
    chunk_name = "@" + path;
  }
  json args = p.contains("args") && p["args"].is_object() ? p["args"] : json::object();
  ARROW_RETURN_NOT_OK(ExpandArgs(&args, env.options->env_prefix));

  LuaRun run{&env, &record, log, 0, 0, false, false, {}};
  run.limit = env.options->lua_memory_bytes;
  lua_State* L = lua_newstate(Alloc, &run);
  if (L == nullptr) return Status::OutOfMemory("could not create a Lua state");
  std::unique_ptr<lua_State, void (*)(lua_State*)> closer(L, lua_close);
  *static_cast<LuaRun**>(lua_getextraspace(L)) = &run;
  lua_sethook(L, Deadline, LUA_MASKCOUNT, 10000);

  auto fail = [&](const char* stage) -> Status {
    std::string msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "error object is not a string";
    if (auto at = msg.find(kFailOpen); at != std::string::npos) {
      return Status::IOError(msg.substr(at + std::string_view(kFailOpen).size()));
    }
    if (run.timed_out) {
      return Status::IOError(
          fmt::format("the Lua hook ran longer than its timeout ({}ms)", env.options->hook_timeout_ms));
    }
    if (run.out_of_memory) {
      return Status::IOError(fmt::format("the Lua hook used more than its memory limit ({} bytes): {}",
                                         env.options->lua_memory_bytes, msg));
    }
    return Status::IOError(fmt::format("{}: {}", stage, msg));
  };
  lua_pushcfunction(L, Prepare);
  if (lua_pcall(L, 0, 0, 0) != LUA_OK) return fail("setting up Lua");
  lua_pushcfunction(L, SetArgs);
  lua_pushlightuserdata(L, &args);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) return fail("setting up Lua");

  lua_pushcfunction(L, Traceback);
  int handler = lua_gettop(L);
  if (luaL_loadbufferx(L, script.data(), script.size(), chunk_name.c_str(), "t") != LUA_OK) {
    return fail("loading the script");
  }
  if (lua_pcall(L, 0, 0, handler) != LUA_OK) return fail("running the script");
  return Status::OK();
}

}  // namespace sediment::actions
