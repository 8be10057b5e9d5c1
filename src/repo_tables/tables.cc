// RepoTables: tables. Each write reads the pointer, checks and applies the
// commit (iceberg::ApplyTableCommit), writes a new metadata file, and swaps
// the pointer only if it still names the file read (docs/iceberg-repositories.md,
// "Data flow of an Iceberg commit").
#include <arrow/buffer.h>
#include <fmt/format.h>

#include <set>

#include "base/failpoint.h"
#include "blob/blob.h"
#include "catalog/catalog.h"
#include "iceberg/table_commit.h"
#include "repo_tables/repo_tables.h"
#include "repo_tables/repo_tables_internal.h"

namespace sediment::repo_tables {

using nlohmann::json;

namespace {

std::string Name(const TablePath& t) { return t.where.Dotted() + "." + t.name; }

Status LostRace(const TablePath& t) {
  return Conflict(fmt::format("table \"{}\" changed concurrently; reload it and retry the commit", Name(t)));
}

}  // namespace

bool HasAssertCreate(const json& requirements) {
  if (!requirements.is_array()) return false;
  for (const auto& r : requirements) {
    if (r.is_object() && r.contains("type") && r["type"] == "assert-create") return true;
  }
  return false;
}

namespace {

// The updates that make a table of a CreateTableRequest (the order Java's
// client sends for a staged create).
Result<json> CreateUpdates(const json& request, const std::string& uuid, const std::string& location) {
  if (!request.contains("schema") || !request["schema"].is_object()) {
    return InvalidArgument("CreateTableRequest: \"schema\" (an object) is required");
  }
  json properties = request.value("properties", json::object());
  if (!properties.is_object()) return InvalidArgument("CreateTableRequest: \"properties\" must be an object");
  int64_t format_version = 2;
  if (properties.contains("format-version")) {
    const json& v = properties["format-version"];
    std::string s = v.is_string() ? v.get<std::string>() : v.dump();
    if (s != "1" && s != "2") return InvalidArgument(fmt::format("format-version {} is not supported (1 or 2)", s));
    format_version = s == "1" ? 1 : 2;
    properties.erase("format-version");  // reserved: it lives in the metadata, not its properties
  }
  json spec = request.value("partition-spec", json{{"spec-id", 0}, {"fields", json::array()}});
  json order = request.value("write-order", json{{"order-id", 0}, {"fields", json::array()}});
  if (spec.is_null()) spec = json{{"spec-id", 0}, {"fields", json::array()}};
  if (order.is_null()) order = json{{"order-id", 0}, {"fields", json::array()}};
  return json::array({
      {{"action", "assign-uuid"}, {"uuid", uuid}},
      {{"action", "upgrade-format-version"}, {"format-version", format_version}},
      {{"action", "add-schema"}, {"schema", request["schema"]}},
      {{"action", "set-current-schema"}, {"schema-id", -1}},
      {{"action", "add-spec"}, {"spec", spec}},
      {{"action", "set-default-spec"}, {"spec-id", -1}},
      {{"action", "add-sort-order"}, {"sort-order", order}},
      {{"action", "set-default-sort-order"}, {"sort-order-id", -1}},
      {{"action", "set-location"}, {"location", location}},
      {{"action", "set-properties"}, {"updates", properties}},
  });
}

}  // namespace

Result<LoadedTable> RepoTables::Loaded(const std::string& repo, const std::string& address, json metadata,
                                       bool writable, std::shared_ptr<const MetadataFile> file) {
  LoadedTable out;
  if (!address.empty()) {
    ARROW_ASSIGN_OR_RAISE(out.metadata_location, EngineUri(repo, address));
  }
  const json& m = file ? file->json : metadata;
  out.location = m.value("location", "");
  if (!file) out.metadata = std::move(metadata);
  out.file = std::move(file);
  out.writable = writable;
  return out;
}

static std::string MetadataKey(const catalog::Repository& repo, const std::string& address) {
  return (repo.location.empty() ? repo.storage_namespace : repo.location) + "\n" + address;
}

Result<std::shared_ptr<const MetadataFile>> RepoTables::MetadataAt(const catalog::Repository& repo,
                                                                   const std::string& address) {
  const std::string key = MetadataKey(repo, address);
  if (auto hit = cache_->Get(key)) return hit;
  ARROW_ASSIGN_OR_RAISE(auto store, catalog_->RepositoryNamespace(repo));
  ARROW_ASSIGN_OR_RAISE(auto data, store->Get(address));
  auto file = std::make_shared<MetadataFile>();
  file->text = data->ToString();
  file->json = json::parse(file->text, nullptr, /*allow_exceptions=*/false);
  const json& m = file->json;
  if (!m.is_object() || !m.contains("format-version") || !m.value("location", json()).is_string() ||
      !m.value("table-uuid", json()).is_string()) {
    return InvalidArgument("is not Iceberg table metadata");
  }
  ARROW_ASSIGN_OR_RAISE(auto dir,
                        RelativeInNamespace(repo.id, m["location"].get<std::string>(), "the table's location"));
  // The table's own directory, named by its uuid, and the file inside it: what
  // is vended for it and what GC keeps for it cannot reach another table's.
  if (!IsTableDir(dir, m["table-uuid"].get<std::string>()) || !address.starts_with(dir + "/metadata/")) {
    return InvalidArgument(
        fmt::format("is not a table's metadata in its own directory ({}<table uuid>/metadata/)", TableDir("")));
  }
  cache_->Put(key, file);
  return file;
}

void RepoTables::Remember(const catalog::Repository& repo, const std::string& address, std::string text, json json) {
  cache_->Put(MetadataKey(repo, address),
              std::make_shared<MetadataFile>(MetadataFile{std::move(text), std::move(json)}));
}

Result<std::optional<RepoTables::Current>> RepoTables::ReadCurrent(const TablePath& table) {
  const NamespacePath& w = table.where;
  auto pointer = catalog_->GetEntry(w.repo, w.ref, TablePointer(w.ns, table.name));
  if (IsNotFound(pointer.status())) {
    if (!w.ns.empty()) ARROW_RETURN_NOT_OK(RequireNamespace(w));  // say which is missing
    return std::nullopt;
  }
  ARROW_RETURN_NOT_OK(pointer.status());
  auto not_table = [&](const std::string& why) {
    return InvalidArgument(fmt::format("table \"{}\": its pointer object {}", Name(table), why));
  };
  // Only a file inside the repository's own namespace: a pointer written
  // through the objects API cannot make this catalog read, or vend access
  // to, anything else.
  if (pointer->address.find("://") != std::string::npos || !blob::ValidateObjectPath(pointer->address).ok()) {
    return not_table("names data outside the repository's storage namespace");
  }
  ARROW_ASSIGN_OR_RAISE(auto repo, catalog_->GetRepository(w.repo));
  auto file = MetadataAt(repo, pointer->address);
  if (IsInvalidArgument(file.status())) return not_table(file.status().message());
  ARROW_RETURN_NOT_OK(file.status());
  return Current{*pointer, std::move(*file)};
}

bool RepoTables::Writable(const NamespacePath& where) {
  auto repo = catalog_->GetRepository(where.repo);
  return repo.ok() && !repo->read_only && catalog_->GetBranch(where.repo, where.ref).ok() &&
         catalog::Catalog::CheckProtection(*repo, where.ref, /*commit=*/false).ok();
}

Status RepoTables::RequireUnclaimed(const TablePath& table, const std::string& address) {
  // Register adopts a table no other name on the branch holds: a second name
  // would reach its files without the first one's permissions.
  std::string dir = address.substr(0, address.find("/metadata/") + 1);
  std::string after;
  while (true) {
    catalog::ListOptions o{kTablesRoot, after, "", 1000};
    ARROW_ASSIGN_OR_RAISE(auto page, catalog_->ListEntries(table.where.repo, table.where.ref, o));
    for (const auto& item : page.items) {
      if (item.entry.address.starts_with(dir) && item.path != TablePointer(table.where.ns, table.name)) {
        return Conflict(fmt::format("the table at {} is already registered as {}", dir, item.path));
      }
    }
    if (!page.has_more || page.items.empty()) return Status::OK();
    after = page.items.back().path;
  }
}

Result<LoadedTable> RepoTables::LoadTable(const TablePath& table) {
  ARROW_ASSIGN_OR_RAISE(auto current, ReadCurrent(table));
  if (!current) return NotFound(fmt::format("table \"{}\" does not exist", Name(table)));
  return Loaded(table.where.repo, current->pointer.address, json(), Writable(table.where), current->file);
}

Result<std::string> RepoTables::WriteMetadata(const std::string& repo_id, const std::string& table_dir, int64_t version,
                                              const std::string& data) {
  ARROW_ASSIGN_OR_RAISE(auto repo, catalog_->GetRepository(repo_id));
  ARROW_ASSIGN_OR_RAISE(auto store, catalog_->RepositoryNamespace(repo));
  std::string address = fmt::format("{}/metadata/{:05d}-{}.metadata.json", table_dir, version, internal::NewUuid());
  ARROW_RETURN_NOT_OK(store->Put(address, data));
  return address;
}

Result<RepoTables::Prepared> RepoTables::Prepare(const TableChange& change) {
  const TablePath& t = change.table;
  ARROW_RETURN_NOT_OK(ValidateTableName(t.name));
  ARROW_ASSIGN_OR_RAISE(auto repo, WritableBranch(t.where));
  ARROW_ASSIGN_OR_RAISE(auto current, ReadCurrent(t));
  if (!current && !HasAssertCreate(change.requirements)) {
    return NotFound(fmt::format("table \"{}\" does not exist", Name(t)));
  }
  if (!current) ARROW_RETURN_NOT_OK(RequireNamespace(t.where));
  iceberg::TableCommit commit;
  if (current) {
    commit.current = current->metadata();
    ARROW_ASSIGN_OR_RAISE(commit.current_location, EngineUri(t.where.repo, current->pointer.address));
  }
  commit.requirements = change.requirements;
  commit.updates = change.updates;
  commit.now_ms = ToUnixMicros(clock_->Now()) / 1000;
  ARROW_ASSIGN_OR_RAISE(json metadata, iceberg::ApplyTableCommit(commit));
  std::string location = metadata.value("location", "");
  if (current && location != current->metadata().value("location", "")) {
    return InvalidArgument(fmt::format("table \"{}\": changing a table's location is not supported", Name(t)));
  }
  ARROW_ASSIGN_OR_RAISE(auto dir, RelativeInNamespace(t.where.repo, location, "the table's location"));
  std::string uuid = metadata.value("table-uuid", json()).is_string() ? metadata["table-uuid"].get<std::string>() : "";
  if (!IsTableDir(dir, uuid)) {
    return InvalidArgument(
        fmt::format("table \"{}\": location \"{}\" is not the table's own directory {} of the "
                    "repository's storage namespace",
                    Name(t), location, TableDir(uuid)));
  }
  Prepared p;
  p.repo = std::move(repo);
  p.pointer = TablePointer(t.where.ns, t.name);
  if (current) {
    p.expected = current->pointer.address;
    p.current = current->metadata();
    p.version = internal::MetadataVersion(current->pointer.address) + 1;
  }
  p.metadata = std::move(metadata);
  p.table_dir = std::move(dir);
  return p;
}

Result<LoadedTable> RepoTables::CreateTable(const TablePath& table, const json& request) {
  ARROW_RETURN_NOT_OK(ValidateTableName(table.name));
  ARROW_ASSIGN_OR_RAISE(auto repo, WritableBranch(table.where));
  ARROW_ASSIGN_OR_RAISE(auto current, ReadCurrent(table));
  if (current) return Conflict(fmt::format("table \"{}\" already exists", Name(table)));
  ARROW_RETURN_NOT_OK(RequireNamespace(table.where));
  std::string uuid = internal::NewUuid();
  std::string location;
  if (request.contains("location") && !request["location"].is_null()) {
    if (!request["location"].is_string()) return InvalidArgument("CreateTableRequest: \"location\" must be a string");
    location = request["location"].get<std::string>();
  } else {
    ARROW_ASSIGN_OR_RAISE(location, EngineUri(table.where.repo, TableDir(uuid)));
  }
  ARROW_ASSIGN_OR_RAISE(auto updates, CreateUpdates(request, uuid, location));
  TableChange change{table, json::array({{{"type", "assert-create"}}}), std::move(updates)};
  const json& stage = request.contains("stage-create") ? request["stage-create"] : json(false);
  if (!stage.is_boolean()) return InvalidArgument("CreateTableRequest: \"stage-create\" must be a boolean");
  bool staged = stage.get<bool>();
  if (staged) {
    // Checked as a real create would be, stored nowhere.
    ARROW_ASSIGN_OR_RAISE(auto p, Prepare(change));
    return Loaded(table.where.repo, "", std::move(p.metadata), true);
  }
  auto created = CommitTable(change);
  if (IsConflict(created.status())) return Conflict(fmt::format("table \"{}\" already exists", Name(table)));
  return created;
}

Result<LoadedTable> RepoTables::CommitTable(const TableChange& change) {
  ARROW_ASSIGN_OR_RAISE(auto p, Prepare(change));
  const TablePath& t = change.table;
  if (p.current && *p.current == p.metadata) {  // nothing changed: nothing to write
    return Loaded(t.where.repo, *p.expected, std::move(p.metadata), true);
  }
  std::string data = p.metadata.dump();
  ARROW_ASSIGN_OR_RAISE(auto address, WriteMetadata(t.where.repo, p.table_dir, p.version, data));
  SEDIMENT_FAILPOINT("iceberg.commit.after_metadata");
  catalog::Entry entry = internal::FileEntry(address, data, ToUnixMicros(clock_->Now()) / 1000000);
  Status st = catalog_->SwapEntry(t.where.repo, t.where.ref, p.pointer, entry, p.expected);
  if (IsPreconditionFailed(st)) return LostRace(t);
  ARROW_RETURN_NOT_OK(st);
  SEDIMENT_FAILPOINT("iceberg.commit.after_swap");
  Remember(p.repo, address, data, p.metadata);
  return Loaded(t.where.repo, address, std::move(p.metadata), true);
}

Status RepoTables::CommitTransaction(const std::vector<TableChange>& changes) {
  if (changes.empty()) return InvalidArgument("a transaction needs at least one table change");
  const NamespacePath& first = changes.front().table.where;
  std::set<std::string> seen;
  std::vector<catalog::Catalog::EntrySwap> swaps;
  for (const auto& change : changes) {
    const TablePath& t = change.table;
    if (t.where.repo != first.repo || t.where.ref != first.ref) {
      return InvalidArgument(fmt::format("a transaction changes tables of one branch: \"{}\" is not on {}.{}", Name(t),
                                         first.repo, first.ref));
    }
    if (!seen.insert(Name(t)).second) return InvalidArgument(fmt::format("table \"{}\" changed twice", Name(t)));
    ARROW_ASSIGN_OR_RAISE(auto p, Prepare(change));
    if (p.current && *p.current == p.metadata) continue;
    std::string data = p.metadata.dump();
    ARROW_ASSIGN_OR_RAISE(auto address, WriteMetadata(t.where.repo, p.table_dir, p.version, data));
    swaps.push_back({p.pointer, internal::FileEntry(address, data, ToUnixMicros(clock_->Now()) / 1000000), p.expected});
  }
  Status st = catalog_->SwapEntries(first.repo, first.ref, swaps);
  if (IsPreconditionFailed(st)) {
    return Conflict("a table of the transaction changed concurrently; reload and retry the transaction");
  }
  return st;
}

Status RepoTables::DropTable(const TablePath& table) {
  ARROW_RETURN_NOT_OK(WritableBranch(table.where).status());
  ARROW_ASSIGN_OR_RAISE(auto current, ReadCurrent(table));
  if (!current) return NotFound(fmt::format("table \"{}\" does not exist", Name(table)));
  Status st =
      catalog_->SwapEntries(table.where.repo, table.where.ref,
                            {{TablePointer(table.where.ns, table.name), std::nullopt, current->pointer.address}});
  if (IsPreconditionFailed(st)) return LostRace(table);
  return st;
}

Status RepoTables::RenameTable(const TablePath& from, const TablePath& to) {
  if (from.where.repo != to.where.repo || from.where.ref != to.where.ref) {
    return InvalidArgument(fmt::format("a table is renamed within its branch: \"{}\" and \"{}\" are on different refs",
                                       Name(from), Name(to)));
  }
  ARROW_RETURN_NOT_OK(ValidateTableName(to.name));
  ARROW_RETURN_NOT_OK(WritableBranch(from.where).status());
  ARROW_ASSIGN_OR_RAISE(auto current, ReadCurrent(from));
  if (!current) return NotFound(fmt::format("table \"{}\" does not exist", Name(from)));
  ARROW_ASSIGN_OR_RAISE(auto target, ReadCurrent(to));  // NotFound when its namespace is missing
  if (target) return Conflict(fmt::format("table \"{}\" already exists", Name(to)));
  ARROW_RETURN_NOT_OK(RequireNamespace(to.where));
  Status st = catalog_->SwapEntries(from.where.repo, from.where.ref,
                                    {{TablePointer(to.where.ns, to.name), current->pointer, std::nullopt},
                                     {TablePointer(from.where.ns, from.name), std::nullopt, current->pointer.address}});
  if (IsPreconditionFailed(st)) return LostRace(from);
  return st;
}

Result<LoadedTable> RepoTables::RegisterTable(const TablePath& table, const std::string& metadata_location,
                                              bool overwrite) {
  ARROW_RETURN_NOT_OK(ValidateTableName(table.name));
  ARROW_ASSIGN_OR_RAISE(auto repo, WritableBranch(table.where));
  ARROW_RETURN_NOT_OK(RequireNamespace(table.where));
  ARROW_ASSIGN_OR_RAISE(auto address, RelativeInNamespace(table.where.repo, metadata_location, "metadata-location"));
  auto file = MetadataAt(repo, address);
  if (IsNotFound(file.status())) {
    return InvalidArgument(fmt::format("metadata-location \"{}\" holds no file", metadata_location));
  }
  if (IsInvalidArgument(file.status())) {
    return InvalidArgument(fmt::format("metadata-location \"{}\" {}", metadata_location, file.status().message()));
  }
  ARROW_RETURN_NOT_OK(file.status());
  ARROW_RETURN_NOT_OK(RequireUnclaimed(table, address));
  ARROW_ASSIGN_OR_RAISE(auto current, ReadCurrent(table));
  if (current && !overwrite) return Conflict(fmt::format("table \"{}\" already exists", Name(table)));
  std::optional<std::string> expected;
  if (current) expected = current->pointer.address;
  catalog::Entry entry = internal::FileEntry(address, (*file)->text, ToUnixMicros(clock_->Now()) / 1000000);
  Status st =
      catalog_->SwapEntry(table.where.repo, table.where.ref, TablePointer(table.where.ns, table.name), entry, expected);
  if (IsPreconditionFailed(st)) return LostRace(table);
  ARROW_RETURN_NOT_OK(st);
  return Loaded(table.where.repo, address, json(), true, *file);
}

}  // namespace sediment::repo_tables
