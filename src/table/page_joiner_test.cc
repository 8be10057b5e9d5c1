// Small data pages v2 joined by a page run (page_joiner.h): the rows read
// back are the inputs', the joined pages hold up to the limit, their value
// bytes are the inputs' compressed bytes unchanged, and the page index
// describes them (bounds with the column's ordering: signed decimals,
// unsigned bytes; null counts; all-null pages). Pages that cannot join are
// copied as they were.
#include "table/page_joiner.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/util/decimal.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/page_index.h>
#include <parquet/properties.h>
#include <parquet/schema.h>
#include <parquet/statistics.h>

#include "table/page_format.h"
#include "table/parquet_assembler.h"

namespace sediment::table {
namespace {

std::shared_ptr<arrow::Schema> TestSchema() {
  return arrow::schema({
      arrow::field("block", arrow::int64(), false), arrow::field("note", arrow::utf8()),  // nulls now and then
      arrow::field("fee", arrow::decimal128(38, 0)), arrow::field("hash", arrow::fixed_size_binary(4)),
      arrow::field("flag", arrow::boolean()), arrow::field("keys", arrow::list(arrow::int32())),
      arrow::field("gone", arrow::utf8()),  // null in every row
  });
}

// Rows [from, from + n): fees run negative to positive, so signed order matters.
std::shared_ptr<arrow::Table> Rows(int64_t from, int64_t n) {
  arrow::Int64Builder block;
  arrow::StringBuilder note, gone;
  arrow::Decimal128Builder fee(arrow::decimal128(38, 0));
  arrow::FixedSizeBinaryBuilder hash(arrow::fixed_size_binary(4));
  arrow::BooleanBuilder flag;
  arrow::ListBuilder keys(arrow::default_memory_pool(), std::make_shared<arrow::Int32Builder>());
  auto* key = static_cast<arrow::Int32Builder*>(keys.value_builder());
  for (int64_t r = from; r < from + n; ++r) {
    (void)block.Append(r);
    if (r % 7 == 3) {
      (void)note.AppendNull();
    } else {
      (void)note.Append("n" + std::to_string(r % 50));
    }
    (void)fee.Append(arrow::Decimal128(r * 1000 - 150000));
    const uint8_t h[4] = {static_cast<uint8_t>(r * 37), static_cast<uint8_t>(0xF0 ^ r), 1, 2};
    (void)hash.Append(h);
    (void)flag.Append(r % 3 == 0);
    if (r % 5 == 0) {
      (void)keys.AppendNull();
    } else {
      (void)keys.Append();
      for (int k = 0; k < r % 4; ++k) (void)key->Append(static_cast<int32_t>(r + k));
    }
    (void)gone.AppendNull();
  }
  std::vector<std::shared_ptr<arrow::Array>> arrays(7);
  (void)block.Finish(&arrays[0]);
  (void)note.Finish(&arrays[1]);
  (void)fee.Finish(&arrays[2]);
  (void)hash.Finish(&arrays[3]);
  (void)flag.Finish(&arrays[4]);
  (void)keys.Finish(&arrays[5]);
  (void)gone.Finish(&arrays[6]);
  return arrow::Table::Make(TestSchema(), arrays);
}

std::shared_ptr<parquet::WriterProperties> Props(int64_t page_rows, parquet::ParquetDataPageVersion version) {
  return parquet::WriterProperties::Builder()
      .disable_dictionary()
      ->data_page_version(version)
      ->compression(arrow::Compression::ZSTD)
      ->max_rows_per_page(page_rows)
      ->enable_statistics()
      ->enable_write_page_index()
      ->build();
}

struct Joined {
  std::shared_ptr<arrow::Buffer> file;
  std::vector<EncodedRowGroup> pieces;
};

// `files` small files of `rows` rows (pages of `page_rows`), joined into one
// row group written with pages of up to `max_rows`.
Joined Join(int files, int64_t rows, int64_t page_rows, int64_t max_rows,
            parquet::ParquetDataPageVersion version = parquet::ParquetDataPageVersion::V2) {
  Joined j;
  PageRun run;
  for (int f = 0; f < files; ++f) {
    auto groups = EncodeRowGroups(*Rows(f * rows, rows), Props(page_rows, version), rows);
    EXPECT_TRUE(groups.ok()) << groups.status().ToString();
    for (auto& g : *groups) run.pieces.push_back(g);
  }
  j.pieces = run.pieces;
  auto sink = *arrow::io::BufferOutputStream::Create();
  auto assembler = ParquetAssembler::Open(sink, TestSchema(), Props(max_rows, parquet::ParquetDataPageVersion::V2));
  EXPECT_TRUE(assembler.ok()) << assembler.status().ToString();
  Status st = (*assembler)->AppendPages(run);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE((*assembler)->Finish(nullptr).ok());
  j.file = *sink->Finish();
  return j;
}

std::shared_ptr<arrow::Table> ReadBack(const std::shared_ptr<arrow::Buffer>& file) {
  auto opened = parquet::arrow::OpenFile(std::make_shared<arrow::io::BufferReader>(file), arrow::default_memory_pool());
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  auto table = (*opened)->ReadTable();
  EXPECT_TRUE(table.ok()) << table.status().ToString();
  return *(*table)->CombineChunks();
}

std::unique_ptr<parquet::ParquetFileReader> Open(const std::shared_ptr<arrow::Buffer>& file) {
  return parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(file));
}

TEST(PageJoinerTest, SmallPagesJoinIntoPagesOfTheLimitAndReadAsTheInputs) {
  auto j = Join(/*files=*/12, /*rows=*/40, /*page_rows=*/20, /*max_rows=*/100);
  auto got = ReadBack(j.file);
  auto want = *Rows(0, 480)->CombineChunks();
  ASSERT_TRUE(got->Equals(*want)) << "rows differ from the inputs";

  auto reader = Open(j.file);
  auto index = reader->GetPageIndexReader()->RowGroup(0);
  auto rg = reader->metadata()->RowGroup(0);
  const auto* data = j.file->data();
  for (int c = 0; c < rg->num_columns(); ++c) {
    const auto* column = reader->metadata()->schema()->Column(c);
    auto offsets = index->GetOffsetIndex(c);
    const auto& locs = offsets->page_locations();
    if (column->physical_type() == parquet::Type::BOOLEAN) {
      EXPECT_EQ(locs.size(), 24u) << "booleans are bit-packed across a page: copied as they were";
      continue;
    }
    ASSERT_EQ(locs.size(), 5u) << column->path()->ToDotString() << ": 480 rows in pages of up to 100";
    int64_t rows = 0;
    for (size_t p = 0; p < locs.size(); ++p) {
      EXPECT_EQ(locs[p].first_row_index, static_cast<int64_t>(p) * 100);
      PageHeader h;
      const uint8_t* body = nullptr;
      const uint8_t* at = data + locs[p].offset;
      ASSERT_TRUE(ReadPageHeader(at, at + locs[p].compressed_page_size, &h, &body));
      EXPECT_EQ(body + h.compressed, at + locs[p].compressed_page_size) << "the page fills its index entry";
      EXPECT_EQ(h.type, 3);
      rows += h.num_rows;
    }
    EXPECT_EQ(rows, 480);
  }
}

TEST(PageJoinerTest, JoinedValuesAreTheInputsCompressedBytesUnchanged) {
  auto j = Join(3, 40, 40, 1000);
  auto reader = Open(j.file);
  auto loc = reader->GetPageIndexReader()->RowGroup(0)->GetOffsetIndex(0)->page_locations().at(0);
  PageHeader joined;
  const uint8_t* body = nullptr;
  const uint8_t* at = j.file->data() + loc.offset;
  ASSERT_TRUE(ReadPageHeader(at, at + loc.compressed_page_size, &joined, &body));
  std::string values;
  for (const auto& piece : j.pieces) {
    auto cc = piece.source->RowGroup(piece.index)->ColumnChunk(0);
    const uint8_t* p = piece.bytes->data() + (cc->data_page_offset() - piece.begin);
    PageHeader h;
    const uint8_t* b = nullptr;
    ASSERT_TRUE(ReadPageHeader(p, p + cc->total_compressed_size(), &h, &b));
    ASSERT_TRUE(h.is_compressed);
    const int64_t levels = int64_t{h.repetition_bytes} + h.definition_bytes;
    values.append(reinterpret_cast<const char*>(b + levels), static_cast<size_t>(h.compressed - levels));
  }
  EXPECT_EQ(joined.num_rows, 120);
  EXPECT_TRUE(joined.is_compressed);
  const int64_t levels = int64_t{joined.repetition_bytes} + joined.definition_bytes;
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(body + levels), static_cast<size_t>(joined.compressed - levels)),
            values)
      << "three zstd frames one after another, not decompressed";
}

