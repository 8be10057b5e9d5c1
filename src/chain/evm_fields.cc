// How fields of an answer become column values (evm_fields_internal.h).
#include <arrow/api.h>
#include <arrow/util/decimal.h>
#include <fmt/format.h>

#include "chain/evm_fields_internal.h"
#include "chain/evm_hex.h"

namespace sediment::chain::evm_internal {
namespace {

// 10^38: Decimal128(38, 0) holds what is below it.
constexpr unsigned __int128 kDecimal38 =
    static_cast<unsigned __int128>(10000000000000000000ULL) * 10000000000000000000ULL;

}  // namespace

Status MissingField(const Row& r, Obj o, const char* name) {
  return InvalidArgument(
      fmt::format("{}{}: the answer has no field \"{}\"", r.where, o == Obj::kReceipt ? " receipt" : "", name));
}

// A fixed-size byte field (hash, address, root).
Status PutFixed(Builder* b, const Row& r, Obj o, const char* name, size_t size, Absent absent) {
  ARROW_ASSIGN_OR_RAISE(const json* v, Get(r, o, name, absent));
  auto* fb = static_cast<arrow::FixedSizeBinaryBuilder*>(b);
  if (!v) return absent == Absent::kNull ? fb->AppendNull() : fb->Append(std::string(size, '\0'));
  ARROW_ASSIGN_OR_RAISE(std::string bytes, HexData(*v, r.Where(o, name), size));
  return fb->Append(bytes);
}

// A byte field of any length.
Status PutBinary(Builder* b, const Row& r, Obj o, const char* name, size_t size) {
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

}  // namespace sediment::chain::evm_internal
