// Iceberg manifests and manifest lists (format version 2, Avro), written for
// an unpartitioned table of Parquet data files. Field ids and header keys as
// the Iceberg table spec gives them (docs/iceberg.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace sediment::iceberg {

// A column's figures in one data file (keyed by field id in DataFile::columns).
struct ColumnStats {
  int64_t size = 0;                         // compressed bytes of its chunks
  int64_t values = 0;                       // values, nulls included
  int64_t nulls = 0;                        // -1: unknown (left out of the manifest)
  std::optional<std::string> lower, upper;  // Iceberg single-value serialization
  bool operator==(const ColumnStats&) const = default;
};

struct DataFile {
  std::string path;  // the blob store's path (the segment's)
  std::string uri;   // what engines open: file:///... or s3://...
  std::string segment_id;
  uint64_t start = 0, end = 0;  // blocks
  std::string end_hash;         // of block `end`: a swap keeps it, a reorg changes it
  int64_t rows = 0;
  int64_t size = 0;  // bytes on storage, exact
  std::map<int, ColumnStats> columns;
  bool operator==(const DataFile&) const = default;
};

enum class EntryStatus { kExisting = 0, kAdded = 1, kDeleted = 2 };

struct ManifestEntry {
  EntryStatus status = EntryStatus::kAdded;
  int64_t snapshot_id = 0;  // the snapshot that added the file (or deleted it, for kDeleted)
  int64_t sequence = 0;     // the data (and file) sequence number of the file
  DataFile file;
};

// The manifest's Avro file. `schema_json` is the table schema (header key "schema").
Result<std::string> WriteManifest(const std::vector<ManifestEntry>& entries, const std::string& schema_json,
                                  int schema_id);

// A manifest as a manifest list names it.
struct ManifestFile {
  std::string uri;
  int64_t length = 0;
  int64_t added_snapshot_id = 0;
  int64_t sequence = 0;      // of the snapshot that wrote it
  int64_t min_sequence = 0;  // of its live files
  int32_t added_files = 0, existing_files = 0, deleted_files = 0;
  int64_t added_rows = 0, existing_rows = 0, deleted_rows = 0;
};

Result<std::string> WriteManifestList(const std::vector<ManifestFile>& manifests, int64_t snapshot_id,
                                      std::optional<int64_t> parent_id, int64_t sequence);

}  // namespace sediment::iceberg
