#include "table/page_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <utility>

namespace sediment::table {
namespace {

// The part of Thrift's compact protocol a page header needs: varints,
// zigzag integers, field headers, and skipping whatever else is there.
class CompactReader {
 public:
  CompactReader(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}

  bool ok() const { return ok_; }
  const uint8_t* position() const { return p_; }

  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return Fail();
      const uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return Fail();
  }
  int64_t ZigZag() {
    const uint64_t v = Varint();
    return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
  }
  // The next field of a struct (its id follows `*id`, the previous one's);
  // false at the struct's end.
  bool Field(int16_t* id, uint8_t* type) {
    if (p_ >= end_) return Fail();
    const uint8_t b = *p_++;
    if (b == 0) return false;
    *type = b & 0x0f;
    const int delta = b >> 4;
    *id = delta ? static_cast<int16_t>(*id + delta) : static_cast<int16_t>(ZigZag());
    return ok_;
  }
  void Skip(uint8_t type, int depth = 0) {
    if (depth > 16) {
      Fail();
      return;
    }
    switch (type) {
      case 1:
      case 2:
        return;  // a boolean field's value is its type
      case 3:
        Advance(1);
        return;
      case 4:
      case 5:
      case 6:
        Varint();
        return;
      case 7:
        Advance(8);
        return;
      case 8:
        Advance(Varint());
        return;
      case 9:
      case 10: {  // list, set
        if (p_ >= end_) {
          Fail();
          return;
        }
        const uint8_t h = *p_++;
        uint64_t n = h >> 4;
        if (n == 15) n = Varint();
        for (uint64_t i = 0; i < n && ok_; ++i) Element(h & 0x0f, depth);
        return;
      }
      case 11: {  // map
        const uint64_t n = Varint();
        if (n == 0) return;
        if (p_ >= end_) {
          Fail();
          return;
        }
        const uint8_t kv = *p_++;
        for (uint64_t i = 0; i < n && ok_; ++i) {
          Element(kv >> 4, depth);
          Element(kv & 0x0f, depth);
        }
        return;
      }
      case 12: {
        int16_t id = 0;
        uint8_t t = 0;
        while (ok_ && Field(&id, &t)) Skip(t, depth + 1);
        return;
      }
      default:
        Fail();
    }
  }

 private:
  uint64_t Fail() {
    ok_ = false;
    p_ = end_;
    return 0;
  }
  void Advance(uint64_t n) {
    if (n > static_cast<uint64_t>(end_ - p_)) {
      Fail();
      return;
    }
    p_ += n;
  }
  // In a container a boolean is a byte.
  void Element(uint8_t type, int depth) {
    if (type == 1 || type == 2) {
      Advance(1);
    } else {
      Skip(type, depth + 1);
    }
  }

  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

// Writes the fields of structs in Thrift's compact protocol (what a page
// header needs: i32, bool, nested structs).
class CompactWriter {
 public:
  void I32(int16_t id, int32_t v) {
    FieldHeader(id, 5);
    Varint((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31));
  }
  void Bool(int16_t id, bool v) { FieldHeader(id, v ? 1 : 2); }
  void BeginStruct(int16_t id) {
    FieldHeader(id, 12);
    outer_.push_back(last_);
    last_ = 0;
  }
  void EndStruct() {
    out_ += '\0';
    last_ = outer_.empty() ? 0 : outer_.back();
    if (!outer_.empty()) outer_.pop_back();
  }
  std::string Finish() {
    out_ += '\0';
    return std::move(out_);
  }

 private:
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      out_ += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    out_ += static_cast<char>(v);
  }
  void FieldHeader(int16_t id, uint8_t type) {
    const int delta = id - last_;
    if (delta > 0 && delta <= 15) {
      out_ += static_cast<char>((delta << 4) | type);
    } else {
      out_ += static_cast<char>(type);
      Varint((static_cast<uint32_t>(id) << 1) ^ static_cast<uint32_t>(id >> 15));
    }
    last_ = id;
  }

