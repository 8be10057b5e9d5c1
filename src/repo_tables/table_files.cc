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

std::string RepoTables::CollectableDir() const { return std::string(kManagedDir) + "iceberg/"; }

bool RepoTables::Names(const catalog::Entry& e) const { return e.metadata.count(internal::kTableMark) > 0; }

Status RepoTables::ForEachReference(const catalog::Repository& repo, const catalog::Entry& e,
                                    const std::function<bool(const std::string&)>& keep) {
  ARROW_ASSIGN_OR_RAISE(auto store, catalog_->RepositoryNamespace(repo));
  // A file GC must read: NotFound (never written, or gone) names nothing.
  auto read = [&](const std::string& path) -> Result<std::optional<std::string>> {
    auto data = store->Get(path);
    if (IsNotFound(data.status())) return std::nullopt;
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
  if (!m.is_object()) return Status::OK();  // not table metadata (a pointer written as an object): names nothing
  for (const auto& log : m.value("metadata-log", json::array())) {
    if (auto p = inside(log.value("metadata-file", json()))) keep(*p);
  }
  for (const char* stats : {"statistics", "partition-statistics"}) {
    for (const auto& s : m.value(stats, json::array())) {
      if (auto p = inside(s.value("statistics-path", json()))) keep(*p);
    }
  }
  for (const auto& snapshot : m.value("snapshots", json::array())) {
    auto list = inside(snapshot.value("manifest-list", json()));
    if (!list || !keep(*list)) continue;
    ARROW_ASSIGN_OR_RAISE(auto list_bytes, read(*list));
    if (!list_bytes) continue;
    ARROW_ASSIGN_OR_RAISE(auto manifests, iceberg::ReadManifestList(*list_bytes));
    for (const auto& listed : manifests) {
      auto manifest = inside(json(listed.path));
      if (!manifest || !keep(*manifest)) continue;
      ARROW_ASSIGN_OR_RAISE(auto bytes, read(*manifest));
      if (!bytes) continue;
      ARROW_ASSIGN_OR_RAISE(auto files, iceberg::ReadLiveFiles(*bytes));
      for (const auto& f : files) {
        if (auto p = inside(json(f.path))) keep(*p);
      }
    }
  }
  return Status::OK();
}

}  // namespace sediment::repo_tables
