// ChainGenerator: a deterministic, seeded, EVM-like chain with reorgs at the
// head, for the ingest job, the demo, tests and benchmarks.
//
// Stateless: everything is a pure function of (options, block number, head).
// When block n is produced, with probability reorg_probability the last k
// blocks (1 <= k <= max_reorg_depth) are replaced by new versions, so block b
// seen at head h has version = the number of such events at n in (b, h] that
// reached b. Its hash, parent hash and rows follow from (seed, b, version).
// Two generators with the same options produce the same bytes.
//
// Thread-safety: const methods are safe from many threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"

namespace arrow {
class RecordBatch;
class Schema;
}  // namespace arrow

namespace sediment::chain {

struct ChainOptions {
  uint64_t seed = 1;
  uint64_t start_block = 0;
  int64_t txs_per_block = 150;
  double logs_per_tx = 2.0;
  double reorg_probability = 0.0;
  int64_t max_reorg_depth = 3;
};

enum class ChainTable { kBlocks = 0, kTransactions = 1, kLogs = 2 };
inline constexpr ChainTable kAllTables[] = {ChainTable::kBlocks, ChainTable::kTransactions, ChainTable::kLogs};
const char* TableName(ChainTable t);
std::shared_ptr<arrow::Schema> TableSchema(ChainTable t);

using Hash32 = std::array<uint8_t, 32>;

class ChainGenerator {
 public:
  explicit ChainGenerator(ChainOptions options) : options_(options) {}
  const ChainOptions& options() const { return options_; }

  // Depth of the reorg that happens when block n is produced (0: none).
  int64_t ReorgDepthAt(uint64_t n) const;
  uint32_t Version(uint64_t block, uint64_t head) const;
  // Hash of block `block` as seen at `head`; the parent hash of start_block is all zeros.
  Hash32 BlockHash(uint64_t block, uint64_t head) const;
  std::string BlockHashHex(uint64_t block, uint64_t head) const;

  // The rows of `table` for blocks [from, to] as seen at `head` (to <= head).
  Result<std::shared_ptr<arrow::RecordBatch>> Generate(ChainTable table, uint64_t from, uint64_t to,
                                                       uint64_t head) const;

 private:
  ChainOptions options_;
};

}  // namespace sediment::chain
