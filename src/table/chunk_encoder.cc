#include "table/chunk_encoder.h"

#include <arrow/api.h>
#include <fmt/format.h>
#include <parquet/schema.h>
#include <parquet/statistics.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "table/chunk_values_internal.h"
#include "table/page_format.h"
#include "table/plain_decode.h"

namespace sediment::table {
namespace chunk_encoding {

Result<Values> ViewOf(const arrow::Array& array, const parquet::ColumnDescriptor& column) {
  const int width = PlainWidth(column, *array.type());
  if (width < 0) {
    return Status::Invalid(
        fmt::format("column {}: {} is not a type the chunk encoder handles", column.name(), array.type()->ToString()));
  }
  Values v;
  v.array = &array;
  v.width = width;
  v.nulls = array.null_count() > 0;
  const auto& data = *array.data();
  if (width > 0) {
    v.fixed = data.buffers[1]->data() + array.offset() * width;
  } else {
    v.offsets = data.GetValues<int32_t>(1);
    v.data = data.buffers[2] ? data.buffers[2]->data() : nullptr;
  }
  return v;
}

// Arrow's statistics of values [from, from + count) added to `page`.
void UpdateStatistics(const arrow::Array& array, const Values& v, int64_t from, int64_t count,
                      parquet::Statistics* page) {
  const auto slice = array.Slice(from, count);
  const int64_t nulls = slice->null_count();
  const uint8_t* bits = array.null_bitmap_data();
  const int64_t bits_at = array.offset() + from;
  auto numeric = [&](auto* stats, const auto* values) {
    if (nulls == 0) {
      stats->Update(values + from, count, 0);
    } else {
      stats->UpdateSpaced(values + from, bits, bits_at, count, count - nulls, nulls);
    }
  };
  switch (page->physical_type()) {
    case parquet::Type::INT32:
      numeric(static_cast<parquet::Int32Statistics*>(page), reinterpret_cast<const int32_t*>(v.fixed));
      break;
    case parquet::Type::INT64:
      numeric(static_cast<parquet::Int64Statistics*>(page), reinterpret_cast<const int64_t*>(v.fixed));
      break;
    case parquet::Type::FLOAT:
      numeric(static_cast<parquet::FloatStatistics*>(page), reinterpret_cast<const float*>(v.fixed));
      break;
    case parquet::Type::DOUBLE:
      numeric(static_cast<parquet::DoubleStatistics*>(page), reinterpret_cast<const double*>(v.fixed));
      break;
    case parquet::Type::BYTE_ARRAY:
      static_cast<parquet::ByteArrayStatistics*>(page)->Update(*slice);
      break;
    case parquet::Type::FIXED_LEN_BYTE_ARRAY: {
      std::vector<parquet::FLBA> values(static_cast<size_t>(count));
      for (int64_t k = 0; k < count; ++k) values[k].ptr = v.fixed + (from + k) * v.width;
      auto* stats = static_cast<parquet::FLBAStatistics*>(page);
      if (nulls == 0) {
        stats->Update(values.data(), count, 0);
      } else {
        stats->UpdateSpaced(values.data(), bits, bits_at, count, count - nulls, nulls);
      }
      break;
    }
    default:
      break;
  }
}

// `page` merged into `chunk` (the same column's statistics).
void MergeStatistics(const parquet::Statistics& page, parquet::Statistics* chunk) {
  switch (chunk->physical_type()) {
    case parquet::Type::INT32:
      return static_cast<parquet::Int32Statistics*>(chunk)->Merge(static_cast<const parquet::Int32Statistics&>(page));
    case parquet::Type::INT64:
      return static_cast<parquet::Int64Statistics*>(chunk)->Merge(static_cast<const parquet::Int64Statistics&>(page));
    case parquet::Type::FLOAT:
      return static_cast<parquet::FloatStatistics*>(chunk)->Merge(static_cast<const parquet::FloatStatistics&>(page));
    case parquet::Type::DOUBLE:
      return static_cast<parquet::DoubleStatistics*>(chunk)->Merge(static_cast<const parquet::DoubleStatistics&>(page));
    case parquet::Type::BYTE_ARRAY:
      return static_cast<parquet::ByteArrayStatistics*>(chunk)->Merge(
          static_cast<const parquet::ByteArrayStatistics&>(page));
    case parquet::Type::FIXED_LEN_BYTE_ARRAY:
      return static_cast<parquet::FLBAStatistics*>(chunk)->Merge(static_cast<const parquet::FLBAStatistics&>(page));
    default:
      return;
  }
}

}  // namespace chunk_encoding

using chunk_encoding::Dictionary;
using chunk_encoding::Values;

// How much of a chunk's first data page is compressed first, to see whether it shrinks at all.
constexpr size_t kSampleBytes = 64 << 10;

struct ChunkEncoder::Impl {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  int cctx_level = -1;
  std::string body, levels;
  std::unique_ptr<char[]> packed;  // compressed pages, not zeroed first
  size_t packed_size = 0;
  std::vector<uint32_t> defs;
  std::vector<uint64_t> hashes;          // a bloom filter's, before insertion
  int64_t page_nulls = 0;                // of the last data page
  bool v1_level_prefix = false;          // `body` begins with a v1 page's levels, length first
  bool stored_raw = false;               // the chunk's data pages are not compressed
  bool decided = false;                  // whether the chunk's pages are stored raw is known
  std::vector<uint32_t> stamp, entries;  // a page's distinct dictionary entries
  Dictionary dictionary;

