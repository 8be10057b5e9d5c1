// Values of PLAIN data pages, read without Arrow's column reader: hashed for
// bloom filters of page runs (parquet_assembler.h), which need only the
// values of one column of many small head files, and decoded into Arrow
// arrays for a merge that encodes them again (plain_decode.h). Arrow's zstd
// codec makes a decompression context for every page, which costs more than
// a small page's values; here one context per thread is reused.
//
// Handles data pages v1 and v2 with PLAIN values, uncompressed or zstd (what
// Sediment's head files are). Anything else says so and the caller reads the
// chunk through Arrow.
//
// Thread-safety: safe from many threads (the zstd context is per thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

#include "base/status.h"

namespace parquet {
class BloomFilter;
class ColumnDescriptor;
}  // namespace parquet

namespace sediment::table {

// One PLAIN data page of a column chunk, its values decompressed. Valid
// during the call it is given to.
struct PlainPage {
  int64_t num_values = 0;  // slots, nulls included
  int64_t num_nulls = -1;  // -1: not in the header (data page v1); the levels say
  // The definition levels as the RLE/bit-packed hybrid (no length prefix);
  // empty when the column has none.
  const uint8_t* levels = nullptr;
  size_t levels_size = 0;
  const uint8_t* values = nullptr;  // PLAIN, up to values_end
  const uint8_t* values_end = nullptr;
};

// Calls `each` with every data page of the column chunk `chunk` (its pages,
// from its first), in order. `codec` is the chunk's compression
// (parquet::Compression::type). False, before any call, when the codec is
// neither zstd nor none; false (after the calls for the pages before it)
// at a page this reader does not handle: not a data page, or not PLAIN. An
// error when a page is malformed, or when `each` returns one.
Result<bool> ForEachPlainPage(std::string_view chunk, const parquet::ColumnDescriptor& column, int codec,
                              const std::function<Status(const PlainPage&)>& each);

// Inserts the hash of every non-null value of the column chunk `chunk` (its
// pages, from its first data page) into `filter`. `codec` is the chunk's
// compression (parquet::Compression::type). False when the chunk holds a
// page this reader does not handle (it may have inserted some values; a
// bloom filter does not mind them inserted twice); an error when a page is
// malformed.
Result<bool> HashPlainValues(std::string_view chunk, const parquet::ColumnDescriptor& column, int codec,
                             parquet::BloomFilter* filter);

// Inserts the hash of every value of the dictionary page that begins the
// column chunk `chunk` into `filter`. False when the chunk does not begin
// with a PLAIN dictionary page this reader handles; an error when it is
// malformed.
Result<bool> HashDictionaryPage(std::string_view chunk, const parquet::ColumnDescriptor& column, int codec,
                                parquet::BloomFilter* filter);

}  // namespace sediment::table
