#include "chain/evm_source.h"

#include <arrow/api.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <future>
#include <map>

#include "base/crypto.h"
#include "chain/generator.h"

namespace sediment::chain {

using nlohmann::json;

namespace {
std::string Q(uint64_t n) { return fmt::format("0x{:x}", n); }
}  // namespace

Result<Finality> Finality::Parse(const std::string& text) {
  Finality f;
  if (text == "latest" || text == "safe" || text == "finalized") {
    f.tag = text;
    return f;
  }
  bool digits = !text.empty() && text.size() <= 6;
  for (char c : text) digits = digits && c >= '0' && c <= '9';
  if (!digits) {
    return InvalidArgument(
        fmt::format("finality \"{}\" must be latest, safe, finalized or a number of confirmations", text));
  }
  f.tag.clear();
  f.depth = std::stoull(text);
  return f;
}

Result<uint64_t> EvmSource::Latest() {
  ARROW_ASSIGN_OR_RAISE(json v, rpc_->Call("eth_blockNumber", json::array()));
  return HexQuantity(v, "eth_blockNumber");
}

Result<std::optional<uint64_t>> EvmSource::Head() {
  if (finality_.tag.empty() || finality_.tag == "latest") {
    ARROW_ASSIGN_OR_RAISE(uint64_t latest, Latest());
    if (latest < finality_.depth) return std::optional<uint64_t>();
    return std::optional<uint64_t>(latest - finality_.depth);
  }
  ARROW_ASSIGN_OR_RAISE(json b, rpc_->Call("eth_getBlockByNumber", json::array({finality_.tag, false})));
  if (b.is_null()) return std::optional<uint64_t>();
  if (!b.is_object() || !b.contains("number")) {
    return Status::IOError(fmt::format("the {} block: the answer is not a block: {}", finality_.tag, b.dump()));
  }
  ARROW_ASSIGN_OR_RAISE(uint64_t n, HexQuantity(b["number"], finality_.tag + " block: number"));
  return std::optional<uint64_t>(n);
}

Result<std::vector<std::string>> EvmSource::Hashes(uint64_t from, uint64_t to) {
  std::vector<RpcCall> calls;
  for (uint64_t b = from; b <= to; ++b) calls.push_back({"eth_getBlockByNumber", json::array({Q(b), false})});
  ARROW_ASSIGN_OR_RAISE(auto answers, rpc_->Batch(calls));
  std::vector<std::string> out;
  for (size_t i = 0; i < answers.size(); ++i) {
    ARROW_RETURN_NOT_OK(answers[i].status());
    const json& blk = *answers[i];
    std::string where = fmt::format("block {}", from + i);
    if (blk.is_null()) return Status::IOError(fmt::format("{}: the node has no such block (null)", where));
    if (!blk.is_object() || !blk.contains("hash")) {
      return Status::IOError(fmt::format("{}: the answer is not a block", where));
    }
    ARROW_ASSIGN_OR_RAISE(std::string hash, HexData(blk["hash"], where + ": hash", 32));
    std::string hex = Hex(reinterpret_cast<const uint8_t*>(hash.data()), hash.size());
    out.push_back(std::move(hex));
  }
  return out;
}

Result<std::vector<EvmBlock>> EvmSource::ReadBatch(uint64_t from, uint64_t to, bool full, bool want_receipts) {
  std::vector<RpcCall> calls;
  for (uint64_t b = from; b <= to; ++b) calls.push_back({"eth_getBlockByNumber", json::array({Q(b), full})});
  ARROW_ASSIGN_OR_RAISE(auto answers, rpc_->Batch(calls));
  std::vector<EvmBlock> blocks(answers.size());
  for (size_t i = 0; i < answers.size(); ++i) {
    ARROW_RETURN_NOT_OK(answers[i].status());
    blocks[i].block = std::move(*answers[i]);
    if (blocks[i].block.is_null()) {
      // Not there yet (a node behind its own head, or a restart): the batch is retried by the next poll.
      return Status::IOError(fmt::format("block {}: the node has no such block yet (null)", from + i));
    }
  }
  if (!want_receipts) return blocks;
  if (block_receipts_ != 0) {
    calls.clear();
    for (uint64_t b = from; b <= to; ++b) calls.push_back({"eth_getBlockReceipts", json::array({Q(b)})});
    ARROW_ASSIGN_OR_RAISE(auto receipts, rpc_->Batch(calls));
    bool supported = true;
    for (size_t i = 0; i < receipts.size() && supported; ++i) {
      if (!receipts[i].ok()) {
        const std::string& m = receipts[i].status().message();
        // Only "no such method" decides it (codes -32601, -32004), not an error about a block.
        if (block_receipts_ == -1 &&
            (m.find("node error -32601") != std::string::npos || m.find("node error -32004") != std::string::npos)) {
          supported = false;
          break;
        }
        return receipts[i].status();
      }
      if (!receipts[i]->is_array()) {
        return Status::IOError(fmt::format("block {}: eth_getBlockReceipts did not answer a list", from + i));
      }
      for (auto& r : *receipts[i]) blocks[i].receipts.push_back(std::move(r));
    }
    block_receipts_ = supported ? 1 : 0;
    if (supported) return blocks;
    for (auto& b : blocks) b.receipts.clear();
  }
  calls.clear();
  std::vector<size_t> owner;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const json& blk = blocks[i].block;
    if (!blk.is_object() || !blk.contains("transactions") || !blk["transactions"].is_array()) {
      return Status::IOError(fmt::format("block {}: the answer is not a block with a list of transactions", from + i));
    }
    for (const auto& tx : blk["transactions"]) {
      if (!tx.is_string() && (!tx.is_object() || !tx.contains("hash"))) {
        return Status::IOError(fmt::format("block {}: a transaction without a hash", from + i));
      }
      calls.push_back({"eth_getTransactionReceipt", json::array({tx.is_string() ? tx : tx["hash"]})});
      owner.push_back(i);
    }
  }
  ARROW_ASSIGN_OR_RAISE(auto receipts, rpc_->Batch(calls));
  for (size_t k = 0; k < receipts.size(); ++k) {
    ARROW_RETURN_NOT_OK(receipts[k].status());
    if (receipts[k]->is_null()) {
      return Status::IOError(
          fmt::format("block {}: no receipt for transaction {} yet", from + owner[k], calls[k].params[0].dump()));
    }
    blocks[owner[k]].receipts.push_back(std::move(*receipts[k]));
  }
  return blocks;
}

