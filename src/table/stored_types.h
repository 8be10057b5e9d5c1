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

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace arrow {
class KeyValueMetadata;
class Field;
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
// A top-level fixed_size_binary(n) column whose table field carries
// kStoreBinaryKey (any value but "false") is stored as BYTE_ARRAY (Arrow
// binary), the stored field marked kFixedSizeKey = n: Polars filters
// FIXED_LEN_BYTE_ARRAY ten times slower and DataFusion a third slower
// (bench/RESULTS.md, issue 46), and BYTE_ARRAY is what DuckDB, Spark and
// Polars write. Sediment's readers give fixed_size_binary(n) back (a value of
// another length is an error); Iceberg sees the column as binary. A new
// table's or new column's field gets the key unless it says "false"
// (MarkNewColumns); a column keeps how it was created, so its files never mix
// the two physical types, and tables created before keep FIXED_LEN_BYTE_ARRAY.
inline constexpr std::string_view kStoreBinaryKey = "sediment.store_binary";
inline constexpr std::string_view kFixedSizeKey = "sediment.fixed_size";

// `schema` (a new table's, or a table's next version) with kStoreBinaryKey
// on every top-level fixed_size_binary field that does not carry it.
std::shared_ptr<arrow::Schema> MarkNewColumns(const std::shared_ptr<arrow::Schema>& schema);
// The width n of a stored binary field marked kFixedSizeKey = n (fixed_size_binary(n)
// in the table), or 0.
int32_t StoredFixedWidth(const arrow::Field& stored);
// Whether `field` is fixed binary stored as binary (kStoreBinaryKey, not "false").
bool StoresFixedAsBinary(const arrow::Field& field);
// The schema a file of a table with `schema` stores (itself when nothing above applies).
std::shared_ptr<arrow::Schema> StoredSchema(const std::shared_ptr<arrow::Schema>& schema);
// The table's schema of a file's stored schema: marked fields back to their unsigned types.
std::shared_ptr<arrow::Schema> TableSchemaOf(const std::shared_ptr<arrow::Schema>& stored);
// `table` with `schema`'s types (stored to table or back): 64-bit integers
// change type over the same buffers, the widened ones and fixed binary are
// cast (checked: a stored value of the wrong length is an error naming the column).
Result<std::shared_ptr<arrow::Table>> Retype(const std::shared_ptr<arrow::Table>& table,
                                             const std::shared_ptr<arrow::Schema>& schema);
// Invalid, naming the column and row, if a column of `stored` (a stored
// schema's) marked kFixedSizeKey holds a value of another length, or one
// marked kUnsignedKey a value its unsigned type cannot hold: what Retype to
// the table's types would refuse, checked where the values stay stored.
Status CheckStoredValues(const arrow::Table& stored);
// The largest value of the unsigned type a stored integer field holds
// (kUnsignedKey: uint8, uint16, uint32), or -1 (none, or uint64: any bits).
int64_t StoredUnsignedMax(const arrow::Field& stored);

// Arrow's schema as its Parquet writer stores it under "ARROW:schema".
Result<std::string> StoredArrowSchema(const arrow::Schema& schema);
// The schema StoredArrowSchema wrote (Invalid if `b64` is not one).
Result<std::shared_ptr<arrow::Schema>> ParseStoredArrowSchema(const std::string& b64);

// A segment file's footer keeps the stored schema's field metadata (the
// markers above) out of "ARROW:schema": DataFusion takes a field with
// metadata for another type than its table schema's (which drops it), and
// then uses no bloom filter on that column (bench/RESULTS.md, issue 46).
// "ARROW:schema" holds the schema without its top-level fields' metadata, and
// kStoredSchemaKey the whole schema where any top-level field has metadata.
inline constexpr std::string_view kStoredSchemaKey = "sediment.schema";
// Appends both keys for `stored` to `kv`.
Status AppendSchemaKeys(const arrow::Schema& stored, arrow::KeyValueMetadata* kv);
// A footer's `kv` as Arrow's reader should see it: "ARROW:schema" replaced by
// kStoredSchemaKey's value where there is one (files written before hold the
// whole schema under "ARROW:schema"). Null stays null.
std::shared_ptr<const arrow::KeyValueMetadata> WithStoredSchema(
    const std::shared_ptr<const arrow::KeyValueMetadata>& kv);

}  // namespace sediment::table
