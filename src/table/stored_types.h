// How a table's Arrow types are stored in its Parquet files.
//
// Iceberg has no unsigned integers, and its Java Parquet readers (Spark,
// Trino, Flink) refuse a column annotated UINT_64 and misread UINT_32 (the
// vectorized reader). So every unsigned integer column of a table is stored
// as a signed one that holds it: uint8 and uint16 as int32, uint32 as int64
// (widened), uint64 as int64 (the same bits: values from 2^63 read negative to
// engines; block numbers that large are refused). The Arrow schema stored in
// the file marks each such field (metadata kUnsignedKey = the table's type),
// so Sediment's own readers give the table's types back.
//
// Files written before store the unsigned annotations; they read the same
// through SegmentFileReader, and merges write them out the new way
// (docs/formats.md).
#pragma once

#include <memory>
#include <string_view>

#include "base/status.h"

namespace arrow {
class Schema;
class Table;
}  // namespace arrow

namespace sediment::table {

inline constexpr std::string_view kUnsignedKey = "sediment.unsigned";
// A timestamp column in nanoseconds whose table field carries kStoreMicrosKey
// (any value) is stored in microseconds (Iceberg v2 and Spark read no
// nanoseconds), the stored field marked with kNanosecondsKey; a value with a
// fraction of a microsecond is refused when written. Sediment's readers give
// nanoseconds back. Without the key, nanoseconds are stored as they are.
inline constexpr std::string_view kStoreMicrosKey = "sediment.store_micros";
inline constexpr std::string_view kNanosecondsKey = "sediment.nanoseconds";

// The schema a file of a table with `schema` stores (itself when it has no uint64).
std::shared_ptr<arrow::Schema> StoredSchema(const std::shared_ptr<arrow::Schema>& schema);
// The table's schema of a file's stored schema: marked fields back to their unsigned types.
std::shared_ptr<arrow::Schema> TableSchemaOf(const std::shared_ptr<arrow::Schema>& stored);
// `table` with `schema`'s types (stored to table or back): 64-bit integers
// change type over the same buffers, the widened ones are cast (checked).
Result<std::shared_ptr<arrow::Table>> Retype(const std::shared_ptr<arrow::Table>& table,
                                             const std::shared_ptr<arrow::Schema>& schema);

}  // namespace sediment::table
