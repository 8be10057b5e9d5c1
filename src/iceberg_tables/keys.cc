#include "iceberg_tables/keys.h"

#include <fmt/format.h>

namespace sediment::iceberg {

std::string TablePrefix(const table::TableId& id) { return fmt::format("ice/{}/{}/", id.dataset, id.table); }
std::string HeadKey(const table::TableId& id) { return TablePrefix(id) + "head"; }
std::string SnapshotPrefix(const table::TableId& id) { return TablePrefix(id) + "snap/"; }
std::string SnapshotKey(const table::TableId& id, int64_t seq) {
  return fmt::format("{}{:020}", SnapshotPrefix(id), seq);
}
std::string ManifestKey(const table::TableId& id, const std::string& manifest_id) {
  return TablePrefix(id) + "man/" + manifest_id;
}
std::string TrashPrefix(const table::TableId& id) { return TablePrefix(id) + "trash/"; }
std::string TrashKey(const table::TableId& id, int64_t expires_ms, const std::string& name) {
  return fmt::format("{}{:020}-{}", TrashPrefix(id), expires_ms, name);
}

}  // namespace sediment::iceberg
