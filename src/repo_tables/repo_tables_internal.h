// What repo_tables.cc (namespaces, files) and tables.cc (tables) share.
#pragma once

#include <optional>
#include <string>

#include "catalog/entry.h"
#include "catalog/records.h"
#include "repo_tables/metadata_cache.h"
#include "repo_tables/repo_tables.h"

namespace sediment::repo_tables {

// A table as its pointer names it on a ref.
struct RepoTables::Current {
  catalog::Entry pointer;  // pointer.address: the metadata file, relative to the namespace
  std::shared_ptr<const MetadataFile> file;
  const nlohmann::json& metadata() const { return file->json; }
};

// An Iceberg commit checked and applied, not yet stored.
struct RepoTables::Prepared {
  catalog::Repository repo;
  std::string pointer;                  // the pointer's path
  std::optional<std::string> expected;  // the metadata file it must still name (nullopt: absent)
  std::optional<nlohmann::json> current;
  nlohmann::json metadata;  // the new metadata
  std::string table_dir;    // the table's location, relative to the namespace
  int64_t version = 0;      // of the new metadata file
};

namespace internal {

// A random (version 4) UUID.
std::string NewUuid();
// The entry of a file just written at `address` with `data`.
catalog::Entry FileEntry(const std::string& address, const std::string& data, int64_t now_s);
// "00003-<uuid>.metadata.json" -> 3 (0 for any other name).
int64_t MetadataVersion(const std::string& address);

}  // namespace internal
}  // namespace sediment::repo_tables
