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
             {"sha3Uncles", H('5', 32)},
             {"stateRoot", H('6', 32)},
             {"transactionsRoot", H('7', 32)},
             {"receiptsRoot", H('8', 32)},
             {"logsBloom", txs * logs_per_tx > 0 ? H('f', 256) : H('0', 256)},
             {"difficulty", "0x0"},
             {"extraData", "0x"},
             {"mixHash", H('4', 32)},
             {"nonce", "0x0000000000000042"},
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
                                       {"maxFeePerGas", "0x77359400"},
                                       {"maxPriorityFeePerGas", "0x3b9aca00"},
                                       {"chainId", "0x7a69"},
                                       {"accessList", json::array()},
                                       {"v", "0x1"},
                                       {"yParity", "0x1"},
                                       {"r", "0x" + std::string(63, 'a') + "1"},
                                       {"s", "0x1f"},
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
                          {"cumulativeGasUsed", fmt::format("0x{:x}", 21000 * (k + 1))},
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
  EXPECT_EQ(EvmSchema(ChainTable::kBlocks)->num_fields(), 22) << "Amp's 23, less _block_num";
  EXPECT_EQ(EvmSchema(ChainTable::kTransactions)->num_fields(), 24) << "Amp's 25, less _block_num";
  EXPECT_EQ(EvmSchema(ChainTable::kLogs)->num_fields(), 12) << "Amp's 13, less _block_num";
  auto to = rows->transactions->GetColumnByName("to");
  EXPECT_TRUE(to->IsNull(0)) << "a contract creation has no `to`";
  EXPECT_FALSE(to->IsNull(1));
  auto status = std::static_pointer_cast<arrow::BooleanArray>(rows->transactions->GetColumnByName("status"));
  EXPECT_TRUE(status->Value(0));
  auto value = std::static_pointer_cast<arrow::StringArray>(rows->transactions->GetColumnByName("value"));
  EXPECT_EQ(value->GetString(0), "1000000000000000000") << "value is the decimal of the uint256, as Amp has it";
  auto ts = std::static_pointer_cast<arrow::TimestampArray>(rows->logs->GetColumnByName("timestamp"));
  EXPECT_EQ(ts->Value(0), int64_t{0x6b0dde73} * 1000000000) << "the block's time, in nanoseconds";
  auto used = std::static_pointer_cast<arrow::UInt64Array>(rows->transactions->GetColumnByName("gas_used"));
  EXPECT_EQ(used->Value(1), 42000u) << "the receipt's cumulative gas, as Amp has it";
  auto nonce = std::static_pointer_cast<arrow::UInt64Array>(rows->blocks->GetColumnByName("nonce"));
  EXPECT_EQ(nonce->Value(0), 0x42u);
  auto r = std::static_pointer_cast<arrow::FixedSizeBinaryArray>(rows->transactions->GetColumnByName("r"));
  EXPECT_EQ(r->GetString(0), *HexData("0x" + std::string(63, 'a') + "1", "r"));
  auto s = std::static_pointer_cast<arrow::FixedSizeBinaryArray>(rows->transactions->GetColumnByName("s"));
  EXPECT_EQ(s->GetString(0), std::string(31, '\0') + "\x1f") << "left-padded to 32 bytes";
  EXPECT_TRUE(rows->transactions->GetColumnByName("gas_price")->IsNull(0)) << "a 1559 transaction bids a fee cap";
  auto access = rows->transactions->GetColumnByName("access_list");
  EXPECT_FALSE(access->IsNull(0)) << "a typed transaction's access list is a list, empty or not";
  EXPECT_TRUE(rows->transactions->GetColumnByName("blob_versioned_hashes")->IsNull(0));
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

