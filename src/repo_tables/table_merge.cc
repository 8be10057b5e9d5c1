// RepoTables as the catalog's merge resolver: a table both sides of a lakeFS
// merge changed. The rule (docs/iceberg-repositories.md, "Merge"):
//   - both sides hold the same table (uuid), format version 2;
//   - schemas, partition specs, sort orders, properties and every other field
//     but the history are as at the merge base on both sides, or changed the
//     same way on both; Iceberg refs other than main are untouched;
//   - every snapshot either side added since the base's is an append or a
//     replace, neither side holds delete files, and both still hold every data
//     file of the base.
// Then the merged table is the destination's plus one append snapshot that
// adds the source's new data files (copied into new manifests as ADDED by it,
// docs/research/iceberg-rest-writes.md §7). Anything else is a Conflict
// naming why. The new files are written before the merge commit that names
// them; if the commit fails they are garbage for catalog GC.
#include <arrow/buffer.h>
#include <fmt/format.h>

#include <map>
#include <set>

#include "base/crypto.h"
#include "blob/blob.h"
#include "catalog/catalog.h"
#include "iceberg/avro_file.h"
#include "iceberg/manifest_edit.h"
#include "iceberg/table_commit.h"
#include "repo_tables/repo_tables.h"
#include "repo_tables/repo_tables_internal.h"