  ~Impl() { ZSTD_freeCCtx(cctx); }

  // `raw` compressed as `how` says, into `compressed` (or left as it is).
  Result<std::string_view> Compress(std::string_view raw, const ChunkEncoding& how);
  // Appends a page: header, then `levels_v2` (uncompressed), then `raw`
  // compressed, or as it is once the chunk's pages are stored raw (a v1
  // body then split into a v2 page's levels and values).
  Status AddPage(const PageHeader& shape, std::string_view levels_v2, std::string_view raw, const ChunkEncoding& how,
                 bool dictionary_page, EncodedChunk* out);
  ChunkSink* sink = nullptr;  // of the chunk being encoded
  void WriteDictionaryValues(const Values& v);
  // Values [from, to) PLAIN (nulls left out), appended to `body`.
  void AppendPlain(const Values& v, int64_t from, int64_t to);
  // The definition levels of rows [from, to) as the hybrid, into `levels`; the nulls among them.
  int64_t EncodeDefs(const Values& v, int64_t from, int64_t to);
  // Rows [from, to) as one data page, dictionary indices of `dict_width`
  // bits (0: PLAIN); `at` is the first's index into the dictionary's indices.
  Status DataPage(const Values& v, int64_t from, int64_t to, int64_t at, int dict_width, bool nullable,
                  const ChunkEncoding& how, EncodedChunk* out);
};

Result<std::string_view> ChunkEncoder::Impl::Compress(std::string_view raw, const ChunkEncoding& how) {
  if (!how.zstd) return raw;
  if (cctx_level != how.zstd_level) {
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, how.zstd_level);
    cctx_level = how.zstd_level;
  }
  const size_t bound = ZSTD_compressBound(raw.size());
  if (packed_size < bound) {
    packed.reset(new char[bound]);
    packed_size = bound;
  }
  const size_t n = ZSTD_compress2(cctx, packed.get(), bound, raw.data(), raw.size());
  if (ZSTD_isError(n)) return Status::IOError(fmt::format("zstd: {}", ZSTD_getErrorName(n)));
  return std::string_view(packed.get(), n);
}

