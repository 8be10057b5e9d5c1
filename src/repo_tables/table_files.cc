// RepoTables as catalog GC's reference walker (catalog/hooks.h): the files a
// table's metadata file names, so GC keeps them while it keeps the pointer
// (any reachable commit, branch or staging) and collects them after.
#include <arrow/buffer.h>
#include <fmt/format.h>

#include "blob/blob.h"
#include "catalog/catalog.h"
#include "iceberg/manifest_edit.h"
#include "repo_tables/repo_tables.h"
#include "repo_tables/repo_tables_internal.h"

namespace sediment::repo_tables {

using nlohmann::json;

namespace {

// The objects of an array field of `m` ([] when it is anything else).
std::vector<json> Objects(const json& m, const char* field) {
  std::vector<json> out;
  if (!m.is_object() || !m.contains(field) || !m[field].is_array()) return out;
  for (const auto& item : m[field]) {
    if (item.is_object()) out.push_back(item);
  }
  return out;
}

json Field(const json& object, const char* field) { return object.contains(field) ? object[field] : json(); }

}  // namespace

std::string RepoTables::CollectableDir() const { return std::string(kManagedDir) + "iceberg/"; }

// A table's pointer names a metadata file in the table's directory (tables.cc,
// MetadataAt): any entry whose data is such a file is walked, however it was
// written (an Iceberg commit, or a pointer restored through the objects API).
bool RepoTables::Names(const catalog::Entry& e) const {
  return e.address.starts_with(CollectableDir()) && e.address.ends_with(".metadata.json");
}

Status RepoTables::ForEachReference(const catalog::Repository& repo, const catalog::Entry& e,
                                    const std::function<bool(const std::string&)>& keep) {
  ARROW_ASSIGN_OR_RAISE(auto store, catalog_->RepositoryNamespace(repo));
  // The table's directory: kept whole (keep("dir/")) when what it holds cannot be read.
  const std::string dir = e.address.substr(0, e.address.find("/metadata/") + 1);
  auto read = [&](const std::string& path) -> Result<std::optional<std::string>> {
    auto data = store->Get(path);
    if (IsNotFound(data.status())) return std::nullopt;  // never written, or gone: names nothing
    ARROW_RETURN_NOT_OK(data.status());
    return std::optional<std::string>((*data)->ToString());
  };
  // Inside this namespace, relative; nullopt for anything else (never GC's).
  auto inside = [&](const json& uri) -> std::optional<std::string> {
    if (!uri.is_string()) return std::nullopt;
    auto rel = RelativeInNamespace(repo.id, uri.get<std::string>(), "a file");
    return rel.ok() ? std::optional<std::string>(*rel) : std::nullopt;
  };
  ARROW_ASSIGN_OR_RAISE(auto text, read(e.address));
  if (!text) return Status::OK();
  json m = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!m.is_object()) {
    keep(dir);  // not metadata after all: what it might name stays
    return Status::OK();
  }
  for (const auto& log : Objects(m, "metadata-log")) {
    if (auto p = inside(Field(log, "metadata-file"))) keep(*p);
  }
  for (const char* stats : {"statistics", "partition-statistics"}) {
    for (const auto& s : Objects(m, stats)) {
      if (auto p = inside(Field(s, "statistics-path"))) keep(*p);
    }
  }
  for (const auto& snapshot : Objects(m, "snapshots")) {
    auto list = inside(Field(snapshot, "manifest-list"));
    if (!list || !keep(*list)) continue;
    ARROW_ASSIGN_OR_RAISE(auto list_bytes, read(*list));
    if (!list_bytes) continue;
    auto manifests = iceberg::ReadManifestList(*list_bytes);
    if (!manifests.ok()) {  // unreadable: keep the table's whole directory rather than guess
      keep(dir);
      return Status::OK();
    }
    for (const auto& listed : *manifests) {
      auto manifest = inside(json(listed.path));
      if (!manifest || !keep(*manifest)) continue;
      ARROW_ASSIGN_OR_RAISE(auto bytes, read(*manifest));
      if (!bytes) continue;
      auto files = iceberg::ReadLiveFiles(*bytes);
      if (!files.ok()) {
        keep(dir);
        return Status::OK();
      }
      for (const auto& f : *files) {
        if (auto p = inside(json(f.path))) keep(*p);
      }
    }
  }
  return Status::OK();
}

}  // namespace sediment::repo_tables
