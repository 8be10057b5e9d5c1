// Rows encoded into row groups one column at a time (chunk_encoder.h), for a
// merge step that decodes head files' PLAIN pages (plain_decode.h): only one
// column of the step's rows is held decoded at a time, and no Arrow table or
// Arrow Parquet writer is involved; and for head files themselves
// (EncodeForSegment, where the encoder applies). The row groups come back as
// EncodedRowGroups over one in-memory buffer, with their footer, page index
// and bloom filters, for ParquetAssembler to copy like any other.
//
// Thread-safety: a free function; concurrent calls need encoders of their own.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/status.h"
#include "table/parquet_assembler.h"

namespace arrow {
class Array;
class Buffer;
}  // namespace arrow
namespace parquet {
class SchemaDescriptor;
class WriterProperties;
}  // namespace parquet

namespace sediment::table {

class ChunkEncoder;

// A chunk whose first sizeable data page zstd shrinks by less than this (or
// whose first 64 KiB it shrinks by less than half of it) has all its data
// pages stored as pages v2, uncompressed, whatever page
// version the file's others have (ChunkEncoding::min_saving; RocksDB's
// default for its blocks too).
inline constexpr double kMinCompressionSaving = 1.0 / 8;

// Whether EncodeColumnwise writes what `props` ask for every column of
// `descr`: flat columns, zstd or no compression.
bool ColumnwiseEncodable(const parquet::SchemaDescriptor& descr, const parquet::WriterProperties& props);

// `rows` rows in row groups of at most `rows_per_group`, encoded as `props`
// say (pages, dictionaries, statistics, page index, bloom filters).
// `column(c)` gives column c's values for all rows (of the type PlainWidth
// accepts); each is asked for once, in order, and dropped once encoded.
// The chunks are written into `buffer` (mutable; a larger one is made if it
// fills), column after column: a row group's chunks need not be adjacent.
// `min_saving`: ChunkEncoding's (kMinCompressionSaving, or 0 to compress
// every page). `encoder` is reused (its scratch kept from call to call).
Result<std::vector<EncodedRowGroup>> EncodeColumnwise(
    const parquet::SchemaDescriptor& descr, const std::shared_ptr<parquet::WriterProperties>& props, int64_t rows,
    int64_t rows_per_group, const std::function<Result<std::shared_ptr<arrow::Array>>(int c)>& column,
    std::shared_ptr<arrow::Buffer> buffer, ChunkEncoder* encoder, double min_saving = kMinCompressionSaving);

}  // namespace sediment::table