Status ChunkEncoder::Impl::AddPage(const PageHeader& shape, std::string_view levels_v2, std::string_view raw,
                                   const ChunkEncoding& how, bool dictionary_page, EncodedChunk* out) {
  PageHeader h = shape;
  bool v2 = how.data_page_v2 && !dictionary_page;
  std::string_view packed;
  const bool may_store_raw = !dictionary_page && how.zstd && how.min_saving > 0;
  if (may_store_raw && !decided && raw.size() > kSampleBytes) {
    // A large first page's first 64 KiB decide if they shrink by less than
    // half of min_saving: a chunk of hashes or payloads is then not
    // compressed whole only to be stored as it is. Between that and
    // min_saving the whole page decides (values that repeat further apart
    // than the sample, which zstd finds in the whole page).
    ARROW_ASSIGN_OR_RAISE(auto sample, Compress(raw.substr(0, kSampleBytes), how));
    if (static_cast<double>(sample.size()) > kSampleBytes * (1 - how.min_saving / 2)) decided = stored_raw = true;
  }
  if (dictionary_page || !stored_raw) {
    ARROW_ASSIGN_OR_RAISE(packed, Compress(raw, how));
  }
  if (may_store_raw) {
    // The chunk's first data page of 4 KiB or more decides for the rest (its
    // first 64 KiB alone when they barely shrink, above):
    // values that zstd cannot shrink by min_saving (hashes, payloads) are
    // stored as they are, in data pages v2, which say so page by page.
    if (!decided && raw.size() >= 4096) {
      decided = true;
      stored_raw = static_cast<double>(packed.size()) > static_cast<double>(raw.size()) * (1 - how.min_saving);
    }
    if (stored_raw) {
      if (!v2) {  // a v1 page's levels lead its body, length first: v2 keeps them apart
        levels_v2 = v1_level_prefix ? raw.substr(4, levels.size()) : std::string_view();
        raw = raw.substr(v1_level_prefix ? 4 + levels.size() : 0);
        h.definition_bytes = static_cast<int32_t>(levels_v2.size());
        v2 = true;
      }
      packed = raw;
      h.is_compressed = false;
    }
  }
  h.uncompressed = static_cast<int64_t>(levels_v2.size() + raw.size());
  h.compressed = static_cast<int64_t>(levels_v2.size() + packed.size());
  if (h.uncompressed > INT32_MAX || h.compressed > INT32_MAX) return Status::Invalid("a page of more than 2 GiB");
  const std::string header = dictionary_page ? DictionaryPageHeader(h) : v2 ? DataPageV2Header(h) : DataPageV1Header(h);
  const int64_t at = sink->size() - out->offset;
  ARROW_RETURN_NOT_OK(sink->Append(header));
  ARROW_RETURN_NOT_OK(sink->Append(levels_v2));
  ARROW_RETURN_NOT_OK(sink->Append(packed));
  out->size = sink->size() - out->offset;
  out->uncompressed += static_cast<int64_t>(header.size()) + h.uncompressed;
  if (dictionary_page) {
    out->dictionary_bytes = out->size;
  } else {
    out->pages.push_back({at, static_cast<int32_t>(out->size - at), 0});
  }
  return Status::OK();
}

void ChunkEncoder::Impl::AppendPlain(const Values& v, int64_t from, int64_t to) {
  int64_t size = 0;
  for (int64_t i = from; i < to; ++i) size += v.Valid(i) ? v.PlainSize(i) : 0;
  const size_t at = body.size();
  body.resize(at + static_cast<size_t>(size));
  char* p = body.data() + at;
  for (int64_t i = from; i < to; ++i) {
    if (!v.Valid(i)) continue;
    const std::string_view value = v.Get(i);
    if (v.width == 0) {
      const auto len = static_cast<uint32_t>(value.size());
      std::memcpy(p, &len, 4);
      p += 4;
    }
    std::memcpy(p, value.data(), value.size());
    p += value.size();
  }
}

void ChunkEncoder::Impl::WriteDictionaryValues(const Values& v) {
  body.clear();
  body.reserve(static_cast<size_t>(dictionary.bytes));
  for (int64_t i : dictionary.first) v.AppendPlain(i, &body);
}

int64_t ChunkEncoder::Impl::EncodeDefs(const Values& v, int64_t from, int64_t to) {
  levels.clear();
  defs.resize(static_cast<size_t>(to - from));
  int64_t nulls = 0;
  for (int64_t i = from; i < to; ++i) {
    const bool valid = v.Valid(i);
    defs[static_cast<size_t>(i - from)] = valid ? 1 : 0;
    nulls += !valid;
  }
  EncodeHybrid(defs.data(), defs.size(), 1, &levels);
  return nulls;
}

