// Decoding of JSON-RPC answers (evm_decode.h): exact values, and malformed
// answers refused naming the block and the field.
#include "chain/evm_decode.h"

#include <arrow/api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

namespace sediment::chain {
namespace {

using nlohmann::json;

std::string H(char c, size_t bytes) { return "0x" + std::string(bytes * 2, c); }

EvmBlock MakeBlock(uint64_t number, char hash, char parent, int txs, int logs_per_tx) {
  EvmBlock b;
  b.block = {{"number", fmt::format("0x{:x}", number)},
             {"hash", H(hash, 32)},
             {"parentHash", H(parent, 32)},
             {"timestamp", "0x6b0dde73"},
             {"miner", H('c', 20)},
             {"gasUsed", "0x5208"},
             {"gasLimit", "0x1c9c380"},
             {"baseFeePerGas", "0x3b9aca00"},
             {"transactions", json::array()}};
  for (int k = 0; k < txs; ++k) {
    std::string tx_hash = "0x" + std::string(62, 'd') + fmt::format("{:02x}", k);
    b.block["transactions"].push_back({{"hash", tx_hash},
                                       {"from", H('e', 20)},
                                       {"to", k == 0 ? json(nullptr) : json(H('f', 20))},
                                       {"value", "0xde0b6b3a7640000"},
                                       {"input", "0x6001"},
                                       {"gas", "0x5208"},
                                       {"gasPrice", "0x3b9aca00"},
                                       {"type", "0x2"},
                                       {"nonce", fmt::format("0x{:x}", k)}});
    json logs = json::array();
    for (int j = 0; j < logs_per_tx; ++j) {
      logs.push_back({{"blockHash", H(hash, 32)},
                      {"logIndex", fmt::format("0x{:x}", k * logs_per_tx + j)},
                      {"address", H('a', 20)},
                      {"topics", json::array({H('1', 32), H('2', 32)})},
                      {"data", "0x0102"}});
    }
    b.receipts.push_back({{"transactionHash", tx_hash},
                          {"blockHash", H(hash, 32)},
                          {"gasUsed", "0x5208"},
                          {"status", "0x1"},
                          {"contractAddress", k == 0 ? json(H('9', 20)) : json(nullptr)},
                          {"logs", logs}});
  }
  return b;
}

TEST(EvmDecodeTest, QuantitiesAndDataAreExact) {
  EXPECT_EQ(*HexQuantity("0x0", "x"), 0u);
  EXPECT_EQ(*HexQuantity("0xffffffffffffffff", "x"), UINT64_MAX);
  EXPECT_FALSE(HexQuantity("0x1ffffffffffffffff", "x").ok()) << "65 bits";
  EXPECT_FALSE(HexQuantity("0x", "x").ok());
  EXPECT_FALSE(HexQuantity("12", "x").ok());
  EXPECT_FALSE(HexQuantity(12, "x").ok());
  auto bad = HexQuantity("0xzz", "block 7: gasUsed");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("block 7: gasUsed"), std::string::npos) << bad.status().message();
  EXPECT_EQ(*HexData("0x00ff", "d"), std::string("\x00\xff", 2));
  EXPECT_FALSE(HexData("0x0", "d").ok()) << "odd digits";
  EXPECT_FALSE(HexData("0x00", "d", 20).ok()) << "wrong size";
  // 10^18 wei and 2^256 - 1: 32 big-endian bytes.
  auto one_eth = *HexUint256("0xde0b6b3a7640000", "v");
  EXPECT_EQ(one_eth[31], 0x00);
  EXPECT_EQ(one_eth[24], 0x0d);
  EXPECT_EQ(one_eth[25], 0xe0);
  EXPECT_EQ(one_eth[0], 0);
  auto max = *HexUint256("0x" + std::string(64, 'f'), "v");
  for (auto byte : max) EXPECT_EQ(byte, 0xff);
  EXPECT_FALSE(HexUint256("0x1" + std::string(64, '0'), "v").ok()) << "257 bits";
}

TEST(EvmDecodeTest, BlocksTransactionsAndLogs) {
  std::vector<EvmBlock> blocks = {MakeBlock(10, 'a', '0', 2, 2), MakeBlock(11, 'b', 'a', 0, 0),
                                  MakeBlock(12, '3', 'b', 1, 1)};
  auto rows = DecodeEvmBlocks(10, blocks);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(rows->blocks->num_rows(), 3);
  EXPECT_EQ(rows->transactions->num_rows(), 3);
  EXPECT_EQ(rows->logs->num_rows(), 5);
  EXPECT_EQ(rows->hashes, (std::vector<std::string>{std::string(64, 'a'), std::string(64, 'b'), std::string(64, '3')}));
  EXPECT_EQ(rows->parent_hash, std::string(64, '0'));
  EXPECT_TRUE(rows->blocks->schema()->Equals(*EvmSchema(ChainTable::kBlocks)));
  auto to = rows->transactions->GetColumnByName("to");
  EXPECT_TRUE(to->IsNull(0)) << "a contract creation has no `to`";
  EXPECT_FALSE(to->IsNull(1));
  auto status = std::static_pointer_cast<arrow::UInt8Array>(rows->transactions->GetColumnByName("status"));
  EXPECT_EQ(status->Value(0), 1);
  auto topic2 = rows->logs->GetColumnByName("topic2");
  EXPECT_EQ(topic2->null_count(), 5);
  auto log_index = std::static_pointer_cast<arrow::UInt32Array>(rows->logs->GetColumnByName("log_index"));
  EXPECT_EQ(log_index->Value(3), 3u);
}

TEST(EvmDecodeTest, MalformedAnswersAreRefusedNamingTheBlock) {
  auto expect_error = [](std::vector<EvmBlock> blocks, const std::string& says) {
    auto rows = DecodeEvmBlocks(10, blocks);
    ASSERT_FALSE(rows.ok()) << says;
    EXPECT_TRUE(IsInvalidArgument(rows.status()));
    EXPECT_NE(rows.status().message().find(says), std::string::npos) << rows.status().message();
  };
  auto good = [] { return std::vector<EvmBlock>{MakeBlock(10, 'a', '0', 1, 1), MakeBlock(11, 'b', 'a', 1, 1)}; };
  auto b = good();
  b[1].block.erase("gasUsed");
  expect_error(b, "block 11: the answer has no field \"gasUsed\"");
  b = good();
  b[0].block["timestamp"] = "0xnothex";
  expect_error(b, "block 10: timestamp");
  b = good();
  b[1].receipts[0]["logs"][0]["blockHash"] = H('7', 32);
  expect_error(b, "block 11, transaction 0, log 0: the log's blockHash");
  b = good();
  b[1].block["parentHash"] = H('9', 32);
  expect_error(b, "block 11: parentHash");
  b = good();
  b[0].block = nullptr;
  expect_error(b, "block 10: the node has no such block");
  b = good();
  b[1].receipts.clear();
  expect_error(b, "block 11: 1 transactions but 0 receipts");
  b = good();
  b[0].block["number"] = "0xb";
  expect_error(b, "block 10: the node answered with block 11");
}

}  // namespace
}  // namespace sediment::chain
