#include "chain/generator.h"

#include <arrow/api.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "base/crypto.h"

namespace sediment::chain {
namespace {

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t Key(uint64_t a, uint64_t b, uint64_t c = 0, uint64_t d = 0) { return Mix(Mix(Mix(Mix(a) ^ b) ^ c) ^ d); }

// A small fast PRNG (splitmix64 stream).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return Mix(state_ += 0x9E3779B97F4A7C15ull); }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }
  // Geometric count with the given mean.
  int64_t Geometric(double mean) {
    if (mean <= 0) return 0;
    double p = mean / (mean + 1);
    int64_t n = 0;
    while (Uniform() < p && n < 10000) ++n;
    return n;
  }
  void Fill(uint8_t* out, size_t n) {
    for (size_t i = 0; i < n; i += 8) {
      uint64_t v = Next();
      for (size_t j = 0; j < 8 && i + j < n; ++j) out[i + j] = static_cast<uint8_t>(v >> (8 * j));
    }
  }

 private:
  uint64_t state_;
};

enum Salt : uint64_t { kReorg = 1, kHash, kBlock, kTable, kAddressPool, kTopicPool };

// 20-byte address from a pool of `n` per seed (real chains repeat addresses).
void PoolBytes(uint64_t seed, uint64_t salt, uint64_t index, uint8_t* out, size_t len) {
  Rng r(Key(seed, salt, index));
  r.Fill(out, len);
}

// ABI-like words: small numbers left-padded with zeros, some full-width values.
void AbiWords(Rng& r, int64_t words, std::string* out) {
  out->assign(static_cast<size_t>(words) * 32, '\0');
  for (int64_t w = 0; w < words; ++w) {
    uint8_t* word = reinterpret_cast<uint8_t*>(out->data()) + w * 32;
    int significant = r.Uniform() < 0.2 ? 32 : static_cast<int>(1 + r.Below(12));
    r.Fill(word + 32 - significant, static_cast<size_t>(significant));
  }
}

}  // namespace

const char* TableName(ChainTable t) {
  switch (t) {
    case ChainTable::kBlocks:
      return "blocks";
    case ChainTable::kTransactions:
      return "transactions";
    case ChainTable::kLogs:
      return "logs";
  }
  return "?";
}

std::shared_ptr<arrow::Schema> TableSchema(ChainTable t) {
  auto block = arrow::field("block_num", arrow::uint64(), false);
  auto h32 = arrow::fixed_size_binary(32);
  auto a20 = arrow::fixed_size_binary(20);
  switch (t) {
    case ChainTable::kBlocks:
      return arrow::schema(
          {block, arrow::field("hash", h32, false), arrow::field("parent_hash", h32, false),
           arrow::field("timestamp", arrow::uint64(), false), arrow::field("miner", a20, false),
           arrow::field("gas_used", arrow::uint64(), false), arrow::field("gas_limit", arrow::uint64(), false),
           arrow::field("base_fee_per_gas", arrow::uint64(), false), arrow::field("tx_count", arrow::uint32(), false)});
    case ChainTable::kTransactions:
      return arrow::schema({block, arrow::field("tx_index", arrow::uint32(), false), arrow::field("hash", h32, false),
                            arrow::field("from", a20, false), arrow::field("to", a20, true),
                            arrow::field("value", arrow::uint64(), false), arrow::field("gas", arrow::uint64(), false),
                            arrow::field("gas_price", arrow::uint64(), false),
                            arrow::field("input", arrow::binary(), false)});
    case ChainTable::kLogs:
      return arrow::schema({block, arrow::field("tx_index", arrow::uint32(), false),
                            arrow::field("log_index", arrow::uint32(), false), arrow::field("address", a20, false),
                            arrow::field("topic0", h32, true), arrow::field("topic1", h32, true),
                            arrow::field("topic2", h32, true), arrow::field("topic3", h32, true),
                            arrow::field("data", arrow::binary(), false)});
  }
  return nullptr;
}

int64_t ChainGenerator::ReorgDepthAt(uint64_t n) const {
  if (options_.reorg_probability <= 0 || n <= options_.start_block) return 0;
  Rng r(Key(options_.seed, kReorg, n));
  if (r.Uniform() >= options_.reorg_probability) return 0;
  int64_t depth = 1 + static_cast<int64_t>(r.Below(static_cast<uint64_t>(options_.max_reorg_depth)));
  return std::min<int64_t>(depth, static_cast<int64_t>(n - options_.start_block));
}

uint32_t ChainGenerator::Version(uint64_t block, uint64_t head) const {
  uint32_t v = 0;
  uint64_t last = std::min<uint64_t>(head, block + static_cast<uint64_t>(options_.max_reorg_depth));
  for (uint64_t n = block + 1; n <= last; ++n) {
    if (static_cast<int64_t>(n - block) <= ReorgDepthAt(n)) ++v;
  }
  return v;
}

