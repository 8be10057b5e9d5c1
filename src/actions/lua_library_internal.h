// Private to actions/: the Lua side of a hook, which runs only inside the
// sandbox process (lua_sandbox_main.cc), never in the server. LuaRun is what
// the library's C functions know of the run; the sandbox fills in how a print
// and a lakefs call reach the server.
//
// Thread-safety: one lua_State, one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <lua.hpp>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>

namespace sediment::actions::lua {

// hook.fail's message starts with this, so the server tells it from an error.
constexpr const char* kFailOpen = "<HookFailure>";

struct LuaRun {
  int64_t used = 0;
  int64_t limit = 0;  // the state's allocations and the C++ work done for it
  bool out_of_memory = false;
  std::string failure;  // hook.fail's message
  std::string repository_id;
  std::string user;
  std::function<void(std::string_view)> print;
  // (status, body) of a lakeFS API call; empty: the lakefs module fails.
  std::function<std::pair<int, std::string>(const std::string& method, const std::string& path,
                                            const std::multimap<std::string, std::string>& query,
                                            const std::string& body)>
      api;
};

// The LuaRun a state was created for (lua_getextraspace holds it).
inline LuaRun* RunOf(lua_State* L) { return *static_cast<LuaRun**>(lua_getextraspace(L)); }

// lua_Alloc over LuaRun (`ud`): refuses past `limit`, setting out_of_memory.
void* Alloc(void* ud, void* ptr, size_t osize, size_t nsize);
// Under lua_pcall, with a const nlohmann::json* as light userdata 1:
// Prepare opens the libraries and sets `action` and `username` from
// {"action": {...}, "username": "..."}; SetArgs sets `args`.
int Prepare(lua_State* L);
int SetArgs(lua_State* L);
// The message handler of the script's pcall: a traceback, except for hook.fail.
int Traceback(lua_State* L);

// JSON <-> Lua (lua_json.cc). Arrays carry the metatable named kArrayMark;
// `budget` is the bytes a conversion may take (each value counts 64, strings
// their size), so a table shared many times over cannot blow up.
constexpr const char* kArrayMark = "sediment.array";
void PushJson(lua_State* L, const nlohmann::json& j, int depth = 0);
nlohmann::json ToJson(lua_State* L, int idx, int64_t* budget, int depth = 0);

}  // namespace sediment::actions::lua
