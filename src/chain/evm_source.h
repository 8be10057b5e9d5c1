// EvmSource: what the evm-rpc job reads from a node (through JsonRpcClient):
// the head it may write up to (latest, safe, finalized, or latest minus a
// confirmation depth), block hashes to check a table against, and ranges of
// blocks with their receipts, decoded (evm_decode.h). A range is read as
// batch requests of `batch_size` blocks, `concurrency` of them in flight;
// receipts (only when a table needs them) come from eth_getBlockReceipts
// where the node has it, else eth_getTransactionReceipt per transaction
// (remembered after the first try); logs from the receipts or from
// eth_getLogs over the range, in calls the node's limits allow.
//
// Thread-safety: one caller at a time.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "chain/evm_decode.h"
#include "chain/evm_rpc.h"

namespace sediment::chain {

struct Finality {
  std::string tag = "latest";  // latest | safe | finalized; or "" with `depth`
  uint64_t depth = 0;          // confirmations below latest (tag empty)
  // "latest", "safe", "finalized" or a number of confirmations ("12").
  static Result<Finality> Parse(const std::string& text);
};

// Where the logs table's rows come from.
enum class LogsFrom {
  kAuto,      // eth_getLogs unless the transactions table is written (its receipts hold the logs)
  kReceipts,  // the receipts, always
  kGetLogs,   // eth_getLogs, always
};

class EvmSource {
 public:
  // `logs_range`: blocks per eth_getLogs call; halved (for the rest of the source's life) when the
  // node answers that a call asks for too much.
  EvmSource(JsonRpcClient* rpc, Finality finality, int batch_size, int concurrency,
            LogsFrom logs_from = LogsFrom::kAuto, uint64_t logs_range = 2000)
      : rpc_(rpc),
        finality_(std::move(finality)),
        batch_size_(batch_size),
        concurrency_(concurrency),
        logs_from_(logs_from),
        logs_range_(logs_range) {}

  // The node's latest block.
  Result<uint64_t> Latest();
  // The newest block the job may write (nullopt: none yet, e.g. no safe block).
  Result<std::optional<uint64_t>> Head();
  // The node's hashes (hex, no 0x) of blocks [from, to].
  Result<std::vector<std::string>> Hashes(uint64_t from, uint64_t to);
  // Blocks [from, to], decoded and checked, as rows of `schemas` (the tables it names): full
  // transactions and receipts only for the tables that need them, logs from the receipts or from
  // eth_getLogs (LogsFrom).
  Result<EvmRows> Read(uint64_t from, uint64_t to, const EvmSchemas& schemas = EvmSchemas::Amp());

  uint64_t logs_range() const { return logs_range_.load(); }

 private:
  Result<std::vector<EvmBlock>> ReadBatch(uint64_t from, uint64_t to, bool full, bool receipts);
  // Blocks [from, to] in batches, `concurrency` in flight.
  Result<std::vector<EvmBlock>> ReadBlocks(uint64_t from, uint64_t to, bool full, bool receipts);
  Result<EvmRows> ReadWithGetLogs(uint64_t from, uint64_t to, const EvmSchemas& schemas, bool receipts);
  // The logs of blocks [from, to], in order (eth_getLogs over ranges of logs_range_ blocks).
  Result<std::vector<nlohmann::json>> GetLogs(uint64_t from, uint64_t to);

  JsonRpcClient* const rpc_;
  const Finality finality_;
  const int batch_size_;
  const int concurrency_;
  const LogsFrom logs_from_;
  std::atomic<uint64_t> logs_range_;
  std::atomic<int> block_receipts_{-1};  // eth_getBlockReceipts: -1 unknown, 0 no, 1 yes
};

}  // namespace sediment::chain
