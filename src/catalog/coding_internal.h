// Byte encodings shared by the catalog's on-disk formats (entries, meta-range
// records, content hashes): varints, length-prefixed strings, hex. Private to
// src/catalog.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace sediment::catalog::internal {

inline void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

inline void PutLengthPrefixed(std::string* out, std::string_view s) {
  PutVarint(out, s.size());
  out->append(s);
}

// Consume from the front of `*in`; false if it is truncated or malformed.
inline bool GetVarint(std::string_view* in, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && !in->empty(); shift += 7) {
    auto b = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

inline bool GetLengthPrefixed(std::string_view* in, std::string* s) {
  uint64_t n;
  if (!GetVarint(in, &n) || n > in->size()) return false;
  s->assign(in->data(), n);
  in->remove_prefix(n);
  return true;
}

}  // namespace sediment::catalog::internal
