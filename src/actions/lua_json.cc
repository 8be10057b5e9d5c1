// JSON <-> Lua for the hook's library (lua_library_internal.h).
#include <nlohmann/json.hpp>

#include "actions/lua_library_internal.h"

namespace sediment::actions::lua {

using nlohmann::json;

namespace {
constexpr int kMaxDepth = 64;
}  // namespace

void PushJson(lua_State* L, const json& j, int depth) {
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
json ToJson(lua_State* L, int idx, int64_t* budget, int depth) {
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

}  // namespace sediment::actions::lua