  std::string out_;
  int16_t last_ = 0;
  std::vector<int16_t> outer_;
};

// Parquet's PageType and field ids (parquet.thrift).
constexpr int32_t kDataPage = 0, kDictionaryPage = 2, kDataPageV2 = 3;

// Reads a struct's fields: the i32 fields listed go to their targets; `other`
// is offered the rest and returns false for those it does not take (skipped).
template <typename Other>
void ReadStruct(CompactReader* r, std::initializer_list<std::pair<int16_t, int32_t*>> i32s, Other other) {
  int16_t id = 0;
  uint8_t type = 0;
  while (r->Field(&id, &type)) {
    int32_t* target = nullptr;
    for (const auto& [field, into] : i32s) {
      if (field == id) target = into;
    }
    if (target != nullptr && type == 5) {
      *target = static_cast<int32_t>(r->ZigZag());
    } else if (!other(id, type)) {
      r->Skip(type);
    }
  }
}

void ReadDataPageV1(CompactReader* r, PageHeader* h) {
  ReadStruct(r, {{1, &h->num_values}, {2, &h->encoding}, {3, &h->definition_encoding}, {4, &h->repetition_encoding}},
             [](int16_t, uint8_t) { return false; });
}

void ReadDictionaryPage(CompactReader* r, PageHeader* h) {
  ReadStruct(r, {{1, &h->num_values}, {2, &h->encoding}}, [](int16_t, uint8_t) { return false; });
}

void ReadDataPageV2(CompactReader* r, PageHeader* h) {
  ReadStruct(r,
             {{1, &h->num_values},
              {2, &h->num_nulls},
              {3, &h->num_rows},
              {4, &h->encoding},
              {5, &h->definition_bytes},
              {6, &h->repetition_bytes}},
             [h](int16_t id, uint8_t type) {
               if (id != 7 || (type != 1 && type != 2)) return false;
               h->is_compressed = type == 1;  // a compact boolean's value is its type
               return true;
             });
}

}  // namespace

bool ReadPageHeader(const uint8_t* p, const uint8_t* end, PageHeader* header, const uint8_t** body) {
  CompactReader r(p, end);
  PageHeader h;
  int16_t id = 0;
  uint8_t type = 0;
  while (r.Field(&id, &type)) {
    if (id == 1 && type == 5) {
      h.type = static_cast<int32_t>(r.ZigZag());
    } else if (id == 2 && type == 5) {
      h.uncompressed = r.ZigZag();
    } else if (id == 3 && type == 5) {
      h.compressed = r.ZigZag();
    } else if (id == 5 && type == 12) {
      ReadDataPageV1(&r, &h);
    } else if (id == 7 && type == 12) {
      ReadDictionaryPage(&r, &h);
    } else if (id == 8 && type == 12) {
      ReadDataPageV2(&r, &h);
    } else {
      r.Skip(type);
    }
  }
  if (!r.ok() || h.compressed < 0 || h.uncompressed < 0 || h.uncompressed > kMaxPageBytes ||
      h.compressed > end - r.position()) {
    return false;
  }
  if (h.type == kDataPageV2) {
    // Its levels lie in front of the values, uncompressed: within both sizes.
    if (h.num_values < 0 || h.num_nulls < 0 || h.num_nulls > h.num_values || h.num_rows < 0 || h.definition_bytes < 0 ||
        h.repetition_bytes < 0 ||
        int64_t{h.definition_bytes} + h.repetition_bytes > std::min(h.compressed, h.uncompressed)) {
      return false;
    }
  } else if (h.type == kDataPage && h.num_values < 0) {
    return false;
  }
  *header = h;
  *body = r.position();
  return true;
}

std::string DataPageV1Header(const PageHeader& h) {
  CompactWriter w;
  w.I32(1, kDataPage);
  w.I32(2, static_cast<int32_t>(h.uncompressed));
  w.I32(3, static_cast<int32_t>(h.compressed));
  w.BeginStruct(5);
  w.I32(1, h.num_values);
  w.I32(2, h.encoding);
  w.I32(3, h.definition_encoding);
  w.I32(4, h.repetition_encoding);
  w.EndStruct();
  return w.Finish();
}

std::string DictionaryPageHeader(const PageHeader& h) {
  CompactWriter w;
  w.I32(1, kDictionaryPage);
  w.I32(2, static_cast<int32_t>(h.uncompressed));
  w.I32(3, static_cast<int32_t>(h.compressed));
  w.BeginStruct(7);
  w.I32(1, h.num_values);
  w.I32(2, h.encoding);
  w.EndStruct();
  return w.Finish();
}

std::string DataPageV2Header(const PageHeader& h) {
  CompactWriter w;
  w.I32(1, kDataPageV2);
  w.I32(2, static_cast<int32_t>(h.uncompressed));
  w.I32(3, static_cast<int32_t>(h.compressed));
  w.BeginStruct(8);
  w.I32(1, h.num_values);
  w.I32(2, h.num_nulls);
  w.I32(3, h.num_rows);
  w.I32(4, h.encoding);
  w.I32(5, h.definition_bytes);
  w.I32(6, h.repetition_bytes);
  w.Bool(7, h.is_compressed);
  w.EndStruct();
  return w.Finish();
}

int LevelBitWidth(int16_t max_level) {
  int width = 0;
  while ((1 << width) <= max_level) ++width;
  return width;
}

