// The KV keys of the chain tables' Iceberg catalog, built here and nowhere
// else (docs/formats.md): under ice/<dataset>/<table>/, its head (the current
// snapshot's record), its snapshots by sequence number, its manifests, and the
// trash of metadata files waiting for their expiry.
#pragma once

#include <cstdint>
#include <string>

#include "table/names.h"

namespace sediment::iceberg {

// ice/<dataset>/<table>/: every record of one table.
std::string TablePrefix(const table::TableId& id);
// The table's current snapshot record.
std::string HeadKey(const table::TableId& id);
// Its snapshot records, by sequence number (zero-padded, so they list in order).
std::string SnapshotPrefix(const table::TableId& id);
std::string SnapshotKey(const table::TableId& id, int64_t seq);
// A manifest's record, by its id.
std::string ManifestKey(const table::TableId& id, const std::string& manifest_id);
// Metadata files waiting to be deleted, ordered by the time they may go.
std::string TrashPrefix(const table::TableId& id);
std::string TrashKey(const table::TableId& id, int64_t expires_ms, const std::string& name);

}  // namespace sediment::iceberg
