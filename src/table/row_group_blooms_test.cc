#include "table/row_group_blooms.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>
#include <parquet/bloom_filter.h>
#include <parquet/bloom_filter_reader.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>

#include "table/parquet_assembler.h"
#include "table/plain_pages.h"

namespace sediment::table {
namespace {

std::string Bits(const parquet::BloomFilter& filter) {
  auto sink = *arrow::io::BufferOutputStream::Create();
  filter.WriteTo(sink.get());
  return (*sink->Finish())->ToString();
}

TEST(RowGroupBloomsTest, FiltersAreTheBitsArrowsWriterMakes) {
  // Columns whose chunks stay dictionary-encoded (hashed from the dictionary
  // page), one that falls back to PLAIN (hashed from its values), nulls, and
  // every type planned: the filters are the ones Arrow's writer makes.
  arrow::BinaryBuilder hot, unique;
  arrow::FixedSizeBinaryBuilder fixed(arrow::fixed_size_binary(4));
  arrow::Int64Builder wide;
  arrow::Int32Builder narrow;
  arrow::DoubleBuilder real;
  arrow::StringBuilder text;
  arrow::TimestampBuilder seconds(arrow::timestamp(arrow::TimeUnit::SECOND), arrow::default_memory_pool());
  for (int i = 0; i < 5000; ++i) {
    ASSERT_TRUE((i % 9 == 0 ? hot.AppendNull() : hot.Append("address-" + std::to_string(i % 37))).ok());
    ASSERT_TRUE(unique.Append("topic-" + std::to_string(i * 7919)).ok());
    const char bytes[4] = {static_cast<char>(i % 11), 1, 2, 3};
    ASSERT_TRUE(fixed.Append(bytes).ok());
    ASSERT_TRUE(wide.Append(i % 100).ok());
    ASSERT_TRUE(narrow.Append(i).ok());
    ASSERT_TRUE(real.Append(i % 13 / 4.0).ok());
    ASSERT_TRUE(text.Append(std::to_string(i % 5)).ok());
    ASSERT_TRUE(seconds.Append(1700000000 + i).ok());
  }
  auto schema = arrow::schema({arrow::field("hot", arrow::binary()), arrow::field("unique", arrow::binary()),
                               arrow::field("fixed", arrow::fixed_size_binary(4)), arrow::field("wide", arrow::int64()),
                               arrow::field("narrow", arrow::int32()), arrow::field("real", arrow::float64()),
                               arrow::field("text", arrow::utf8()), arrow::field("seconds", seconds.type())});
  auto table = arrow::Table::Make(schema, {*hot.Finish(), *unique.Finish(), *fixed.Finish(), *wide.Finish(),
                                           *narrow.Finish(), *real.Finish(), *text.Finish(), *seconds.Finish()});
  parquet::WriterProperties::Builder b;
  b.compression(arrow::Compression::ZSTD)->max_row_group_length(2000)->dictionary_pagesize_limit(4096);
  for (const auto& f : schema->fields()) b.enable_bloom_filter(f->name(), parquet::BloomFilterOptions{});
  auto props = b.build();

  auto sink = *arrow::io::BufferOutputStream::Create();
  ASSERT_TRUE(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink, 2000, props).ok());
  auto arrows = parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(*sink->Finish()));

  auto ours = EncodeRowGroups(*table, props, 2000);
  ASSERT_TRUE(ours.ok()) << ours.status().ToString();
  ASSERT_EQ(ours->size(), 3u);
  bool fell_back = false, dictionary = false;
  for (int i = 0; i < 3; ++i) {
    for (int c = 0; c < schema->num_fields(); ++c) {
      SCOPED_TRACE(schema->field(c)->name() + " in row group " + std::to_string(i));
      auto want = arrows->GetBloomFilterReader().RowGroup(i)->GetColumnBloomFilter(c);
      const auto& got = (*ours)[static_cast<size_t>(i)].bloom_filter[static_cast<size_t>(c)];
      ASSERT_NE(want, nullptr);
      ASSERT_NE(got, nullptr);
      EXPECT_EQ(Bits(*got), Bits(*want));
      const auto& encoded = (*ours)[static_cast<size_t>(i)];
      auto cc = encoded.source->RowGroup(i)->ColumnChunk(c);
      bool plain = false;
      for (const auto& e : cc->encoding_stats()) {
        plain |= e.page_type != parquet::PageType::DICTIONARY_PAGE && e.encoding == parquet::Encoding::PLAIN;
      }
      (plain ? fell_back : dictionary) = true;
      // A dictionary-encoded chunk's dictionary page is read by this reader (not left to the values).
      if (!plain) {
        ASSERT_TRUE(cc->has_dictionary_page());
        std::string_view chunk(
            reinterpret_cast<const char*>(encoded.bytes->data()) + (cc->dictionary_page_offset() - encoded.begin),
            static_cast<size_t>(cc->total_compressed_size()));
        parquet::BlockSplitBloomFilter probe;
        probe.Init(1024);
        auto read = HashDictionaryPage(chunk, *encoded.source->schema()->Column(c), static_cast<int>(cc->compression()),
                                       &probe);
        ASSERT_TRUE(read.ok()) << read.status().ToString();
        EXPECT_TRUE(*read);
      }
    }
  }
  EXPECT_TRUE(fell_back) << "a chunk hashed from its values";
  EXPECT_TRUE(dictionary) << "a chunk hashed from its dictionary";
}

}  // namespace
}  // namespace sediment::table