TEST(PageJoinerTest, TheColumnIndexBoundsEachJoinedPageWithTheColumnsOrdering) {
  auto j = Join(10, 30, 10, 60);
  auto want = *Rows(0, 300)->CombineChunks();
  auto reader = Open(j.file);
  auto index = reader->GetPageIndexReader()->RowGroup(0);
  // fee: decimals from -150000 to +149000, signed; pages of 60 rows.
  auto fees = std::static_pointer_cast<arrow::Decimal128Array>(want->GetColumnByName("fee")->chunk(0));
  auto fee_index = index->GetColumnIndex(2);
  auto offsets = index->GetOffsetIndex(2);
  const auto& locs = offsets->page_locations();
  ASSERT_EQ(locs.size(), 5u);
  for (size_t p = 0; p < locs.size(); ++p) {
    const int64_t first = locs[p].first_row_index, last = first + 59;
    auto as_decimal = [](const std::string& be) {
      auto d = arrow::Decimal128::FromBigEndian(reinterpret_cast<const uint8_t*>(be.data()),
                                                static_cast<int32_t>(be.size()));
      return *d;
    };
    EXPECT_EQ(as_decimal(fee_index->encoded_min_values()[p]), arrow::Decimal128(fees->GetValue(first)));
    EXPECT_EQ(as_decimal(fee_index->encoded_max_values()[p]), arrow::Decimal128(fees->GetValue(last)));
  }
  // note: null counts added; bounds over the strings, as bytes.
  auto notes = std::static_pointer_cast<arrow::StringArray>(want->GetColumnByName("note")->chunk(0));
  auto note_index = index->GetColumnIndex(1);
  for (size_t p = 0; p < locs.size(); ++p) {
    int64_t nulls = 0;
    std::string lo, hi;
    for (int64_t r = p * 60; r < static_cast<int64_t>(p + 1) * 60; ++r) {
      if (notes->IsNull(r)) {
        ++nulls;
        continue;
      }
      std::string v(notes->GetView(r));
      if (lo.empty() || v < lo) lo = v;
      if (hi.empty() || v > hi) hi = v;
    }
    EXPECT_EQ(note_index->null_counts()[p], nulls);
    EXPECT_EQ(note_index->encoded_min_values()[p], lo);
    EXPECT_EQ(note_index->encoded_max_values()[p], hi);
  }
  // hash: fixed-size bytes with values past 0x7f: bounds ordered as unsigned bytes.
  auto hashes = std::static_pointer_cast<arrow::FixedSizeBinaryArray>(want->GetColumnByName("hash")->chunk(0));
  auto hash_index = index->GetColumnIndex(3);
  for (size_t p = 0; p < locs.size(); ++p) {
    std::string lo, hi;
    for (int64_t r = p * 60; r < static_cast<int64_t>(p + 1) * 60; ++r) {
      std::string v(hashes->GetView(r));  // std::string orders its bytes as unsigned
      if (lo.empty() || v < lo) lo = v;
      if (hi.empty() || v > hi) hi = v;
    }
    EXPECT_EQ(hash_index->encoded_min_values()[p], lo) << p;
    EXPECT_EQ(hash_index->encoded_max_values()[p], hi) << p;
  }
  // gone: every page null.
  auto gone_index = index->GetColumnIndex(6);
  for (bool null_page : gone_index->null_pages()) EXPECT_TRUE(null_page);
  // The chunk's statistics: fee from the smallest to the largest.
  auto fee_stats = reader->metadata()->RowGroup(0)->ColumnChunk(2)->encoded_statistics();
  auto decimal = [](const std::string& be) {
    return *arrow::Decimal128::FromBigEndian(reinterpret_cast<const uint8_t*>(be.data()),
                                             static_cast<int32_t>(be.size()));
  };
  EXPECT_EQ(decimal(fee_stats->min()), arrow::Decimal128(-150000));
  EXPECT_EQ(decimal(fee_stats->max()), arrow::Decimal128(149000));
}

