// The update actions of an Iceberg commit (table_commit.h), one function
// each, as the REST spec's `TableUpdate` names them.
#include <algorithm>
#include <map>
#include <set>

#include "iceberg/table_commit_internal.h"

namespace sediment::iceberg::commit_internal {
namespace {

using Action = Status (*)(UpdateState& s, const json& u, const std::string& where);

// The highest field id in an Iceberg type (nested structs, lists and maps).
int64_t HighestFieldId(const json& type) {
  if (!type.is_object()) return 0;
  int64_t top = 0;
  std::string kind = type.value("type", "");
  if (kind == "struct" && type.contains("fields") && type["fields"].is_array()) {
    for (const auto& f : type["fields"]) {
      top = std::max({top, IntOr(f, "id", 0), HighestFieldId(f.value("type", json()))});
    }
  } else if (kind == "list") {
    top = std::max(IntOr(type, "element-id", 0), HighestFieldId(type.value("element", json())));
  } else if (kind == "map") {
    top = std::max({IntOr(type, "key-id", 0), IntOr(type, "value-id", 0), HighestFieldId(type.value("key", json())),
                    HighestFieldId(type.value("value", json()))});
  }
  return top;
}

// An id for `item` in `list` (by `id_field`): an equal one's (ignoring ids),
// else one past the highest (or `first`). *added: whether it is new.
int64_t IdFor(const json& list, json item, const char* id_field, int64_t first, bool* added) {
  item.erase(id_field);
  int64_t next = first;
  for (const auto& existing : list) {
    json without = existing;
    without.erase(id_field);
    if (without == item) {
      *added = false;
      return IntOr(existing, id_field, first);
    }
    next = std::max(next, IntOr(existing, id_field, first - 1) + 1);
  }
  *added = true;
  return next;
}

bool HasId(const json& list, const char* id_field, int64_t id) {
  return std::any_of(list.begin(), list.end(), [&](const json& e) { return IntOr(e, id_field, -2) == id; });
}

// "-1" is the one this request added last.
Result<int64_t> Resolve(int64_t id, int64_t last_added, const json& list, const char* id_field, const char* what,
                        const std::string& where) {
  if (id == -1) {
    if (last_added < 0) return InvalidArgument(fmt::format("{}: -1 names no {} added by this request", where, what));
    id = last_added;
  }
  if (!HasId(list, id_field, id)) return InvalidArgument(fmt::format("{}: there is no {} {}", where, what, id));
  return id;
}

Status AssignUuid(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(auto uuid, FieldOf<std::string>(u, "uuid", where));
  std::string have = s.metadata.value("table-uuid", "");
  if (!have.empty() && have != uuid) return InvalidArgument(where + ": a table's uuid cannot be reassigned");
  s.metadata["table-uuid"] = uuid;
  return Status::OK();
}

Status UpgradeFormatVersion(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(int64_t v, FieldOf<int64_t>(u, "format-version", where));
  if (v > 2) return InvalidArgument(fmt::format("{}: format version {} is not supported (at most 2)", where, v));
  if (v < IntOr(s.metadata, "format-version", 1)) {
    return InvalidArgument(fmt::format("{}: a table's format version cannot go down to {}", where, v));
  }
  s.metadata["format-version"] = v;
  return Status::OK();
}

Status AddSchema(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(auto schema, FieldOf<json>(u, "schema", where));
  if (!schema.is_object() || schema.value("type", "") != "struct") {
    return InvalidArgument(where + ": \"schema\" must be a struct type");
  }
  bool added = false;
  int64_t id = IdFor(s.metadata["schemas"], schema, "schema-id", 0, &added);
  schema["schema-id"] = id;
  if (added) s.metadata["schemas"].push_back(schema);
  int64_t last =
      std::max({IntOr(s.metadata, "last-column-id", 0), HighestFieldId(schema), IntOr(u, "last-column-id", 0)});
  s.metadata["last-column-id"] = last;
  s.last_schema = id;
  return Status::OK();
}

Status SetCurrentSchema(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(int64_t id, FieldOf<int64_t>(u, "schema-id", where));
  ARROW_ASSIGN_OR_RAISE(id, Resolve(id, s.last_schema, s.metadata["schemas"], "schema-id", "schema", where));
  s.metadata["current-schema-id"] = id;
  return Status::OK();
}

// A spec or sort order: an object with an array of "fields".
Result<json> WithFields(const json& u, const char* name, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(auto object, FieldOf<json>(u, name, where));
  if (!object.is_object() || !object.contains("fields") || !object["fields"].is_array()) {
    return InvalidArgument(fmt::format("{}: \"{}\" must have \"fields\"", where, name));
  }
  return object;
}

Status AddSpec(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(auto spec, WithFields(u, "spec", where));
  int64_t last = IntOr(s.metadata, "last-partition-id", 999);
  for (auto& f : spec["fields"]) {  // fields without an id get fresh ones
    if (!f.contains("field-id")) f["field-id"] = ++last;
    last = std::max(last, IntOr(f, "field-id", 0));
  }
  bool added = false;
  int64_t id = IdFor(s.metadata["partition-specs"], spec, "spec-id", 0, &added);
  spec["spec-id"] = id;
  if (added) s.metadata["partition-specs"].push_back(spec);
  s.metadata["last-partition-id"] = last;
  s.last_spec = id;
  return Status::OK();
}

Status SetDefaultSpec(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(int64_t id, FieldOf<int64_t>(u, "spec-id", where));
  ARROW_ASSIGN_OR_RAISE(id, Resolve(id, s.last_spec, s.metadata["partition-specs"], "spec-id", "spec", where));
  s.metadata["default-spec-id"] = id;
  return Status::OK();
}

Status AddSortOrder(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(auto order, WithFields(u, "sort-order", where));
  bool added = false;
  // Order 0 is the unsorted order; a sorted one never takes it.
  int64_t id = order["fields"].empty() ? 0 : IdFor(s.metadata["sort-orders"], order, "order-id", 1, &added);
  if (order["fields"].empty()) added = !HasId(s.metadata["sort-orders"], "order-id", 0);
  order["order-id"] = id;
  if (added) s.metadata["sort-orders"].push_back(order);
  s.last_order = id;
  return Status::OK();
}

Status SetDefaultSortOrder(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(int64_t id, FieldOf<int64_t>(u, "sort-order-id", where));
  ARROW_ASSIGN_OR_RAISE(id, Resolve(id, s.last_order, s.metadata["sort-orders"], "order-id", "sort order", where));
  s.metadata["default-sort-order-id"] = id;
  return Status::OK();
}

Status SetLocation(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(auto location, FieldOf<std::string>(u, "location", where));
  while (location.size() > 1 && location.back() == '/') location.pop_back();
  if (location.empty()) return InvalidArgument(where + ": \"location\" is empty");
  s.metadata["location"] = location;
  return Status::OK();
}

Status SetProperties(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(auto updates, (FieldOf<std::map<std::string, std::string>>(u, "updates", where)));
  for (const auto& [k, v] : updates) s.metadata["properties"][k] = v;
  return Status::OK();
}

Status RemoveProperties(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(auto removals, FieldOf<std::vector<std::string>>(u, "removals", where));
  for (const auto& k : removals) s.metadata["properties"].erase(k);
  return Status::OK();
}

}  // namespace

// Snapshots and refs (table_commit_snapshots.cc).
Status AddSnapshot(UpdateState& s, const json& u, const std::string& where);
Status SetSnapshotRef(UpdateState& s, const json& u, const std::string& where);
Status RemoveSnapshots(UpdateState& s, const json& u, const std::string& where);
Status RemoveSnapshotRef(UpdateState& s, const json& u, const std::string& where);
Status SetStatistics(UpdateState& s, const json& u, const std::string& where);
Status RemoveStatistics(UpdateState& s, const json& u, const std::string& where);
Status RemoveSchemas(UpdateState& s, const json& u, const std::string& where);
Status RemovePartitionSpecs(UpdateState& s, const json& u, const std::string& where);

Status ApplyUpdate(UpdateState* state, const json& update, size_t i) {
  static const std::map<std::string, Action> kActions = {
      {"assign-uuid", AssignUuid},
      {"upgrade-format-version", UpgradeFormatVersion},
      {"add-schema", AddSchema},
      {"set-current-schema", SetCurrentSchema},
      {"add-spec", AddSpec},
      {"set-default-spec", SetDefaultSpec},
      {"add-sort-order", AddSortOrder},
      {"set-default-sort-order", SetDefaultSortOrder},
      {"add-snapshot", AddSnapshot},
      {"set-snapshot-ref", SetSnapshotRef},
      {"remove-snapshots", RemoveSnapshots},
      {"remove-snapshot-ref", RemoveSnapshotRef},
      {"set-location", SetLocation},
      {"set-properties", SetProperties},
      {"remove-properties", RemoveProperties},
      {"set-statistics", SetStatistics},
      {"remove-statistics", RemoveStatistics},
      {"remove-schemas", RemoveSchemas},
      {"remove-partition-specs", RemovePartitionSpecs},
  };
  // Known to the spec, refused here: format version 3 and encryption.
  static const std::set<std::string> kRefused = {"add-encryption-key",       "remove-encryption-key",
                                                 "set-partition-statistics", "remove-partition-statistics",
                                                 "add-view-version",         "set-current-view-version"};
  std::string where = fmt::format("updates[{}]", i);
  if (!update.is_object()) return InvalidArgument(where + ": not an object");
  ARROW_ASSIGN_OR_RAISE(auto action, FieldOf<std::string>(update, "action", where));
  where += " (" + action + ")";
  if (kRefused.count(action)) return InvalidArgument(where + ": not supported by this catalog");
  auto it = kActions.find(action);
  if (it == kActions.end()) return InvalidArgument(where + ": unknown update action");
  return it->second(*state, update, where);
}

}  // namespace sediment::iceberg::commit_internal