Status ChunkEncoder::Impl::DataPage(const Values& v, int64_t from, int64_t to, int64_t at, int dict_width,
                                    bool nullable, const ChunkEncoding& how, EncodedChunk* out) {
  const int64_t nulls = nullable ? EncodeDefs(v, from, to) : 0;
  page_nulls = nulls;
  const int64_t valid = (to - from) - nulls;
  body.clear();
  v1_level_prefix = nullable && !how.data_page_v2;
  if (v1_level_prefix) {  // v1: the levels lead the page, length first
    const auto n = static_cast<uint32_t>(levels.size());
    body.append(reinterpret_cast<const char*>(&n), 4);
    body += levels;
  }
  if (dict_width > 0) {
    body += static_cast<char>(dict_width);
    EncodeHybrid(dictionary.indices.data() + at, static_cast<size_t>(valid), dict_width, &body);
  } else if (v.width > 0 && nulls == 0) {
    body.append(reinterpret_cast<const char*>(v.fixed + from * v.width), static_cast<size_t>((to - from) * v.width));
  } else {
    AppendPlain(v, from, to);
  }
  PageHeader h;
  h.num_values = static_cast<int32_t>(to - from);
  h.encoding = dict_width > 0 ? parquet::Encoding::RLE_DICTIONARY : parquet::Encoding::PLAIN;
  h.definition_encoding = h.repetition_encoding = parquet::Encoding::RLE;
  h.num_nulls = static_cast<int32_t>(nulls);
  h.num_rows = static_cast<int32_t>(to - from);
  h.definition_bytes = how.data_page_v2 && nullable ? static_cast<int32_t>(levels.size()) : 0;
  h.repetition_bytes = 0;
  h.is_compressed = how.zstd;
  const std::string_view levels_v2 = how.data_page_v2 && nullable ? std::string_view(levels) : std::string_view();
  return AddPage(h, levels_v2, body, how, false, out);
}

namespace chunk_encoding {

// Where the page that starts at row `from` ends: at page_rows rows, or once
// its PLAIN values reach page_bytes.
int64_t PageEnd(const Values& v, int64_t from, int64_t n, bool dict, const ChunkEncoding& how) {
  const int64_t most = std::min(n, from + std::max<int64_t>(1, how.page_rows));
  if (dict) return most;
  if (v.width > 0) return std::min(most, from + std::max<int64_t>(1, how.page_bytes / v.width));
  int64_t to = from, bytes = 0;
  while (to < most && bytes < how.page_bytes) {
    if (v.Valid(to)) bytes += v.PlainSize(to);
    ++to;
  }
  return to;
}

// The size statistics of rows [from, to), `valid` of them not null.
parquet::SizeStatistics PageSizes(const Values& v, const parquet::ColumnDescriptor& column, int64_t from, int64_t to,
                                  int64_t valid) {
  parquet::SizeStatistics s = *parquet::SizeStatistics::Make(&column);
  if (s.definition_level_histogram.size() == 2) {
    s.definition_level_histogram[0] = (to - from) - valid;
    s.definition_level_histogram[1] = valid;
  }
  if (s.unencoded_byte_array_data_bytes) {
    int64_t bytes = 0;
    for (int64_t i = from; i < to; ++i) bytes += v.Valid(i) ? static_cast<int64_t>(v.Get(i).size()) : 0;
    s.unencoded_byte_array_data_bytes = bytes;
  }
  return s;
}

std::shared_ptr<parquet::BloomFilter> BloomOf(const Values& v, const Dictionary* dict, int64_t n,
                                              const ChunkEncoding& how, std::vector<uint64_t>* hashes) {
  auto filter = std::make_shared<parquet::BlockSplitBloomFilter>();
  filter->Init(how.bloom_bytes);
  hashes->clear();
  // Parquet hashes every physical type as XXH64 of its PLAIN bytes (without a length).
  auto add = [&](int64_t i) {
    const std::string_view s = v.Get(i);
    const parquet::ByteArray value(static_cast<uint32_t>(s.size()), reinterpret_cast<const uint8_t*>(s.data()));
    hashes->push_back(filter->Hash(&value));
  };
  if (dict) {
    for (int64_t i : dict->first) add(i);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      if (v.Valid(i)) add(i);
    }
  }
  if (!hashes->empty()) filter->InsertHashes(hashes->data(), static_cast<int>(hashes->size()));
  if (how.bloom_fold) filter->FoldToTargetFpp(how.bloom_fpp);
  return filter;
}

}  // namespace chunk_encoding

