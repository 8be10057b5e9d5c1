#include "chain/evm_decode.h"

#include <arrow/api.h>
#include <arrow/util/decimal.h>
#include <arrow/util/key_value_metadata.h>
#include <fmt/format.h>

#include <functional>
#include <map>

#include "base/codec.h"
#include "base/crypto.h"
#include "chain/generator.h"
#include "table/stored_types.h"

namespace sediment::chain {
namespace {

using nlohmann::json;

// The digits after "0x", or InvalidArgument.
Result<std::string_view> HexDigits(const json& v, const std::string& what) {
  if (!v.is_string()) return InvalidArgument(fmt::format("{}: expected a hex string, got {}", what, v.dump()));
  const std::string& s = v.get_ref<const std::string&>();
  if (s.size() < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) {
    return InvalidArgument(fmt::format("{}: \"{}\" does not start with 0x", what, s));
  }
  std::string_view digits = std::string_view(s).substr(2);
  for (char c : digits) {
    if (HexDigitValue(c) < 0) return InvalidArgument(fmt::format("{}: \"{}\" is not hex", what, s));
  }
  return digits;
}

// ---------------------------------------------------------------------------
// One row's sources, and the fields read from them.

enum class Obj { kBlock, kTx, kReceipt, kLog };

struct Row {
  const json* block = nullptr;
  const json* tx = nullptr;
  const json* receipt = nullptr;
  const json* log = nullptr;
  uint64_t number = 0;
  uint64_t timestamp = 0;                // the block's, seconds
  const std::string* hash = nullptr;     // the block's, bytes
  const std::string* tx_hash = nullptr;  // the transaction's, bytes
  size_t tx_index = 0;
  uint64_t tx_type = 0;
  std::string where;  // "block 7", "block 7, transaction 2", "block 7, transaction 2, log 0"

