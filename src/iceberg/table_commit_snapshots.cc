// The update actions of an Iceberg commit that touch snapshots, refs,
// statistics and the removal of schemas and specs (table_commit.h).
#include <algorithm>
#include <set>

#include "iceberg/table_commit_internal.h"

namespace sediment::iceberg::commit_internal {
namespace {

bool SnapshotExists(const json& m, int64_t id) {
  const json& snaps = m["snapshots"];
  return std::any_of(snaps.begin(), snaps.end(), [&](const json& s) { return IntOr(s, "snapshot-id", -1) == id; });
}

// A local URI in one form: Hadoop writes file:///a as file:/a.
std::string SameForm(const std::string& uri) {
  return uri.starts_with("file:/") && !uri.starts_with("file://") ? "file://" + uri.substr(5) : uri;
}

// Whether `path` lies inside `location` (a table's files stay in its location).
bool Inside(const std::string& path_uri, const std::string& location_uri) {
  const std::string path = SameForm(path_uri), location = SameForm(location_uri);
  return !location.empty() && path.size() > location.size() + 1 && path.compare(0, location.size(), location) == 0 &&
         path[location.size()] == '/' && path.find("/../") == std::string::npos;
}

Status CheckSnapshotFields(const json& m, const json& snap, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(int64_t id, FieldOf<int64_t>(snap, "snapshot-id", where + " snapshot"));
  ARROW_RETURN_NOT_OK(FieldOf<int64_t>(snap, "timestamp-ms", where + " snapshot").status());
  ARROW_ASSIGN_OR_RAISE(auto list, FieldOf<std::string>(snap, "manifest-list", where + " snapshot"));
  ARROW_ASSIGN_OR_RAISE(auto summary, FieldOf<json>(snap, "summary", where + " snapshot"));
  if (!summary.is_object() || !summary.contains("operation")) {
    return InvalidArgument(where + ": the snapshot's summary must name its \"operation\"");
  }
  if (SnapshotExists(m, id)) return InvalidArgument(fmt::format("{}: snapshot {} already exists", where, id));
  std::string location = m.value("location", "");
  if (!Inside(list, location)) {
    return InvalidArgument(fmt::format("{}: the manifest list {} is not inside the table's location {}", where, list,
                                       location.empty() ? "(none set)" : location));
  }
  return Status::OK();
}

}  // namespace

Status AddSnapshot(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(auto snap, FieldOf<json>(u, "snapshot", where));
  if (!snap.is_object()) return InvalidArgument(where + ": \"snapshot\" must be an object");
  json& m = s.metadata;
  ARROW_RETURN_NOT_OK(CheckSnapshotFields(m, snap, where));
  int64_t last_seq = IntOr(m, "last-sequence-number", 0);
  if (IntOr(m, "format-version", 1) >= 2) {
    ARROW_ASSIGN_OR_RAISE(int64_t seq, FieldOf<int64_t>(snap, "sequence-number", where + " snapshot"));
    bool has_parent = snap.contains("parent-snapshot-id") && !snap["parent-snapshot-id"].is_null();
    if (seq <= last_seq && has_parent) {
      return InvalidArgument(
          fmt::format("{}: sequence number {} is not above the table's last, {}", where, seq, last_seq));
    }
    m["last-sequence-number"] = std::max(seq, last_seq);
  }
  int64_t id = snap["snapshot-id"].get<int64_t>(), ts = snap["timestamp-ms"].get<int64_t>();
  m["snapshots"].push_back(snap);
  s.added_snapshots[id] = ts;
  s.newest_snapshot_ms = std::max(s.newest_snapshot_ms, ts);
  return Status::OK();
}

Status SetSnapshotRef(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(auto name, FieldOf<std::string>(u, "ref-name", where));
  ARROW_ASSIGN_OR_RAISE(auto type, FieldOf<std::string>(u, "type", where));
  ARROW_ASSIGN_OR_RAISE(int64_t id, FieldOf<int64_t>(u, "snapshot-id", where));
  json& m = s.metadata;
  if (type != "branch" && type != "tag") return InvalidArgument(where + ": \"type\" must be branch or tag");
  if (name == "main" && type != "branch") return InvalidArgument(where + ": main is a branch");
  if (!SnapshotExists(m, id)) return InvalidArgument(fmt::format("{}: there is no snapshot {}", where, id));
  json ref = {{"snapshot-id", id}, {"type", type}};
  for (const char* keep : {"max-ref-age-ms", "max-snapshot-age-ms", "min-snapshots-to-keep"}) {
    if (u.contains(keep) && !u[keep].is_null()) ref[keep] = u[keep];
  }
  bool moved = !m["refs"].contains(name) || IntOr(m["refs"][name], "snapshot-id", -1) != id;
  m["refs"][name] = ref;
  if (name != "main" || !moved) return Status::OK();
  m["current-snapshot-id"] = id;
  // The log stays in timestamp order (engines refuse it otherwise).
  auto added = s.added_snapshots.find(id);
  int64_t ts = added != s.added_snapshots.end() ? added->second : s.now_ms;
  json& log = m["snapshot-log"];
  if (!log.empty()) ts = std::max(ts, IntOr(log.back(), "timestamp-ms", 0));
  log.push_back({{"timestamp-ms", ts}, {"snapshot-id", id}});
  s.newest_snapshot_ms = std::max(s.newest_snapshot_ms, ts);
  return Status::OK();
}

Status RemoveSnapshots(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(auto ids, FieldOf<std::vector<int64_t>>(u, "snapshot-ids", where));
  std::set<int64_t> gone(ids.begin(), ids.end());
  json& m = s.metadata;
  auto named = [&](const json& e) { return gone.count(IntOr(e, "snapshot-id", -1)) > 0; };
  json& snaps = m["snapshots"];
  snaps.erase(std::remove_if(snaps.begin(), snaps.end(), named), snaps.end());
  json& log = m["snapshot-log"];
  log.erase(std::remove_if(log.begin(), log.end(), named), log.end());
  if (m.contains("statistics")) {
    json& stats = m["statistics"];
    stats.erase(std::remove_if(stats.begin(), stats.end(), named), stats.end());
  }
  for (auto it = m["refs"].begin(); it != m["refs"].end();) {
    it = named(it.value()) ? m["refs"].erase(it) : std::next(it);
  }
  if (gone.count(IntOr(m, "current-snapshot-id", -1))) m["current-snapshot-id"] = -1;
  return Status::OK();
}

Status RemoveSnapshotRef(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(auto name, FieldOf<std::string>(u, "ref-name", where));
  s.metadata["refs"].erase(name);
  if (name == "main") s.metadata["current-snapshot-id"] = -1;
  return Status::OK();
}

Status SetStatistics(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(auto stats, FieldOf<json>(u, "statistics", where));
  ARROW_ASSIGN_OR_RAISE(int64_t id, FieldOf<int64_t>(stats, "snapshot-id", where + " statistics"));
  ARROW_RETURN_NOT_OK(FieldOf<std::string>(stats, "statistics-path", where + " statistics").status());
  json& all = s.metadata["statistics"];
  if (!all.is_array()) all = json::array();
  all.erase(std::remove_if(all.begin(), all.end(), [&](const json& e) { return IntOr(e, "snapshot-id", -1) == id; }),
            all.end());
  all.push_back(stats);
  return Status::OK();
}

Status RemoveStatistics(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(int64_t id, FieldOf<int64_t>(u, "snapshot-id", where));
  if (!s.metadata.contains("statistics")) return Status::OK();
  json& all = s.metadata["statistics"];
  all.erase(std::remove_if(all.begin(), all.end(), [&](const json& e) { return IntOr(e, "snapshot-id", -1) == id; }),
            all.end());
  return Status::OK();
}

// Removes the entries of `list` whose `id_field` is in `ids`, never `keep`.
Status RemoveIds(json& list, const char* id_field, const std::vector<int64_t>& ids, int64_t keep, const char* what,
                 const std::string& where) {
  std::set<int64_t> gone(ids.begin(), ids.end());
  if (gone.count(keep))
    return InvalidArgument(fmt::format("{}: the {} in use ({}) cannot be removed", where, what, keep));
  list.erase(
      std::remove_if(list.begin(), list.end(), [&](const json& e) { return gone.count(IntOr(e, id_field, -1)); }),
      list.end());
  return Status::OK();
}

Status RemoveSchemas(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(auto ids, FieldOf<std::vector<int64_t>>(u, "schema-ids", where));
  return RemoveIds(s.metadata["schemas"], "schema-id", ids, IntOr(s.metadata, "current-schema-id", -1), "schema",
                   where);
}

Status RemovePartitionSpecs(UpdateState& s, const json& u, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(auto ids, FieldOf<std::vector<int64_t>>(u, "spec-ids", where));
  return RemoveIds(s.metadata["partition-specs"], "spec-id", ids, IntOr(s.metadata, "default-spec-id", -1), "spec",
                   where);
}

}  // namespace sediment::iceberg::commit_internal
