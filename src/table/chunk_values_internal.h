// The values a ChunkEncoder encodes and the dictionary it builds of them
// (chunk_encoder.cc, chunk_dictionary.cc). Internal to those two files.
#pragma once

#include <arrow/array.h>
#include <parquet/statistics.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace parquet {
class ColumnDescriptor;
}  // namespace parquet

namespace sediment::table::chunk_encoding {

// An array's values as Parquet's PLAIN encoding sees them.
struct Values {
  const arrow::Array* array = nullptr;
  int width = 0;                     // bytes a value; 0: binary (length-prefixed when PLAIN)
  const uint8_t* fixed = nullptr;    // width > 0: value i at fixed + i * width
  const int32_t* offsets = nullptr;  // binary: value i is data[offsets[i], offsets[i + 1])
  const uint8_t* data = nullptr;
  bool nulls = false;

  bool Valid(int64_t i) const { return !nulls || array->IsValid(i); }
  std::string_view Get(int64_t i) const {
    if (width > 0) return {reinterpret_cast<const char*>(fixed + i * width), static_cast<size_t>(width)};
    return {reinterpret_cast<const char*>(data + offsets[i]), static_cast<size_t>(offsets[i + 1] - offsets[i])};
  }
  // Bytes value i takes PLAIN.
  int64_t PlainSize(int64_t i) const { return width > 0 ? width : 4 + (offsets[i + 1] - offsets[i]); }
  void AppendPlain(int64_t i, std::string* out) const {
    const std::string_view v = Get(i);
    if (width == 0) {
      const auto n = static_cast<uint32_t>(v.size());
      out->append(reinterpret_cast<const char*>(&n), 4);
    }
    out->append(v);
  }
};

// `array` seen as `column`'s PLAIN values; an error naming the column when
// its type is not one the encoder handles (PlainWidth).
Result<Values> ViewOf(const arrow::Array& array, const parquet::ColumnDescriptor& column);

// A chunk's dictionary: each distinct value once, in order of first
// appearance, and every non-null value's index into it.
struct Dictionary {
  std::vector<int64_t> first;     // the array index of each entry's first appearance
  std::vector<uint32_t> indices;  // per non-null value, in order
  int64_t bytes = 0;              // the entries PLAIN

  // Builds it over v[0, n); false (and left half-built) once its entries
  // take more than `limit` bytes, or when the first 4,096 values hashed are
  // so nearly all new that, at that rate over the rows, they will (a
  // hash, a value, a topic1).
  bool Build(const Values& v, int64_t n, int64_t limit);

 private:
  struct Slot {
    uint64_t hash = 0;
    uint64_t key = 0;    // a value of up to 8 bytes itself, else its first 8 bytes
    uint32_t entry = 0;  // + 1; 0: empty
  };
  uint32_t Insert(const Values& v, int64_t i, std::string_view value, uint64_t key);
  void Grow();

  std::vector<Slot> slots_;
  // The entries' values one after another (compared there, not in the
  // column's values, where each entry's first appearance is a cache miss).
  std::string arena_;
  std::vector<uint32_t> arena_at_{0};  // entry e at [arena_at_[e], arena_at_[e + 1])

 public:
  std::string_view Value(uint32_t entry) const {
    return std::string_view(arena_).substr(arena_at_[entry], arena_at_[entry + 1] - arena_at_[entry]);
  }
};

// Bits a dictionary index of `entries` entries takes (at least 1).
int BitWidth(size_t entries);

// The distinct entries of indices [at, at + valid) of `d` (marked in
// `stamp` with `page_no`, listed in `entries`), their statistics added to
// `page` with `nulls` nulls: a dictionary-encoded page's bounds from far
// fewer compares than its values.
void UpdateFromDictionary(const Dictionary& d, int64_t at, int64_t valid, int64_t nulls, uint32_t page_no,
                          std::vector<uint32_t>* stamp, std::vector<uint32_t>* entries, parquet::Statistics* page);

}  // namespace sediment::table::chunk_encoding
