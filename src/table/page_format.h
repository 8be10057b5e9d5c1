// Parquet data pages as bytes: page headers (Thrift's compact protocol) read
// and written, and repetition/definition levels (the RLE/bit-packed hybrid)
// decoded and encoded, without Arrow's internals (its Thrift types are not
// part of its installed headers). For reading head files' PLAIN pages
// (plain_pages.h) and joining their data pages v2 (page_joiner.h).
//
// Everything here checks what it reads: a header or a level run that does not
// fit the bytes given, or states an absurd size, is refused, never trusted.
// Thread-safety: free functions over the caller's bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace sediment::table {

// What a page header says. Fields a header does not carry keep their -1.
struct PageHeader {
  int32_t type = -1;  // parquet::PageType
  int64_t uncompressed = -1, compressed = -1;
  int32_t encoding = -1;  // of the values (a dictionary page's too, with its num_values)
  // Data page v1: how its levels are encoded.
  int32_t definition_encoding = -1, repetition_encoding = -1;
  // Data page v2: its counts, and the byte lengths of its levels, which come
  // first and uncompressed (repetition, then definition); the values follow,
  // compressed when is_compressed.
  int32_t num_values = -1, num_nulls = -1, num_rows = -1;
  int32_t definition_bytes = -1, repetition_bytes = -1;
  bool is_compressed = true;
};

// Pages larger than this are refused (a header is not trusted to size an
// allocation of gigabytes).
inline constexpr int64_t kMaxPageBytes = int64_t{1} << 30;

// Reads the page header at [p, end): false if it is malformed or its sizes do
// not fit [p, end) (the page's bytes must follow it there in full). On success
// *body is where the page's bytes start (they end at *body + compressed).
bool ReadPageHeader(const uint8_t* p, const uint8_t* end, PageHeader* header, const uint8_t** body);

// The header of a data page v1 with `h`'s sizes, num_values, encoding and
// level encodings (no statistics: the page index carries them).
std::string DataPageV1Header(const PageHeader& h);

// The header of a dictionary page with `h`'s sizes, num_values and encoding.
std::string DictionaryPageHeader(const PageHeader& h);

// The header of a data page v2 with `h`'s sizes, counts, encoding and
// is_compressed (no statistics: the page index carries them; no checksum).
std::string DataPageV2Header(const PageHeader& h);

// The number of bits a level up to `max_level` takes.
int LevelBitWidth(int16_t max_level);

// Decodes `count` levels of at most `max_level` from the RLE/bit-packed
// hybrid in [p, p + size) (no length prefix), appending them to *out.
Status DecodeLevels(const uint8_t* p, size_t size, int16_t max_level, int64_t count, std::vector<int16_t>* out);

// Encodes `levels` (each at most `max_level`) as the hybrid, appending to
// *out: runs of eight or more equal levels as RLE runs, the rest bit-packed.
void EncodeLevels(const std::vector<int16_t>& levels, int16_t max_level, std::string* out);

// Encodes values[0, n), each below 2^width, as the hybrid (dictionary
// indices: the caller writes the bit width before them), appending to *out.
void EncodeHybrid(const uint32_t* values, size_t n, int width, std::string* out);

}  // namespace sediment::table
