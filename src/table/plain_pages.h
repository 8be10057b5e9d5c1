// Values of PLAIN data pages, read without Arrow's column reader: for bloom
// filters of page runs (parquet_assembler.h), which need only the values of
// one column of many small head files. Arrow's zstd codec makes a
// decompression context for every page, which costs more than a small
// page's values; here one context per thread is reused.
//
// Handles data pages v1 with PLAIN values, uncompressed or zstd (what
// Sediment's head files are). Anything else says so and the caller reads the
// chunk through Arrow.
//
// Thread-safety: safe from many threads (the zstd context is per thread).
#pragma once

#include <string_view>

#include "base/status.h"

namespace parquet {
class BloomFilter;
class ColumnDescriptor;
}  // namespace parquet

namespace sediment::table {

// Inserts the hash of every non-null value of the column chunk `chunk` (its
// pages, from its first data page) into `filter`. `codec` is the chunk's
// compression (parquet::Compression::type). False when the chunk holds a
// page this reader does not handle (it may have inserted some values; a
// bloom filter does not mind them inserted twice); an error when a page is
// malformed.
Result<bool> HashPlainValues(std::string_view chunk, const parquet::ColumnDescriptor& column, int codec,
                             parquet::BloomFilter* filter);

}  // namespace sediment::table
