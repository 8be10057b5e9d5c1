// Row groups encoded column by column (columnwise_encode.h, chunk_encoder.h)
// against what Arrow's own writer makes of the same rows: the same values
// read back by Arrow, the same statistics and page bounds, bloom filters
// that find every value; dictionary and PLAIN, data pages v1 and v2.
#include "table/chunk_encoder.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/page_index.h>
#include <parquet/properties.h>
#include <parquet/schema.h>

#include <random>

#include "table/columnwise_encode.h"
#include "table/page_format.h"
#include "table/parquet_assembler.h"

namespace sediment::table {
namespace {

// Every type the encoder takes, nullable and not, nulls in places; values
// that repeat in runs (block), repeat out of order (day, hash) and never (name).
std::shared_ptr<arrow::Table> Rows(int64_t rows) {
  arrow::Int64Builder block;
  arrow::Int32Builder index;
  arrow::DoubleBuilder price;
  arrow::FloatBuilder ratio;
  arrow::Date32Builder day;
  arrow::BinaryBuilder data;
  arrow::StringBuilder name;
  arrow::FixedSizeBinaryBuilder hash(arrow::fixed_size_binary(3));
  for (int64_t i = 0; i < rows; ++i) {
    EXPECT_TRUE(block.Append(1000 + i / 37).ok());
    EXPECT_TRUE((i % 4 == 0 ? index.AppendNull() : index.Append(static_cast<int32_t>(i * 3 - 500))).ok());
    const double p = i % 11 == 0 ? -0.0 : static_cast<double>(i) / 7 - 30;
    EXPECT_TRUE((i % 5 == 0 ? price.AppendNull() : price.Append(p)).ok());
    EXPECT_TRUE(ratio.Append(i % 13 == 0 ? std::nanf("") : static_cast<float>(i) / 3).ok());
    EXPECT_TRUE(day.Append(static_cast<int32_t>((i * 7919) % 301)).ok());
    EXPECT_TRUE((i % 3 == 0 || (i >= 300 && i < 500)
                     ? data.AppendNull()
                     : data.Append(std::string(static_cast<size_t>(i % 17), 'a' + i % 26)))
                    .ok());
    EXPECT_TRUE(name.Append("n" + std::to_string(i * 7)).ok());
    const char bytes[3] = {static_cast<char>((i * 31) % 97), static_cast<char>(0xf0), 7};
    EXPECT_TRUE((i % 7 == 0 ? hash.AppendNull() : hash.Append(bytes)).ok());
  }
  auto schema =
      arrow::schema({arrow::field("block", arrow::int64(), false), arrow::field("index", arrow::int32()),
                     arrow::field("price", arrow::float64()), arrow::field("ratio", arrow::float32(), false),
                     arrow::field("day", arrow::date32()), arrow::field("data", arrow::binary()),
                     arrow::field("name", arrow::utf8(), false), arrow::field("hash", arrow::fixed_size_binary(3))});
  return arrow::Table::Make(schema, {*block.Finish(), *index.Finish(), *price.Finish(), *ratio.Finish(), *day.Finish(),
                                     *data.Finish(), *name.Finish(), *hash.Finish()});
}

std::shared_ptr<parquet::WriterProperties> Props(bool v2, int64_t dictionary_limit, int64_t page_rows = 128) {
  parquet::WriterProperties::Builder b;
  b.compression(arrow::Compression::ZSTD)->max_rows_per_page(page_rows)->enable_write_page_index()->enable_statistics();
  b.dictionary_pagesize_limit(dictionary_limit);
  if (v2) b.data_page_version(parquet::ParquetDataPageVersion::V2);
  parquet::BloomFilterOptions bloom;
  bloom.ndv = 1000;
  bloom.fpp = 0.01;
  b.enable_bloom_filter("block", bloom)->enable_bloom_filter("data", bloom)->enable_bloom_filter("hash", bloom);
  return b.build();
}

std::shared_ptr<arrow::Buffer> WithArrow(const arrow::Table& table,
                                         const std::shared_ptr<parquet::WriterProperties>& props,
                                         int64_t rows_per_group) {
  auto sink = *arrow::io::BufferOutputStream::Create();
  auto arrow_props = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  EXPECT_TRUE(
      parquet::arrow::WriteTable(table, arrow::default_memory_pool(), sink, rows_per_group, props, arrow_props).ok());
  return *sink->Finish();
}

std::shared_ptr<arrow::Buffer> Columnwise(const std::shared_ptr<arrow::Table>& table,
                                          const std::shared_ptr<parquet::WriterProperties>& props,
                                          int64_t rows_per_group, int64_t room,
                                          double min_saving = kMinCompressionSaving) {
  auto descr = *ParquetSchemaFor(*table->schema(), *props);
  auto column = [&](int c) -> Result<std::shared_ptr<arrow::Array>> {
    return arrow::Concatenate(table->column(c)->chunks());
  };
  // One encoder for every test: its scratch, kept from call to call, must not leak into the next chunk.
  static ChunkEncoder encoder;
  auto groups = EncodeColumnwise(*descr, props, table->num_rows(), rows_per_group, column, *arrow::AllocateBuffer(room),
                                 &encoder, min_saving);
  EXPECT_TRUE(groups.ok()) << groups.status().ToString();
  auto sink = *arrow::io::BufferOutputStream::Create();
  auto assembler = *ParquetAssembler::Open(sink, table->schema(), props);
  for (const auto& rg : *groups) EXPECT_TRUE(assembler->Append(rg).ok());
  EXPECT_TRUE(assembler->Finish(nullptr).ok());
  return *sink->Finish();
}

std::unique_ptr<parquet::ParquetFileReader> Open(const std::shared_ptr<arrow::Buffer>& file) {
  return parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(file));
}

std::shared_ptr<arrow::Table> Read(const std::shared_ptr<arrow::Buffer>& file) {
  parquet::ArrowReaderProperties props;
  auto reader = parquet::arrow::FileReader::Make(arrow::default_memory_pool(), Open(file), props);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  auto t = (*reader)->ReadTable();
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return *t;
}

// The same values (NaN equal to NaN), whatever the chunking.
bool SameRows(const arrow::Table& a, const arrow::Table& b) {
  if (a.num_columns() != b.num_columns() || a.num_rows() != b.num_rows()) return false;
  for (int c = 0; c < a.num_columns(); ++c) {
    if (!a.column(c)->Equals(*b.column(c), arrow::EqualOptions::Defaults().nans_equal(true))) return false;
  }
  return true;
}

// Whether Arrow's writer dropped the chunk's dictionary part of the way.
bool Fallback(const parquet::ColumnChunkMetaData& cc) {
  bool plain = false;
  for (const auto& e : cc.encoding_stats()) {
    plain |= e.page_type != parquet::PageType::DICTIONARY_PAGE && e.encoding == parquet::Encoding::PLAIN;
  }
  return cc.has_dictionary_page() && plain;
}

// Statistics, page bounds and null counts of `ours` equal Arrow's in `theirs`
// chunk by chunk; every value of a bloom-filtered column is found.
void ExpectSameIndexes(const std::shared_ptr<arrow::Buffer>& ours, const std::shared_ptr<arrow::Buffer>& theirs,
                       const arrow::Table& table) {
  auto a = Open(ours), b = Open(theirs);
  ASSERT_EQ(a->metadata()->num_row_groups(), b->metadata()->num_row_groups());
  for (int g = 0; g < a->metadata()->num_row_groups(); ++g) {
    auto ra = a->metadata()->RowGroup(g), rb = b->metadata()->RowGroup(g);
    for (int c = 0; c < ra->num_columns(); ++c) {
      SCOPED_TRACE(table.schema()->field(c)->name() + " in row group " + std::to_string(g));
      auto sa = ra->ColumnChunk(c)->encoded_statistics(), sb = rb->ColumnChunk(c)->encoded_statistics();
      ASSERT_TRUE(sa && sb);
      EXPECT_EQ(sa->has_min, sb->has_min);
      EXPECT_EQ(sa->min(), sb->min());
      EXPECT_EQ(sa->max(), sb->max());
      EXPECT_EQ(sa->null_count, sb->null_count);
      // Arrow's writer keeps a dictionary that outgrew its limit in front of
      // PLAIN pages; ours drops it: the same only while it fits.
      if (!rb->ColumnChunk(c)->encoding_stats().empty() && !Fallback(*rb->ColumnChunk(c))) {
        EXPECT_EQ(ra->ColumnChunk(c)->has_dictionary_page(), rb->ColumnChunk(c)->has_dictionary_page());
      }
      auto ca = a->GetPageIndexReader()->RowGroup(g)->GetColumnIndex(c);
      auto cb = b->GetPageIndexReader()->RowGroup(g)->GetColumnIndex(c);
      ASSERT_TRUE(ca && cb);
      EXPECT_EQ(ca->null_pages(), cb->null_pages());
      EXPECT_EQ(ca->encoded_min_values(), cb->encoded_min_values());
      EXPECT_EQ(ca->encoded_max_values(), cb->encoded_max_values());
      EXPECT_EQ(ca->null_counts(), cb->null_counts());
      EXPECT_EQ(ca->definition_level_histograms(), cb->definition_level_histograms());
      auto za = ra->ColumnChunk(c)->size_statistics(), zb = rb->ColumnChunk(c)->size_statistics();
      ASSERT_EQ(za != nullptr, zb != nullptr);
      if (za) {
        EXPECT_EQ(za->definition_level_histogram, zb->definition_level_histogram);
        EXPECT_EQ(za->unencoded_byte_array_data_bytes, zb->unencoded_byte_array_data_bytes);
      }
      auto oa = a->GetPageIndexReader()->RowGroup(g)->GetOffsetIndex(c);
      ASSERT_TRUE(oa);
      EXPECT_EQ(oa->page_locations().size(), ca->null_pages().size());
      auto fa = a->GetBloomFilterReader().RowGroup(g)->GetColumnBloomFilter(c);
      auto fb = b->GetBloomFilterReader().RowGroup(g)->GetColumnBloomFilter(c);
      ASSERT_EQ(fa != nullptr, fb != nullptr);
      if (!fa) continue;
      EXPECT_EQ(fa->GetBitsetSize(), fb->GetBitsetSize());
      auto values = table.column(c)->Slice(g * 700, ra->num_rows());
      for (const auto& chunk : values->chunks()) {
        for (int64_t i = 0; i < chunk->length(); ++i) {
          if (chunk->IsNull(i)) continue;
          std::string_view v;
          int64_t n = 0;
          if (chunk->type_id() == arrow::Type::INT64) {
            n = static_cast<const arrow::Int64Array&>(*chunk).Value(i);
            v = std::string_view(reinterpret_cast<const char*>(&n), 8);
          } else if (chunk->type_id() == arrow::Type::FIXED_SIZE_BINARY) {
            v = static_cast<const arrow::FixedSizeBinaryArray&>(*chunk).GetView(i);
          } else {
            v = static_cast<const arrow::BinaryArray&>(*chunk).GetView(i);
          }
          parquet::ByteArray ba(static_cast<uint32_t>(v.size()), reinterpret_cast<const uint8_t*>(v.data()));
          EXPECT_TRUE(fa->FindHash(fa->Hash(&ba))) << i;
        }
      }
    }
  }
}

class ColumnwiseTest : public testing::TestWithParam<std::tuple<bool, int64_t>> {};

TEST_P(ColumnwiseTest, RowsReadBackWithArrowsStatisticsPageIndexAndBlooms) {
  const auto [v2, dictionary_limit] = GetParam();
  auto table = Rows(2000);
  auto props = Props(v2, dictionary_limit);
  // A buffer too small for the first chunk: the sink grows it.
  auto ours = Columnwise(table, props, 700, 64);
  auto read = Read(ours);
  ASSERT_TRUE(SameRows(*read, *table)) << read->ToString();
  EXPECT_EQ(Open(ours)->metadata()->num_row_groups(), 3);
  ExpectSameIndexes(ours, WithArrow(*table, props, 700), *table);
}

// Data pages v1 and v2; dictionaries that all fit, and a limit only small ones fit.
INSTANTIATE_TEST_SUITE_P(Pages, ColumnwiseTest,
                         testing::Combine(testing::Bool(), testing::Values(int64_t{1} << 20, int64_t{1200})));

TEST(ColumnwiseTest, ADictionaryOutgrowingItsLimitLeavesTheChunkPlain) {
  auto table = Rows(1500);
  auto ours = Columnwise(table, Props(false, 1300), 1500, 1 << 20);
  auto reader = Open(ours);
  auto md = reader->metadata()->RowGroup(0);
  EXPECT_TRUE(md->ColumnChunk(0)->has_dictionary_page());   // block: 41 values
  EXPECT_TRUE(md->ColumnChunk(4)->has_dictionary_page());   // day: 301 int32 values
  EXPECT_FALSE(md->ColumnChunk(6)->has_dictionary_page());  // name: every value distinct
  for (const auto& e : md->ColumnChunk(6)->encodings()) EXPECT_NE(e, parquet::Encoding::RLE_DICTIONARY);
  ASSERT_TRUE(SameRows(*Read(ours), *table));
}

// Past the 4,096 values after which a nearly unique column stops trying:
// values in runs (block numbers) are few for their rows, and keep it.
TEST(ColumnwiseTest, ManyRunsOfFewValuesKeepTheirDictionary) {
  arrow::Int64Builder block, value;
  for (int64_t i = 0; i < 200000; ++i) {
    ASSERT_TRUE(block.Append(i / 20).ok());  // 10,000 values, 80 KB
    ASSERT_TRUE(value.Append(i * 7919).ok());
  }
  auto schema = arrow::schema({arrow::field("block", arrow::int64(), false), arrow::field("value", arrow::int64())});
  auto table = arrow::Table::Make(schema, {*block.Finish(), *value.Finish()});
  auto ours = Columnwise(table, Props(false, 256 << 10), 200000, 1 << 20);
  auto reader = Open(ours);
  auto md = reader->metadata()->RowGroup(0);
  EXPECT_TRUE(md->ColumnChunk(0)->has_dictionary_page());
  EXPECT_FALSE(md->ColumnChunk(1)->has_dictionary_page());
  ASSERT_TRUE(SameRows(*Read(ours), *table));
}

void ExpectPages(const std::shared_ptr<arrow::Buffer>& ours, bool v2);

// Data pages of values zstd cannot shrink by 1/8 (random hashes) are
// stored uncompressed as pages v2, whichever version the file's other pages
// have; values that shrink stay compressed.
TEST(ColumnwiseTest, PagesZstdCannotShrinkAreStoredUncompressed) {
  std::mt19937_64 rng(3);
  arrow::BinaryBuilder hash, topic;
  arrow::Int64Builder block;
  arrow::Int32Builder pick;
  for (int64_t i = 0; i < 20000; ++i) {
    uint64_t words[4] = {rng(), rng(), rng(), rng()};
    ASSERT_TRUE(hash.Append(reinterpret_cast<const uint8_t*>(words), 32).ok());
    ASSERT_TRUE(block.Append(i / 100).ok());
    // Nullable and incompressible: its levels move from a v1 body to a v2 page.
    ASSERT_TRUE((i % 5 == 0 ? topic.AppendNull() : topic.Append(reinterpret_cast<const uint8_t*>(words + 1), 24)).ok());
    // A dictionary whose random indices do not compress.
    ASSERT_TRUE((i % 7 == 0 ? pick.AppendNull() : pick.Append(static_cast<int32_t>(rng() % 50000))).ok());
  }
  auto schema = arrow::schema({arrow::field("hash", arrow::binary(), false), arrow::field("block", arrow::int64()),
                               arrow::field("topic", arrow::binary()), arrow::field("pick", arrow::int32())});
  auto table = arrow::Table::Make(schema, {*hash.Finish(), *block.Finish(), *topic.Finish(), *pick.Finish()});
  for (bool v2 : {false, true}) {
    SCOPED_TRACE(v2 ? "data pages v2" : "data pages v1");
    auto ours = Columnwise(table, Props(v2, 256 << 10, 4096), 20000, 1 << 20);
    ASSERT_TRUE(SameRows(*Read(ours), *table));
    ExpectPages(ours, v2);
  }
  // writer.store_incompressible = false: every page compressed, v1 as asked.
  auto all = Columnwise(table, Props(false, 256 << 10, 4096), 20000, 1 << 20, 0);
  ASSERT_TRUE(SameRows(*Read(all), *table));
  auto reader = Open(all);
  auto index = reader->GetPageIndexReader()->RowGroup(0)->GetOffsetIndex(0);
  for (const auto& page : index->page_locations()) {
    PageHeader h;
    const uint8_t* body = nullptr;
    const uint8_t* at = all->data() + page.offset;
    ASSERT_TRUE(ReadPageHeader(at, at + page.compressed_page_size, &h, &body));
    EXPECT_EQ(h.type, 0);
  }
}

TEST(ColumnwiseTest, ALargeFirstPageWhoseFirst64KiBDoNotShrinkIsStoredRawWithoutTryingTheRest) {
  // 96 KiB of random values, then zeros: the page as a whole shrinks tenfold, its first 64 KiB not at all.
  std::mt19937_64 rng(5);
  arrow::BinaryBuilder payload;
  arrow::Int64Builder block;
  for (int64_t i = 0; i < 20000; ++i) {
    uint64_t words[4] = {0, 0, 0, 0};
    if (i < 3000) {
      for (auto& w : words) w = rng();
    }
    ASSERT_TRUE(payload.Append(reinterpret_cast<const uint8_t*>(words), 32).ok());
    ASSERT_TRUE(block.Append(i / 100).ok());
  }
  auto schema = arrow::schema({arrow::field("payload", arrow::binary(), false), arrow::field("block", arrow::int64())});
  auto table = arrow::Table::Make(schema, {*payload.Finish(), *block.Finish()});
  auto ours = Columnwise(table, Props(false, 0, 20000), 20000, 4 << 20);
  ASSERT_TRUE(SameRows(*Read(ours), *table));
  auto reader = Open(ours);
  auto index = reader->GetPageIndexReader()->RowGroup(0)->GetOffsetIndex(0);
  const auto& pages = index->page_locations();
  ASSERT_EQ(pages.size(), 1u);
  PageHeader h;
  const uint8_t* body = nullptr;
  const uint8_t* at = ours->data() + pages[0].offset;
  ASSERT_TRUE(ReadPageHeader(at, at + pages[0].compressed_page_size, &h, &body));
  EXPECT_FALSE(h.is_compressed);
  EXPECT_EQ(h.compressed, h.uncompressed);
  EXPECT_GT(h.uncompressed, 600 << 10);
}

// The hash and topic columns' pages are stored v2 and uncompressed, and so
// are pick's, after its dictionary page; block's are compressed, v2 or v1
// as asked.
void ExpectPages(const std::shared_ptr<arrow::Buffer>& ours, bool v2) {
  auto reader = Open(ours);
  auto offsets = reader->GetPageIndexReader()->RowGroup(0);
  EXPECT_TRUE(reader->metadata()->RowGroup(0)->ColumnChunk(3)->has_dictionary_page());
  for (int c = 0; c < 4; ++c) {
    const bool raw = c != 1;
    auto index = offsets->GetOffsetIndex(c);
    const auto& pages = index->page_locations();
    ASSERT_GT(pages.size(), 1u);
    for (const auto& page : pages) {
      PageHeader h;
      const uint8_t* body = nullptr;
      const uint8_t* at = ours->data() + page.offset;
      ASSERT_TRUE(ReadPageHeader(at, at + page.compressed_page_size, &h, &body));
      EXPECT_EQ(h.type, raw || v2 ? 3 : 0) << c;  // DATA_PAGE_V2, DATA_PAGE
      // v1 pages are compressed whole; a v2 page says whether it is.
      EXPECT_EQ(h.is_compressed, !raw) << c;
      if (raw) {
        EXPECT_EQ(h.compressed, h.uncompressed);
      }
    }
  }
}

TEST(ColumnwiseTest, AColumnOfAnotherTypeIsRefusedByName) {
  auto schema = arrow::schema({arrow::field("flag", arrow::boolean())});
  arrow::BooleanBuilder b;
  ASSERT_TRUE(b.Append(true).ok());
  auto table = arrow::Table::Make(schema, {*b.Finish()});
  auto props = Props(false, 1 << 20);
  auto descr = *ParquetSchemaFor(*schema, *props);
  ChunkEncoder encoder;
  ChunkSink sink(*arrow::AllocateBuffer(1024));
  auto got = encoder.Encode(*table->column(0)->chunk(0), *descr->Column(0), ChunkEncoding(), &sink);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("flag"), std::string::npos) << got.status().ToString();
}

TEST(HybridTest, ValuesOfEveryWidthDecodeAsWritten) {
  std::mt19937 rng(7);
  for (int width = 1; width <= 15; ++width) {
    std::vector<uint32_t> values;
    for (int run = 0; run < 300; ++run) {
      const uint32_t v = rng() & ((1u << width) - 1);
      const int length = rng() % 3 == 0 ? static_cast<int>(rng() % 40) : 1;
      values.insert(values.end(), static_cast<size_t>(length), v);
    }
    std::string encoded;
    EncodeHybrid(values.data(), values.size(), width, &encoded);
    std::vector<int16_t> decoded;
    ASSERT_TRUE(DecodeLevels(reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size(),
                             static_cast<int16_t>((1 << width) - 1), static_cast<int64_t>(values.size()), &decoded)
                    .ok());
    ASSERT_EQ(decoded.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(static_cast<uint32_t>(decoded[i]), values[i]) << width;
  }
}

}  // namespace
}  // namespace sediment::table
