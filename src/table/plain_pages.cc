#include "table/plain_pages.h"

#include <arrow/util/type_fwd.h>
#include <fmt/format.h>
#include <parquet/bloom_filter.h>
#include <parquet/schema.h>
#include <parquet/types.h>
#include <zstd.h>

#include <cstring>
#include <type_traits>
#include <vector>

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

struct PageHeader {
  int32_t type = -1;  // parquet::PageType
  int64_t uncompressed = -1, compressed = -1;
  int32_t encoding = -1, definition_encoding = -1, repetition_encoding = -1;
};

PageHeader ReadPageHeader(CompactReader* r) {
  PageHeader h;
  int16_t id = 0;
  uint8_t type = 0;
  while (r->Field(&id, &type)) {
    if (id == 1 && type == 5) {
      h.type = static_cast<int32_t>(r->ZigZag());
    } else if (id == 2 && type == 5) {
      h.uncompressed = r->ZigZag();
    } else if (id == 3 && type == 5) {
      h.compressed = r->ZigZag();
    } else if (id == 5 && type == 12) {  // DataPageHeader
      int16_t sid = 0;
      uint8_t st = 0;
      while (r->Field(&sid, &st)) {
        if (sid == 2 && st == 5) {
          h.encoding = static_cast<int32_t>(r->ZigZag());
        } else if (sid == 3 && st == 5) {
          h.definition_encoding = static_cast<int32_t>(r->ZigZag());
        } else if (sid == 4 && st == 5) {
          h.repetition_encoding = static_cast<int32_t>(r->ZigZag());
        } else {
          r->Skip(st);
        }
      }
    } else {
      r->Skip(type);
    }
  }
  return h;
}

// One zstd context per thread, for every page it decompresses.
ZSTD_DCtx* ThreadContext() {
  struct Holder {
    ZSTD_DCtx* ctx = ZSTD_createDCtx();
    ~Holder() { ZSTD_freeDCtx(ctx); }
  };
  thread_local Holder holder;
  return holder.ctx;  // null if it could not be made: the caller reads through Arrow
}

// Hashes PLAIN values of a fixed-width physical type T in [p, end).
template <typename T>
bool HashFixed(const uint8_t* p, const uint8_t* end, parquet::BloomFilter* filter, std::vector<uint64_t>* hashes) {
  if ((end - p) % sizeof(T) != 0) return false;
  for (; p < end; p += sizeof(T)) {
    T x;
    std::memcpy(&x, p, sizeof(T));
    if constexpr (std::is_same_v<T, parquet::Int96>) {
      hashes->push_back(filter->Hash(&x));
    } else {
      hashes->push_back(filter->Hash(x));
    }
  }
  return true;
}

// Hashes the PLAIN values in [p, end) of a column of `column`'s type.
bool HashValues(const uint8_t* p, const uint8_t* end, const parquet::ColumnDescriptor& column,
                parquet::BloomFilter* filter, std::vector<uint64_t>* hashes) {
  hashes->clear();
  bool ok = false;
  switch (column.physical_type()) {
    case parquet::Type::INT32:
      ok = HashFixed<int32_t>(p, end, filter, hashes);
      break;
    case parquet::Type::INT64:
      ok = HashFixed<int64_t>(p, end, filter, hashes);
      break;
    case parquet::Type::FLOAT:
      ok = HashFixed<float>(p, end, filter, hashes);
      break;
    case parquet::Type::DOUBLE:
      ok = HashFixed<double>(p, end, filter, hashes);
      break;
    case parquet::Type::INT96:
      ok = HashFixed<parquet::Int96>(p, end, filter, hashes);
      break;
    case parquet::Type::FIXED_LEN_BYTE_ARRAY: {
      const int width = column.type_length();
      if (width <= 0 || (end - p) % width != 0) return false;
      for (const uint8_t* v = p; v < end; v += width) {
        parquet::FLBA x(v);
        hashes->push_back(filter->Hash(&x, static_cast<uint32_t>(width)));
      }
      ok = true;
      break;
    }
    case parquet::Type::BYTE_ARRAY: {
      ok = true;
      for (const uint8_t* v = p; v < end;) {
        uint32_t n;
        if (end - v < 4) return false;
        std::memcpy(&n, v, 4);
        v += 4;
        if (static_cast<size_t>(end - v) < n) return false;
        parquet::ByteArray x(n, v);
        hashes->push_back(filter->Hash(&x));
        v += n;
      }
      break;
    }
    default:
      return false;  // booleans have no bloom filter
  }
  if (ok && !hashes->empty()) filter->InsertHashes(hashes->data(), static_cast<int>(hashes->size()));
  return ok;
}

}  // namespace

Result<bool> HashPlainValues(std::string_view chunk, const parquet::ColumnDescriptor& column, int codec,
                             parquet::BloomFilter* filter) {
  const bool zstd = codec == arrow::Compression::ZSTD;
  if (!zstd && codec != arrow::Compression::UNCOMPRESSED) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(chunk.data());
  const auto* end = p + chunk.size();
  std::vector<uint8_t> page;
  std::vector<uint64_t> hashes;
  while (p < end) {
    CompactReader r(p, end);
    const PageHeader h = ReadPageHeader(&r);
    // A page's stated sizes must fit what is there (and be sane: a header is
    // not trusted to size an allocation of gigabytes).
    constexpr int64_t kMaxPageBytes = int64_t{1} << 30;
    if (!r.ok() || h.compressed < 0 || h.uncompressed < 0 || h.uncompressed > kMaxPageBytes ||
        h.compressed > end - r.position()) {
      return Status::Invalid(fmt::format("column {}: a malformed page header at byte {}", column.path()->ToDotString(),
                                         p - reinterpret_cast<const uint8_t*>(chunk.data())));
    }
    if (h.type != static_cast<int32_t>(parquet::PageType::DATA_PAGE) ||
        h.encoding != static_cast<int32_t>(parquet::Encoding::PLAIN)) {
      return false;
    }
    const uint8_t* body = r.position();
    p = body + h.compressed;
    const uint8_t* data = body;
    if (zstd) {
      ZSTD_DCtx* ctx = ThreadContext();
      if (ctx == nullptr) return false;
      page.resize(static_cast<size_t>(h.uncompressed));
      const size_t n =
          ZSTD_decompressDCtx(ThreadContext(), page.data(), page.size(), body, static_cast<size_t>(h.compressed));
      if (ZSTD_isError(n) || n != page.size()) {
        return Status::Invalid(fmt::format("column {}: a page does not decompress", column.path()->ToDotString()));
      }
      data = page.data();
    } else if (h.uncompressed != h.compressed) {
      return false;
    }
    const uint8_t* values = data;
    const uint8_t* values_end = data + h.uncompressed;
    // Data page v1: repetition levels, then definition levels, each RLE with a 4-byte length.
    for (auto [max_level, encoding] : {std::pair{column.max_repetition_level(), h.repetition_encoding},
                                       std::pair{column.max_definition_level(), h.definition_encoding}}) {
      if (max_level == 0) continue;
      if (encoding != static_cast<int32_t>(parquet::Encoding::RLE) || values_end - values < 4) return false;
      uint32_t n;
      std::memcpy(&n, values, 4);
      if (static_cast<size_t>(values_end - values - 4) < n) return false;
      values += 4 + n;
    }
    if (!HashValues(values, values_end, column, filter, &hashes)) return false;
  }
  return true;
}

}  // namespace sediment::table
