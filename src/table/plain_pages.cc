#include "table/plain_pages.h"

#include <arrow/util/type_fwd.h>
#include <fmt/format.h>
#include <parquet/bloom_filter.h>
#include <parquet/schema.h>
#include <parquet/types.h>
#include <zstd.h>

#include <cstring>
#include <tuple>
#include <type_traits>
#include <vector>

#include "table/page_format.h"

namespace sediment::table {
namespace {

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

Result<bool> ForEachPlainPage(std::string_view chunk, const parquet::ColumnDescriptor& column, int codec,
                              const std::function<Status(const PlainPage&)>& each) {
  const bool zstd = codec == arrow::Compression::ZSTD;
  if (!zstd && codec != arrow::Compression::UNCOMPRESSED) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(chunk.data());
  const auto* end = p + chunk.size();
  std::vector<uint8_t> scratch;
  while (p < end) {
    PageHeader h;
    const uint8_t* body = nullptr;
    if (!ReadPageHeader(p, end, &h, &body)) {
      return Status::Invalid(fmt::format("column {}: a malformed page header at byte {}", column.path()->ToDotString(),
                                         p - reinterpret_cast<const uint8_t*>(chunk.data())));
    }
    const bool v2 = h.type == static_cast<int32_t>(parquet::PageType::DATA_PAGE_V2);
    if ((!v2 && h.type != static_cast<int32_t>(parquet::PageType::DATA_PAGE)) ||
        h.encoding != static_cast<int32_t>(parquet::Encoding::PLAIN)) {
      return false;
    }
    p = body + h.compressed;
    PlainPage page;
    page.num_values = h.num_values;
    // Data page v2: the levels come first, uncompressed; only the values are compressed.
    const int64_t levels = v2 ? int64_t{h.repetition_bytes} + h.definition_bytes : 0;
    if (v2) {
      page.num_nulls = h.num_nulls;
      page.levels = body + h.repetition_bytes;
      page.levels_size = static_cast<size_t>(h.definition_bytes);
    }
    const uint8_t* data = body + levels;
    const int64_t size = h.uncompressed - levels;
    if (size > 0 && zstd && (!v2 || h.is_compressed)) {
      ZSTD_DCtx* ctx = ThreadContext();
      if (ctx == nullptr) return false;
      scratch.resize(static_cast<size_t>(size));
      const size_t n =
          ZSTD_decompressDCtx(ctx, scratch.data(), scratch.size(), data, static_cast<size_t>(h.compressed - levels));
      if (ZSTD_isError(n) || n != scratch.size()) {
        return Status::Invalid(fmt::format("column {}: a page does not decompress", column.path()->ToDotString()));
      }
      data = scratch.data();
    } else if (size > 0 && h.uncompressed != h.compressed) {
      return false;
    }
    page.values = data;
    page.values_end = data + size;
    // Data page v1: repetition levels, then definition levels, each RLE with a 4-byte length.
    for (auto [max_level, encoding, definition] :
         {std::tuple{column.max_repetition_level(), h.repetition_encoding, false},
          std::tuple{column.max_definition_level(), h.definition_encoding, true}}) {
      if (v2 || max_level == 0) continue;
      if (encoding != static_cast<int32_t>(parquet::Encoding::RLE) || page.values_end - page.values < 4) return false;
      uint32_t n;
      std::memcpy(&n, page.values, 4);
      if (static_cast<size_t>(page.values_end - page.values - 4) < n) return false;
      if (definition) {
        page.levels = page.values + 4;
        page.levels_size = n;
      }
      page.values += 4 + n;
    }
    ARROW_RETURN_NOT_OK(each(page));
  }
  return true;
}

Result<bool> HashPlainValues(std::string_view chunk, const parquet::ColumnDescriptor& column, int codec,
                             parquet::BloomFilter* filter) {
  std::vector<uint64_t> hashes;
  bool handled = true;
  ARROW_ASSIGN_OR_RAISE(bool whole, ForEachPlainPage(chunk, column, codec, [&](const PlainPage& page) {
                          if (handled && page.values < page.values_end) {
                            handled = HashValues(page.values, page.values_end, column, filter, &hashes);
                          }
                          return Status::OK();
                        }));
  return whole && handled;
}

Result<bool> HashDictionaryPage(std::string_view chunk, const parquet::ColumnDescriptor& column, int codec,
                                parquet::BloomFilter* filter) {
  const bool zstd = codec == arrow::Compression::ZSTD;
  if (!zstd && codec != arrow::Compression::UNCOMPRESSED) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(chunk.data());
  PageHeader h;
  const uint8_t* body = nullptr;
  if (!ReadPageHeader(p, p + chunk.size(), &h, &body)) {
    return Status::Invalid(fmt::format("column {}: a malformed dictionary page header", column.path()->ToDotString()));
  }
  if (h.type != static_cast<int32_t>(parquet::PageType::DICTIONARY_PAGE) ||
      (h.encoding != static_cast<int32_t>(parquet::Encoding::PLAIN) &&
       h.encoding != static_cast<int32_t>(parquet::Encoding::PLAIN_DICTIONARY))) {
    return false;
  }
  std::vector<uint8_t> page;
  const uint8_t* values = body;
  if (zstd && h.uncompressed > 0) {
    ZSTD_DCtx* ctx = ThreadContext();
    if (ctx == nullptr) return false;
    page.resize(static_cast<size_t>(h.uncompressed));
    const size_t n = ZSTD_decompressDCtx(ctx, page.data(), page.size(), body, static_cast<size_t>(h.compressed));
    if (ZSTD_isError(n) || n != page.size()) {
      return Status::Invalid(
          fmt::format("column {}: a dictionary page does not decompress", column.path()->ToDotString()));
    }
    values = page.data();
  } else if (h.uncompressed != h.compressed) {
    return false;
  }
  std::vector<uint64_t> hashes;
  return HashValues(values, values + h.uncompressed, column, filter, &hashes);
}

}  // namespace sediment::table
