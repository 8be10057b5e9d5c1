#include "table/plain_decode.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/util/key_value_metadata.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>
#include <parquet/schema.h>

#include <set>

#include "table/parquet_assembler.h"
#include "table/stored_types.h"

namespace sediment::table {
namespace {

// Every type the decoder reads, nullable and not, with nulls in places.
std::shared_ptr<arrow::Table> Sample(int64_t rows, int64_t first) {
  arrow::Int64Builder block;
  arrow::Int32Builder index;
  arrow::DoubleBuilder price;
  arrow::FloatBuilder ratio;
  arrow::Date32Builder day;
  arrow::TimestampBuilder at(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"), arrow::default_memory_pool());
  arrow::BinaryBuilder data;
  arrow::StringBuilder name;
  arrow::FixedSizeBinaryBuilder hash(arrow::fixed_size_binary(3));
  for (int64_t i = first; i < first + rows; ++i) {
    EXPECT_TRUE(block.Append(i).ok());
    EXPECT_TRUE((i % 4 == 0 ? index.AppendNull() : index.Append(static_cast<int32_t>(i * 3))).ok());
    EXPECT_TRUE((i % 5 == 0 ? price.AppendNull() : price.Append(static_cast<double>(i) / 7)).ok());
    EXPECT_TRUE(ratio.Append(static_cast<float>(i) / 3).ok());
    EXPECT_TRUE(day.Append(static_cast<int32_t>(i % 1000)).ok());
    EXPECT_TRUE((i % 6 == 0 ? at.AppendNull() : at.Append(i * 1000)).ok());
    EXPECT_TRUE((i % 3 == 0 ? data.AppendNull() : data.Append(std::string(static_cast<size_t>(i % 17), 'x'))).ok());
    EXPECT_TRUE(name.Append("n" + std::to_string(i)).ok());
    const char bytes[3] = {static_cast<char>(i), static_cast<char>(i >> 8), 7};
    EXPECT_TRUE((i % 7 == 0 ? hash.AppendNull() : hash.Append(bytes)).ok());
  }
  auto schema = arrow::schema({arrow::field("block", arrow::int64(), false), arrow::field("index", arrow::int32()),
                               arrow::field("price", arrow::float64()), arrow::field("ratio", arrow::float32(), false),
                               arrow::field("day", arrow::date32()), arrow::field("at", at.type()),
                               arrow::field("data", arrow::binary()), arrow::field("name", arrow::utf8(), false),
                               arrow::field("hash", arrow::fixed_size_binary(3))});
  return arrow::Table::Make(schema, {*block.Finish(), *index.Finish(), *price.Finish(), *ratio.Finish(), *day.Finish(),
                                     *at.Finish(), *data.Finish(), *name.Finish(), *hash.Finish()});
}

// `table` as a Parquet file in memory, row groups of `rows` rows, no
// dictionaries, zstd; data pages v2 or v1, pages of at most 50 rows.
std::shared_ptr<arrow::Buffer> Encode(const arrow::Table& table, int64_t rows, bool v2, bool dictionary = false) {
  parquet::WriterProperties::Builder b;
  b.compression(arrow::Compression::ZSTD)->max_rows_per_page(50);
  if (!dictionary) b.disable_dictionary();
  if (v2) b.data_page_version(parquet::ParquetDataPageVersion::V2);
  auto sink = *arrow::io::BufferOutputStream::Create();
  auto arrow_props = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  EXPECT_TRUE(parquet::arrow::WriteTable(table, arrow::default_memory_pool(), sink, rows, b.build(), arrow_props).ok());
  return *sink->Finish();
}

struct Decoded {
  std::shared_ptr<arrow::Table> table;
  Status status;
};

// Every row group of `file` through a PlainTableBuilder, `cut` bytes short.
Decoded DecodeAll(const std::shared_ptr<arrow::Buffer>& file, const std::shared_ptr<arrow::Schema>& schema,
                  int64_t cut = 0) {
  auto reader = parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(file));
  auto md = reader->metadata();
  auto expected = *ParquetSchemaFor(*schema, *parquet::default_writer_properties());
  PlainTableBuilder builder(schema, *expected);
  EXPECT_TRUE(builder.Reserve(md->num_rows(), {}).ok());
  for (int i = 0; i < md->num_row_groups(); ++i) {
    auto rg = md->RowGroup(i);
    EXPECT_TRUE(PlainDecodable(*rg, *md->schema(), *expected, *schema)) << i;
    auto [begin, end] = RowGroupByteRange(*rg);
    std::string_view bytes(reinterpret_cast<const char*>(file->data()) + begin, static_cast<size_t>(end - begin - cut));
    if (Status st = builder.Append(*rg, bytes, begin); !st.ok()) return {nullptr, st};
  }
  auto t = builder.Finish();
  return {t.ok() ? *t : nullptr, t.status()};
}

std::shared_ptr<arrow::Table> ReadWithArrow(const std::shared_ptr<arrow::Buffer>& file) {
  std::unique_ptr<parquet::arrow::FileReader> reader;
  reader = *parquet::arrow::OpenFile(std::make_shared<arrow::io::BufferReader>(file), arrow::default_memory_pool());
  std::shared_ptr<arrow::Table> t;
  EXPECT_TRUE(reader->ReadTable(&t).ok());
  return *t->CombineChunks();
}

TEST(PlainDecodeTest, EveryTypeDecodesAsArrowsReaderReadsIt) {
  auto table = Sample(1000, 0);
  for (bool v2 : {true, false}) {
    SCOPED_TRACE(v2 ? "data page v2" : "data page v1");
    auto file = Encode(*table, 300, v2);
    auto got = DecodeAll(file, table->schema());
    ASSERT_TRUE(got.status.ok()) << got.status.ToString();
    ASSERT_EQ(got.table->num_rows(), 1000);
    auto want = ReadWithArrow(file);
    for (int c = 0; c < table->num_columns(); ++c) {
      EXPECT_TRUE(got.table->column(c)->Equals(*want->column(c))) << table->schema()->field(c)->name();
      EXPECT_TRUE(got.table->column(c)->Equals(*table->column(c))) << table->schema()->field(c)->name();
    }
    EXPECT_TRUE(got.table->ValidateFull().ok());
  }
}

TEST(PlainDecodeTest, DictionariesNestedColumnsAndOtherSchemasAreLeftToArrow) {
  auto table = Sample(200, 0);
  auto expected = *ParquetSchemaFor(*table->schema(), *parquet::default_writer_properties());
  auto dictionary = Encode(*table, 100, true, /*dictionary=*/true);
  auto md = parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(dictionary))->metadata();
  EXPECT_FALSE(PlainDecodable(*md->RowGroup(0), *md->schema(), *expected, *table->schema()));
  // A file of an earlier schema (a column fewer) is not the one expected.
  auto fewer = *table->RemoveColumn(8);
  auto older = Encode(*fewer, 100, true);
  md = parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(older))->metadata();
  EXPECT_FALSE(PlainDecodable(*md->RowGroup(0), *md->schema(), *expected, *table->schema()));
  // A list column.
  arrow::ListBuilder lists(arrow::default_memory_pool(), std::make_shared<arrow::Int32Builder>());
  ASSERT_TRUE(lists.Append().ok());
  ASSERT_TRUE(static_cast<arrow::Int32Builder*>(lists.value_builder())->AppendValues({1, 2}).ok());
  ASSERT_TRUE(lists.AppendNull().ok());
  auto list = arrow::Table::Make(arrow::schema({arrow::field("l", arrow::list(arrow::int32()))}),
                                 arrow::ArrayVector{*lists.Finish()});
  auto list_expected = *ParquetSchemaFor(*list->schema(), *parquet::default_writer_properties());
  auto nested = Encode(*list, 100, true);
  md = parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(nested))->metadata();
  EXPECT_FALSE(PlainDecodable(*md->RowGroup(0), *md->schema(), *list_expected, *list->schema()));
}

