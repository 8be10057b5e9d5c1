// The evm tables' columns (evm_columns_internal.h): what each is named and
// typed, and which field of the answer fills it.
#include <arrow/api.h>
#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

#include "chain/evm_columns_internal.h"
#include "chain/evm_hex.h"

namespace sediment::chain::evm_internal {
namespace {

std::shared_ptr<arrow::DataType> H32() { return arrow::fixed_size_binary(32); }
std::shared_ptr<arrow::DataType> A20() { return arrow::fixed_size_binary(20); }
std::shared_ptr<arrow::DataType> Dec() { return arrow::decimal128(38, 0); }
std::shared_ptr<arrow::DataType> Time() { return arrow::timestamp(arrow::TimeUnit::NANO, "+00:00"); }
std::shared_ptr<arrow::DataType> AccessListType() {
  return arrow::list(
      arrow::struct_({arrow::field("address", A20()), arrow::field("storage_keys", arrow::list(H32()))}));
}

// Amp's blocks table.
const std::vector<Column>& AmpBlockColumns() {
  static const auto* columns = new std::vector<Column>{
      {"block_num", arrow::uint64(), false, PutBlockNum},
      {"timestamp", Time(), false, [](Builder* b, const Row& r) { return PutTimestamp(b, r); }},
      {"hash", H32(), false, PutBlockHash},
      {"parent_hash", H32(), false,
       [](Builder* b, const Row& r) { return PutFixed(b, r, Obj::kBlock, "parentHash", 32, Absent::kError); }},
      {"ommers_hash", H32(), false,
       [](Builder* b, const Row& r) { return PutFixed(b, r, Obj::kBlock, "sha3Uncles", 32, Absent::kError); }},
      {"miner", A20(), false,
       [](Builder* b, const Row& r) { return PutFixed(b, r, Obj::kBlock, "miner", 20, Absent::kError); }},
      {"state_root", H32(), false,
       [](Builder* b, const Row& r) { return PutFixed(b, r, Obj::kBlock, "stateRoot", 32, Absent::kError); }},
      {"transactions_root", H32(), false,
       [](Builder* b, const Row& r) { return PutFixed(b, r, Obj::kBlock, "transactionsRoot", 32, Absent::kError); }},
      {"receipt_root", H32(), false,
       [](Builder* b, const Row& r) { return PutFixed(b, r, Obj::kBlock, "receiptsRoot", 32, Absent::kError); }},
      {"logs_bloom", arrow::binary(), false,
       [](Builder* b, const Row& r) { return PutBinary(b, r, Obj::kBlock, "logsBloom", 256); }},
      {"difficulty", Dec(), false,
       [](Builder* b, const Row& r) { return PutDecimal(b, r, Obj::kBlock, "difficulty", Absent::kError); }},
      {"total_difficulty", Dec(), true,
       [](Builder* b, const Row& r) { return PutDecimal(b, r, Obj::kBlock, "totalDifficulty", Absent::kNull); }},
      {"gas_limit", arrow::uint64(), false,
       [](Builder* b, const Row& r) { return PutQuantity(b, r, Obj::kBlock, "gasLimit", Absent::kError); }},
      {"gas_used", arrow::uint64(), false,
       [](Builder* b, const Row& r) { return PutQuantity(b, r, Obj::kBlock, "gasUsed", Absent::kError); }},
      {"extra_data", arrow::binary(), false,
       [](Builder* b, const Row& r) { return PutBinary(b, r, Obj::kBlock, "extraData"); }},
      // Nodes of chains without proof of work may leave these out: zero, as Amp has them.
      {"mix_hash", H32(), false,
       [](Builder* b, const Row& r) { return PutFixed(b, r, Obj::kBlock, "mixHash", 32, Absent::kZero); }},
      {"nonce", arrow::uint64(), false,
       [](Builder* b, const Row& r) -> Status {
         ARROW_ASSIGN_OR_RAISE(const json* v, Get(r, Obj::kBlock, "nonce", Absent::kZero));
         if (!v) return PutU64(b, 0);
         ARROW_ASSIGN_OR_RAISE(std::string bytes, HexData(*v, r.Where(Obj::kBlock, "nonce"), 8));
         uint64_t n = 0;
         for (char c : bytes) n = n << 8 | static_cast<uint8_t>(c);
         return PutU64(b, n);
       }},
      {"base_fee_per_gas", Dec(), true,
       [](Builder* b, const Row& r) { return PutDecimal(b, r, Obj::kBlock, "baseFeePerGas", Absent::kNull); }},
      {"withdrawals_root", H32(), true,
       [](Builder* b, const Row& r) { return PutFixed(b, r, Obj::kBlock, "withdrawalsRoot", 32, Absent::kNull); }},
      {"blob_gas_used", arrow::uint64(), true,
       [](Builder* b, const Row& r) { return PutQuantity(b, r, Obj::kBlock, "blobGasUsed", Absent::kNull); }},
      {"excess_blob_gas", arrow::uint64(), true,
       [](Builder* b, const Row& r) { return PutQuantity(b, r, Obj::kBlock, "excessBlobGas", Absent::kNull); }},
      {"parent_beacon_root", H32(), true,
       [](Builder* b, const Row& r) {
         return PutFixed(b, r, Obj::kBlock, "parentBeaconBlockRoot", 32, Absent::kNull);
       }},
  };
  return *columns;
}

// Amp's transactions table.
const std::vector<Column>& AmpTransactionColumns() {
  static const auto* columns = new std::vector<Column>{
      {"block_hash", H32(), false, PutBlockHash},
      {"block_num", arrow::uint64(), false, PutBlockNum},
      {"timestamp", Time(), false, [](Builder* b, const Row& r) { return PutTimestamp(b, r); }},
      {"tx_index", arrow::uint32(), false, PutTxIndex},
      {"tx_hash", H32(), false,
       [](Builder* b, const Row& r) { return PutFixed(b, r, Obj::kTx, "hash", 32, Absent::kError); }},
      {"to", A20(), true, [](Builder* b, const Row& r) { return PutFixed(b, r, Obj::kTx, "to", 20, Absent::kNull); }},
      {"nonce", arrow::uint64(), false,
       [](Builder* b, const Row& r) { return PutQuantity(b, r, Obj::kTx, "nonce", Absent::kError); }},
      // Legacy and access-list transactions' price; null for the types that bid a fee cap.
      {"gas_price", Dec(), true,
       [](Builder* b, const Row& r) {
         if (r.tx_type > kAccessList) return b->AppendNull();
         return PutDecimal(b, r, Obj::kTx, "gasPrice", Absent::kError);
       }},
      {"gas_limit", arrow::uint64(), false,
       [](Builder* b, const Row& r) { return PutQuantity(b, r, Obj::kTx, "gas", Absent::kError); }},
      {"value", arrow::utf8(), false,
       [](Builder* b, const Row& r) -> Status {
         ARROW_ASSIGN_OR_RAISE(const json* v, Get(r, Obj::kTx, "value", Absent::kError));
         ARROW_ASSIGN_OR_RAISE(auto u, HexUint256(*v, r.Where(Obj::kTx, "value")));
         return static_cast<arrow::StringBuilder*>(b)->Append(Uint256Decimal(u));
       }},
      {"input", arrow::binary(), false, [](Builder* b, const Row& r) { return PutBinary(b, r, Obj::kTx, "input"); }},
      {"r", H32(), false, [](Builder* b, const Row& r) { return PutSignatureWord(b, r, "r"); }},
      {"s", H32(), false, [](Builder* b, const Row& r) { return PutSignatureWord(b, r, "s"); }},
      {"v_parity", arrow::boolean(), false,
       [](Builder* b, const Row& r) -> Status {
         ARROW_ASSIGN_OR_RAISE(Signature s, SignatureOf(r));
         return static_cast<arrow::BooleanBuilder*>(b)->Append(s.parity);
       }},
      // Typed transactions carry it; a legacy one's v says it (EIP-155), or nothing (27/28).
      {"chain_id", arrow::uint64(), true,
       [](Builder* b, const Row& r) -> Status {
         if (r.tx_type == kLegacy) {
           ARROW_ASSIGN_OR_RAISE(Signature s, SignatureOf(r));
           if (!s.zero) return s.chain_id ? PutU64(b, *s.chain_id) : b->AppendNull();
         }
         return PutQuantity(b, r, Obj::kTx, "chainId", Absent::kNull);
       }},
      // As Amp has it: the gas used in the block up to and including this transaction.
      {"gas_used", arrow::uint64(), false,
       [](Builder* b, const Row& r) { return PutQuantity(b, r, Obj::kReceipt, "cumulativeGasUsed", Absent::kError); }},
      {"type", arrow::int32(), false,
       [](Builder* b, const Row& r) {
         return static_cast<arrow::Int32Builder*>(b)->Append(static_cast<int32_t>(r.tx_type));
       }},
      // The fee cap: a legacy or access-list transaction's gas price.
      {"max_fee_per_gas", Dec(), true,
       [](Builder* b, const Row& r) {
         if (r.tx_type <= kAccessList) return PutDecimal(b, r, Obj::kTx, "gasPrice", Absent::kError);
         return PutDecimal(b, r, Obj::kTx, "maxFeePerGas", Typed(r.tx_type) ? Absent::kError : Absent::kZero);
       }},
      {"max_priority_fee_per_gas", Dec(), true,
       [](Builder* b, const Row& r) {
         if (r.tx_type <= kAccessList) return b->AppendNull();
         return PutDecimal(b, r, Obj::kTx, "maxPriorityFeePerGas", Typed(r.tx_type) ? Absent::kError : Absent::kNull);
       }},
      {"max_fee_per_blob_gas", Dec(), true,
       [](Builder* b, const Row& r) {
         if (r.tx_type != kBlob) return b->AppendNull();
         return PutDecimal(b, r, Obj::kTx, "maxFeePerBlobGas", Absent::kError);
       }},
      {"from", A20(), false,
       [](Builder* b, const Row& r) { return PutFixed(b, r, Obj::kTx, "from", 20, Absent::kError); }},
      {"status", arrow::boolean(), false,
       [](Builder* b, const Row& r) -> Status {
         ARROW_ASSIGN_OR_RAISE(bool ok, StatusOf(r));
         return static_cast<arrow::BooleanBuilder*>(b)->Append(ok);
       }},
      {"access_list", AccessListType(), true, PutAccessList},
      {"blob_versioned_hashes", arrow::list(H32()), true, PutBlobHashes},
  };
  return *columns;
}

// Amp's logs table.
const std::vector<Column>& AmpLogColumns() {
  static const auto* columns = new std::vector<Column>{
      {"block_hash", H32(), false, PutBlockHash},
      {"block_num", arrow::uint64(), false, PutBlockNum},
      {"timestamp", Time(), false, [](Builder* b, const Row& r) { return PutTimestamp(b, r); }},
      {"tx_hash", H32(), false,
       [](Builder* b, const Row& r) { return static_cast<arrow::FixedSizeBinaryBuilder*>(b)->Append(*r.tx_hash); }},
      {"tx_index", arrow::uint32(), false, PutTxIndex},
      {"log_index", arrow::uint32(), false,
       [](Builder* b, const Row& r) -> Status {
         ARROW_ASSIGN_OR_RAISE(auto i, Quantity(r, Obj::kLog, "logIndex", Absent::kError));
         if (*i > UINT32_MAX) return InvalidArgument(fmt::format("{}: logIndex {} is too large", r.where, *i));
         return static_cast<arrow::UInt32Builder*>(b)->Append(static_cast<uint32_t>(*i));
       }},
      {"address", A20(), false,
       [](Builder* b, const Row& r) { return PutFixed(b, r, Obj::kLog, "address", 20, Absent::kError); }},
      {"topic0", H32(), true, [](Builder* b, const Row& r) { return PutTopic(b, r, 0); }},
      {"topic1", H32(), true, [](Builder* b, const Row& r) { return PutTopic(b, r, 1); }},
      {"topic2", H32(), true, [](Builder* b, const Row& r) { return PutTopic(b, r, 2); }},
      {"topic3", H32(), true, [](Builder* b, const Row& r) { return PutTopic(b, r, 3); }},
      {"data", arrow::binary(), false, [](Builder* b, const Row& r) { return PutBinary(b, r, Obj::kLog, "data"); }},
  };
  return *columns;
}

}  // namespace

const std::vector<Column>& AmpColumns(ChainTable t) {
  switch (t) {
    case ChainTable::kBlocks:
      return AmpBlockColumns();
    case ChainTable::kTransactions:
      return AmpTransactionColumns();
    case ChainTable::kLogs:
      break;
  }
  return AmpLogColumns();
}

namespace {

// Amp's column `amp_name` of table t, named `name` (the first source's name for it).
Column AmpColumn(ChainTable t, const char* amp_name, const char* name = nullptr) {
  for (const auto& c : AmpColumns(t)) {
    if (std::string_view(c.name) == amp_name) {
      Column out = c;
      if (name) out.name = name;
      return out;
    }
  }
  std::abort();  // a name of the tables above
}

// The first source's blocks table.
const std::vector<Column>& LegacyBlockColumns() {
  static const auto* columns = new std::vector<Column>{
      AmpColumn(ChainTable::kBlocks, "block_num"),
      AmpColumn(ChainTable::kBlocks, "hash"),
      AmpColumn(ChainTable::kBlocks, "parent_hash"),
      {"timestamp", arrow::uint64(), false, [](Builder* b, const Row& r) { return PutU64(b, r.timestamp); }},
      AmpColumn(ChainTable::kBlocks, "miner"),
      AmpColumn(ChainTable::kBlocks, "gas_used"),
      AmpColumn(ChainTable::kBlocks, "gas_limit"),
      {"base_fee_per_gas", arrow::uint64(), true,
       [](Builder* b, const Row& r) { return PutQuantity(b, r, Obj::kBlock, "baseFeePerGas", Absent::kNull); }},
      {"tx_count", arrow::uint32(), false,
       [](Builder* b, const Row& r) {
         return static_cast<arrow::UInt32Builder*>(b)->Append(static_cast<uint32_t>((*r.block)["transactions"].size()));
       }},
  };
  return *columns;
}

// The first source's transactions table.
const std::vector<Column>& LegacyTransactionColumns() {
  static const auto* columns = new std::vector<Column>{
      AmpColumn(ChainTable::kTransactions, "block_num"),
      AmpColumn(ChainTable::kTransactions, "tx_index"),
      AmpColumn(ChainTable::kTransactions, "tx_hash", "hash"),
      AmpColumn(ChainTable::kTransactions, "from"),
      AmpColumn(ChainTable::kTransactions, "to"),
      {"value", H32(), false,
       [](Builder* b, const Row& r) -> Status {
         ARROW_ASSIGN_OR_RAISE(const json* v, Get(r, Obj::kTx, "value", Absent::kError));
         ARROW_ASSIGN_OR_RAISE(auto u, HexUint256(*v, r.Where(Obj::kTx, "value")));
         return static_cast<arrow::FixedSizeBinaryBuilder*>(b)->Append(u.data());
       }},
      AmpColumn(ChainTable::kTransactions, "input"),
      AmpColumn(ChainTable::kTransactions, "gas_limit", "gas"),
      {"gas_price", arrow::uint64(), true,
       [](Builder* b, const Row& r) { return PutQuantity(b, r, Obj::kTx, "gasPrice", Absent::kNull); }},
      {"type", arrow::uint8(), false,
       [](Builder* b, const Row& r) {
         return static_cast<arrow::UInt8Builder*>(b)->Append(static_cast<uint8_t>(r.tx_type));
       }},
      AmpColumn(ChainTable::kTransactions, "nonce"),
      {"status", arrow::uint8(), true,
       [](Builder* b, const Row& r) -> Status {
         ARROW_ASSIGN_OR_RAISE(auto st, Quantity(r, Obj::kReceipt, "status", Absent::kNull));
         if (st && *st > 1) return InvalidArgument(fmt::format("{} receipt: status {} is not 0 or 1", r.where, *st));
         return st ? static_cast<arrow::UInt8Builder*>(b)->Append(static_cast<uint8_t>(*st)) : b->AppendNull();
       }},
      {"gas_used", arrow::uint64(), false,
       [](Builder* b, const Row& r) { return PutQuantity(b, r, Obj::kReceipt, "gasUsed", Absent::kError); }},
      {"contract_address", A20(), true,
       [](Builder* b, const Row& r) { return PutFixed(b, r, Obj::kReceipt, "contractAddress", 20, Absent::kNull); }},
  };
  return *columns;
}

// The first source's logs table.
const std::vector<Column>& LegacyLogColumns() {
  static const auto* columns = new std::vector<Column>{
      AmpColumn(ChainTable::kLogs, "block_num"), AmpColumn(ChainTable::kLogs, "tx_index"),
      AmpColumn(ChainTable::kLogs, "log_index"), AmpColumn(ChainTable::kLogs, "tx_hash"),
      AmpColumn(ChainTable::kLogs, "address"),   AmpColumn(ChainTable::kLogs, "topic0"),
      AmpColumn(ChainTable::kLogs, "topic1"),    AmpColumn(ChainTable::kLogs, "topic2"),
      AmpColumn(ChainTable::kLogs, "topic3"),    AmpColumn(ChainTable::kLogs, "data"),
  };
  return *columns;
}

}  // namespace

const std::vector<Column>& LegacyColumns(ChainTable t) {
  switch (t) {
    case ChainTable::kBlocks:
      return LegacyBlockColumns();
    case ChainTable::kTransactions:
      return LegacyTransactionColumns();
    case ChainTable::kLogs:
      break;
  }
  return LegacyLogColumns();
}

}  // namespace sediment::chain::evm_internal