  const json& Of(Obj o) const {
    switch (o) {
      case Obj::kBlock:
        return *block;
      case Obj::kTx:
        return *tx;
      case Obj::kReceipt:
        return *receipt;
      case Obj::kLog:
        break;
    }
    return *log;
  }
  std::string Where(Obj o, const char* name) const {
    return fmt::format("{}{}: {}", where, o == Obj::kReceipt ? " receipt" : "", name);
  }
};

// What an absent (or null) field becomes.
enum class Absent { kError, kNull, kZero };

// The field, or null if absent/null; InvalidArgument if absent and required.
Result<const json*> Get(const Row& r, Obj o, const char* name, Absent absent) {
  const json& obj = r.Of(o);
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) {
    if (absent == Absent::kError) {
      return InvalidArgument(
          fmt::format("{}{}: the answer has no field \"{}\"", r.where, o == Obj::kReceipt ? " receipt" : "", name));
    }
    return static_cast<const json*>(nullptr);
  }
  return &*it;
}

using Builder = arrow::ArrayBuilder;

Status PutU64(Builder* b, uint64_t v) { return static_cast<arrow::UInt64Builder*>(b)->Append(v); }

// A fixed-size byte field (hash, address, root).
Status PutFixed(Builder* b, const Row& r, Obj o, const char* name, size_t size, Absent absent) {
  ARROW_ASSIGN_OR_RAISE(const json* v, Get(r, o, name, absent));
  auto* fb = static_cast<arrow::FixedSizeBinaryBuilder*>(b);
  if (!v) return absent == Absent::kNull ? fb->AppendNull() : fb->Append(std::string(size, '\0'));
  ARROW_ASSIGN_OR_RAISE(std::string bytes, HexData(*v, r.Where(o, name), size));
  return fb->Append(bytes);
}

// A byte field of any length.
Status PutBinary(Builder* b, const Row& r, Obj o, const char* name, size_t size = 0) {
  ARROW_ASSIGN_OR_RAISE(const json* v, Get(r, o, name, Absent::kError));
  ARROW_ASSIGN_OR_RAISE(std::string bytes, HexData(*v, r.Where(o, name), size));
  return static_cast<arrow::BinaryBuilder*>(b)->Append(bytes);
}

Result<std::optional<uint64_t>> Quantity(const Row& r, Obj o, const char* name, Absent absent) {
  ARROW_ASSIGN_OR_RAISE(const json* v, Get(r, o, name, absent));
  if (!v) return absent == Absent::kNull ? std::optional<uint64_t>() : std::optional<uint64_t>(0);
  ARROW_ASSIGN_OR_RAISE(uint64_t q, HexQuantity(*v, r.Where(o, name)));
  return std::optional<uint64_t>(q);
}

Status PutQuantity(Builder* b, const Row& r, Obj o, const char* name, Absent absent) {
  ARROW_ASSIGN_OR_RAISE(auto q, Quantity(r, o, name, absent));
  return q ? PutU64(b, *q) : b->AppendNull();
}

// 10^38: Decimal128(38, 0) holds what is below it.
constexpr unsigned __int128 kDecimal38 =
    static_cast<unsigned __int128>(10000000000000000000ULL) * 10000000000000000000ULL;

// A quantity of up to 256 bits as Decimal128(38, 0) (InvalidArgument if it does not fit).
Status PutDecimal(Builder* b, const Row& r, Obj o, const char* name, Absent absent) {
  ARROW_ASSIGN_OR_RAISE(const json* v, Get(r, o, name, absent));
  auto* db = static_cast<arrow::Decimal128Builder*>(b);
  if (!v) return absent == Absent::kNull ? db->AppendNull() : db->Append(arrow::Decimal128(0));
  ARROW_ASSIGN_OR_RAISE(auto u, HexUint256(*v, r.Where(o, name)));
  unsigned __int128 n = 0;
  bool fits = true;
  for (size_t i = 0; i < 16; ++i) fits = fits && u[i] == 0;
  for (size_t i = 16; i < 32; ++i) n = n << 8 | u[i];
  if (!fits || n >= kDecimal38) {
    return InvalidArgument(fmt::format("{}: {} does not fit in decimal(38, 0)", r.Where(o, name), v->dump()));
  }
  return db->Append(arrow::Decimal128(static_cast<int64_t>(static_cast<uint64_t>(n >> 64)), static_cast<uint64_t>(n)));
}

Status PutTimestamp(Builder* b, const Row& r) {
  if (r.timestamp > static_cast<uint64_t>(INT64_MAX / 1000000000)) {
    return InvalidArgument(fmt::format("{}: timestamp {} is past what nanoseconds hold", r.where, r.timestamp));
  }
  return static_cast<arrow::TimestampBuilder*>(b)->Append(static_cast<int64_t>(r.timestamp) * 1000000000);
}

// ---------------------------------------------------------------------------
// Transactions: the fields whose meaning depends on the type (as Amp gives them).

constexpr uint64_t kLegacy = 0, kAccessList = 1, kBlob = 3, kSetCode = 4;

bool Typed(uint64_t type) { return type >= kAccessList && type <= kSetCode; }

// The signature's v as the transaction gives it: (y parity, chain id from a legacy v).
struct Signature {
  bool parity = false;
  std::optional<uint64_t> chain_id;  // legacy transactions: what v says (EIP-155)
  bool zero = false;                 // v = r = s = 0 (an L2's system transaction)
};

Result<Signature> SignatureOf(const Row& r) {
  Signature s;
  ARROW_ASSIGN_OR_RAISE(auto y, Quantity(r, Obj::kTx, "yParity", Absent::kNull));
  if (r.tx_type != kLegacy && y) {
    if (*y > 1) return InvalidArgument(fmt::format("{}: yParity {} is not 0 or 1", r.where, *y));
    s.parity = *y == 1;
    return s;
  }
  ARROW_ASSIGN_OR_RAISE(auto v_opt, Quantity(r, Obj::kTx, "v", Absent::kError));
  const uint64_t v = *v_opt;
  if (r.tx_type != kLegacy) {
    if (v <= 1) {
      s.parity = v == 1;
    } else if (v == 27 || v == 28) {
      s.parity = v == 28;
    } else if (v >= 35) {
      s.parity = (v - 35) % 2 == 1;
    } else {
      return InvalidArgument(fmt::format("{}: v {} is not a signature's parity", r.where, v));
    }
    return s;
  }
  if (v == 27 || v == 28) {
    s.parity = v == 28;
  } else if (v >= 35) {
    s.parity = (v - 35) % 2 == 1;
    s.chain_id = (v - 35) / 2;
  } else if (v == 0) {
    bool zero = true;
    for (const char* name : {"r", "s"}) {
      ARROW_ASSIGN_OR_RAISE(const json* w, Get(r, Obj::kTx, name, Absent::kNull));
      if (!w) continue;
      ARROW_ASSIGN_OR_RAISE(auto word, HexUint256(*w, r.Where(Obj::kTx, name)));
      for (uint8_t byte : word) zero = zero && byte == 0;
    }
    if (!zero) {
      return InvalidArgument(fmt::format("{}: v 0 on a legacy transaction with a signature", r.where));
    }
    s.zero = true;
  } else {
    return InvalidArgument(fmt::format("{}: v {} is not a legacy (EIP-155) signature's", r.where, v));
  }
  return s;
}

// r or s: a quantity of up to 256 bits, as 32 big-endian bytes.
Status PutSignatureWord(Builder* b, const Row& r, const char* name) {
  ARROW_ASSIGN_OR_RAISE(
      const json* v, Get(r, Obj::kTx, name, r.tx_type == kLegacy || Typed(r.tx_type) ? Absent::kError : Absent::kZero));
  std::array<uint8_t, 32> word{};
  if (v) {
    ARROW_ASSIGN_OR_RAISE(word, HexUint256(*v, r.Where(Obj::kTx, name)));
  }
  return static_cast<arrow::FixedSizeBinaryBuilder*>(b)->Append(word.data());
}

Status PutAccessList(Builder* b, const Row& r) {
  auto* lb = static_cast<arrow::ListBuilder*>(b);
  if (!Typed(r.tx_type)) return lb->AppendNull();
  ARROW_ASSIGN_OR_RAISE(const json* list, Get(r, Obj::kTx, "accessList", Absent::kNull));
  ARROW_RETURN_NOT_OK(lb->Append());
  if (!list) return Status::OK();
  if (!list->is_array()) return InvalidArgument(fmt::format("{}: accessList is not a list", r.where));
  auto* sb = static_cast<arrow::StructBuilder*>(lb->value_builder());
  auto* address = static_cast<arrow::FixedSizeBinaryBuilder*>(sb->field_builder(0));
  auto* keys = static_cast<arrow::ListBuilder*>(sb->field_builder(1));
  auto* key = static_cast<arrow::FixedSizeBinaryBuilder*>(keys->value_builder());
  for (size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    std::string at = fmt::format("{}: accessList[{}]", r.where, i);
    if (!item.is_object() || !item.contains("address") || !item.contains("storageKeys") ||
        !item["storageKeys"].is_array()) {
      return InvalidArgument(fmt::format("{}: not an {{address, storageKeys}} object", at));
    }
    ARROW_RETURN_NOT_OK(sb->Append());
    ARROW_ASSIGN_OR_RAISE(std::string a, HexData(item["address"], at + ".address", 20));
    ARROW_RETURN_NOT_OK(address->Append(a));
    ARROW_RETURN_NOT_OK(keys->Append());
    for (size_t k = 0; k < item["storageKeys"].size(); ++k) {
      ARROW_ASSIGN_OR_RAISE(std::string sk,
                            HexData(item["storageKeys"][k], fmt::format("{}.storageKeys[{}]", at, k), 32));
      ARROW_RETURN_NOT_OK(key->Append(sk));
    }
  }
  return Status::OK();
}

Status PutBlobHashes(Builder* b, const Row& r) {
  auto* lb = static_cast<arrow::ListBuilder*>(b);
  if (r.tx_type != kBlob) return lb->AppendNull();
  ARROW_ASSIGN_OR_RAISE(const json* list, Get(r, Obj::kTx, "blobVersionedHashes", Absent::kError));
  if (!list->is_array()) return InvalidArgument(fmt::format("{}: blobVersionedHashes is not a list", r.where));
  ARROW_RETURN_NOT_OK(lb->Append());
  auto* hb = static_cast<arrow::FixedSizeBinaryBuilder*>(lb->value_builder());
  for (size_t i = 0; i < list->size(); ++i) {
    ARROW_ASSIGN_OR_RAISE(std::string h,
                          HexData((*list)[i], fmt::format("{}: blobVersionedHashes[{}]", r.where, i), 32));
    ARROW_RETURN_NOT_OK(hb->Append(h));
  }
  return Status::OK();
}

// The receipt's status: 1 true, 0 false; a pre-Byzantium receipt (a state root, no status) true, as Amp has it.
Result<bool> StatusOf(const Row& r) {
  ARROW_ASSIGN_OR_RAISE(auto st, Quantity(r, Obj::kReceipt, "status", Absent::kNull));
  if (st) {
    if (*st > 1) return InvalidArgument(fmt::format("{} receipt: status {} is not 0 or 1", r.where, *st));
    return *st == 1;
  }
  ARROW_ASSIGN_OR_RAISE(const json* root, Get(r, Obj::kReceipt, "root", Absent::kNull));
  if (!root) return InvalidArgument(fmt::format("{} receipt: neither a status nor a state root", r.where));
  return true;
}

Status PutTopic(Builder* b, const Row& r, size_t i) {
  const json& topics = (*r.log)["topics"];  // checked: an array of at most 4
  if (i >= topics.size()) return b->AppendNull();
  ARROW_ASSIGN_OR_RAISE(std::string topic, HexData(topics[i], fmt::format("{}: topic{}", r.where, i), 32));
  return static_cast<arrow::FixedSizeBinaryBuilder*>(b)->Append(topic);
}

// ---------------------------------------------------------------------------
// The columns: name, type, nullability (as the table has it when made), and how a row fills it.

struct Column {
  const char* name;
  std::shared_ptr<arrow::DataType> type;
  bool nullable;
  std::function<Status(Builder*, const Row&)> fill;
};

std::shared_ptr<arrow::DataType> H32() { return arrow::fixed_size_binary(32); }
std::shared_ptr<arrow::DataType> A20() { return arrow::fixed_size_binary(20); }
std::shared_ptr<arrow::DataType> Dec() { return arrow::decimal128(38, 0); }
std::shared_ptr<arrow::DataType> Time() { return arrow::timestamp(arrow::TimeUnit::NANO, "+00:00"); }
std::shared_ptr<arrow::DataType> AccessListType() {
  return arrow::list(
      arrow::struct_({arrow::field("address", A20()), arrow::field("storage_keys", arrow::list(H32()))}));
}

Status PutBlockNum(Builder* b, const Row& r) { return PutU64(b, r.number); }
Status PutBlockHash(Builder* b, const Row& r) {
  return static_cast<arrow::FixedSizeBinaryBuilder*>(b)->Append(*r.hash);
}
Status PutTxIndex(Builder* b, const Row& r) {
  return static_cast<arrow::UInt32Builder*>(b)->Append(static_cast<uint32_t>(r.tx_index));
}

// Amp's evm-rpc columns, in its order (less _block_num).
const std::vector<Column>& AmpColumns(ChainTable t) {
  static const auto* blocks = new std::vector<Column>{
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
  static const auto* transactions = new std::vector<Column>{
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
  static const auto* logs = new std::vector<Column>{
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
  switch (t) {
    case ChainTable::kBlocks:
      return *blocks;
    case ChainTable::kTransactions:
      return *transactions;
    case ChainTable::kLogs:
      break;
  }
  return *logs;
}

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

// The columns of Sediment's first evm-rpc source, with their meanings then (still written so): Amp's
// where they are the same.
const std::vector<Column>& LegacyColumns(ChainTable t) {
  using T = ChainTable;
  static const auto* blocks = new std::vector<Column>{
      AmpColumn(T::kBlocks, "block_num"),
      AmpColumn(T::kBlocks, "hash"),
      AmpColumn(T::kBlocks, "parent_hash"),
      {"timestamp", arrow::uint64(), false, [](Builder* b, const Row& r) { return PutU64(b, r.timestamp); }},
      AmpColumn(T::kBlocks, "miner"),
      AmpColumn(T::kBlocks, "gas_used"),
      AmpColumn(T::kBlocks, "gas_limit"),
      {"base_fee_per_gas", arrow::uint64(), true,
       [](Builder* b, const Row& r) { return PutQuantity(b, r, Obj::kBlock, "baseFeePerGas", Absent::kNull); }},
      {"tx_count", arrow::uint32(), false,
       [](Builder* b, const Row& r) {
         return static_cast<arrow::UInt32Builder*>(b)->Append(static_cast<uint32_t>((*r.block)["transactions"].size()));
       }},
  };
  static const auto* transactions = new std::vector<Column>{
      AmpColumn(T::kTransactions, "block_num"),
      AmpColumn(T::kTransactions, "tx_index"),
      AmpColumn(T::kTransactions, "tx_hash", "hash"),
      AmpColumn(T::kTransactions, "from"),
      AmpColumn(T::kTransactions, "to"),
      {"value", H32(), false,
       [](Builder* b, const Row& r) -> Status {
         ARROW_ASSIGN_OR_RAISE(const json* v, Get(r, Obj::kTx, "value", Absent::kError));
         ARROW_ASSIGN_OR_RAISE(auto u, HexUint256(*v, r.Where(Obj::kTx, "value")));
         return static_cast<arrow::FixedSizeBinaryBuilder*>(b)->Append(u.data());
       }},
      AmpColumn(T::kTransactions, "input"),
      AmpColumn(T::kTransactions, "gas_limit", "gas"),
      {"gas_price", arrow::uint64(), true,
       [](Builder* b, const Row& r) { return PutQuantity(b, r, Obj::kTx, "gasPrice", Absent::kNull); }},
      {"type", arrow::uint8(), false,
       [](Builder* b, const Row& r) {
         return static_cast<arrow::UInt8Builder*>(b)->Append(static_cast<uint8_t>(r.tx_type));
       }},
      AmpColumn(T::kTransactions, "nonce"),
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
  static const auto* logs = new std::vector<Column>{
      AmpColumn(T::kLogs, "block_num"), AmpColumn(T::kLogs, "tx_index"), AmpColumn(T::kLogs, "log_index"),
      AmpColumn(T::kLogs, "tx_hash"),   AmpColumn(T::kLogs, "address"),  AmpColumn(T::kLogs, "topic0"),
      AmpColumn(T::kLogs, "topic1"),    AmpColumn(T::kLogs, "topic2"),   AmpColumn(T::kLogs, "topic3"),
      AmpColumn(T::kLogs, "data"),
  };
  switch (t) {
    case ChainTable::kBlocks:
      return *blocks;
    case ChainTable::kTransactions:
      return *transactions;
    case ChainTable::kLogs:
      break;
  }
  return *logs;
}

// The table's field of column c; timestamps are stored in microseconds (block times are whole
// seconds; Iceberg v2 and Spark read no nanoseconds: table/stored_types.h).
std::shared_ptr<arrow::Field> FieldOf(const Column& c, bool nullable) {
  std::shared_ptr<const arrow::KeyValueMetadata> md;
  if (c.type->id() == arrow::Type::TIMESTAMP) {
    md = arrow::key_value_metadata({std::string(table::kStoreMicrosKey)}, {"true"});
  }
  return arrow::field(c.name, c.type, nullable, md);
}

std::shared_ptr<arrow::Schema> SchemaOf(const std::vector<Column>& columns) {
  arrow::FieldVector fields;
  for (const auto& c : columns) fields.push_back(FieldOf(c, c.nullable));
  return arrow::schema(fields);
}

// True if `stored` begins with the legacy schema's columns (a table made by the first source).
bool IsLegacy(ChainTable t, const arrow::Schema& stored) {
  const auto& legacy = LegacyColumns(t);
  if (stored.num_fields() < static_cast<int>(legacy.size())) return false;
  for (size_t i = 0; i < legacy.size(); ++i) {
    const auto& f = *stored.field(static_cast<int>(i));
    if (f.name() != legacy[i].name || !f.type()->Equals(*legacy[i].type)) return false;
  }
  return true;
}

// The column that fills field i of `schema` (see EvmWriteSchema), or InvalidArgument.
Result<const Column*> ColumnFor(ChainTable t, const arrow::Schema& schema, int i, bool legacy) {
  const auto& f = *schema.field(i);
  const std::vector<Column>& from =
      legacy && i < static_cast<int>(LegacyColumns(t).size()) ? LegacyColumns(t) : AmpColumns(t);
  for (const auto& c : from) {
    if (f.name() != c.name) continue;
    if (!f.type()->Equals(*c.type)) {
      return InvalidArgument(fmt::format("table {}: column \"{}\" has type {}; the evm-rpc source writes it as {}",
                                         TableName(t), f.name(), f.type()->ToString(), c.type->ToString()));
    }
    if (!f.nullable() && c.nullable) {
      return InvalidArgument(fmt::format(
          "table {}: column \"{}\" is not nullable; the evm-rpc source writes nulls in it", TableName(t), f.name()));
    }
    return &c;
  }
  return InvalidArgument(fmt::format("table {}: the evm-rpc source does not write a column \"{}\" ({})", TableName(t),
                                     f.name(), f.type()->ToString()));
}

// Builds rows of one table for `schema`, a column at a time.
class Rows {
 public:
  static Result<std::unique_ptr<Rows>> Make(ChainTable t, std::shared_ptr<arrow::Schema> schema) {
    auto rows = std::unique_ptr<Rows>(new Rows(std::move(schema)));
    const bool legacy = IsLegacy(t, *rows->schema_);
    for (int i = 0; i < rows->schema_->num_fields(); ++i) {
      ARROW_ASSIGN_OR_RAISE(const Column* c, ColumnFor(t, *rows->schema_, i, legacy));
      std::unique_ptr<arrow::ArrayBuilder> b;
      ARROW_RETURN_NOT_OK(arrow::MakeBuilder(arrow::default_memory_pool(), rows->schema_->field(i)->type(), &b));
      rows->columns_.push_back(c);
      rows->builders_.push_back(std::move(b));
    }
    return rows;
  }
  Status Add(const Row& r) {
    for (size_t i = 0; i < columns_.size(); ++i) ARROW_RETURN_NOT_OK(columns_[i]->fill(builders_[i].get(), r));
    return Status::OK();
  }
  Result<std::shared_ptr<arrow::RecordBatch>> Finish() {
    std::vector<std::shared_ptr<arrow::Array>> cols;
    for (auto& b : builders_) {
      std::shared_ptr<arrow::Array> a;
      ARROW_RETURN_NOT_OK(b->Finish(&a));
      cols.push_back(std::move(a));
    }
    int64_t n = cols.empty() ? 0 : cols[0]->length();
    return arrow::RecordBatch::Make(schema_, n, cols);
  }

 private:
  explicit Rows(std::shared_ptr<arrow::Schema> schema) : schema_(std::move(schema)) {}
  std::shared_ptr<arrow::Schema> schema_;
  std::vector<const Column*> columns_;
  std::vector<std::unique_ptr<arrow::ArrayBuilder>> builders_;
};

}  // namespace

std::shared_ptr<arrow::Schema> EvmSchema(ChainTable t) { return SchemaOf(AmpColumns(t)); }

std::shared_ptr<arrow::Schema> LegacyEvmSchema(ChainTable t) { return SchemaOf(LegacyColumns(t)); }

Result<std::shared_ptr<arrow::Schema>> EvmWriteSchema(ChainTable t, const std::shared_ptr<arrow::Schema>& stored) {
  if (!stored) return EvmSchema(t);
  const bool legacy = IsLegacy(t, *stored);
  arrow::FieldVector fields = stored->fields();
  for (int i = 0; i < stored->num_fields(); ++i) ARROW_RETURN_NOT_OK(ColumnFor(t, *stored, i, legacy).status());
  for (const auto& c : AmpColumns(t)) {
    if (stored->GetFieldIndex(c.name) < 0) fields.push_back(FieldOf(c, true));
  }
  if (fields.size() == stored->fields().size()) return stored;
  return arrow::schema(fields, stored->metadata());
}

Result<uint64_t> HexQuantity(const json& v, const std::string& what) {
  ARROW_ASSIGN_OR_RAISE(std::string_view digits, HexDigits(v, what));
  if (digits.empty() || digits.size() > 16) {
    return InvalidArgument(fmt::format("{}: {} is not a quantity of at most 64 bits", what, v.dump()));
  }
  uint64_t out = 0;
  for (char c : digits) out = out << 4 | static_cast<uint64_t>(HexDigitValue(c));
  return out;
}

Result<std::string> HexData(const json& v, const std::string& what, size_t size) {
  ARROW_ASSIGN_OR_RAISE(std::string_view digits, HexDigits(v, what));
  if (digits.size() % 2 != 0)
    return InvalidArgument(fmt::format("{}: {} has an odd number of hex digits", what, v.dump()));
  if (size > 0 && digits.size() != 2 * size) {
    return InvalidArgument(fmt::format("{}: {} is not {} bytes", what, v.dump(), size));
  }
  return *HexDecode(digits, HexCase::kAny);  // the digits were checked
}

Result<std::array<uint8_t, 32>> HexUint256(const json& v, const std::string& what) {
  ARROW_ASSIGN_OR_RAISE(std::string_view digits, HexDigits(v, what));
  if (digits.empty() || digits.size() > 64) {
    return InvalidArgument(fmt::format("{}: {} is not a quantity of at most 256 bits", what, v.dump()));
  }
  std::array<uint8_t, 32> out{};
  // From the last digit: digit k from the end goes to byte 31 - k/2.
  for (size_t k = 0; k < digits.size(); ++k) {
    int d = HexDigitValue(digits[digits.size() - 1 - k]);
    out[31 - k / 2] |= static_cast<uint8_t>(k % 2 == 0 ? d : d << 4);
  }
  return out;
}

std::string Uint256Decimal(const std::array<uint8_t, 32>& v) {
  std::array<uint8_t, 32> n = v;
  std::string digits;
  for (;;) {
    // n /= 10, the remainder is the next digit (from the last).
    unsigned rem = 0;
    bool zero = true;
    for (auto& byte : n) {
      unsigned cur = rem << 8 | byte;
      byte = static_cast<uint8_t>(cur / 10);
      rem = cur % 10;
      zero = zero && byte == 0;
    }
    digits.push_back(static_cast<char>('0' + rem));
    if (zero) break;
  }
  return std::string(digits.rbegin(), digits.rend());
}

EvmSchemas EvmSchemas::Amp() {
  return {EvmSchema(ChainTable::kBlocks), EvmSchema(ChainTable::kTransactions), EvmSchema(ChainTable::kLogs)};
}

namespace {

// Checks log `g.log` of the block and adds its row.
Status AddLog(Row& g, Rows* l) {
  if (!g.log->is_object()) return InvalidArgument(fmt::format("{}: not a log object", g.where));
  ARROW_ASSIGN_OR_RAISE(const json* lb_v, Get(g, Obj::kLog, "blockHash", Absent::kError));
  ARROW_ASSIGN_OR_RAISE(std::string log_block, HexData(*lb_v, g.where + ": blockHash", 32));
  if (log_block != *g.hash) {
    return InvalidArgument(
        fmt::format("{}: the log's blockHash {} is not the block's hash {}", g.where, Hex(log_block), Hex(*g.hash)));
  }
  ARROW_ASSIGN_OR_RAISE(const json* topics, Get(g, Obj::kLog, "topics", Absent::kError));
  if (!topics->is_array() || topics->size() > 4) {
    return InvalidArgument(fmt::format("{}: topics must be an array of at most 4", g.where));
  }
  return l->Add(g);
}

// The hash (bytes) of entry k of a block's `transactions`: a full object's, or the hash itself.
Result<std::string> TxHashOf(const json& tx, const std::string& where) {
  if (tx.is_object()) {
    if (!tx.contains("hash")) return InvalidArgument(fmt::format("{}: the answer has no field \"hash\"", where));
    return HexData(tx["hash"], where + ": hash", 32);
  }
  return HexData(tx, where + ": hash", 32);
}

}  // namespace

Result<EvmRows> DecodeEvmBlocks(uint64_t first, const std::vector<EvmBlock>& blocks, const EvmSchemas& schemas) {
  std::unique_ptr<Rows> b, t, l;
  if (schemas.blocks) {
    ARROW_ASSIGN_OR_RAISE(b, Rows::Make(ChainTable::kBlocks, schemas.blocks));
  }
  if (schemas.transactions) {
    ARROW_ASSIGN_OR_RAISE(t, Rows::Make(ChainTable::kTransactions, schemas.transactions));
  }
  if (schemas.logs) {
    ARROW_ASSIGN_OR_RAISE(l, Rows::Make(ChainTable::kLogs, schemas.logs));
  }
  EvmRows out;
  std::string prev_hash;
  for (size_t i = 0; i < blocks.size(); ++i) {
    Row r;
    r.number = first + i;
    r.where = fmt::format("block {}", r.number);
    const json& blk = blocks[i].block;
    if (blk.is_null()) return InvalidArgument(fmt::format("{}: the node has no such block (null)", r.where));
    if (!blk.is_object()) return InvalidArgument(fmt::format("{}: the answer is not a block", r.where));
    r.block = &blk;
    ARROW_ASSIGN_OR_RAISE(const json* num_v, Get(r, Obj::kBlock, "number", Absent::kError));
    ARROW_ASSIGN_OR_RAISE(uint64_t got_number, HexQuantity(*num_v, r.where + ": number"));
    if (got_number != r.number) {
      return InvalidArgument(fmt::format("{}: the node answered with block {}", r.where, got_number));
    }
    ARROW_ASSIGN_OR_RAISE(const json* hash_v, Get(r, Obj::kBlock, "hash", Absent::kError));
    ARROW_ASSIGN_OR_RAISE(std::string hash, HexData(*hash_v, r.where + ": hash", 32));
    ARROW_ASSIGN_OR_RAISE(const json* parent_v, Get(r, Obj::kBlock, "parentHash", Absent::kError));
    ARROW_ASSIGN_OR_RAISE(std::string parent, HexData(*parent_v, r.where + ": parentHash", 32));
    if (i == 0) {
      out.parent_hash = Hex(parent);
    } else if (parent != prev_hash) {
      return InvalidArgument(
          fmt::format("{}: parentHash {} is not the hash {} of block {} (the chain changed while it was read)", r.where,
                      Hex(parent), Hex(prev_hash), r.number - 1));
    }
    prev_hash = hash;
    r.hash = &hash;
    ARROW_ASSIGN_OR_RAISE(const json* time_v, Get(r, Obj::kBlock, "timestamp", Absent::kError));
    ARROW_ASSIGN_OR_RAISE(r.timestamp, HexQuantity(*time_v, r.where + ": timestamp"));
    ARROW_ASSIGN_OR_RAISE(const json* txs, Get(r, Obj::kBlock, "transactions", Absent::kError));
    if (!txs->is_array()) return InvalidArgument(fmt::format("{}: transactions is not an array", r.where));
    // Receipts: for the transactions table, and for logs unless eth_getLogs gave them.
    const bool logs_given = blocks[i].logs.has_value();
    const bool use_receipts = t || (l && !logs_given);
    const auto& receipts = blocks[i].receipts;
    if (use_receipts && receipts.size() != txs->size()) {
      return InvalidArgument(fmt::format("{}: {} transactions but {} receipts", r.where, txs->size(), receipts.size()));
    }
    if (b) ARROW_RETURN_NOT_OK(b->Add(r));
    out.hashes.push_back(Hex(hash));

    const std::string block_where = r.where;
    std::vector<std::string> tx_hashes(txs->size());
    for (size_t k = 0; k < txs->size(); ++k) {
      Row x = r;
      x.where = fmt::format("{}, transaction {}", block_where, k);
      x.tx = &(*txs)[k];
      x.tx_index = k;
      ARROW_ASSIGN_OR_RAISE(tx_hashes[k], TxHashOf(*x.tx, x.where));
      x.tx_hash = &tx_hashes[k];
      if (!use_receipts) continue;
      x.receipt = &receipts[k];
      if (!x.receipt->is_object()) return InvalidArgument(fmt::format("{} receipt: not an object", x.where));
      ARROW_ASSIGN_OR_RAISE(const json* rc_hash_v, Get(x, Obj::kReceipt, "transactionHash", Absent::kError));
      ARROW_ASSIGN_OR_RAISE(std::string rc_hash, HexData(*rc_hash_v, x.where + ": receipt transactionHash", 32));
      ARROW_ASSIGN_OR_RAISE(const json* rc_block_v, Get(x, Obj::kReceipt, "blockHash", Absent::kError));
      ARROW_ASSIGN_OR_RAISE(std::string rc_block, HexData(*rc_block_v, x.where + ": receipt blockHash", 32));
      if (rc_hash != tx_hashes[k] || rc_block != hash) {
        return InvalidArgument(fmt::format("{}: the receipt is for transaction {} in block {}, not {} in {}", x.where,
                                           Hex(rc_hash), Hex(rc_block), Hex(tx_hashes[k]), Hex(hash)));
      }
      if (t) {
        if (!x.tx->is_object()) return InvalidArgument(fmt::format("{}: not a full transaction object", x.where));
        ARROW_ASSIGN_OR_RAISE(auto index, Quantity(x, Obj::kTx, "transactionIndex", Absent::kNull));
        if (index && *index != k) {
          return InvalidArgument(fmt::format("{}: transactionIndex {} is not its place in the block", x.where, *index));
        }
        ARROW_ASSIGN_OR_RAISE(auto type, Quantity(x, Obj::kTx, "type", Absent::kZero));
        if (*type > 255) return InvalidArgument(fmt::format("{}: type {} is not a transaction type", x.where, *type));
        x.tx_type = *type;
        ARROW_RETURN_NOT_OK(t->Add(x));
      }
      if (!l || logs_given) continue;
      ARROW_ASSIGN_OR_RAISE(const json* logs, Get(x, Obj::kReceipt, "logs", Absent::kError));
      if (!logs->is_array()) return InvalidArgument(fmt::format("{}: receipt logs is not an array", x.where));
      for (size_t j = 0; j < logs->size(); ++j) {
        Row g = x;
        g.where = fmt::format("{}, log {}", x.where, j);
        g.log = &(*logs)[j];
        ARROW_RETURN_NOT_OK(AddLog(g, l.get()));
      }
    }
    if (!l || !logs_given) continue;
    // The block's logs from eth_getLogs, in logIndex order: each names this block and one of its
    // transactions (in order), their logIndex runs 0, 1, 2, ... with none missing, and there are
    // some exactly when the block's logsBloom is not empty (so a node that answers [] for a block
    // it has not indexed yet, or a block that changed since it was read, is caught).
    std::vector<const json*> given;
    for (const auto& lg : *blocks[i].logs) given.push_back(&lg);
    for (size_t j = 0; j < given.size(); ++j) {
      if (!given[j]->is_object())
        return InvalidArgument(fmt::format("{}, log {} (eth_getLogs): not a log", block_where, j));
    }
    auto index_of = [](const json* lg) -> uint64_t {
      auto it = lg->find("logIndex");
      if (it == lg->end()) return UINT64_MAX;
      auto q = HexQuantity(*it, "logIndex");
      return q.ok() ? *q : UINT64_MAX;
    };
    std::stable_sort(given.begin(), given.end(),
                     [&](const json* a, const json* b2) { return index_of(a) < index_of(b2); });
    ARROW_ASSIGN_OR_RAISE(const json* bloom_v, Get(r, Obj::kBlock, "logsBloom", Absent::kError));
    ARROW_ASSIGN_OR_RAISE(std::string bloom, HexData(*bloom_v, r.where + ": logsBloom"));
    const bool empty_bloom = bloom.find_first_not_of('\0') == std::string::npos;
    if (empty_bloom != given.empty()) {
      return InvalidArgument(fmt::format("{}: eth_getLogs gave {} logs but the block's logsBloom is {}", block_where,
                                         given.size(), empty_bloom ? "empty" : "not empty"));
    }
    size_t last_tx = 0;
    for (size_t j = 0; j < given.size(); ++j) {
      Row g = r;
      g.where = fmt::format("{}, log {} (eth_getLogs)", block_where, j);
      g.log = given[j];
      ARROW_ASSIGN_OR_RAISE(auto number, Quantity(g, Obj::kLog, "blockNumber", Absent::kError));
      ARROW_ASSIGN_OR_RAISE(auto k, Quantity(g, Obj::kLog, "transactionIndex", Absent::kError));
      ARROW_ASSIGN_OR_RAISE(auto index, Quantity(g, Obj::kLog, "logIndex", Absent::kError));
      ARROW_ASSIGN_OR_RAISE(const json* th_v, Get(g, Obj::kLog, "transactionHash", Absent::kError));
      ARROW_ASSIGN_OR_RAISE(std::string th, HexData(*th_v, g.where + ": transactionHash", 32));
      if (*number != r.number) {
        return InvalidArgument(fmt::format("{}: blockNumber {} is not the block's", g.where, *number));
      }
      if (auto rm = g.log->find("removed"); rm != g.log->end() && rm->is_boolean() && rm->get<bool>()) {
        return InvalidArgument(fmt::format("{}: the node marks the log removed (a reorg)", g.where));
      }
      if (*k >= tx_hashes.size() || tx_hashes[*k] != th) {
        return InvalidArgument(
            fmt::format("{}: transaction {} at index {} is not one of the block's", g.where, Hex(th), *k));
      }
      if (*index != j || *k < last_tx) {
        return InvalidArgument(
            fmt::format("{}: logIndex {} of transaction {} where log {} of the block belongs: "
                        "a log is missing, repeated or out of order",
                        g.where, *index, *k, j));
      }
      last_tx = *k;
      g.tx_index = *k;
      g.tx_hash = &tx_hashes[*k];
      ARROW_RETURN_NOT_OK(AddLog(g, l.get()));
    }
  }
  if (b) {
    ARROW_ASSIGN_OR_RAISE(out.blocks, b->Finish());
  }
  if (t) {
    ARROW_ASSIGN_OR_RAISE(out.transactions, t->Finish());
  }
  if (l) {
    ARROW_ASSIGN_OR_RAISE(out.logs, l->Finish());
  }
  return out;
}

}  // namespace sediment::chain
