// Private to the Iceberg catalog: what it keeps in the KV store beside the
// tables (docs/formats.md, "Iceberg snapshots"), and how it is encoded.
//
//   ice/<ds>/<t>/head              the current snapshot's manifests and the live set it was made from (Head)
//   ice/<ds>/<t>/snap/<seq:020>    one record per snapshot still listed (SnapshotRecord)
//   ice/<ds>/<t>/man/<manifest id> the live files of one current manifest (LiveEntry list)
//   ice/<ds>/<t>/trash/<expires_ms:020>-<n>  a metadata file to delete once no listed snapshot needs it
//
// Every record is JSON with "v": 1.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "iceberg/manifests.h"
#include "iceberg/schema.h"
#include "iceberg_tables/keys.h"
#include "table/names.h"
#include "table/registry.h"

namespace sediment::iceberg {

// A manifest of the current snapshot: it holds the live files whose first
// block is at or after `first` and before the next manifest's `first`.
struct ManifestRef {
  std::string id;
  std::string path;   // blob path
  ManifestFile file;  // as the manifest list names it
  uint64_t first = 0;
  std::string digest;  // of its live files' segment ids, in block order
  int64_t live_files = 0;
};

struct Head {
  std::string uuid;
  std::string token;  // the registry's live-set token the current snapshot was made from
  int64_t seq = 0;    // the current snapshot's sequence number (0: none yet)
  int64_t snapshot_id = 0;
  int64_t ts_ms = 0;                   // the current snapshot's time: the next one is no earlier
  int64_t expires_floor_ms = 0;        // when the newest superseded snapshot expires: the next one expires no earlier
  std::vector<ManifestRef> manifests;  // in block order
};

struct SnapshotRecord {
  int64_t id = 0, parent = 0, seq = 0;
  int64_t ts_ms = 0;
  int64_t expires_ms = 0;                      // 0 while it is current
  std::string list_path;                       // its manifest list (blob path)
  std::map<std::string, std::string> summary;  // "operation" and the figures
  int schema_id = 0;                           // the table's schema when it was published (version - 1)
};

struct LiveEntry {
  int64_t snapshot_id = 0, seq = 0;
  DataFile file;
};

// The Iceberg table-uuid of a Sediment table: fixed by its name and creation time, so it is the
// same before the first snapshot, after it, and on every server.
std::string TableUuid(const table::TableInfo& info);
// The table's schema versions, oldest first (what ToIcebergSchema takes).
std::vector<std::shared_ptr<arrow::Schema>> Versions(const table::TableInfo& info);
// The Iceberg schemas of the table's versions, timestamps stored in microseconds marked so.
Result<IcebergSchema> IcebergSchemaOf(const table::TableInfo& info);

std::string EncodeHead(const Head& h);
Result<Head> DecodeHead(const std::string& text);
std::string EncodeSnapshot(const SnapshotRecord& s);
Result<SnapshotRecord> DecodeSnapshot(const std::string& text);
std::string EncodeEntries(const std::vector<LiveEntry>& entries);
Result<std::vector<LiveEntry>> DecodeEntries(const std::string& text);

}  // namespace sediment::iceberg
