#include "chain/generator.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <gtest/gtest.h>

#include "base/crypto.h"

namespace sediment::chain {
namespace {

std::string Bytes(const arrow::RecordBatch& batch) {
  auto sink = *arrow::io::BufferOutputStream::Create();
  auto writer = *arrow::ipc::MakeStreamWriter(sink, batch.schema());
  EXPECT_TRUE(writer->WriteRecordBatch(batch).ok());
  EXPECT_TRUE(writer->Close().ok());
  return (*sink->Finish())->ToString();
}

TEST(GeneratorTest, SameSeedSameBytes) {
  ChainOptions o;
  o.seed = 7;
  o.txs_per_block = 20;
  ChainGenerator a(o), b(o);
  for (ChainTable t : kAllTables) {
    auto x = a.Generate(t, 100, 110, 200);
    auto y = b.Generate(t, 100, 110, 200);
    ASSERT_TRUE(x.ok() && y.ok());
    EXPECT_EQ(Bytes(**x), Bytes(**y)) << TableName(t);
    EXPECT_TRUE((*x)->schema()->Equals(*TableSchema(t)));
    ASSERT_TRUE((*x)->ValidateFull().ok());
  }
  o.seed = 8;
  ChainGenerator c(o);
  EXPECT_NE(Bytes(**a.Generate(ChainTable::kLogs, 100, 110, 200)),
            Bytes(**c.Generate(ChainTable::kLogs, 100, 110, 200)));
}

TEST(GeneratorTest, RealisticShapes) {
  ChainOptions o;  // ~150 txs per block, 2 logs per tx
  ChainGenerator g(o);
  auto blocks = *g.Generate(ChainTable::kBlocks, 0, 99, 99);
  auto txs = *g.Generate(ChainTable::kTransactions, 0, 99, 99);
  auto logs = *g.Generate(ChainTable::kLogs, 0, 99, 99);
  EXPECT_EQ(blocks->num_rows(), 100);
  EXPECT_NEAR(txs->num_rows() / 100.0, 150, 15);
  EXPECT_NEAR(logs->num_rows() / static_cast<double>(txs->num_rows()), 2.0, 0.3);
  // tx_count agrees with the transactions table.
  auto counts = std::static_pointer_cast<arrow::UInt32Array>(blocks->GetColumnByName("tx_count"));
  int64_t total = 0;
  for (int64_t i = 0; i < counts->length(); ++i) total += counts->Value(i);
  EXPECT_EQ(total, txs->num_rows());
  // Block numbers never decrease.
  auto bn = std::static_pointer_cast<arrow::UInt64Array>(logs->column(0));
  for (int64_t i = 1; i < bn->length(); ++i) ASSERT_LE(bn->Value(i - 1), bn->Value(i));
  // Skewed sizes: most inputs are short, a few are long.
  auto input = std::static_pointer_cast<arrow::BinaryArray>(txs->GetColumnByName("input"));
  int64_t longest = 0, empty = 0;
  for (int64_t i = 0; i < input->length(); ++i) {
    longest = std::max<int64_t>(longest, input->value_length(i));
    empty += input->value_length(i) == 0;
  }
  EXPECT_GT(longest, 2000);
  EXPECT_GT(empty, txs->num_rows() / 5);
  EXPECT_GT(txs->GetColumnByName("to")->null_count(), 0);
}

TEST(GeneratorTest, ParentHashesChain) {
  ChainOptions o;
  o.txs_per_block = 1;
  ChainGenerator g(o);
  auto blocks = *g.Generate(ChainTable::kBlocks, 0, 20, 20);
  auto hash = std::static_pointer_cast<arrow::FixedSizeBinaryArray>(blocks->GetColumnByName("hash"));
  auto parent = std::static_pointer_cast<arrow::FixedSizeBinaryArray>(blocks->GetColumnByName("parent_hash"));
  for (int64_t i = 1; i < blocks->num_rows(); ++i) EXPECT_EQ(parent->GetView(i), hash->GetView(i - 1));
  EXPECT_EQ(Hex(reinterpret_cast<const uint8_t*>(hash->GetView(5).data()), 32), g.BlockHashHex(5, 20));
}

TEST(GeneratorTest, ReorgsReplaceTheLastBlocks) {
  ChainOptions o;
  o.reorg_probability = 0.3;
  o.max_reorg_depth = 4;
  ChainGenerator g(o);
  int events = 0;
  for (uint64_t n = 1; n < 500; ++n) {
    int64_t depth = g.ReorgDepthAt(n);
    if (depth == 0) continue;
    events++;
    ASSERT_LE(depth, 4);
    // The blocks [n - depth, n - 1] change when n is produced; older ones don't.
    for (uint64_t b = n - depth; b < n; ++b) EXPECT_NE(g.BlockHashHex(b, n - 1), g.BlockHashHex(b, n)) << b;
    if (n > static_cast<uint64_t>(depth)) {
      EXPECT_EQ(g.BlockHashHex(n - depth - 1, n - 1), g.BlockHashHex(n - depth - 1, n));
    }
  }
  EXPECT_GT(events, 100);
  // Deep history is final.
  EXPECT_EQ(g.BlockHashHex(10, 100), g.BlockHashHex(10, 100000));
}

}  // namespace
}  // namespace sediment::chain