TEST(PlainDecodeTest, SecondsAreLeftToArrowsReader) {
  // Parquet has no seconds: Arrow stores timestamp[s] and time32[s] as
  // milliseconds, which this decoder would read as seconds.
  arrow::TimestampBuilder at(arrow::timestamp(arrow::TimeUnit::SECOND), arrow::default_memory_pool());
  arrow::Time32Builder clock(arrow::time32(arrow::TimeUnit::SECOND), arrow::default_memory_pool());
  ASSERT_TRUE(at.Append(1700000000).ok());
  ASSERT_TRUE(clock.Append(3600).ok());
  for (const auto& column : {*at.Finish(), *clock.Finish()}) {
    auto table = arrow::Table::Make(arrow::schema({arrow::field("t", column->type())}), arrow::ArrayVector{column});
    auto expected = *ParquetSchemaFor(*table->schema(), *parquet::default_writer_properties());
    auto file = Encode(*table, 10, true);
    auto md = parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(file))->metadata();
    EXPECT_FALSE(PlainDecodable(*md->RowGroup(0), *md->schema(), *expected, *table->schema()))
        << column->type()->ToString();
  }
}

TEST(PlainDecodeTest, AnUnsignedValueOutsideItsTypeIsRefused) {
  // A uint32 column is stored widened to int64 (kUnsignedKey): a stored value
  // a uint32 cannot hold is refused, as the cast to the table's type would.
  auto md = arrow::key_value_metadata({std::string(kUnsignedKey)}, {"uint32"});
  auto schema = arrow::schema({arrow::field("n", arrow::int64(), true, md)});
  arrow::Int64Builder values;
  ASSERT_TRUE(values.AppendValues({1, 4294967295}).ok());
  ASSERT_TRUE(DecodeAll(Encode(*arrow::Table::Make(schema, arrow::ArrayVector{*values.Finish()}), 10, true), schema)
                  .status.ok());
  ASSERT_TRUE(values.AppendValues({1, 4294967296}).ok());
  auto got = DecodeAll(Encode(*arrow::Table::Make(schema, arrow::ArrayVector{*values.Finish()}), 10, true), schema);
  ASSERT_FALSE(got.status.ok());
  EXPECT_NE(got.status.message().find("column n: a value 4294967296 outside its unsigned type"), std::string::npos)
      << got.status.message();
}