TEST(EvmDecodeTest, EachTransactionTypeAsAmpHasIt) {
  auto blocks = std::vector<EvmBlock>{MakeBlock(10, 'a', '0', 4, 0)};
  auto& txs = blocks[0].block["transactions"];
  // 0: legacy, EIP-155 on chain 1 (v = 37: parity 0); 1: legacy before EIP-155 (v = 28: parity 1, no chain).
  for (int k : {0, 1}) {
    txs[k]["type"] = "0x0";
    for (const char* f : {"maxFeePerGas", "maxPriorityFeePerGas", "accessList", "yParity", "chainId"}) txs[k].erase(f);
  }
  txs[0]["v"] = "0x25";
  txs[1]["v"] = "0x1c";
  // 2: access list; 3: blob, with a list of storage keys on its access list.
  txs[2]["type"] = "0x1";
  for (const char* f : {"maxFeePerGas", "maxPriorityFeePerGas"}) txs[2].erase(f);
  txs[2]["yParity"] = "0x0";
  txs[3]["type"] = "0x3";
  txs[3]["maxFeePerBlobGas"] = "0x3";
  txs[3]["blobVersionedHashes"] = json::array({H('b', 32)});
  txs[3]["accessList"] =
      json::array({{{"address", H('c', 20)}, {"storageKeys", json::array({H('d', 32), H('e', 32)})}}});
  txs[3]["value"] = "0x" + std::string(64, 'f');
  auto rows = DecodeEvmBlocks(10, blocks);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  const auto& t = *rows->transactions;
  auto parity = std::static_pointer_cast<arrow::BooleanArray>(t.GetColumnByName("v_parity"));
  auto chain = std::static_pointer_cast<arrow::UInt64Array>(t.GetColumnByName("chain_id"));
  auto type = std::static_pointer_cast<arrow::Int32Array>(t.GetColumnByName("type"));
  EXPECT_FALSE(parity->Value(0));
  EXPECT_EQ(chain->Value(0), 1u) << "(37 - 35) / 2";
  EXPECT_TRUE(parity->Value(1));
  EXPECT_TRUE(chain->IsNull(1)) << "v = 28 names no chain";
  EXPECT_FALSE(parity->Value(2));
  EXPECT_EQ(chain->Value(3), 0x7a69u);
  EXPECT_EQ(type->Value(3), 3);
  auto price = std::static_pointer_cast<arrow::Decimal128Array>(t.GetColumnByName("gas_price"));
  auto cap = std::static_pointer_cast<arrow::Decimal128Array>(t.GetColumnByName("max_fee_per_gas"));
  EXPECT_EQ(price->FormatValue(0), "1000000000");
  EXPECT_EQ(cap->FormatValue(0), "1000000000") << "a legacy transaction's cap is its price";
  EXPECT_TRUE(t.GetColumnByName("max_priority_fee_per_gas")->IsNull(2));
  EXPECT_TRUE(price->IsNull(3));
  EXPECT_EQ(cap->FormatValue(3), "2000000000");
  auto blob_fee = std::static_pointer_cast<arrow::Decimal128Array>(t.GetColumnByName("max_fee_per_blob_gas"));
  EXPECT_TRUE(blob_fee->IsNull(2));
  EXPECT_EQ(blob_fee->FormatValue(3), "3");
  auto access = std::static_pointer_cast<arrow::ListArray>(t.GetColumnByName("access_list"));
  EXPECT_TRUE(access->IsNull(0)) << "a legacy transaction has no access list";
  EXPECT_EQ(access->value_length(2), 0);
  ASSERT_EQ(access->value_length(3), 1);
  auto entry = std::static_pointer_cast<arrow::StructArray>(access->values());
  auto keys = std::static_pointer_cast<arrow::ListArray>(entry->GetFieldByName("storage_keys"));
  EXPECT_EQ(keys->value_length(access->value_offset(3)), 2);
  auto blobs = std::static_pointer_cast<arrow::ListArray>(t.GetColumnByName("blob_versioned_hashes"));
  EXPECT_TRUE(blobs->IsNull(2));
  EXPECT_EQ(blobs->value_length(3), 1);
  auto value = std::static_pointer_cast<arrow::StringArray>(t.GetColumnByName("value"));
  EXPECT_EQ(value->GetString(3), "115792089237316195423570985008687907853269984665640564039457584007913129639935")
      << "2^256 - 1, exact";
  EXPECT_EQ(Uint256Decimal({}), "0");
}