Hash32 ChainGenerator::BlockHash(uint64_t block, uint64_t head) const {
  Hash32 h{};
  if (block < options_.start_block || block == UINT64_MAX) return h;  // the genesis parent
  Rng r(Key(options_.seed, kHash, block, Version(block, head)));
  r.Fill(h.data(), h.size());
  return h;
}

std::string ChainGenerator::BlockHashHex(uint64_t block, uint64_t head) const {
  Hash32 h = BlockHash(block, head);
  return Hex(h.data(), h.size());
}

namespace {

// The builders of one table's rows: block_num, then the schema's other
// fields in order (u64(0) is the second field), and the scratch space the
// row writers share.
struct RowBuilders {
  arrow::UInt64Builder block_num{arrow::default_memory_pool()};
  std::vector<std::unique_ptr<arrow::ArrayBuilder>> cols;
  uint8_t buf[32];
  std::string bytes;

  Status Init(const arrow::Schema& schema) {
    for (int i = 1; i < schema.num_fields(); ++i) {
      std::unique_ptr<arrow::ArrayBuilder> b;
      ARROW_RETURN_NOT_OK(arrow::MakeBuilder(arrow::default_memory_pool(), schema.field(i)->type(), &b));
      cols.push_back(std::move(b));
    }
    return Status::OK();
  }
  arrow::UInt64Builder* u64(int i) { return static_cast<arrow::UInt64Builder*>(cols[i].get()); }
  arrow::UInt32Builder* u32(int i) { return static_cast<arrow::UInt32Builder*>(cols[i].get()); }
  arrow::FixedSizeBinaryBuilder* fsb(int i) { return static_cast<arrow::FixedSizeBinaryBuilder*>(cols[i].get()); }
  arrow::BinaryBuilder* bin(int i) { return static_cast<arrow::BinaryBuilder*>(cols[i].get()); }