TEST(PlainDecodeTest, ChunksCutShortOrDamagedAreErrorsNamingTheColumn) {
  auto table = Sample(400, 0);
  auto file = Encode(*table, 400, true);
  auto cut = DecodeAll(file, table->schema(), 10);
  ASSERT_FALSE(cut.status.ok());
  EXPECT_NE(cut.status.message().find("column hash: its chunk"), std::string::npos) << cut.status.message();
  // A page's compressed values damaged: the column's pages do not decompress.
  auto md = parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(file))->metadata();
  auto damaged = *arrow::AllocateBuffer(file->size());
  std::memcpy(damaged->mutable_data(), file->data(), static_cast<size_t>(file->size()));
  auto chunk = md->RowGroup(0)->ColumnChunk(6);
  const int64_t middle = chunk->data_page_offset() + chunk->total_compressed_size() / 2;
  for (int64_t i = middle; i < middle + 16; ++i) damaged->mutable_data()[i] ^= 0x5a;
  auto bad = DecodeAll(std::shared_ptr<arrow::Buffer>(std::move(damaged)), table->schema());
  ASSERT_FALSE(bad.status.ok());
  EXPECT_NE(bad.status.message().find("column data: "), std::string::npos) << bad.status.message();
}

TEST(PlainDecodeTest, AStoredFixedBinaryValueOfAnotherLengthIsRefused) {
  // A binary column marked as holding fixed_size_binary(4) (kFixedSizeKey) with a 3-byte value.
  auto md = arrow::key_value_metadata({std::string(kStoreBinaryKey), std::string(kFixedSizeKey)}, {"true", "4"});
  auto schema = arrow::schema({arrow::field("address", arrow::binary(), true, md)});
  arrow::BinaryBuilder values;
  ASSERT_TRUE(values.Append("abcd").ok());
  ASSERT_TRUE(values.AppendNull().ok());
  ASSERT_TRUE(values.Append("abc").ok());
  auto file = Encode(*arrow::Table::Make(schema, arrow::ArrayVector{*values.Finish()}), 10, true);
  auto got = DecodeAll(file, schema);
  ASSERT_FALSE(got.status.ok());
  EXPECT_NE(got.status.message().find("column address: a value of 3 bytes where its type, fixed_size_binary(4)"),
            std::string::npos)
      << got.status.message();
}

