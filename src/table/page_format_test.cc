// Page headers and levels read and written by page_format.h, against what
// Arrow's own writer produces (data pages v2, nullable and nested columns).
#include "table/page_format.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>
#include <parquet/bloom_filter.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>
#include <parquet/schema.h>

#include <random>

#include "table/plain_pages.h"

namespace sediment::table {
namespace {

std::vector<int16_t> RoundTrip(const std::vector<int16_t>& levels, int16_t max_level) {
  std::string encoded;
  EncodeLevels(levels, max_level, &encoded);
  std::vector<int16_t> decoded;
  Status st = DecodeLevels(reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size(), max_level,
                           static_cast<int64_t>(levels.size()), &decoded);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return decoded;
}

TEST(PageFormatTest, LevelsEncodeAndDecodeToThemselves) {
  std::mt19937 rng(7);
  for (int16_t max_level : {1, 2, 3, 7}) {
    std::vector<std::vector<int16_t>> cases = {
        {}, {0}, std::vector<int16_t>(1000, max_level), std::vector<int16_t>(13, 0)};
    std::vector<int16_t> alternating, runs;
    for (int i = 0; i < 999; ++i) alternating.push_back(static_cast<int16_t>(i % 2));
    // Runs of every length from 1 to 20, between literals, at every offset from a group of eight.
    for (int len = 1; len <= 20; ++len) {
      for (int i = 0; i < len; ++i) runs.push_back(static_cast<int16_t>(len % (max_level + 1)));
      runs.push_back(static_cast<int16_t>(rng() % (max_level + 1)));
    }
    std::vector<int16_t> random;
    for (int i = 0; i < 5000; ++i) random.push_back(static_cast<int16_t>(rng() % (max_level + 1)));
    cases.push_back(alternating);
    cases.push_back(runs);
    cases.push_back(random);
    for (const auto& levels : cases) {
      EXPECT_EQ(RoundTrip(levels, max_level), levels) << "max level " << max_level << ", " << levels.size();
    }
  }
  // Long runs are RLE runs: a million equal levels take a few bytes.
  std::string encoded;
  EncodeLevels(std::vector<int16_t>(1000000, 1), 1, &encoded);
  EXPECT_LE(encoded.size(), 8u);
}

TEST(PageFormatTest, LevelsThatDoNotFitTheirBytesAreRefused) {
  std::vector<int16_t> levels;
  for (int i = 0; i < 100; ++i) levels.push_back(static_cast<int16_t>(i % 3 == 0));
  std::string encoded;
  EncodeLevels(levels, 1, &encoded);
  std::vector<int16_t> out;
  const auto* p = reinterpret_cast<const uint8_t*>(encoded.data());
  EXPECT_FALSE(DecodeLevels(p, encoded.size() - 1, 1, 100, &out).ok());
  out.clear();
  EXPECT_FALSE(DecodeLevels(p, encoded.size(), 1, 1000, &out).ok()) << "more levels than are there";
  // A level above the maximum.
  const uint8_t rle[] = {0x10, 0x03};  // 8 times the level 3
  out.clear();
  EXPECT_FALSE(DecodeLevels(rle, sizeof(rle), 1, 8, &out).ok());
  out.clear();
  EXPECT_TRUE(DecodeLevels(rle, sizeof(rle), 3, 8, &out).ok());
  EXPECT_EQ(out, std::vector<int16_t>(8, 3));
}

TEST(PageFormatTest, AWrittenHeaderReadsBack) {
  PageHeader h;
  h.type = 3;
  h.uncompressed = 70000;
  h.compressed = 1234;
  h.encoding = 0;
  h.num_values = 9000;
  h.num_nulls = 17;
  h.num_rows = 8192;
  h.definition_bytes = 100;
  h.repetition_bytes = 200;
  h.is_compressed = true;
  std::string bytes = DataPageV2Header(h) + std::string(1234, 'x');
  PageHeader back;
  const uint8_t* body = nullptr;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  ASSERT_TRUE(ReadPageHeader(p, p + bytes.size(), &back, &body));
  EXPECT_EQ(body + 1234, p + bytes.size());
  EXPECT_EQ(back.type, 3);
  EXPECT_EQ(back.uncompressed, 70000);
  EXPECT_EQ(back.compressed, 1234);
  EXPECT_EQ(back.num_values, 9000);
  EXPECT_EQ(back.num_nulls, 17);
  EXPECT_EQ(back.num_rows, 8192);
  EXPECT_EQ(back.definition_bytes, 100);
  EXPECT_EQ(back.repetition_bytes, 200);
  EXPECT_TRUE(back.is_compressed);
  // The page's bytes must be there in full.
  EXPECT_FALSE(ReadPageHeader(p, p + bytes.size() - 1, &back, &body));
  // Levels longer than the page are refused.
  h.definition_bytes = 2000;
  bytes = DataPageV2Header(h) + std::string(1234, 'x');
  p = reinterpret_cast<const uint8_t*>(bytes.data());
  EXPECT_FALSE(ReadPageHeader(p, p + bytes.size(), &back, &body));
}

// A file of Arrow's writer with data pages v2, no dictionary, pages of at most 100 rows.
std::shared_ptr<parquet::FileMetaData> WriteV2(std::shared_ptr<arrow::Table>* table, std::string* bytes) {
  arrow::Int32Builder ints;
  arrow::ListBuilder lists(arrow::default_memory_pool(), std::make_shared<arrow::Int32Builder>());
  auto* items = static_cast<arrow::Int32Builder*>(lists.value_builder());
  arrow::StringBuilder strings;
  for (int i = 0; i < 1000; ++i) {
    if (i % 7 == 3) {
      (void)ints.AppendNull();
    } else {
      (void)ints.Append(i * 3);
    }
    if (i % 11 == 5) {
      (void)lists.AppendNull();
    } else {
      (void)lists.Append();
      for (int k = 0; k < i % 4; ++k) (void)items->Append(i + k);
    }
    (void)strings.Append("s" + std::to_string(i % 37));
  }
  std::shared_ptr<arrow::Array> a, b, c;
  (void)ints.Finish(&a);
  (void)lists.Finish(&b);
  (void)strings.Finish(&c);
  *table = arrow::Table::Make(
      arrow::schema({arrow::field("i", arrow::int32()), arrow::field("l", arrow::list(arrow::int32())),
                     arrow::field("s", arrow::utf8())}),
      {a, b, c});
  auto props = parquet::WriterProperties::Builder()
                   .compression(arrow::Compression::ZSTD)
                   ->disable_dictionary()
                   ->data_page_version(parquet::ParquetDataPageVersion::V2)
                   ->max_rows_per_page(100)
                   ->build();
  auto sink = *arrow::io::BufferOutputStream::Create();
  EXPECT_TRUE(parquet::arrow::WriteTable(**table, arrow::default_memory_pool(), sink, 1000, props).ok());
  auto buffer = *sink->Finish();
  *bytes = buffer->ToString();
  return parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(buffer))->metadata();
}

TEST(PageFormatTest, ArrowsDataPagesV2ReadAndTheirLevelsEncodeAgain) {
  std::shared_ptr<arrow::Table> table;
  std::string bytes;
  auto md = WriteV2(&table, &bytes);
  auto rg = md->RowGroup(0);
  for (int c = 0; c < rg->num_columns(); ++c) {
    const auto* column = md->schema()->Column(c);
    auto cc = rg->ColumnChunk(c);
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data()) + cc->data_page_offset();
    const auto* end = p + cc->total_compressed_size();
    int64_t values = 0, rows = 0, pages = 0, defined = 0, nulls = 0;
    while (p < end) {
      PageHeader h;
      const uint8_t* body = nullptr;
      ASSERT_TRUE(ReadPageHeader(p, end, &h, &body)) << "column " << c;
      ASSERT_EQ(h.type, 3) << "a data page v2";
      EXPECT_EQ(h.encoding, 0) << "PLAIN";
      EXPECT_LE(h.num_rows, 100);
      std::vector<int16_t> rep, def;
      if (column->max_repetition_level() > 0) {
        ASSERT_TRUE(DecodeLevels(body, static_cast<size_t>(h.repetition_bytes), column->max_repetition_level(),
                                 h.num_values, &rep)
                        .ok());
        // A page v2 starts at a row: its first repetition level is 0, and rows are counted by them.
        EXPECT_EQ(rep.front(), 0);
        EXPECT_EQ(std::count(rep.begin(), rep.end(), 0), h.num_rows);
        EXPECT_EQ(RoundTrip(rep, column->max_repetition_level()), rep);
      }
      if (column->max_definition_level() > 0) {
        ASSERT_TRUE(DecodeLevels(body + h.repetition_bytes, static_cast<size_t>(h.definition_bytes),
                                 column->max_definition_level(), h.num_values, &def)
                        .ok());
        defined += std::count(def.begin(), def.end(), column->max_definition_level());
        EXPECT_EQ(RoundTrip(def, column->max_definition_level()), def);
      }
      values += h.num_values;
      rows += h.num_rows;
      nulls += h.num_nulls;
      ++pages;
      p = body + h.compressed;
    }
    EXPECT_EQ(values, cc->num_values());
    EXPECT_EQ(rows, 1000);
    EXPECT_GE(pages, 10);
    EXPECT_EQ(defined + nulls, values) << "column " << c << ": a level below the maximum is a null (or an empty list)";
  }
  // The v2 pages' PLAIN values are hashed without Arrow's reader.
  auto cc = rg->ColumnChunk(2);
  std::string_view chunk(bytes.data() + cc->data_page_offset(), static_cast<size_t>(cc->total_compressed_size()));
  parquet::BlockSplitBloomFilter filter;
  filter.Init(4096);
  auto read = HashPlainValues(chunk, *md->schema()->Column(2), static_cast<int>(cc->compression()), &filter);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_TRUE(*read);
  for (int i = 0; i < 37; ++i) {
    std::string s = "s" + std::to_string(i);
    parquet::ByteArray ba(static_cast<uint32_t>(s.size()), reinterpret_cast<const uint8_t*>(s.data()));
    EXPECT_TRUE(filter.FindHash(filter.Hash(&ba))) << s;
  }
}

}  // namespace
}  // namespace sediment::table
