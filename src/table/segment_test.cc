#include "table/segment.h"

#include <gtest/gtest.h>

#include "table/names.h"

namespace sediment::table {
namespace {

TEST(NamesTest, Rules) {
  EXPECT_TRUE(ValidateName("dataset", "eth_mainnet2").ok());
  for (const char* bad : {"", "Eth", "1eth", "eth-main", "eth.main", "_x", "a b"}) {
    Status st = ValidateName("dataset", bad);
    EXPECT_TRUE(IsInvalidArgument(st)) << bad;
    EXPECT_NE(st.message().find("dataset name"), std::string::npos);
  }
  EXPECT_TRUE(IsInvalidArgument(ValidateName("table", std::string(64, 'a'))));
  auto id = ParseTableId("eth.logs");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->dataset, "eth");
  EXPECT_EQ(id->table, "logs");
  EXPECT_FALSE(ParseTableId("ethlogs").ok());
  EXPECT_FALSE(ParseTableId("eth.Logs").ok());
}

TEST(SegmentTest, RecordRoundTrip) {
  SegmentRecord s;
  s.id = NewSegmentId(100);
  s.path = "tables/eth/logs/" + s.id + ".parquet";
  s.start = 100;
  s.end = 199;
  s.end_hash = "ab01";
  s.parent_hash = "cd02";
  s.rows = 5;
  s.bytes = 1000;
  s.stored_bytes = 400;
  s.generation = 2;
  s.parents = {"a", "b"};
  s.created_at_us = 123;
  auto back = DecodeSegmentRecord(EncodeSegmentRecord(s));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, s);
  EXPECT_EQ(EncodeSegmentRecord(*back), EncodeSegmentRecord(s)) << "encoding is canonical";

  auto meta = DecodeSegmentFileMetadata(EncodeSegmentFileMetadata(s));
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->start, 100u);
  EXPECT_EQ(meta->parents, s.parents);
  EXPECT_EQ(meta->rows, 0) << "sizes live in the footer, not the metadata";

  // A merge of many files lists its parents in the registry, only their count in the file.
  std::vector<std::string> many = s.parents.get();
  for (int i = 0; i < 100; ++i) many.push_back("p" + std::to_string(i));
  s.parents = many;
  const std::string text = EncodeSegmentFileMetadata(s);
  EXPECT_EQ(text.find("p99"), std::string::npos);
  EXPECT_NE(text.find("\"parents_count\":102"), std::string::npos) << text;
  meta = DecodeSegmentFileMetadata(text);
  ASSERT_TRUE(meta.ok()) << meta.status().ToString();
  EXPECT_TRUE(meta->parents.empty());
  EXPECT_EQ(meta->generation, s.generation);
}

TEST(SegmentTest, DecodeErrors) {
  EXPECT_TRUE(IsInvalidArgument(DecodeSegmentRecord("not json").status()));
  EXPECT_TRUE(IsInvalidArgument(DecodeSegmentRecord("{}").status()));
  auto st = DecodeSegmentRecord(R"({"v": 9})").status();
  EXPECT_NE(st.message().find("format version 9 is not supported"), std::string::npos) << st.message();
  EXPECT_TRUE(IsInvalidArgument(DecodeGcEntry(R"({"v":1,"path":"x"})").status()));
}

TEST(SegmentTest, IdsAndHashes) {
  std::string id = NewSegmentId(42);
  EXPECT_EQ(id.size(), 9u + 1 + 16);
  EXPECT_EQ(id.substr(0, 10), "000000042-");
  EXPECT_NE(NewSegmentId(42), id);
  EXPECT_EQ(*NormalizeHash("h", "ABcd"), "abcd");
  EXPECT_FALSE(NormalizeHash("h", "abc").ok());
  EXPECT_FALSE(NormalizeHash("h", "zz").ok());
  EXPECT_FALSE(NormalizeHash("h", "").ok());
}

}  // namespace
}  // namespace sediment::table