namespace sediment::repo_tables {

using nlohmann::json;

// The live data files of one side's current snapshot: path -> the manifest
// (relative to the namespace) that lists it.
struct RepoTables::SideFiles {
  std::map<std::string, std::string> manifest_of;
  std::string list;  // the manifest list (relative), "" without a snapshot
};

namespace {

const std::set<std::string> kHistory = {"snapshots",           "snapshot-log", "metadata-log",
                                        "current-snapshot-id", "refs",         "last-sequence-number",
                                        "last-updated-ms",     "statistics",   "partition-statistics"};

std::optional<int64_t> MainSnapshot(const json& m) {
  if (auto refs = m.find("refs"); refs != m.end() && refs->contains("main")) {
    return (*refs)["main"].value("snapshot-id", int64_t{-1});
  }
  int64_t current = m.value("current-snapshot-id", int64_t{-1});
  return current >= 0 ? std::optional<int64_t>(current) : std::nullopt;
}

json RefsBesidesMain(const json& m) {
  json refs = m.value("refs", json::object());
  if (refs.is_object()) refs.erase("main");
  return refs;
}

// Every field but the history is as at the base, or changed alike on both sides.
Status SameShape(const json& base, const json& source, const json& dest) {
  std::set<std::string> keys;
  for (const json* m : {&base, &source, &dest}) {
    for (const auto& [k, v] : m->items()) keys.insert(k);
  }
  for (const auto& key : keys) {
    if (kHistory.count(key)) continue;
    json b = base.value(key, json()), s = source.value(key, json()), d = dest.value(key, json());
    if (s == d) continue;
    return Conflict(fmt::format("the {} changed the table's {}", s != b ? "source" : "destination", key));
  }
  if (RefsBesidesMain(source) != RefsBesidesMain(base) || RefsBesidesMain(dest) != RefsBesidesMain(base)) {
    return Conflict("an Iceberg branch or tag other than main changed");
  }
  return Status::OK();
}

std::set<int64_t> SnapshotIds(const json& m) {
  std::set<int64_t> ids;
  for (const auto& s : m.value("snapshots", json::array())) ids.insert(s.value("snapshot-id", int64_t{-1}));
  return ids;
}

// The snapshots `side` added on main since it last held one of the base's
// (after an earlier merge, the base is the other side's head, whose own
// snapshots this side never held): appends and replaces only.
Status OnlyAppends(const json& m, const std::set<int64_t>& base_ids, bool base_empty, const char* side) {
  const json snapshots = m.value("snapshots", json::array());  // by_id points into it
  std::map<int64_t, const json*> by_id;
  for (const auto& s : snapshots) by_id[s.value("snapshot-id", int64_t{-1})] = &s;
  std::set<int64_t> seen;
  for (std::optional<int64_t> at = MainSnapshot(m); !(at && base_ids.count(*at));) {
    if (!at) {
      if (base_empty) return Status::OK();  // back to the table's start, which the base had not passed
      return Conflict(fmt::format("the {}'s history holds none of the merge base's snapshots", side));
    }
    if (!seen.insert(*at).second) return Conflict(fmt::format("the {}'s snapshots form a cycle", side));
    auto s = by_id.find(*at);
    if (s == by_id.end()) return Conflict(fmt::format("the {}'s snapshot {} is missing", side, *at));
    std::string op = s->second->value("summary", json::object()).value("operation", "");
    if (op != "append" && op != "replace") {
      return Conflict(fmt::format("the {} made a \"{}\" snapshot ({}); only appends merge", side, op, *at));
    }
    const json& parent = s->second->value("parent-snapshot-id", json());
    at = parent.is_number_integer() ? std::optional<int64_t>(parent.get<int64_t>()) : std::nullopt;
  }
  return Status::OK();
}

int64_t SummaryNumber(const json& summary, const char* key) {
  const json& v = summary.value(key, json());
  if (!v.is_string()) return -1;
  try {
    return std::stoll(v.get<std::string>());
  } catch (...) {
    return -1;
  }
}

}  // namespace

bool RepoTables::Handles(const std::string& path) const {
  if (!path.starts_with(kTablesRoot)) return false;
  size_t tables = path.find("/tables/", std::string(kTablesRoot).size());
  return tables != std::string::npos && path.find('/', tables + 8) == std::string::npos;
}

Result<json> RepoTables::ReadMetadata(const catalog::Repository& repo, const std::string& address) {
  if (address.find("://") != std::string::npos || !blob::ValidateObjectPath(address).ok()) {
    return Conflict("a side's pointer names data outside the repository's storage namespace");
  }
  auto file = MetadataAt(repo, address);
  if (IsInvalidArgument(file.status())) return Conflict("a side's pointer " + file.status().message());
  ARROW_RETURN_NOT_OK(file.status());
  return (*file)->json;
}

Result<RepoTables::SideFiles> RepoTables::LiveFilesOf(const catalog::Repository& repo, const json& m,
                                                      const char* side) {
  SideFiles out;
  auto main = MainSnapshot(m);
  if (!main) return out;
  std::string list_uri;
  for (const auto& s : m.value("snapshots", json::array())) {
    if (s.value("snapshot-id", int64_t{-1}) == *main) list_uri = s.value("manifest-list", "");
  }
  auto list = RelativeInNamespace(repo.id, list_uri, "a manifest list");
  if (!list.ok()) return Conflict(fmt::format("the {}'s manifest list: {}", side, list.status().message()));
  out.list = *list;
  ARROW_ASSIGN_OR_RAISE(auto store, catalog_->RepositoryNamespace(repo));
  ARROW_ASSIGN_OR_RAISE(auto list_bytes, store->Get(out.list));
  ARROW_ASSIGN_OR_RAISE(auto manifests, iceberg::ReadManifestList(list_bytes->ToString()));
  for (const auto& listed : manifests) {
    if (listed.content != 0) return Conflict(fmt::format("the {} holds delete files", side));
    auto manifest = RelativeInNamespace(repo.id, listed.path, "a manifest");
    if (!manifest.ok()) return Conflict(fmt::format("the {}'s manifest: {}", side, manifest.status().message()));
    ARROW_ASSIGN_OR_RAISE(auto bytes, store->Get(*manifest));
    ARROW_ASSIGN_OR_RAISE(auto files, iceberg::ReadLiveFiles(bytes->ToString()));
    for (const auto& f : files) out.manifest_of[f.path] = *manifest;
  }
  return out;
}

Result<catalog::Entry> RepoTables::Resolve(const catalog::Repository& repo, const std::string& /*path*/,
                                           const std::optional<catalog::Entry>& base,
                                           const std::optional<catalog::Entry>& source,
                                           const std::optional<catalog::Entry>& dest) {
  try {
    return MergeTable(repo, base, source, dest);
  } catch (const nlohmann::json::exception& e) {  // a field of an unexpected type in a side's metadata
    return Conflict(std::string("a side's metadata is malformed: ") + e.what());
  }
}

Result<catalog::Entry> RepoTables::MergeTable(const catalog::Repository& repo,
                                              const std::optional<catalog::Entry>& base,
                                              const std::optional<catalog::Entry>& source,
                                              const std::optional<catalog::Entry>& dest) {
  if (!base || !source || !dest) return Conflict("the table was created or dropped on one side");
  ARROW_ASSIGN_OR_RAISE(json b, ReadMetadata(repo, base->address));
  ARROW_ASSIGN_OR_RAISE(json s, ReadMetadata(repo, source->address));
  ARROW_ASSIGN_OR_RAISE(json d, ReadMetadata(repo, dest->address));
  for (const json* m : {&b, &s, &d}) {
    if (m->value("format-version", 0) != 2) return Conflict("only format version 2 tables merge appends");
  }
  if (s.value("table-uuid", "") != d.value("table-uuid", "") ||
      b.value("table-uuid", "") != d.value("table-uuid", "")) {
    return Conflict("the two sides hold different tables (their uuids differ)");
  }
  ARROW_RETURN_NOT_OK(SameShape(b, s, d));
  const std::set<int64_t> base_ids = SnapshotIds(b);
  const bool base_empty = !MainSnapshot(b).has_value();
  ARROW_RETURN_NOT_OK(OnlyAppends(s, base_ids, base_empty, "source"));
  ARROW_RETURN_NOT_OK(OnlyAppends(d, base_ids, base_empty, "destination"));
  ARROW_ASSIGN_OR_RAISE(auto bf, LiveFilesOf(repo, b, "merge base"));
  ARROW_ASSIGN_OR_RAISE(auto sf, LiveFilesOf(repo, s, "source"));
  ARROW_ASSIGN_OR_RAISE(auto df, LiveFilesOf(repo, d, "destination"));
  for (const auto& [file, _] : bf.manifest_of) {
    if (!sf.manifest_of.count(file) || !df.manifest_of.count(file)) {
      return Conflict(fmt::format("the {} removed data file {} of the merge base",
                                  sf.manifest_of.count(file) ? "destination" : "source", file));
    }
  }
  std::map<std::string, std::set<std::string>> added;  // manifest -> the source's new files it lists
  for (const auto& [file, manifest] : sf.manifest_of) {
    if (!bf.manifest_of.count(file) && !df.manifest_of.count(file)) added[manifest].insert(file);
  }
  if (added.empty()) return *dest;  // the source's snapshots added nothing that is still there
  if (df.list.empty()) return Conflict("the destination has no snapshot to add the source's files to");
  return WriteMerged(repo, *dest, d, df.list, added);
}

Result<catalog::Entry> RepoTables::WriteMerged(const catalog::Repository& repo, const catalog::Entry& dest,
                                               const json& d, const std::string& dest_list,
                                               const std::map<std::string, std::set<std::string>>& added) {
  ARROW_ASSIGN_OR_RAISE(auto store, catalog_->RepositoryNamespace(repo));
  ARROW_ASSIGN_OR_RAISE(auto dir, RelativeInNamespace(repo.id, d.value("location", ""), "the table's location"));
  std::set<int64_t> taken;
  for (const auto& snap : d.value("snapshots", json::array())) taken.insert(snap.value("snapshot-id", int64_t{-1}));
  int64_t id = 0;
  while (id == 0 || taken.count(id)) id = static_cast<int64_t>(RandomUint64() >> 1);
  const int64_t seq = d.value("last-sequence-number", int64_t{0}) + 1;
  const int64_t parent = *MainSnapshot(d);
  std::vector<iceberg::NewManifest> manifests;
  for (const auto& [manifest, files] : added) {
    ARROW_ASSIGN_OR_RAISE(auto bytes, store->Get(manifest));
    ARROW_ASSIGN_OR_RAISE(auto copied, iceberg::CopyAsAdded(bytes->ToString(), files, id));
    ARROW_ASSIGN_OR_RAISE(auto reader, iceberg::AvroFileReader::Open(bytes->ToString()));
    std::string address = fmt::format("{}/metadata/{}-m{}.avro", dir, internal::NewUuid(), manifests.size());
    ARROW_RETURN_NOT_OK(store->Put(address, copied.avro));
    iceberg::NewManifest m;
    ARROW_ASSIGN_OR_RAISE(m.path, EngineUri(repo.id, address));
    m.length = static_cast<int64_t>(copied.avro.size());
    auto spec = reader->metadata().find("partition-spec-id");
    m.spec_id = spec == reader->metadata().end() ? 0 : std::atoi(spec->second.c_str());
    m.counts = std::move(copied);
    manifests.push_back(std::move(m));
  }
  ARROW_ASSIGN_OR_RAISE(auto list_bytes, store->Get(dest_list));
  ARROW_ASSIGN_OR_RAISE(auto list, iceberg::ExtendManifestList(list_bytes->ToString(), manifests, id, parent, seq));
  std::string list_address = fmt::format("{}/metadata/snap-{}-{}.avro", dir, id, internal::NewUuid());
  ARROW_RETURN_NOT_OK(store->Put(list_address, list));
  int64_t files = 0, records = 0, size = 0;
  for (const auto& m : manifests) {
    files += m.counts.files;
    records += m.counts.records;
    size += m.counts.size;
  }
  json parent_summary = json::object();
  for (const auto& snap : d.value("snapshots", json::array())) {
    if (snap.value("snapshot-id", int64_t{-1}) == parent) parent_summary = snap.value("summary", json::object());
  }
  json summary = {{"operation", "append"},
                  {"added-data-files", std::to_string(files)},
                  {"added-records", std::to_string(records)},
                  {"added-files-size", std::to_string(size)},
                  {"lakefs-merge", "the source branch's appends"}};
  for (auto [key, add] :
       {std::pair{"total-data-files", files}, {"total-records", records}, {"total-files-size", size}}) {
    int64_t before = SummaryNumber(parent_summary, key);
    if (before >= 0) summary[key] = std::to_string(before + add);
  }
  const int64_t now = std::max(ToUnixMicros(clock_->Now()) / 1000, d.value("last-updated-ms", int64_t{0}));
  ARROW_ASSIGN_OR_RAISE(auto list_uri, EngineUri(repo.id, list_address));
  json snapshot = {{"snapshot-id", id},
                   {"parent-snapshot-id", parent},
                   {"sequence-number", seq},
                   {"timestamp-ms", now},
                   {"manifest-list", list_uri},
                   {"summary", summary},
                   {"schema-id", d.value("current-schema-id", 0)}};
  iceberg::TableCommit commit;
  commit.current = d;
  ARROW_ASSIGN_OR_RAISE(commit.current_location, EngineUri(repo.id, dest.address));
  commit.updates =
      json::array({{{"action", "add-snapshot"}, {"snapshot", snapshot}},
                   {{"action", "set-snapshot-ref"}, {"ref-name", "main"}, {"type", "branch"}, {"snapshot-id", id}}});
  commit.now_ms = now;
  ARROW_ASSIGN_OR_RAISE(json merged, iceberg::ApplyTableCommit(commit));
  std::string data = merged.dump();
  ARROW_ASSIGN_OR_RAISE(auto address, WriteMetadata(repo.id, dir, internal::MetadataVersion(dest.address) + 1, data));
  return internal::FileEntry(address, data, ToUnixMicros(clock_->Now()) / 1000000);
}

}  // namespace sediment::repo_tables
