// The tables' Arrow schemas as Iceberg schemas (format version 2), with the
// name mapping (table property schema.name-mapping.default) that lets engines
// read Sediment's Parquet files, which carry no field ids, by column name.
//
// Types: Iceberg has no unsigned integers, so uint8/uint16 become int and
// uint32/uint64 become long (block numbers, timestamps and gas figures are
// far below 2^63; a uint64 value at or above it would read negative, and
// the catalog is the wrong place to hide that: docs/iceberg.md). Field ids:
// top-level columns 1..N in schema order, then nested ones depth-first.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace arrow {
class Schema;
}

namespace sediment::iceberg {

// What a manifest can say about a top-level column of primitive type.
enum class BoundKind { kNone, kInt32, kUInt32ToLong, kInt64, kFloat, kDouble, kBytes };

struct IcebergColumn {
  std::string name;
  int field_id = 0;
  std::string type;                     // Iceberg type name ("long", "fixed[32]", ...); "" for nested types
  BoundKind bounds = BoundKind::kNone;  // how the Parquet statistics become Iceberg bounds
};

struct IcebergSchema {
  std::string json;                  // the current one: {"type":"struct","schema-id":N,"fields":[...]}
  int schema_id = 0;                 // the current one's: its version less one
  std::vector<std::string> schemas;  // every version's, schema-id 0 first (the current one last)
  std::string name_mapping;          // the JSON text of schema.name-mapping.default
  int last_column_id = 0;
  std::vector<IcebergColumn> columns;  // top-level, in schema order
};

// The Iceberg schemas of a table's schema versions (oldest first; each one's
// columns begin the next one's, as the chain tables evolve theirs). A
// column's id never changes: a version's new top-level columns take the ids
// after every id of the versions before, then their nested fields. With one
// version: columns 1..N, nested fields from N+1.
// InvalidArgument naming the column if a type has no Iceberg equivalent.
// `micros_key`: a field metadata key marking a nanosecond timestamp column
// whose files store microseconds (its bounds are then usable); "" none.
// `binary_key`: one marking (with any value but "false") a fixed binary
// column whose files store it as binary (BYTE_ARRAY): Iceberg's type is then
// binary, as the files say.
Result<IcebergSchema> ToIcebergSchema(const std::vector<std::shared_ptr<arrow::Schema>>& versions,
                                      const std::string& micros_key = "", const std::string& binary_key = "");
// One version.
Result<IcebergSchema> ToIcebergSchema(const arrow::Schema& schema, const std::string& micros_key = "",
                                      const std::string& binary_key = "");

}  // namespace sediment::iceberg
