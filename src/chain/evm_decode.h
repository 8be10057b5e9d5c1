// Ethereum JSON-RPC answers decoded into the rows of the evm-rpc source's
// tables (blocks, transactions, logs), exactly: quantities from hex into
// integers (no float on the way), hashes, addresses and data into raw bytes,
// and `value` (uint256) into 32 big-endian bytes — exact over the whole
// range, which decimal(38) is not (2^256 > 10^38), and bytewise order is
// numeric order.
//
// A block's answer is checked before any of it is used: every field the
// tables need present and well-formed, receipts for exactly its
// transactions, every receipt and log naming the block's number and hash.
// Anything else is InvalidArgument naming the block, the field and the value.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "chain/generator.h"

namespace arrow {
class RecordBatch;
class Schema;
}  // namespace arrow

namespace sediment::chain {

// The tables of ChainTable (generator.h), with the columns a node gives.
std::shared_ptr<arrow::Schema> EvmSchema(ChainTable t);

// "0x1a" -> 26. InvalidArgument unless 0x followed by 1..16 hex digits.
Result<uint64_t> HexQuantity(const nlohmann::json& v, const std::string& what);
// "0x00ff" -> bytes. InvalidArgument unless 0x followed by an even number of
// hex digits, and exactly `size` bytes when size > 0.
Result<std::string> HexData(const nlohmann::json& v, const std::string& what, size_t size = 0);
// A quantity of up to 256 bits as 32 big-endian bytes.
Result<std::array<uint8_t, 32>> HexUint256(const nlohmann::json& v, const std::string& what);

// One block with full transaction objects and the receipts of its transactions, in order.
struct EvmBlock {
  nlohmann::json block;
  std::vector<nlohmann::json> receipts;
};

struct EvmRows {
  std::shared_ptr<arrow::RecordBatch> blocks, transactions, logs;
  std::vector<std::string> hashes;  // each block's hash (hex, no 0x), in order
  std::string parent_hash;          // of the first block (hex, no 0x)
};

// The rows of consecutive blocks [first, first + blocks.size()). InvalidArgument
// (naming the block) if any answer is malformed or the blocks do not chain.
Result<EvmRows> DecodeEvmBlocks(uint64_t first, const std::vector<EvmBlock>& blocks);

}  // namespace sediment::chain
