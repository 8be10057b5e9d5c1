// A data file's per-column figures for its manifest entry, from its Parquet
// footer (row-group statistics): sizes, value and null counts, and bounds
// in Iceberg's single-value serialization where the column's type has them.
#pragma once

#include <map>
#include <string>

#include "base/status.h"
#include "iceberg/manifests.h"
#include "iceberg/schema.h"

namespace sediment::blob {
class BlobStore;
}

namespace parquet {
class FileMetaData;
}

namespace sediment::iceberg {

// The same, from a footer already read.
Result<std::map<int, ColumnStats>> StatsOf(const parquet::FileMetaData& footer, const IcebergSchema& schema);

// Reads the footer of the file at `path` (`size` bytes) and returns its
// top-level primitive columns' figures, keyed by field id.
Result<std::map<int, ColumnStats>> ReadColumnStats(blob::BlobStore* blobs, const std::string& path, int64_t size,
                                                   const IcebergSchema& schema);

}  // namespace sediment::iceberg
