#include "table/dictionary_choice.h"

#include <arrow/api.h>
#include <gtest/gtest.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>
#include <parquet/schema.h>

#include <random>

#include "table/parquet_assembler.h"

namespace sediment::table {
namespace {

// A logs-like row group: sorted blocks, hot addresses, unique topics and values, a column of few values.
std::shared_ptr<arrow::Table> Logs(int64_t rows) {
  std::mt19937_64 rng(7);
  std::discrete_distribution<int> hot_pick({50, 20, 10, 5, 5, 5, 5});
  arrow::Int64Builder block, value;
  arrow::FixedSizeBinaryBuilder address(arrow::fixed_size_binary(20)), topic(arrow::fixed_size_binary(32));
  arrow::BinaryBuilder data;
  arrow::Int32Builder kind;
  for (int64_t i = 0; i < rows; ++i) {
    EXPECT_TRUE(block.Append(i / 500).ok());
    EXPECT_TRUE(value.Append(static_cast<int64_t>(rng() >> 20)).ok());
    std::string a(20, static_cast<char>(hot_pick(rng) == 0 ? 0 : rng() % 3000));
    EXPECT_TRUE(address.Append(a).ok());
    std::string t(32, '\0');
    for (auto& c : t) c = static_cast<char>(rng());
    EXPECT_TRUE(topic.Append(t).ok());
    EXPECT_TRUE(data.Append(t.substr(0, 8 + rng() % 24)).ok());
    EXPECT_TRUE((i % 10 == 0 ? kind.AppendNull() : kind.Append(static_cast<int32_t>(i % 4))).ok());
  }
  auto schema = arrow::schema({arrow::field("block", arrow::int64(), false), arrow::field("value", arrow::int64()),
                               arrow::field("address", arrow::fixed_size_binary(20)),
                               arrow::field("topic", arrow::fixed_size_binary(32)),
                               arrow::field("data", arrow::binary()), arrow::field("kind", arrow::int32())});
  return arrow::Table::Make(
      schema, {*block.Finish(), *value.Finish(), *address.Finish(), *topic.Finish(), *data.Finish(), *kind.Finish()});
}

std::shared_ptr<parquet::WriterProperties> Props() {
  return parquet::WriterProperties::Builder().dictionary_pagesize_limit(256 << 10)->build();
}

TEST(DictionaryChoiceTest, NearlyUniqueColumnsAreWrittenPlainFromTheStart) {
  auto table = Logs(131072);
  auto descr = *ParquetSchemaFor(*table->schema(), *Props());
  auto chosen = ChooseDictionaries(*table, *descr, Props(), 131072);
  for (const char* name : {"value", "topic", "data"})
    EXPECT_FALSE(chosen->dictionary_enabled(parquet::schema::ColumnPath::FromDotString(name))) << name;
  for (const char* name : {"block", "address", "kind"})
    EXPECT_TRUE(chosen->dictionary_enabled(parquet::schema::ColumnPath::FromDotString(name))) << name;
  // Written so, each chunk is all one or the other: no dictionary dropped halfway.
  auto groups = EncodeRowGroups(*table, Props(), 131072);
  ASSERT_TRUE(groups.ok()) << groups.status().ToString();
  auto rg = groups->front().source->RowGroup(0);
  for (int c = 0; c < rg->num_columns(); ++c) {
    auto cc = rg->ColumnChunk(c);
    SCOPED_TRACE(cc->path_in_schema()->ToDotString());
    bool plain_data = false;
    for (const auto& e : cc->encoding_stats()) {
      plain_data |= e.page_type != parquet::PageType::DICTIONARY_PAGE && e.encoding == parquet::Encoding::PLAIN;
    }
    EXPECT_NE(cc->has_dictionary_page(), plain_data);
  }
}

TEST(DictionaryChoiceTest, ColumnsThatFitKeepTheirDictionaryAndOffMeansOff) {
  // Few rows: every value sampled, a small dictionary either way.
  auto small = Logs(2000);
  auto descr = *ParquetSchemaFor(*small->schema(), *Props());
  auto props = Props();
  EXPECT_EQ(ChooseDictionaries(*small, *descr, props, 131072), props);
  auto off = parquet::WriterProperties::Builder().disable_dictionary()->build();
  EXPECT_EQ(ChooseDictionaries(*Logs(131072), *descr, off, 131072), off);
}

}  // namespace
}  // namespace sediment::table
