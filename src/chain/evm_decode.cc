#include "chain/evm_decode.h"

#include <arrow/api.h>
#include <fmt/format.h>

#include "base/crypto.h"
#include "chain/generator.h"

namespace sediment::chain {
namespace {

using nlohmann::json;

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The digits after "0x", or InvalidArgument.
Result<std::string_view> HexDigits(const json& v, const std::string& what) {
  if (!v.is_string()) return InvalidArgument(fmt::format("{}: expected a hex string, got {}", what, v.dump()));
  const std::string& s = v.get_ref<const std::string&>();
  if (s.size() < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) {
    return InvalidArgument(fmt::format("{}: \"{}\" does not start with 0x", what, s));
  }
  std::string_view digits = std::string_view(s).substr(2);
  for (char c : digits) {
    if (HexDigit(c) < 0) return InvalidArgument(fmt::format("{}: \"{}\" is not hex", what, s));
  }
  return digits;
}

const json& Field(const json& obj, const char* name, const std::string& where, Status* error) {
  static const json kNull;
  if (!obj.is_object() || !obj.contains(name)) {
    if (error->ok()) *error = InvalidArgument(fmt::format("{}: the answer has no field \"{}\"", where, name));
    return kNull;
  }
  return obj[name];
}

// Appends the bytes of a hex field of `size` bytes (null if the JSON is null and `nullable`).
class Rows {
 public:
  explicit Rows(ChainTable t) : schema_(EvmSchema(t)) {
    for (const auto& f : schema_->fields()) {
      std::unique_ptr<arrow::ArrayBuilder> b;
      (void)arrow::MakeBuilder(arrow::default_memory_pool(), f->type(), &b);
      builders_.push_back(std::move(b));
    }
  }
  arrow::ArrayBuilder* operator[](int i) { return builders_[static_cast<size_t>(i)].get(); }
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
  std::shared_ptr<arrow::Schema> schema_;
  std::vector<std::unique_ptr<arrow::ArrayBuilder>> builders_;
};

Status AppendU64(arrow::ArrayBuilder* b, uint64_t v) { return static_cast<arrow::UInt64Builder*>(b)->Append(v); }
Status AppendU32(arrow::ArrayBuilder* b, uint64_t v) {
  return static_cast<arrow::UInt32Builder*>(b)->Append(static_cast<uint32_t>(v));
}
Status AppendU8(arrow::ArrayBuilder* b, uint64_t v) {
  return static_cast<arrow::UInt8Builder*>(b)->Append(static_cast<uint8_t>(v));
}
Status AppendFixed(arrow::ArrayBuilder* b, const std::string& bytes) {
  return static_cast<arrow::FixedSizeBinaryBuilder*>(b)->Append(bytes);
}
Status AppendBinary(arrow::ArrayBuilder* b, const std::string& bytes) {
  return static_cast<arrow::BinaryBuilder*>(b)->Append(bytes);
}

// A quantity field that may be absent or null (base fee before London, status before Byzantium, ...).
Result<std::optional<uint64_t>> OptionalQuantity(const json& obj, const char* name, const std::string& where) {
  if (!obj.contains(name) || obj[name].is_null()) return std::optional<uint64_t>();
  ARROW_ASSIGN_OR_RAISE(uint64_t v, HexQuantity(obj[name], fmt::format("{}: {}", where, name)));
  return std::optional<uint64_t>(v);
}

Status AppendOptionalU64(arrow::ArrayBuilder* b, const std::optional<uint64_t>& v) {
  return v ? AppendU64(b, *v) : b->AppendNull();
}

// An address field that may be absent or null (`to` of a contract creation, `contractAddress`).
Status AppendOptionalAddress(arrow::ArrayBuilder* b, const json& obj, const char* name, const std::string& where) {
  if (!obj.contains(name) || obj[name].is_null()) return b->AppendNull();
  ARROW_ASSIGN_OR_RAISE(std::string address, HexData(obj[name], fmt::format("{}: {}", where, name), 20));
  return AppendFixed(b, address);
}

}  // namespace

std::shared_ptr<arrow::Schema> EvmSchema(ChainTable t) {
  auto block = arrow::field("block_num", arrow::uint64(), false);
  auto h32 = arrow::fixed_size_binary(32);
  auto a20 = arrow::fixed_size_binary(20);
  switch (t) {
    case ChainTable::kBlocks:
      return arrow::schema(
          {block, arrow::field("hash", h32, false), arrow::field("parent_hash", h32, false),
           arrow::field("timestamp", arrow::uint64(), false), arrow::field("miner", a20, false),
           arrow::field("gas_used", arrow::uint64(), false), arrow::field("gas_limit", arrow::uint64(), false),
           arrow::field("base_fee_per_gas", arrow::uint64(), true), arrow::field("tx_count", arrow::uint32(), false)});
    case ChainTable::kTransactions:
      return arrow::schema(
          {block, arrow::field("tx_index", arrow::uint32(), false), arrow::field("hash", h32, false),
           arrow::field("from", a20, false), arrow::field("to", a20, true),
           arrow::field("value", arrow::fixed_size_binary(32), false), arrow::field("input", arrow::binary(), false),
           arrow::field("gas", arrow::uint64(), false), arrow::field("gas_price", arrow::uint64(), true),
           arrow::field("type", arrow::uint8(), false), arrow::field("nonce", arrow::uint64(), false),
           arrow::field("status", arrow::uint8(), true), arrow::field("gas_used", arrow::uint64(), false),
           arrow::field("contract_address", a20, true)});
    case ChainTable::kLogs:
      return arrow::schema({block, arrow::field("tx_index", arrow::uint32(), false),
                            arrow::field("log_index", arrow::uint32(), false), arrow::field("tx_hash", h32, false),
                            arrow::field("address", a20, false), arrow::field("topic0", h32, true),
                            arrow::field("topic1", h32, true), arrow::field("topic2", h32, true),
                            arrow::field("topic3", h32, true), arrow::field("data", arrow::binary(), false)});
  }
  return nullptr;
}

Result<uint64_t> HexQuantity(const json& v, const std::string& what) {
  ARROW_ASSIGN_OR_RAISE(std::string_view digits, HexDigits(v, what));
  if (digits.empty() || digits.size() > 16) {
    return InvalidArgument(fmt::format("{}: {} is not a quantity of at most 64 bits", what, v.dump()));
  }
  uint64_t out = 0;
  for (char c : digits) out = out << 4 | static_cast<uint64_t>(HexDigit(c));
  return out;
}

Result<std::string> HexData(const json& v, const std::string& what, size_t size) {
  ARROW_ASSIGN_OR_RAISE(std::string_view digits, HexDigits(v, what));
  if (digits.size() % 2 != 0)
    return InvalidArgument(fmt::format("{}: {} has an odd number of hex digits", what, v.dump()));
  if (size > 0 && digits.size() != 2 * size) {
    return InvalidArgument(fmt::format("{}: {} is not {} bytes", what, v.dump(), size));
  }
  std::string out(digits.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<char>(HexDigit(digits[2 * i]) << 4 | HexDigit(digits[2 * i + 1]));
  }
  return out;
}

Result<std::array<uint8_t, 32>> HexUint256(const json& v, const std::string& what) {
  ARROW_ASSIGN_OR_RAISE(std::string_view digits, HexDigits(v, what));
  if (digits.empty() || digits.size() > 64) {
    return InvalidArgument(fmt::format("{}: {} is not a quantity of at most 256 bits", what, v.dump()));
  }
  std::array<uint8_t, 32> out{};
  // From the last digit: digit k from the end goes to byte 31 - k/2.
  for (size_t k = 0; k < digits.size(); ++k) {
    int d = HexDigit(digits[digits.size() - 1 - k]);
    out[31 - k / 2] |= static_cast<uint8_t>(k % 2 == 0 ? d : d << 4);
  }
  return out;
}

namespace {

// One log of a receipt: a row of the logs table.
Status DecodeLog(const json& lg, const std::string& lw, uint64_t number, size_t k, const std::string& tx_hash,
                 const std::string& hash, Rows& l) {
  Status missing;
  const json& lb_v = Field(lg, "blockHash", lw, &missing);
  const json& li_v = Field(lg, "logIndex", lw, &missing);
  const json& addr_v = Field(lg, "address", lw, &missing);
  const json& topics = Field(lg, "topics", lw, &missing);
  const json& data_v = Field(lg, "data", lw, &missing);
  ARROW_RETURN_NOT_OK(missing);
  ARROW_ASSIGN_OR_RAISE(std::string log_block, HexData(lb_v, lw + ": blockHash", 32));
  if (log_block != hash) {
    return InvalidArgument(
        fmt::format("{}: the log's blockHash {} is not the block's hash {}", lw, Hex(log_block), Hex(hash)));
  }
  if (!topics.is_array() || topics.size() > 4) {
    return InvalidArgument(fmt::format("{}: topics must be an array of at most 4", lw));
  }
  ARROW_RETURN_NOT_OK(AppendU64(l[0], number));
  ARROW_RETURN_NOT_OK(AppendU32(l[1], k));
  ARROW_ASSIGN_OR_RAISE(uint64_t log_index, HexQuantity(li_v, lw + ": logIndex"));
  if (log_index > UINT32_MAX) return InvalidArgument(fmt::format("{}: logIndex {} is too large", lw, log_index));
  ARROW_RETURN_NOT_OK(AppendU32(l[2], log_index));
  ARROW_RETURN_NOT_OK(AppendFixed(l[3], tx_hash));
  ARROW_ASSIGN_OR_RAISE(std::string addr, HexData(addr_v, lw + ": address", 20));
  ARROW_RETURN_NOT_OK(AppendFixed(l[4], addr));
  for (size_t k2 = 0; k2 < 4; ++k2) {
    if (k2 < topics.size()) {
      ARROW_ASSIGN_OR_RAISE(std::string topic, HexData(topics[k2], fmt::format("{}: topic{}", lw, k2), 32));
      ARROW_RETURN_NOT_OK(AppendFixed(l[5 + static_cast<int>(k2)], topic));
    } else {
      ARROW_RETURN_NOT_OK(l[5 + static_cast<int>(k2)]->AppendNull());
    }
  }
  ARROW_ASSIGN_OR_RAISE(std::string data, HexData(data_v, lw + ": data"));
  ARROW_RETURN_NOT_OK(AppendBinary(l[9], data));
  return Status::OK();
}

// One transaction and its receipt: a row of the transactions table, and its logs.
Status DecodeTransaction(const json& tx, const json& rc, const std::string& tw, uint64_t number, size_t k,
                         const std::string& hash, Rows& t, Rows& l) {
  Status missing;
  if (!tx.is_object()) return InvalidArgument(fmt::format("{}: not a full transaction object", tw));
  const json& tx_hash_v = Field(tx, "hash", tw, &missing);
  const json& from_v = Field(tx, "from", tw, &missing);
  const json& value_v = Field(tx, "value", tw, &missing);
  const json& input_v = Field(tx, "input", tw, &missing);
  const json& gas_v = Field(tx, "gas", tw, &missing);
  const json& nonce_v = Field(tx, "nonce", tw, &missing);
  const json& rc_hash_v = Field(rc, "transactionHash", tw + " receipt", &missing);
  const json& rc_block_v = Field(rc, "blockHash", tw + " receipt", &missing);
  const json& rc_used_v = Field(rc, "gasUsed", tw + " receipt", &missing);
  const json& logs = Field(rc, "logs", tw + " receipt", &missing);
  ARROW_RETURN_NOT_OK(missing);
  ARROW_ASSIGN_OR_RAISE(std::string tx_hash, HexData(tx_hash_v, tw + ": hash", 32));
  ARROW_ASSIGN_OR_RAISE(std::string rc_hash, HexData(rc_hash_v, tw + ": receipt transactionHash", 32));
  ARROW_ASSIGN_OR_RAISE(std::string rc_block, HexData(rc_block_v, tw + ": receipt blockHash", 32));
  if (rc_hash != tx_hash || rc_block != hash) {
    return InvalidArgument(fmt::format("{}: the receipt is for transaction {} in block {}, not {} in {}", tw,
                                       Hex(rc_hash), Hex(rc_block), Hex(tx_hash), Hex(hash)));
  }
  ARROW_RETURN_NOT_OK(AppendU64(t[0], number));
  ARROW_RETURN_NOT_OK(AppendU32(t[1], k));
  ARROW_RETURN_NOT_OK(AppendFixed(t[2], tx_hash));
  ARROW_ASSIGN_OR_RAISE(std::string from, HexData(from_v, tw + ": from", 20));
  ARROW_RETURN_NOT_OK(AppendFixed(t[3], from));
  ARROW_RETURN_NOT_OK(AppendOptionalAddress(t[4], tx, "to", tw));
  ARROW_ASSIGN_OR_RAISE(auto value, HexUint256(value_v, tw + ": value"));
  ARROW_RETURN_NOT_OK(static_cast<arrow::FixedSizeBinaryBuilder*>(t[5])->Append(value.data()));
  ARROW_ASSIGN_OR_RAISE(std::string input, HexData(input_v, tw + ": input"));
  ARROW_RETURN_NOT_OK(AppendBinary(t[6], input));
  ARROW_ASSIGN_OR_RAISE(uint64_t gas, HexQuantity(gas_v, tw + ": gas"));
  ARROW_RETURN_NOT_OK(AppendU64(t[7], gas));
  ARROW_ASSIGN_OR_RAISE(auto gas_price, OptionalQuantity(tx, "gasPrice", tw));
  ARROW_RETURN_NOT_OK(AppendOptionalU64(t[8], gas_price));
  ARROW_ASSIGN_OR_RAISE(auto type, OptionalQuantity(tx, "type", tw));
  if (type.value_or(0) > 255) return InvalidArgument(fmt::format("{}: type {} is not a transaction type", tw, *type));
  ARROW_RETURN_NOT_OK(AppendU8(t[9], type.value_or(0)));
  ARROW_ASSIGN_OR_RAISE(uint64_t nonce, HexQuantity(nonce_v, tw + ": nonce"));
  ARROW_RETURN_NOT_OK(AppendU64(t[10], nonce));
  ARROW_ASSIGN_OR_RAISE(auto status, OptionalQuantity(rc, "status", tw + " receipt"));
  if (status.value_or(0) > 1) return InvalidArgument(fmt::format("{}: receipt status {} is not 0 or 1", tw, *status));
  ARROW_RETURN_NOT_OK(status ? AppendU8(t[11], *status) : t[11]->AppendNull());
  ARROW_ASSIGN_OR_RAISE(uint64_t gas_used, HexQuantity(rc_used_v, tw + ": receipt gasUsed"));
  ARROW_RETURN_NOT_OK(AppendU64(t[12], gas_used));
  ARROW_RETURN_NOT_OK(AppendOptionalAddress(t[13], rc, "contractAddress", tw + " receipt"));

  if (!logs.is_array()) return InvalidArgument(fmt::format("{}: receipt logs is not an array", tw));
  for (size_t j = 0; j < logs.size(); ++j) {
    ARROW_RETURN_NOT_OK(DecodeLog(logs[j], fmt::format("{}, log {}", tw, j), number, k, tx_hash, hash, l));
  }
  return Status::OK();
}

}  // namespace

Result<EvmRows> DecodeEvmBlocks(uint64_t first, const std::vector<EvmBlock>& blocks) {
  Rows b(ChainTable::kBlocks), t(ChainTable::kTransactions), l(ChainTable::kLogs);
  EvmRows out;
  std::string prev_hash;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const uint64_t number = first + i;
    const std::string where = fmt::format("block {}", number);
    const json& blk = blocks[i].block;
    if (blk.is_null()) return InvalidArgument(fmt::format("{}: the node has no such block (null)", where));
    Status missing;
    const json& num_v = Field(blk, "number", where, &missing);
    const json& hash_v = Field(blk, "hash", where, &missing);
    const json& parent_v = Field(blk, "parentHash", where, &missing);
    const json& time_v = Field(blk, "timestamp", where, &missing);
    const json& miner_v = Field(blk, "miner", where, &missing);
    const json& used_v = Field(blk, "gasUsed", where, &missing);
    const json& limit_v = Field(blk, "gasLimit", where, &missing);
    const json& txs = Field(blk, "transactions", where, &missing);
    ARROW_RETURN_NOT_OK(missing);
    ARROW_ASSIGN_OR_RAISE(uint64_t got_number, HexQuantity(num_v, where + ": number"));
    if (got_number != number) {
      return InvalidArgument(fmt::format("{}: the node answered with block {}", where, got_number));
    }
    ARROW_ASSIGN_OR_RAISE(std::string hash, HexData(hash_v, where + ": hash", 32));
    ARROW_ASSIGN_OR_RAISE(std::string parent, HexData(parent_v, where + ": parentHash", 32));
    if (i == 0) {
      out.parent_hash = Hex(parent);
    } else if (parent != prev_hash) {
      return InvalidArgument(
          fmt::format("{}: parentHash {} is not the hash {} of block {} (the chain changed "
                      "while it was read)",
                      where, Hex(parent), Hex(prev_hash), number - 1));
    }
    prev_hash = hash;
    if (!txs.is_array()) return InvalidArgument(fmt::format("{}: transactions is not an array", where));
    const auto& receipts = blocks[i].receipts;
    if (receipts.size() != txs.size()) {
      return InvalidArgument(fmt::format("{}: {} transactions but {} receipts", where, txs.size(), receipts.size()));
    }
    ARROW_RETURN_NOT_OK(AppendU64(b[0], number));
    ARROW_RETURN_NOT_OK(AppendFixed(b[1], hash));
    ARROW_RETURN_NOT_OK(AppendFixed(b[2], parent));
    ARROW_ASSIGN_OR_RAISE(uint64_t ts, HexQuantity(time_v, where + ": timestamp"));
    ARROW_RETURN_NOT_OK(AppendU64(b[3], ts));
    ARROW_ASSIGN_OR_RAISE(std::string miner, HexData(miner_v, where + ": miner", 20));
    ARROW_RETURN_NOT_OK(AppendFixed(b[4], miner));
    ARROW_ASSIGN_OR_RAISE(uint64_t used, HexQuantity(used_v, where + ": gasUsed"));
    ARROW_RETURN_NOT_OK(AppendU64(b[5], used));
    ARROW_ASSIGN_OR_RAISE(uint64_t limit, HexQuantity(limit_v, where + ": gasLimit"));
    ARROW_RETURN_NOT_OK(AppendU64(b[6], limit));
    ARROW_ASSIGN_OR_RAISE(auto base_fee, OptionalQuantity(blk, "baseFeePerGas", where));
    ARROW_RETURN_NOT_OK(AppendOptionalU64(b[7], base_fee));
    ARROW_RETURN_NOT_OK(AppendU32(b[8], txs.size()));
    out.hashes.push_back(Hex(hash));

    for (size_t k = 0; k < txs.size(); ++k) {
      ARROW_RETURN_NOT_OK(
          DecodeTransaction(txs[k], receipts[k], fmt::format("{}, transaction {}", where, k), number, k, hash, t, l));
    }
  }
  ARROW_ASSIGN_OR_RAISE(out.blocks, b.Finish());
  ARROW_ASSIGN_OR_RAISE(out.transactions, t.Finish());
  ARROW_ASSIGN_OR_RAISE(out.logs, l.Finish());
  return out;
}

}  // namespace sediment::chain