TEST(EvmDecodeTest, ATableOfTheFirstSchemaKeepsItsColumnsAndGainsAmpsAsNullable) {
  for (ChainTable t : kAllTables) {
    auto legacy = LegacyEvmSchema(t);
    auto upgraded = EvmWriteSchema(t, legacy);
    ASSERT_TRUE(upgraded.ok()) << upgraded.status().ToString();
    const auto& s = **upgraded;
    for (int i = 0; i < legacy->num_fields(); ++i) EXPECT_TRUE(s.field(i)->Equals(legacy->field(i))) << i;
    for (int i = legacy->num_fields(); i < s.num_fields(); ++i)
      EXPECT_TRUE(s.field(i)->nullable()) << s.field(i)->name();
    auto amp = EvmSchema(t);
    for (const auto& f : amp->fields()) EXPECT_GE(s.GetFieldIndex(f->name()), 0) << f->name();
    // Written again, nothing changes; a new table has Amp's schema as it is.
    EXPECT_TRUE((*EvmWriteSchema(t, *upgraded))->Equals(s));
    EXPECT_TRUE((*EvmWriteSchema(t, nullptr))->Equals(*EvmSchema(t)));
  }
  // Rows for the upgraded tables: the first columns mean what they meant.
  auto blocks = std::vector<EvmBlock>{MakeBlock(10, 'a', '0', 2, 1)};
  EvmSchemas schemas{*EvmWriteSchema(ChainTable::kBlocks, LegacyEvmSchema(ChainTable::kBlocks)),
                     *EvmWriteSchema(ChainTable::kTransactions, LegacyEvmSchema(ChainTable::kTransactions)),
                     *EvmWriteSchema(ChainTable::kLogs, LegacyEvmSchema(ChainTable::kLogs))};
  auto rows = DecodeEvmBlocks(10, blocks, schemas);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  auto used = std::static_pointer_cast<arrow::UInt64Array>(rows->transactions->GetColumnByName("gas_used"));
  EXPECT_EQ(used->Value(1), 21000u) << "the first schema's gas_used is the receipt's own";
  auto ts = std::static_pointer_cast<arrow::UInt64Array>(rows->blocks->GetColumnByName("timestamp"));
  EXPECT_EQ(ts->Value(0), 0x6b0dde73u) << "seconds, as before";
  EXPECT_EQ(std::static_pointer_cast<arrow::UInt32Array>(rows->blocks->GetColumnByName("tx_count"))->Value(0), 2u);
  EXPECT_FALSE(rows->transactions->GetColumnByName("tx_hash")->IsNull(0)) << "Amp's columns are filled too";
  EXPECT_FALSE(rows->logs->GetColumnByName("block_hash")->IsNull(0));
  // A column the source does not write, or writes with another type: refused, naming it.
  auto odd = arrow::schema({arrow::field("block_num", arrow::uint64(), false), arrow::field("mood", arrow::utf8())});
  auto refused = EvmWriteSchema(ChainTable::kBlocks, odd);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("\"mood\""), std::string::npos) << refused.status().message();
  auto retyped =
      arrow::schema({arrow::field("block_num", arrow::uint64(), false), arrow::field("miner", arrow::utf8())});
  refused = EvmWriteSchema(ChainTable::kBlocks, retyped);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("fixed_size_binary[20]"), std::string::npos) << refused.status().message();
}

TEST(EvmDecodeTest, MalformedNewFieldsAreRefusedNamingThem) {
  auto expect_error = [](std::vector<EvmBlock> blocks, const std::string& says) {
    auto rows = DecodeEvmBlocks(10, blocks);
    ASSERT_FALSE(rows.ok()) << says;
    EXPECT_NE(rows.status().message().find(says), std::string::npos) << rows.status().message();
  };
  auto good = [] { return std::vector<EvmBlock>{MakeBlock(10, 'a', '0', 1, 1)}; };
  auto b = good();
  b[0].block["logsBloom"] = "0x00";
  expect_error(b, "block 10: logsBloom");
  b = good();
  b[0].block["difficulty"] = "0x" + std::string(40, 'f');
  expect_error(b, "does not fit in decimal(38, 0)");
  b = good();
  b[0].block["transactions"][0]["yParity"] = "0x2";
  expect_error(b, "block 10, transaction 0: yParity 2");
  b = good();
  b[0].block["transactions"][0]["type"] = "0x0";
  b[0].block["transactions"][0]["v"] = "0x1e";
  expect_error(b, "block 10, transaction 0: v 30");
  b = good();
  b[0].block["transactions"][0]["accessList"] = json::array({{{"address", H('c', 20)}}});
  expect_error(b, "accessList[0]");
  b = good();
  b[0].receipts[0].erase("status");
  expect_error(b, "neither a status nor a state root");
  b = good();
  b[0].receipts[0].erase("status");
  b[0].receipts[0]["root"] = H('1', 32);
  auto pre_byzantium = DecodeEvmBlocks(10, b);
  ASSERT_TRUE(pre_byzantium.ok()) << pre_byzantium.status().ToString();
  EXPECT_TRUE(
      std::static_pointer_cast<arrow::BooleanArray>(pre_byzantium->transactions->GetColumnByName("status"))->Value(0))
      << "a receipt with a state root is a success, as Amp has it";
}