TEST(PageJoinerTest, PagesWithAndWithoutCompressedValuesJoinOnlyTheirOwnKind) {
  // A data page v2 may store its values uncompressed in a compressed chunk
  // (is_compressed false): such pages join each other, not compressed ones.
  std::vector<EncodedRowGroup> keep;
  std::vector<SourcePage> pages;
  for (auto codec : {arrow::Compression::ZSTD, arrow::Compression::ZSTD, arrow::Compression::UNCOMPRESSED,
                     arrow::Compression::UNCOMPRESSED}) {
    auto props = parquet::WriterProperties::Builder()
                     .disable_dictionary()
                     ->data_page_version(parquet::ParquetDataPageVersion::V2)
                     ->compression(codec)
                     ->enable_statistics()
                     ->enable_write_page_index()
                     ->build();
    auto g = (*EncodeRowGroups(*Rows(pages.size() * 10, 10), props, 10)).front();
    auto cc = g.source->RowGroup(0)->ColumnChunk(1);  // note: strings with nulls
    SourcePage page;
    page.bytes = std::string_view(reinterpret_cast<const char*>(g.bytes->data() + (cc->data_page_offset() - g.begin)),
                                  static_cast<size_t>(cc->total_compressed_size()));
    page.first_row = static_cast<int64_t>(pages.size()) * 10;
    page.rows = 10;
    page.stats.set_min("a").set_max("z").set_null_count(1);
    pages.push_back(page);
    keep.push_back(std::move(g));
  }
  const auto* column = keep.front().source->schema()->Column(1);
  auto joined = JoinPages(*column, arrow::Compression::ZSTD, pages, JoinLimits{});
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  ASSERT_EQ(joined->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& head = (*joined)[i].head;
    PageHeader h;
    const uint8_t* body = nullptr;
    std::string page = head;
    for (auto part : (*joined)[i].parts) page.append(part);
    const auto* p = reinterpret_cast<const uint8_t*>(page.data());
    ASSERT_TRUE(ReadPageHeader(p, p + page.size(), &h, &body));
    EXPECT_EQ(h.is_compressed, i == 0);
    EXPECT_EQ(h.num_rows, 20);
    EXPECT_EQ((*joined)[i].first_row, static_cast<int64_t>(i) * 20);
    EXPECT_EQ((*joined)[i].stats.null_count, 2);
  }
}

