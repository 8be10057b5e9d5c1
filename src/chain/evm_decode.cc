// DecodeEvmBlocks (evm_decode.h): each block's answer checked — its number,
// hash and parent, its receipts against its transactions, its logs against
// the block — and its rows added to the tables written. How a field becomes
// a value: evm_fields.cc; the columns: evm_columns.cc; the schemas and the
// row builders: evm_schema.cc.
#include "chain/evm_decode.h"

#include <arrow/api.h>
#include <fmt/format.h>

#include <algorithm>

#include "base/crypto.h"
#include "chain/evm_columns_internal.h"

namespace sediment::chain {
namespace evm_internal {
namespace {

// The builders of the tables written; null: that table is not.
struct TableRows {
  Rows* blocks = nullptr;
  Rows* transactions = nullptr;
  Rows* logs = nullptr;
};

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

// Reads block r->number's header into r: checks the number the node
// answered, reads the hash into *hash (r->hash points at it) and the
// timestamp, and checks the parent: the first block's is the rows'
// parent_hash, each later one's must be *prev_hash (then set to this one's).
Status ReadHeader(const json& blk, bool first, Row* r, std::string* hash, std::string* prev_hash, EvmRows* out) {
  if (blk.is_null()) return InvalidArgument(fmt::format("{}: the node has no such block (null)", r->where));
  if (!blk.is_object()) return InvalidArgument(fmt::format("{}: the answer is not a block", r->where));
  r->block = &blk;
  ARROW_ASSIGN_OR_RAISE(const json* num_v, Get(*r, Obj::kBlock, "number", Absent::kError));
  ARROW_ASSIGN_OR_RAISE(uint64_t got_number, HexQuantity(*num_v, r->where + ": number"));
  if (got_number != r->number) {
    return InvalidArgument(fmt::format("{}: the node answered with block {}", r->where, got_number));
  }
  ARROW_ASSIGN_OR_RAISE(const json* hash_v, Get(*r, Obj::kBlock, "hash", Absent::kError));
  ARROW_ASSIGN_OR_RAISE(*hash, HexData(*hash_v, r->where + ": hash", 32));
  ARROW_ASSIGN_OR_RAISE(const json* parent_v, Get(*r, Obj::kBlock, "parentHash", Absent::kError));
  ARROW_ASSIGN_OR_RAISE(std::string parent, HexData(*parent_v, r->where + ": parentHash", 32));
  if (first) {
    out->parent_hash = Hex(parent);
  } else if (parent != *prev_hash) {
    return InvalidArgument(
        fmt::format("{}: parentHash {} is not the hash {} of block {} (the chain changed while it was read)", r->where,
                    Hex(parent), Hex(*prev_hash), r->number - 1));
  }
  *prev_hash = *hash;
  r->hash = hash;
  ARROW_ASSIGN_OR_RAISE(const json* time_v, Get(*r, Obj::kBlock, "timestamp", Absent::kError));
  ARROW_ASSIGN_OR_RAISE(r->timestamp, HexQuantity(*time_v, r->where + ": timestamp"));
  return Status::OK();
}

// Checks that transaction x's receipt (x.receipt) names it and the block.
Status CheckReceipt(const Row& x, const std::string& tx_hash) {
  if (!x.receipt->is_object()) return InvalidArgument(fmt::format("{} receipt: not an object", x.where));
  ARROW_ASSIGN_OR_RAISE(const json* rc_hash_v, Get(x, Obj::kReceipt, "transactionHash", Absent::kError));
  ARROW_ASSIGN_OR_RAISE(std::string rc_hash, HexData(*rc_hash_v, x.where + ": receipt transactionHash", 32));
  ARROW_ASSIGN_OR_RAISE(const json* rc_block_v, Get(x, Obj::kReceipt, "blockHash", Absent::kError));
  ARROW_ASSIGN_OR_RAISE(std::string rc_block, HexData(*rc_block_v, x.where + ": receipt blockHash", 32));
  if (rc_hash != tx_hash || rc_block != *x.hash) {
    return InvalidArgument(fmt::format("{}: the receipt is for transaction {} in block {}, not {} in {}", x.where,
                                       Hex(rc_hash), Hex(rc_block), Hex(tx_hash), Hex(*x.hash)));
  }
  return Status::OK();
}

// Checks transaction x (entry k of the block's), reads its type into x, and adds its row.
Status AddTransaction(Row& x, size_t k, Rows* t) {
  if (!x.tx->is_object()) return InvalidArgument(fmt::format("{}: not a full transaction object", x.where));
  ARROW_ASSIGN_OR_RAISE(auto index, Quantity(x, Obj::kTx, "transactionIndex", Absent::kNull));
  if (index && *index != k) {
    return InvalidArgument(fmt::format("{}: transactionIndex {} is not its place in the block", x.where, *index));
  }
  ARROW_ASSIGN_OR_RAISE(auto type, Quantity(x, Obj::kTx, "type", Absent::kZero));
  if (*type > 255) return InvalidArgument(fmt::format("{}: type {} is not a transaction type", x.where, *type));
  x.tx_type = *type;
  return t->Add(x);
}

// Adds the logs of transaction x's receipt.
Status AddReceiptLogs(const Row& x, Rows* l) {
  ARROW_ASSIGN_OR_RAISE(const json* logs, Get(x, Obj::kReceipt, "logs", Absent::kError));
  if (!logs->is_array()) return InvalidArgument(fmt::format("{}: receipt logs is not an array", x.where));
  for (size_t j = 0; j < logs->size(); ++j) {
    Row g = x;
    g.where = fmt::format("{}, log {}", x.where, j);
    g.log = &(*logs)[j];
    ARROW_RETURN_NOT_OK(AddLog(g, l));
  }
  return Status::OK();
}

// The block's transactions: each one's hash into tx_hashes; with receipts,
// each checked against its transaction, the transaction's row added and, if
// logs come from receipts, their rows.
Status AddTransactions(const Row& r, const json& txs, const std::vector<json>& receipts, bool use_receipts,
                       bool logs_given, const TableRows& tables, std::vector<std::string>& tx_hashes) {
  for (size_t k = 0; k < txs.size(); ++k) {
    Row x = r;
    x.where = fmt::format("{}, transaction {}", r.where, k);
    x.tx = &txs[k];
    x.tx_index = k;
    ARROW_ASSIGN_OR_RAISE(tx_hashes[k], TxHashOf(*x.tx, x.where));
    x.tx_hash = &tx_hashes[k];
    if (!use_receipts) continue;
    x.receipt = &receipts[k];
    ARROW_RETURN_NOT_OK(CheckReceipt(x, tx_hashes[k]));
    if (tables.transactions) ARROW_RETURN_NOT_OK(AddTransaction(x, k, tables.transactions));
    if (!tables.logs || logs_given) continue;
    ARROW_RETURN_NOT_OK(AddReceiptLogs(x, tables.logs));
  }
  return Status::OK();
}

// The block's logs from eth_getLogs, in logIndex order, each an object; there
// must be some exactly when the block's logsBloom is not empty (so a node
// that answers [] for a block it has not indexed yet, or a block that changed
// since it was read, is caught).
Result<std::vector<const json*>> GivenLogsInOrder(const Row& r, const std::vector<json>& logs) {
  std::vector<const json*> given;
  for (const auto& lg : logs) given.push_back(&lg);
  for (size_t j = 0; j < given.size(); ++j) {
    if (!given[j]->is_object()) return InvalidArgument(fmt::format("{}, log {} (eth_getLogs): not a log", r.where, j));
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
    return InvalidArgument(fmt::format("{}: eth_getLogs gave {} logs but the block's logsBloom is {}", r.where,
                                       given.size(), empty_bloom ? "empty" : "not empty"));
  }
  return given;
}

// Adds the block's logs from eth_getLogs: each names this block and one of
// its transactions (in order), their logIndex runs 0, 1, 2, ... with none
// missing.
Status AddGivenLogs(const Row& r, const std::vector<json>& logs, const std::vector<std::string>& tx_hashes, Rows* l) {
  ARROW_ASSIGN_OR_RAISE(std::vector<const json*> given, GivenLogsInOrder(r, logs));
  size_t last_tx = 0;
  for (size_t j = 0; j < given.size(); ++j) {
    Row g = r;
    g.where = fmt::format("{}, log {} (eth_getLogs)", r.where, j);
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
    ARROW_RETURN_NOT_OK(AddLog(g, l));
  }
  return Status::OK();
}

// Checks block `number` (the first of the batch if `first`) and adds its
// rows, and those of its transactions and logs, to the tables written.
Status AddBlock(uint64_t number, bool first, const EvmBlock& block, const TableRows& tables, std::string* prev_hash,
                EvmRows* out) {
  Row r;
  r.number = number;
  r.where = fmt::format("block {}", r.number);
  std::string hash;
  ARROW_RETURN_NOT_OK(ReadHeader(block.block, first, &r, &hash, prev_hash, out));
  ARROW_ASSIGN_OR_RAISE(const json* txs, Get(r, Obj::kBlock, "transactions", Absent::kError));
  if (!txs->is_array()) return InvalidArgument(fmt::format("{}: transactions is not an array", r.where));
  // Receipts: for the transactions table, and for logs unless eth_getLogs gave them.
  const bool logs_given = block.logs.has_value();
  const bool use_receipts = tables.transactions || (tables.logs && !logs_given);
  const auto& receipts = block.receipts;
  if (use_receipts && receipts.size() != txs->size()) {
    return InvalidArgument(fmt::format("{}: {} transactions but {} receipts", r.where, txs->size(), receipts.size()));
  }
  if (tables.blocks) ARROW_RETURN_NOT_OK(tables.blocks->Add(r));
  out->hashes.push_back(Hex(hash));
  std::vector<std::string> tx_hashes(txs->size());
  ARROW_RETURN_NOT_OK(AddTransactions(r, *txs, receipts, use_receipts, logs_given, tables, tx_hashes));
  if (!tables.logs || !logs_given) return Status::OK();
  return AddGivenLogs(r, *block.logs, tx_hashes, tables.logs);
}

}  // namespace
}  // namespace evm_internal

Result<EvmRows> DecodeEvmBlocks(uint64_t first, const std::vector<EvmBlock>& blocks, const EvmSchemas& schemas) {
  using evm_internal::Rows;
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
  const evm_internal::TableRows tables{b.get(), t.get(), l.get()};
  EvmRows out;
  std::string prev_hash;
  for (size_t i = 0; i < blocks.size(); ++i) {
    ARROW_RETURN_NOT_OK(evm_internal::AddBlock(first + i, i == 0, blocks[i], tables, &prev_hash, &out));
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
