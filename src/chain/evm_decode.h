// Ethereum JSON-RPC answers decoded into the rows of the evm-rpc source's
// tables (blocks, transactions, logs), exactly: quantities from hex into
// integers and decimals (no float on the way), hashes, addresses and data
// into raw bytes.
//
// The tables have the columns, names, types and meanings of Amp's evm-rpc
// dataset (docs/chain.md lists them, with where each comes from), less
// Amp's internal `_block_num`. Tables made by Sediment's first evm-rpc
// source (LegacyEvmSchema) keep their columns and meanings; the source adds
// Amp's other columns to them as nullable ones (EvmWriteSchema). Rows are
// built for whatever schema a table has, column by column, by name.
//
// A block's answer is checked before any of it is used: every field the
// tables need present and well-formed, receipts for exactly its
// transactions, every receipt and log naming the block's number and hash.
// Anything else is InvalidArgument naming the block, the field and the value.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "chain/evm_hex.h"  // HexQuantity, HexData, HexUint256, Uint256Decimal
#include "chain/generator.h"

namespace arrow {
class RecordBatch;
class Schema;
}  // namespace arrow

namespace sediment::chain {

// Table t as Amp's evm-rpc dataset has it (a new table is made so).
std::shared_ptr<arrow::Schema> EvmSchema(ChainTable t);
// Table t as Sediment's first evm-rpc source made it (schema version 1).
std::shared_ptr<arrow::Schema> LegacyEvmSchema(ChainTable t);
// The schema to write table t with, given the one it has (null: none yet,
// then EvmSchema(t)): its own columns, then those of EvmSchema(t) it lacks,
// nullable. InvalidArgument naming the column if it has one the source does
// not write, or writes with another type.
Result<std::shared_ptr<arrow::Schema>> EvmWriteSchema(ChainTable t, const std::shared_ptr<arrow::Schema>& stored);

// One block (eth_getBlockByNumber): with full transaction objects when the
// transactions table is written, else their hashes; the receipts of its
// transactions, in order, when the transactions table is written or its logs
// come from them; else its logs from eth_getLogs, in order.
struct EvmBlock {
  nlohmann::json block;
  std::vector<nlohmann::json> receipts;
  std::optional<std::vector<nlohmann::json>> logs;
};

// The schemas the rows are built for; a null member: that table is not written.
struct EvmSchemas {
  std::shared_ptr<arrow::Schema> blocks, transactions, logs;
  static EvmSchemas Amp();  // the three tables, as EvmSchema gives them
};

struct EvmRows {
  std::shared_ptr<arrow::RecordBatch> blocks, transactions, logs;  // null: not written
  std::vector<std::string> hashes;                                 // each block's hash (hex, no 0x), in order
  std::string parent_hash;                                         // of the first block (hex, no 0x)
};

// The rows of consecutive blocks [first, first + blocks.size()). InvalidArgument
// (naming the block) if any answer is malformed or the blocks do not chain.
Result<EvmRows> DecodeEvmBlocks(uint64_t first, const std::vector<EvmBlock>& blocks,
                                const EvmSchemas& schemas = EvmSchemas::Amp());

}  // namespace sediment::chain