TEST(PageJoinerTest, DataPagesV1AreCopiedAsTheyWere) {
  auto j = Join(4, 30, 10, 100, parquet::ParquetDataPageVersion::V1);
  ASSERT_TRUE(ReadBack(j.file)->Equals(**Rows(0, 120)->CombineChunks()));
  auto reader = Open(j.file);
  auto offsets = reader->GetPageIndexReader()->RowGroup(0)->GetOffsetIndex(0);
  EXPECT_EQ(offsets->page_locations().size(), 12u) << "v1 levels are compressed with the values";
}

TEST(PageJoinerTest, AMalformedPageIsRefusedNamingTheColumn) {
  auto groups = *EncodeRowGroups(*Rows(0, 20), Props(10, parquet::ParquetDataPageVersion::V2), 20);
  const auto& piece = groups.front();
  auto cc = piece.source->RowGroup(0)->ColumnChunk(0);
  std::string page(reinterpret_cast<const char*>(piece.bytes->data() + (cc->data_page_offset() - piece.begin)),
                   static_cast<size_t>(cc->total_compressed_size()));
  SourcePage broken;
  broken.bytes = std::string_view(page).substr(0, 5);  // a header cut short
  broken.rows = 10;
  auto joined = JoinPages(*piece.source->schema()->Column(0), arrow::Compression::ZSTD, {broken}, JoinLimits{});
  ASSERT_FALSE(joined.ok());
  EXPECT_NE(joined.status().message().find("column block"), std::string::npos) << joined.status().ToString();
}

TEST(PageJoinerTest, StatisticsMergeWithTheColumnsOrdering) {
  auto schema = parquet::schema::GroupNode::Make(
      "s", parquet::Repetition::REQUIRED,
      {parquet::schema::PrimitiveNode::Make("u", parquet::Repetition::OPTIONAL, parquet::LogicalType::Int(32, false),
                                            parquet::Type::INT32)});
  parquet::SchemaDescriptor descr;
  descr.Init(schema);
  auto encode = [](uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
  parquet::EncodedStatistics a, b, nulls;
  a.set_min(encode(5)).set_max(encode(0x80000000u)).set_null_count(1);
  b.set_min(encode(1)).set_max(encode(7)).set_null_count(0);
  nulls.all_null_value = true;
  nulls.set_null_count(4);
  auto merged = MergeEncodedStatistics(*descr.Column(0), {&a, &nulls, &b});
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(merged->min(), encode(1));
  EXPECT_EQ(merged->max(), encode(0x80000000u)) << "unsigned: 2^31 is the largest";
  EXPECT_EQ(merged->null_count, 5);
  EXPECT_FALSE(merged->all_null_value);
  auto all_null = MergeEncodedStatistics(*descr.Column(0), {&nulls, &nulls});
  ASSERT_TRUE(all_null.ok());
  EXPECT_TRUE(all_null->all_null_value);
  EXPECT_FALSE(all_null->has_min);
}

}  // namespace
}  // namespace sediment::table
