// ApplyTableCommit (table_commit.h): requirements first, then the updates in
// order, each action a function of its own.
#include "iceberg/table_commit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>

#include "iceberg/table_commit_internal.h"

namespace sediment::iceberg {
namespace {

using namespace commit_internal;  // NOLINT(build/namespaces): the shared helpers

constexpr int kMaxFormatVersion = 2;
constexpr int64_t kDefaultPreviousVersionsMax = 100;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Status Failed(const std::string& what) { return Conflict("Requirement failed: " + what); }

// The snapshot id a ref names in `m`, nullopt if there is no such ref
// (format version 1 tables may have only current-snapshot-id for main).
std::optional<int64_t> RefSnapshot(const json& m, const std::string& ref) {
  if (auto refs = m.find("refs"); refs != m.end() && refs->is_object() && refs->contains(ref)) {
    return IntOr((*refs)[ref], "snapshot-id", -1);
  }
  if (ref == "main") {
    int64_t current = IntOr(m, "current-snapshot-id", -1);
    if (current >= 0) return current;
  }
  return std::nullopt;
}

Status CheckInt(const json& m, const json& r, const char* field, const char* table_field, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(int64_t want, FieldOf<int64_t>(r, field, where));
  int64_t have = IntOr(m, table_field, -1);
  if (have != want) return Failed(fmt::format("{} is {}, not {}", table_field, have, want));
  return Status::OK();
}

Status CheckRefSnapshot(const json& m, const json& r, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(auto ref, FieldOf<std::string>(r, "ref", where));
  if (!r.contains("snapshot-id")) return InvalidArgument(fmt::format("{}: missing \"snapshot-id\"", where));
  std::optional<int64_t> have = RefSnapshot(m, ref);
  if (r["snapshot-id"].is_null()) {
    if (have) return Failed(fmt::format("reference \"{}\" was created concurrently", ref));
    return Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(int64_t want, FieldOf<int64_t>(r, "snapshot-id", where));
  if (!have) return Failed(fmt::format("reference \"{}\" is missing, expected snapshot {}", ref, want));
  if (*have != want) return Failed(fmt::format("reference \"{}\" is at snapshot {}, not {}", ref, *have, want));
  return Status::OK();
}

Status CheckRequirement(const std::optional<json>& current, const json& r, size_t i) {
  std::string where = fmt::format("requirements[{}]", i);
  if (!r.is_object()) return InvalidArgument(where + ": not an object");
  ARROW_ASSIGN_OR_RAISE(auto type, FieldOf<std::string>(r, "type", where));
  where += " (" + type + ")";
  if (type == "assert-create") return current ? Failed("the table already exists") : Status::OK();
  static const std::map<std::string, std::pair<const char*, const char*>> kInts = {
      {"assert-last-assigned-field-id", {"last-assigned-field-id", "last-column-id"}},
      {"assert-current-schema-id", {"current-schema-id", "current-schema-id"}},
      {"assert-last-assigned-partition-id", {"last-assigned-partition-id", "last-partition-id"}},
      {"assert-default-spec-id", {"default-spec-id", "default-spec-id"}},
      {"assert-default-sort-order-id", {"default-sort-order-id", "default-sort-order-id"}},
  };
  auto known = kInts.find(type);
  if (type != "assert-table-uuid" && type != "assert-ref-snapshot-id" && known == kInts.end()) {
    return InvalidArgument(fmt::format("{}: unknown requirement type", where));
  }
  if (!current) return Failed("the table does not exist");
  if (type == "assert-table-uuid") {
    ARROW_ASSIGN_OR_RAISE(auto uuid, FieldOf<std::string>(r, "uuid", where));
    std::string have = current->value("table-uuid", "");
    if (Lower(have) != Lower(uuid)) return Failed(fmt::format("table uuid is {}, not {}", have, uuid));
    return Status::OK();
  }
  if (type == "assert-ref-snapshot-id") return CheckRefSnapshot(*current, r, where);
  return CheckInt(*current, r, known->second.first, known->second.second, where);
}

// The metadata a create starts from: nothing yet but the empty collections.
json EmptyMetadata(int64_t now_ms) {
  return {{"format-version", kMaxFormatVersion},
          {"table-uuid", ""},
          {"location", ""},
          {"last-sequence-number", 0},
          {"last-updated-ms", now_ms},
          {"last-column-id", 0},
          {"schemas", json::array()},
          {"current-schema-id", -1},
          {"current-snapshot-id", -1},
          {"partition-specs", json::array()},
          {"default-spec-id", -1},
          {"last-partition-id", 999},
          {"properties", json::object()},
          {"snapshots", json::array()},
          {"snapshot-log", json::array()},
          {"metadata-log", json::array()},
          {"sort-orders", json::array()},
          {"default-sort-order-id", -1},
          {"refs", json::object()}};
}

// What every table must have once a create's updates are applied: an
// unpartitioned spec and the unsorted order unless the request gave others.
Status CompleteCreate(json* m) {
  if ((*m)["table-uuid"].get<std::string>().empty()) return InvalidArgument("a new table needs assign-uuid");
  if ((*m)["location"].get<std::string>().empty()) return InvalidArgument("a new table needs set-location");
  if ((*m)["current-schema-id"].get<int64_t>() < 0) return InvalidArgument("a new table needs a current schema");
  if ((*m)["default-spec-id"].get<int64_t>() < 0) {
    (*m)["partition-specs"].push_back({{"spec-id", 0}, {"fields", json::array()}});
    (*m)["default-spec-id"] = 0;
  }
  if ((*m)["default-sort-order-id"].get<int64_t>() < 0) {
    (*m)["sort-orders"].push_back({{"order-id", 0}, {"fields", json::array()}});
    (*m)["default-sort-order-id"] = 0;
  }
  return Status::OK();
}

// The replaced metadata file joins metadata-log, which keeps the newest
// write.metadata.previous-versions-max entries.
void LogPreviousMetadata(const TableCommit& in, json* m) {
  if (!in.current || in.current_location.empty()) return;
  json& log = (*m)["metadata-log"];
  if (!log.is_array()) log = json::array();
  log.push_back({{"metadata-file", in.current_location}, {"timestamp-ms", IntOr(*in.current, "last-updated-ms", 0)}});
  int64_t keep = kDefaultPreviousVersionsMax;
  if (auto p = m->find("properties"); p != m->end() && p->contains("write.metadata.previous-versions-max")) {
    try {
      keep = std::max<int64_t>(1, std::stoll((*p)["write.metadata.previous-versions-max"].get<std::string>()));
    } catch (const std::exception&) {
    }
  }
  if (static_cast<int64_t>(log.size()) > keep) log.erase(log.begin(), log.end() - keep);
}

}  // namespace

Result<json> ApplyTableCommit(const TableCommit& in) {
  if (!in.requirements.is_array()) return InvalidArgument("\"requirements\" must be an array");
  if (!in.updates.is_array()) return InvalidArgument("\"updates\" must be an array");
  for (size_t i = 0; i < in.requirements.size(); ++i) {
    ARROW_RETURN_NOT_OK(CheckRequirement(in.current, in.requirements[i], i));
  }
  bool create = !in.current;
  if (create && std::none_of(in.requirements.begin(), in.requirements.end(),
                             [](const json& r) { return r.value("type", "") == "assert-create"; })) {
    return InvalidArgument("creating a table needs the requirement assert-create");
  }
  if (!create && in.updates.empty()) return *in.current;
  UpdateState state{create ? EmptyMetadata(in.now_ms) : *in.current, in.now_ms};
  for (size_t i = 0; i < in.updates.size(); ++i) ARROW_RETURN_NOT_OK(ApplyUpdate(&state, in.updates[i], i));
  json& m = state.metadata;
  if (create) ARROW_RETURN_NOT_OK(CompleteCreate(&m));
  if (!create && m == *in.current) return m;
  m["last-updated-ms"] = std::max({IntOr(m, "last-updated-ms", 0), in.now_ms, state.newest_snapshot_ms});
  LogPreviousMetadata(in, &m);
  return m;
}

}  // namespace sediment::iceberg