namespace {

// Whether a node's error to eth_getLogs says the call asked for too much (a range or a result too
// large): providers word it differently ("query returned more than 10000 results", "Log response
// size exceeded", "eth_getLogs is limited to a 10,000 range", "block range is too wide"). Not a rate
// limit ("request rate limited", "daily request count exceeded", Infura's -32005 is used for both):
// that is retried, not split.
bool AskedTooMuch(const Status& st) {
  std::string m = st.message();
  size_t at = m.find("node error ");
  if (at == std::string::npos) return false;
  m = m.substr(at);
  for (auto& c : m) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* rate : {"rate limit", "rate-limit", "ratelimit", "rate exceeded", "too many requests",
                           "request limit", "requests per", "capacity", "per second", "count exceeded", "quota"}) {
    if (m.find(rate) != std::string::npos) return false;
  }
  for (const char* says : {"more than", "too many", "too large", "too wide", "too big", "response size", "limited to",
                           "block range", "exceed"}) {
    if (m.find(says) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

Result<std::vector<json>> EvmSource::GetLogs(uint64_t from, uint64_t to) {
  // Ranges still to read, in order; a range the node refuses as too much is read as two halves.
  std::vector<std::pair<uint64_t, uint64_t>> todo;
  const uint64_t span = std::max<uint64_t>(1, logs_range_.load());
  for (uint64_t b = from; b <= to; b = b + span) todo.emplace_back(b, std::min(to, b + span - 1));
  std::map<uint64_t, std::vector<json>> got;  // range start -> its logs
  while (!todo.empty()) {
    // At most `concurrency` calls a batch: a node limits a batch's answer too.
    const size_t n = std::min(todo.size(), static_cast<size_t>(std::max(concurrency_, 1)));
    std::vector<RpcCall> calls;
    for (size_t k = 0; k < n; ++k) {
      calls.push_back(
          {"eth_getLogs", json::array({json{{"fromBlock", Q(todo[k].first)}, {"toBlock", Q(todo[k].second)}}})});
    }
    ARROW_ASSIGN_OR_RAISE(auto answers, rpc_->Batch(calls));
    std::vector<std::pair<uint64_t, uint64_t>> again;
    for (size_t k = 0; k < answers.size(); ++k) {
      const auto [b, e] = todo[k];
      if (!answers[k].ok()) {
        if (e > b && AskedTooMuch(answers[k].status())) {
          // A full-size range that was too much: the next ones are smaller (a short last range says nothing).
          const uint64_t half = (e - b + 1) / 2;
          uint64_t cur = logs_range_.load();
          while (e - b + 1 >= cur && half < cur && !logs_range_.compare_exchange_weak(cur, half)) {
          }
          again.emplace_back(b, b + half - 1);
          again.emplace_back(b + half, e);
          continue;
        }
        return answers[k].status();
      }
      if (!answers[k]->is_array()) {
        return Status::IOError(fmt::format("eth_getLogs of blocks {}..{} did not answer a list", b, e));
      }
      auto& logs = got[b];
      for (auto& lg : *answers[k]) {
        auto number = lg.is_object() && lg.contains("blockNumber") ? HexQuantity(lg["blockNumber"], "blockNumber")
                                                                   : Result<uint64_t>(Status::Invalid("none"));
        if (!number.ok() || *number < b || *number > e) {
          return Status::IOError(fmt::format("eth_getLogs of blocks {}..{} answered a log of another block: {}", b, e,
                                             lg.dump().substr(0, 300)));
        }
        logs.push_back(std::move(lg));
      }
    }
    again.insert(again.end(), todo.begin() + static_cast<std::ptrdiff_t>(n), todo.end());
    std::sort(again.begin(), again.end());
    todo = std::move(again);
  }
  std::vector<json> out;
  for (auto& [b, logs] : got) {
    for (auto& lg : logs) out.push_back(std::move(lg));
  }
  return out;
}

Result<std::vector<EvmBlock>> EvmSource::ReadBlocks(uint64_t from, uint64_t to, bool full, bool receipts) {
  // Batches of batch_size blocks, `concurrency` in flight at a time.
  std::vector<std::pair<uint64_t, uint64_t>> batches;
  for (uint64_t b = from; b <= to; b += static_cast<uint64_t>(batch_size_)) {
    batches.emplace_back(b, std::min(to, b + static_cast<uint64_t>(batch_size_) - 1));
  }
  std::vector<EvmBlock> all;
  for (size_t i = 0; i < batches.size(); i += static_cast<size_t>(concurrency_)) {
    std::vector<std::future<Result<std::vector<EvmBlock>>>> inflight;
    for (size_t j = i; j < batches.size() && j < i + static_cast<size_t>(concurrency_); ++j) {
      inflight.push_back(std::async(std::launch::async, [&, b = batches[j]]() -> Result<std::vector<EvmBlock>> {
        try {
          return ReadBatch(b.first, b.second, full, receipts);
        } catch (const std::exception& e) {
          return Status::IOError(fmt::format("blocks {}..{}: {}", b.first, b.second, e.what()));
        }
      }));
    }
    Status first;
    for (auto& f : inflight) {
      auto got = f.get();
      if (!got.ok()) {
        if (first.ok()) first = got.status();
        continue;
      }
      for (auto& blk : *got) all.push_back(std::move(blk));
    }
    ARROW_RETURN_NOT_OK(first);
  }
  return all;
}

Result<EvmRows> EvmSource::ReadWithGetLogs(uint64_t from, uint64_t to, const EvmSchemas& schemas, bool receipts) {
  ARROW_ASSIGN_OR_RAISE(auto all, ReadBlocks(from, to, schemas.transactions != nullptr, receipts));
  // After the blocks: a log of a block that changed since is caught by its blockHash.
  ARROW_ASSIGN_OR_RAISE(auto logs, GetLogs(from, to));
  for (auto& blk : all) blk.logs.emplace();
  for (auto& lg : logs) {
    ARROW_ASSIGN_OR_RAISE(uint64_t n, HexQuantity(lg["blockNumber"], "eth_getLogs: blockNumber"));  // checked
    all[n - from].logs->push_back(std::move(lg));
  }
  return DecodeEvmBlocks(from, all, schemas);
}

Result<EvmRows> EvmSource::Read(uint64_t from, uint64_t to, const EvmSchemas& schemas) {
  const bool get_logs =
      schemas.logs && (logs_from_ == LogsFrom::kGetLogs || (logs_from_ == LogsFrom::kAuto && !schemas.transactions));
  const bool full = schemas.transactions != nullptr;
  const bool receipts = schemas.transactions != nullptr;
  if (get_logs) {
    auto rows = ReadWithGetLogs(from, to, schemas, receipts);
    // What eth_getLogs gave does not add up for a block (a node whose log index lags its blocks, a
    // chain whose blooms or log indexes are not the standard ones, a block with more logs than a
    // provider answers in one call): those blocks' logs are read from the receipts instead.
    if (rows.ok() || rows.status().message().find("eth_getLogs") == std::string::npos) return rows;
    spdlog::warn("blocks {}..{}: the logs from eth_getLogs are not usable ({}); reading them from the receipts", from,
                 to, rows.status().message());
  }
  ARROW_ASSIGN_OR_RAISE(auto all, ReadBlocks(from, to, full, receipts || schemas.logs != nullptr));
  return DecodeEvmBlocks(from, all, schemas);
}

}  // namespace sediment::chain
