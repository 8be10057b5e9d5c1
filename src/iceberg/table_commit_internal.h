// Private to table_commit*.cc: what the requirement checks and the update
// actions share.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace sediment::iceberg::commit_internal {

using json = nlohmann::json;

// A field of a requirement or update, with a message naming where it is.
template <typename T>
Result<T> FieldOf(const json& o, const char* name, const std::string& where) {
  auto it = o.find(name);
  if (it == o.end() || it->is_null()) return InvalidArgument(fmt::format("{}: missing \"{}\"", where, name));
  try {
    return it->get<T>();
  } catch (const std::exception&) {
    return InvalidArgument(fmt::format("{}: \"{}\" has the wrong type", where, name));
  }
}

inline int64_t IntOr(const json& o, const char* name, int64_t otherwise) {
  auto it = o.find(name);
  return it != o.end() && it->is_number_integer() ? it->get<int64_t>() : otherwise;
}

// The metadata being built, and what "-1" and the snapshot log refer to.
struct UpdateState {
  json metadata;
  int64_t now_ms = 0;
  int64_t last_schema = -1, last_spec = -1, last_order = -1;  // added by this request; -1 none
  std::map<int64_t, int64_t> added_snapshots;                 // id -> timestamp-ms, added by this request
  int64_t newest_snapshot_ms = 0;
};

// Applies updates[i] (table_commit_updates.cc).
Status ApplyUpdate(UpdateState* state, const json& update, size_t i);

}  // namespace sediment::iceberg::commit_internal
