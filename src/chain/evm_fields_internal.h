// The fields of a JSON-RPC answer that one row of the evm tables is read
// from, and how a field becomes a column's value: Row names the block,
// transaction, receipt and log a row comes from; Put* appends a field, read
// exactly and checked, to an Arrow builder of the column's type. An error is
// InvalidArgument naming the row (Row::where), the field and the value.
// Private to src/chain (evm_*.cc).
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <arrow/array/builder_base.h>
#include <arrow/array/builder_binary.h>
#include <arrow/array/builder_primitive.h>
#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/status.h"

namespace sediment::chain::evm_internal {

using nlohmann::json;

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

// The InvalidArgument for a required field the answer does not have (out
// of line: Get is on every value's path, this is not).
Status MissingField(const Row& r, Obj o, const char* name);

// The field, or null if absent/null; InvalidArgument if absent and required.
inline Result<const json*> Get(const Row& r, Obj o, const char* name, Absent absent) {
  const json& obj = r.Of(o);
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) {
    if (absent == Absent::kError) return MissingField(r, o, name);
    return static_cast<const json*>(nullptr);
  }
  return &*it;
}

using Builder = arrow::ArrayBuilder;

inline Status PutU64(Builder* b, uint64_t v) { return static_cast<arrow::UInt64Builder*>(b)->Append(v); }

// A fixed-size byte field (hash, address, root).
Status PutFixed(Builder* b, const Row& r, Obj o, const char* name, size_t size, Absent absent);
// A byte field of any length.
Status PutBinary(Builder* b, const Row& r, Obj o, const char* name, size_t size = 0);
// A quantity of up to 64 bits: null if absent and `absent` is kNull, 0 if kZero.
Result<std::optional<uint64_t>> Quantity(const Row& r, Obj o, const char* name, Absent absent);
Status PutQuantity(Builder* b, const Row& r, Obj o, const char* name, Absent absent);
// A quantity of up to 256 bits as Decimal128(38, 0) (InvalidArgument if it does not fit).
Status PutDecimal(Builder* b, const Row& r, Obj o, const char* name, Absent absent);
// The block's timestamp in nanoseconds.
Status PutTimestamp(Builder* b, const Row& r);

// The row's block number, block hash and transaction index (checked before the row is added).
inline Status PutBlockNum(Builder* b, const Row& r) { return PutU64(b, r.number); }
inline Status PutBlockHash(Builder* b, const Row& r) {
  return static_cast<arrow::FixedSizeBinaryBuilder*>(b)->Append(*r.hash);
}
inline Status PutTxIndex(Builder* b, const Row& r) {
  return static_cast<arrow::UInt32Builder*>(b)->Append(static_cast<uint32_t>(r.tx_index));
}

// ---------------------------------------------------------------------------
// Transactions: the fields whose meaning depends on the type (as Amp gives them).

inline constexpr uint64_t kLegacy = 0, kAccessList = 1, kBlob = 3, kSetCode = 4;

inline bool Typed(uint64_t type) { return type >= kAccessList && type <= kSetCode; }

// The signature's v as the transaction gives it: (y parity, chain id from a legacy v).
struct Signature {
  bool parity = false;
  std::optional<uint64_t> chain_id;  // legacy transactions: what v says (EIP-155)
  bool zero = false;                 // v = r = s = 0 (an L2's system transaction)
};
Result<Signature> SignatureOf(const Row& r);

// r or s: a quantity of up to 256 bits, as 32 big-endian bytes.
Status PutSignatureWord(Builder* b, const Row& r, const char* name);
Status PutAccessList(Builder* b, const Row& r);
Status PutBlobHashes(Builder* b, const Row& r);
// The receipt's status: 1 true, 0 false; a pre-Byzantium receipt (a state root, no status) true, as Amp has it.
Result<bool> StatusOf(const Row& r);
// The log's topic i, or null if it has fewer.
Status PutTopic(Builder* b, const Row& r, size_t i);

}  // namespace sediment::chain::evm_internal