Status ChunkSink::Append(std::string_view bytes) {
  const auto n = static_cast<int64_t>(bytes.size());
  if (size_ + n > buffer_->size()) {
    ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> larger,
                          arrow::AllocateBuffer(std::max(2 * buffer_->size(), size_ + n + (1 << 20))));
    std::memcpy(larger->mutable_data(), buffer_->data(), static_cast<size_t>(size_));
    buffer_ = std::move(larger);
  }
  if (n > 0) std::memcpy(buffer_->mutable_data() + size_, bytes.data(), bytes.size());
  size_ += n;
  return Status::OK();
}

using chunk_encoding::BitWidth;
using chunk_encoding::BloomOf;
using chunk_encoding::MergeStatistics;
using chunk_encoding::PageEnd;
using chunk_encoding::PageSizes;
using chunk_encoding::UpdateFromDictionary;
using chunk_encoding::UpdateStatistics;
using chunk_encoding::ViewOf;

ChunkEncoder::ChunkEncoder() : impl_(std::make_unique<Impl>()) {}
ChunkEncoder::~ChunkEncoder() = default;

Result<EncodedChunk> ChunkEncoder::Encode(const arrow::Array& array, const parquet::ColumnDescriptor& column,
                                          const ChunkEncoding& how, ChunkSink* sink) {
  ARROW_ASSIGN_OR_RAISE(const Values v, ViewOf(array, column));
  const bool nullable = column.max_definition_level() == 1;
  if (!nullable && array.null_count() > 0) {
    return Status::Invalid(fmt::format("column {}: nulls in a column that is required", column.name()));
  }
  const int64_t n = array.length();
  Impl& m = *impl_;
  EncodedChunk out;
  out.num_values = n;
  out.offset = sink->size();
  m.sink = sink;
  m.stored_raw = false;
  m.decided = false;
  m.dictionary = Dictionary();
  int dict_width = 0;
  if (how.dictionary_limit > 0 && n > 0 && m.dictionary.Build(v, n, how.dictionary_limit)) {
    dict_width = BitWidth(m.dictionary.first.size());
    m.stamp.assign(m.dictionary.first.size(), 0);
    m.WriteDictionaryValues(v);
    PageHeader h;
    h.num_values = static_cast<int32_t>(m.dictionary.first.size());
    h.encoding = parquet::Encoding::PLAIN;
    ARROW_RETURN_NOT_OK(m.AddPage(h, {}, m.body, how, true, &out));
    out.data_encoding = parquet::Encoding::RLE_DICTIONARY;
  }
  auto chunk_stats = parquet::Statistics::Make(&column);
  out.sizes = *parquet::SizeStatistics::Make(&column);
  int64_t at = 0;  // into the dictionary's indices: non-null values before `from`
  for (int64_t from = 0; from < n;) {
    const int64_t to = PageEnd(v, from, n, dict_width > 0, how);
    ARROW_RETURN_NOT_OK(m.DataPage(v, from, to, at, dict_width, nullable, how, &out));
    out.pages.back().first_row_index = from;
    auto page_stats = parquet::Statistics::Make(&column);
    if (dict_width > 0) {
      UpdateFromDictionary(m.dictionary, at, (to - from) - m.page_nulls, m.page_nulls,
                           static_cast<uint32_t>(out.pages.size()), &m.stamp, &m.entries, page_stats.get());
    } else {
      UpdateStatistics(array, v, from, to - from, page_stats.get());
    }
    out.page_sizes.push_back(PageSizes(v, column, from, to, page_stats->num_values()));
    out.sizes.Merge(out.page_sizes.back());
    parquet::EncodedStatistics encoded = page_stats->Encode();
    encoded.ApplyStatSizeLimits(how.max_statistics_size);
    encoded.all_null_value = page_stats->num_values() == 0;
    out.page_statistics.push_back(std::move(encoded));
    MergeStatistics(*page_stats, chunk_stats.get());
    at += page_stats->num_values();
    from = to;
  }
  out.statistics = chunk_stats->Encode();
  out.statistics.ApplyStatSizeLimits(how.max_statistics_size);
  if (how.bloom_bytes > 0) {
    out.bloom_filter = BloomOf(v, dict_width > 0 ? &m.dictionary : nullptr, n, how, &m.hashes);
  }
  return out;
}

}  // namespace sediment::table