// A hostile footer's row count or size cannot make a reservation overflow:
// the column is named, nothing is reserved, and the builder still works.
TEST(PlainDecodeTest, SizesThatOverflowAreRefusedByColumn) {
  auto table = Sample(10, 0);
  auto expected = *ParquetSchemaFor(*table->schema(), *parquet::default_writer_properties());
  PlainTableBuilder builder(table->schema(), *expected);
  Status st = builder.ReserveColumn(0, INT64_MAX / 4, 0);  // block: 8 bytes a row
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("block"), std::string::npos) << st.ToString();
  EXPECT_FALSE(builder.ReserveColumn(6, 10, -1).ok());  // data: a negative size
  EXPECT_TRUE(builder.ReserveColumn(0, 10, 0).ok());
  auto column = builder.FinishColumn(0);
  ASSERT_TRUE(column.ok());
  EXPECT_EQ((*column)->length(), 0);
}

// Columns decoded one after another into reused buffers (a merge's steps):
// each equals Arrow's reading of it, across builders, and an array still
// held when the next column is decoded keeps its values (the next one gets
// new buffers).
TEST(PlainDecodeTest, ReusedBuffersGiveEachColumnItsOwnValues) {
  auto table = Sample(700, 3);
  auto file = Encode(*table, 250, /*v2=*/false);
  auto md = parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(file))->metadata();
  auto expected = *ParquetSchemaFor(*table->schema(), *parquet::default_writer_properties());
  auto want = ReadWithArrow(file);
  PlainColumnBuffers reuse;
  std::vector<std::shared_ptr<arrow::Array>> held;
  std::set<const uint8_t*> kept;  // where each column's values were, each array dropped
  for (int pass = 0; pass < 2; ++pass) {
    SCOPED_TRACE(pass == 0 ? "each array dropped" : "every array held");
    PlainTableBuilder builder(table->schema(), *expected);
    builder.ReuseBuffers(&reuse);
    for (int c = 0; c < table->num_columns(); ++c) {
      ASSERT_TRUE(builder.ReserveColumn(c, md->num_rows(), 64).ok());
      for (int i = 0; i < md->num_row_groups(); ++i) {
        auto rg = md->RowGroup(i);
        auto [begin, end] = RowGroupByteRange(*rg);
        std::string_view bytes(reinterpret_cast<const char*>(file->data()) + begin, static_cast<size_t>(end - begin));
        ASSERT_TRUE(builder.AppendColumn(c, *rg, bytes, begin).ok());
      }
      auto column = builder.FinishColumn(c);
      ASSERT_TRUE(column.ok());
      EXPECT_TRUE((*column)->Equals(*want->column(c)->chunk(0))) << table->schema()->field(c)->name();
      EXPECT_TRUE((*column)->ValidateFull().ok());
      if (pass == 1) held.push_back(*column);
      if (pass == 0) kept.insert((*column)->data()->buffers.back()->data());
    }
  }
  // The first column (8 bytes a row) takes the most: the others fit in its buffer.
  EXPECT_EQ(kept.size(), 1u) << "every column decoded into the one kept values buffer";
  for (int c = 0; c < table->num_columns(); ++c) {
    EXPECT_TRUE(held[static_cast<size_t>(c)]->Equals(*want->column(c)->chunk(0))) << table->schema()->field(c)->name();
  }
}

}  // namespace
}  // namespace sediment::table
