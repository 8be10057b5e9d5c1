#include "table/discard.h"

#include <spdlog/spdlog.h>

namespace sediment::table {

Result<bool> DiscardUnlessLive(TableRegistry* registry, blob::BlobStore* blobs, const TableId& id,
                               const std::string& path) {
  auto live = registry->IsLive(id, path);
  if (!live.ok()) {
    spdlog::warn("table {}: keeping {}: cannot tell whether it is live ({}); the start-up sweep removes it if not",
                 id.ToString(), path, live.status().ToString());
    return live.status();
  }
  if (*live) {
    spdlog::warn("table {}: {} is live after all (the commit landed); kept", id.ToString(), path);
    return true;
  }
  Status del = blobs->Delete(path);
  if (!del.ok() && !IsNotFound(del)) {
    spdlog::warn("table {}: cannot delete unused {}: {}", id.ToString(), path, del.ToString());
    return del;
  }
  return false;
}

}  // namespace sediment::table