Status DecodeLevels(const uint8_t* p, size_t size, int16_t max_level, int64_t count, std::vector<int16_t>* out) {
  const uint8_t* end = p + size;
  const int width = LevelBitWidth(max_level);
  if (width == 0) {  // every level is 0 and takes no bits
    out->insert(out->end(), static_cast<size_t>(count), int16_t{0});
    return Status::OK();
  }
  const int value_bytes = (width + 7) / 8;
  auto bad = [&](const char* why) {
    return Status::Invalid(fmt::format("levels (at most {}): {} at byte {} of {}", max_level, why,
                                       size - static_cast<size_t>(end - p), size));
  };
  int64_t left = count;
  while (left > 0) {
    uint64_t run = 0;
    for (int shift = 0;; shift += 7) {
      if (p >= end || shift > 56) return bad("a run header past the end");
      const uint8_t b = *p++;
      run |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    if (run & 1) {  // bit-packed: groups of eight levels, lowest bits first
      const uint64_t groups = run >> 1;
      if (groups == 0 || groups > static_cast<uint64_t>(end - p) / static_cast<uint64_t>(width))
        return bad("a short bit-packed run");
      const uint64_t n = groups * 8;
      for (uint64_t i = 0; i < n && left > 0; ++i, --left) {
        uint32_t v = 0;
        for (int b = 0; b < width; ++b) {
          const uint64_t bit = i * width + b;
          v |= static_cast<uint32_t>((p[bit / 8] >> (bit % 8)) & 1) << b;
        }
        if (v > static_cast<uint32_t>(max_level)) return bad("a level above the maximum");
        out->push_back(static_cast<int16_t>(v));
      }
      p += groups * width;
    } else {  // a repeated level
      const uint64_t n = run >> 1;
      if (n == 0 || end - p < value_bytes) return bad("a short RLE run");
      uint32_t v = 0;
      for (int b = 0; b < value_bytes; ++b) v |= static_cast<uint32_t>(p[b]) << (8 * b);
      p += value_bytes;
      if (v > static_cast<uint32_t>(max_level)) return bad("a level above the maximum");
      const int64_t take = static_cast<int64_t>(std::min<uint64_t>(n, static_cast<uint64_t>(left)));
      out->insert(out->end(), static_cast<size_t>(take), static_cast<int16_t>(v));
      left -= take;
    }
  }
  return Status::OK();
}

namespace {

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    *out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *out += static_cast<char>(v);
}

// Bit-packs values [begin, begin + n) (n a multiple of 8; values past
// `count` are zeros), at most 63 groups a run as Arrow does: each value's
// bits, lowest first, into a 64-bit accumulator flushed a byte at a time.
template <typename T>
void PutBitPacked(const T* values, size_t count, size_t begin, size_t n, int width, std::string* out) {
  for (size_t at = 0; at < n;) {
    const size_t groups = std::min<size_t>((n - at) / 8, 63);
    PutVarint((groups << 1) | 1, out);
    uint64_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < groups * 8; ++i) {
      const size_t k = begin + at + i;
      const uint64_t v = k < count ? static_cast<uint64_t>(static_cast<uint32_t>(values[k])) : 0;
      acc |= v << bits;
      bits += width;
      while (bits >= 8) {
        *out += static_cast<char>(acc & 0xff);
        acc >>= 8;
        bits -= 8;
      }
    }
    // groups * 8 values of `width` bits fill whole bytes: nothing is left.
    at += groups * 8;
  }
}

// The RLE/bit-packed hybrid of values[0, n), each of `width` bits: runs of
// eight or more equal values as RLE runs, the rest bit-packed.
template <typename T>
void EncodeHybridOf(const T* values, size_t n, int width, std::string* out) {
  const int value_bytes = (width + 7) / 8;
  size_t literal = 0;  // where the values waiting to be bit-packed begin
  size_t i = 0;
  while (i < n) {
    size_t run = 1;
    while (i + run < n && values[i + run] == values[i]) ++run;
    // A run of eight or more becomes an RLE run once the values before it
    // fill whole groups of eight; the first few of it may complete a group.
    const size_t pending = i - literal;
    const size_t fill = pending % 8 == 0 ? 0 : 8 - pending % 8;
    if (run >= 8 + fill) {
      if (pending + fill > 0) PutBitPacked(values, n, literal, pending + fill, width, out);
      const size_t repeated = run - fill;
      PutVarint(static_cast<uint64_t>(repeated) << 1, out);
      const auto v = static_cast<uint32_t>(values[i]);
      for (int b = 0; b < value_bytes; ++b) *out += static_cast<char>((v >> (8 * b)) & 0xff);
      i += run;
      literal = i;
    } else {
      i += run;
    }
  }
  const size_t pending = n - literal;
  if (pending > 0) PutBitPacked(values, n, literal, (pending + 7) / 8 * 8, width, out);
}

}  // namespace

void EncodeLevels(const std::vector<int16_t>& levels, int16_t max_level, std::string* out) {
  EncodeHybridOf(levels.data(), levels.size(), LevelBitWidth(max_level), out);
}

void EncodeHybrid(const uint32_t* values, size_t n, int width, std::string* out) {
  EncodeHybridOf(values, n, width, out);
}

}  // namespace sediment::table