TEST(EvmDecodeTest, LogsFromGetLogsNeedNoReceiptsAndAreChecked) {
  // Blocks with transaction hashes only, and their logs as eth_getLogs gives them.
  auto with_logs = [] {
    std::vector<EvmBlock> blocks = {MakeBlock(10, 'a', '0', 2, 1), MakeBlock(11, 'b', 'a', 1, 2)};
    for (auto& b : blocks) {
      b.logs.emplace();
      for (size_t k = 0; k < b.receipts.size(); ++k) {
        for (auto lg : b.receipts[k]["logs"]) {
          lg["blockNumber"] = b.block["number"];
          lg["transactionIndex"] = fmt::format("0x{:x}", k);
          lg["transactionHash"] = b.block["transactions"][k]["hash"];
          b.logs->push_back(lg);
        }
      }
      json hashes = json::array();
      for (const auto& tx : b.block["transactions"]) hashes.push_back(tx["hash"]);
      b.block["transactions"] = hashes;
      b.receipts.clear();
    }
    return blocks;
  };
  EvmSchemas no_transactions = EvmSchemas::Amp();
  no_transactions.transactions = nullptr;
  auto rows = DecodeEvmBlocks(10, with_logs(), no_transactions);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(rows->transactions, nullptr);
  EXPECT_EQ(rows->blocks->num_rows(), 2);
  ASSERT_EQ(rows->logs->num_rows(), 4);
  auto tx_index = std::static_pointer_cast<arrow::UInt32Array>(rows->logs->GetColumnByName("tx_index"));
  EXPECT_EQ(tx_index->Value(1), 1u);
  auto tx_hash = std::static_pointer_cast<arrow::FixedSizeBinaryArray>(rows->logs->GetColumnByName("tx_hash"));
  EXPECT_EQ(tx_hash->GetString(1), *HexData("0x" + std::string(62, 'd') + "01", "h"));
  // The same rows as from the receipts.
  std::vector<EvmBlock> from_receipts = {MakeBlock(10, 'a', '0', 2, 1), MakeBlock(11, 'b', 'a', 1, 2)};
  auto same = DecodeEvmBlocks(10, from_receipts);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->logs->Equals(*rows->logs));

  auto expect_error = [&](std::vector<EvmBlock> blocks, const std::string& says) {
    auto got = DecodeEvmBlocks(10, blocks, no_transactions);
    ASSERT_FALSE(got.ok()) << says;
    EXPECT_NE(got.status().message().find(says), std::string::npos) << got.status().message();
  };
  auto b = with_logs();
  (*b[1].logs)[0]["transactionHash"] = H('7', 32);
  expect_error(b, "block 11, log 0 (eth_getLogs): transaction");
  b = with_logs();
  std::swap((*b[1].logs)[0], (*b[1].logs)[1]);
  auto swapped = DecodeEvmBlocks(10, b, no_transactions);
  ASSERT_TRUE(swapped.ok()) << "a node may answer a block's logs in another order: " << swapped.status().ToString();
  EXPECT_TRUE(swapped->logs->Equals(*rows->logs));
  b = with_logs();
  b[1].logs->erase(b[1].logs->begin());
  expect_error(b, "a log is missing, repeated or out of order");
  b = with_logs();
  b[1].logs->clear();
  expect_error(b, "block 11: eth_getLogs gave 0 logs but the block's logsBloom is not empty");
  b = with_logs();
  (*b[0].logs)[0]["removed"] = true;
  expect_error(b, "removed");
  b = with_logs();
  (*b[0].logs)[0]["blockHash"] = H('9', 32);
  expect_error(b, "the log's blockHash");
  b = with_logs();
  (*b[0].logs)[1]["blockNumber"] = "0xb";
  expect_error(b, "blockNumber 11 is not the block's");
  // Without the transactions table, and the logs from eth_getLogs, receipts are not needed.
  b = with_logs();
  EXPECT_TRUE(b[0].receipts.empty());
  EvmSchemas only_blocks;
  only_blocks.blocks = EvmSchema(ChainTable::kBlocks);
  auto blocks_only = DecodeEvmBlocks(10, b, only_blocks);
  ASSERT_TRUE(blocks_only.ok()) << blocks_only.status().ToString();
  EXPECT_EQ(blocks_only->logs, nullptr);
}

}  // namespace
}  // namespace sediment::chain