  Result<std::shared_ptr<arrow::RecordBatch>> Finish(const std::shared_ptr<arrow::Schema>& schema) {
    std::vector<std::shared_ptr<arrow::Array>> arrays(cols.size() + 1);
    ARROW_RETURN_NOT_OK(block_num.Finish(&arrays[0]));
    for (size_t i = 0; i < cols.size(); ++i) ARROW_RETURN_NOT_OK(cols[i]->Finish(&arrays[i + 1]));
    int64_t rows = arrays[0]->length();
    return arrow::RecordBatch::Make(schema, rows, arrays);
  }
};

// The row writers below draw from the block's or the transaction's Rng in a
// fixed order: that order is the generator's output, so it must not change.

// A row of blocks; `rng` is the block's.
Status AppendBlock(RowBuilders& r, uint64_t seed, uint64_t b, const Hash32& h, const Hash32& p, int64_t txs, Rng& rng) {
  ARROW_RETURN_NOT_OK(r.block_num.Append(b));
  ARROW_RETURN_NOT_OK(r.fsb(0)->Append(h.data()));
  ARROW_RETURN_NOT_OK(r.fsb(1)->Append(p.data()));
  ARROW_RETURN_NOT_OK(r.u64(2)->Append(1'600'000'000 + b * 12));
  PoolBytes(seed, kAddressPool, rng.Below(50), r.buf, 20);
  ARROW_RETURN_NOT_OK(r.fsb(3)->Append(r.buf));
  uint64_t limit = 30'000'000;
  ARROW_RETURN_NOT_OK(r.u64(4)->Append(limit / 4 + rng.Below(limit * 3 / 4)));
  ARROW_RETURN_NOT_OK(r.u64(5)->Append(limit));
  ARROW_RETURN_NOT_OK(r.u64(6)->Append(1'000'000'000 + rng.Below(50'000'000'000ull)));
  ARROW_RETURN_NOT_OK(r.u32(7)->Append(static_cast<uint32_t>(txs)));
  return Status::OK();
}

// A row of transactions: transaction `t` of block `b`; `tx_rng` is the transaction's.
Status AppendTransaction(RowBuilders& r, uint64_t seed, uint64_t b, int64_t t, Rng& tx_rng) {
  uint8_t* buf = r.buf;
  std::string& bytes = r.bytes;
  ARROW_RETURN_NOT_OK(r.block_num.Append(b));
  ARROW_RETURN_NOT_OK(r.u32(0)->Append(static_cast<uint32_t>(t)));
  tx_rng.Fill(buf, 32);
  ARROW_RETURN_NOT_OK(r.fsb(1)->Append(buf));
  PoolBytes(seed, kAddressPool, tx_rng.Below(1000), buf, 20);
  ARROW_RETURN_NOT_OK(r.fsb(2)->Append(buf));
  if (tx_rng.Uniform() < 0.01) {
    ARROW_RETURN_NOT_OK(r.fsb(3)->AppendNull());  // contract creation
  } else {
    PoolBytes(seed, kAddressPool, tx_rng.Below(1000), buf, 20);
    ARROW_RETURN_NOT_OK(r.fsb(3)->Append(buf));
  }
  ARROW_RETURN_NOT_OK(r.u64(4)->Append(tx_rng.Uniform() < 0.6 ? 0 : tx_rng.Below(1ull << 60)));
  ARROW_RETURN_NOT_OK(r.u64(5)->Append(21000 + tx_rng.Below(300'000)));
  ARROW_RETURN_NOT_OK(r.u64(6)->Append(1'000'000'000 + tx_rng.Below(100'000'000'000ull)));
  // input: empty for transfers, a selector and ABI words for calls, now and then large.
  double kind = tx_rng.Uniform();
  if (kind < 0.3) {
    bytes.clear();
  } else {
    int64_t words = kind > 0.99 ? 64 + static_cast<int64_t>(tx_rng.Below(256)) : tx_rng.Geometric(3);
    AbiWords(tx_rng, words, &bytes);
    tx_rng.Fill(buf, 4);
    bytes.insert(0, reinterpret_cast<const char*>(buf), 4);
  }
  ARROW_RETURN_NOT_OK(r.bin(7)->Append(bytes));
  return Status::OK();
}

// The `logs` rows of logs of transaction `t` of block `b`, numbered from *log_index on.
Status AppendLogs(RowBuilders& r, uint64_t seed, uint64_t b, int64_t t, int64_t logs, Rng& tx_rng,
                  uint32_t* log_index) {
  uint8_t* buf = r.buf;
  std::string& bytes = r.bytes;
  for (int64_t l = 0; l < logs; ++l) {
    ARROW_RETURN_NOT_OK(r.block_num.Append(b));
    ARROW_RETURN_NOT_OK(r.u32(0)->Append(static_cast<uint32_t>(t)));
    ARROW_RETURN_NOT_OK(r.u32(1)->Append((*log_index)++));
    PoolBytes(seed, kAddressPool, tx_rng.Below(200), buf, 20);
    ARROW_RETURN_NOT_OK(r.fsb(2)->Append(buf));
    int64_t topics = static_cast<int64_t>(tx_rng.Below(5));
    for (int64_t k = 0; k < 4; ++k) {
      if (k >= topics) {
        ARROW_RETURN_NOT_OK(r.fsb(3 + k)->AppendNull());
      } else if (k == 0) {
        PoolBytes(seed, kTopicPool, tx_rng.Below(50), buf, 32);
        ARROW_RETURN_NOT_OK(r.fsb(3)->Append(buf));
      } else {
        std::memset(buf, 0, 12);
        PoolBytes(seed, kAddressPool, tx_rng.Below(1000), buf + 12, 20);
        ARROW_RETURN_NOT_OK(r.fsb(3 + k)->Append(buf));
      }
    }
    AbiWords(tx_rng, tx_rng.Uniform() < 0.02 ? 16 + tx_rng.Geometric(30) : tx_rng.Geometric(2), &bytes);
    ARROW_RETURN_NOT_OK(r.bin(7)->Append(bytes));
  }
  return Status::OK();
}

}  // namespace

Result<std::shared_ptr<arrow::RecordBatch>> ChainGenerator::Generate(ChainTable table, uint64_t from, uint64_t to,
                                                                     uint64_t head) const {
  if (to < from || to > head)
    return InvalidArgument(fmt::format("bad block range [{}, {}] at head {}", from, to, head));
  const uint64_t seed = options_.seed;
  auto schema = TableSchema(table);
  RowBuilders rows;
  ARROW_RETURN_NOT_OK(rows.Init(*schema));
  for (uint64_t b = from; b <= to; ++b) {
    uint32_t version = Version(b, head);
    Rng block_rng(Key(seed, kBlock, b, version));
    int64_t spread = options_.txs_per_block * 3 / 10;
    int64_t txs = options_.txs_per_block - spread + static_cast<int64_t>(block_rng.Below(2 * spread + 1));
    if (table == ChainTable::kBlocks) {
      ARROW_RETURN_NOT_OK(AppendBlock(rows, seed, b, BlockHash(b, head), BlockHash(b - 1, head), txs, block_rng));
      continue;
    }
    uint32_t log_index = 0;
    for (int64_t t = 0; t < txs; ++t) {
      Rng tx_rng(Key(seed, kTable, Key(b, version, t)));
      int64_t logs = tx_rng.Geometric(options_.logs_per_tx);  // drawn for every table: the draws after it follow
      if (table == ChainTable::kTransactions) {
        ARROW_RETURN_NOT_OK(AppendTransaction(rows, seed, b, t, tx_rng));
      } else {
        ARROW_RETURN_NOT_OK(AppendLogs(rows, seed, b, t, logs, tx_rng, &log_index));
      }
    }
  }
  return rows.Finish(schema);
}

}  // namespace sediment::chain
