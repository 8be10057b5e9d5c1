#include "chain/evm_job.h"

#include <arrow/api.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/metrics.h"
#include "table/table_service.h"

namespace sediment::chain {
namespace {

// The tables the job writes, in kAllTables order.
std::vector<ChainTable> Written(const JobConfig& c) {
  std::vector<ChainTable> out;
  for (ChainTable t : kAllTables) {
    if (std::find(c.tables.begin(), c.tables.end(), TableName(t)) != c.tables.end()) out.push_back(t);
  }
  return out;
}

const std::shared_ptr<arrow::RecordBatch>& RowsOf(const EvmRows& rows, ChainTable t) {
  switch (t) {
    case ChainTable::kBlocks:
      return rows.blocks;
    case ChainTable::kTransactions:
      return rows.transactions;
    case ChainTable::kLogs:
      break;
  }
  return rows.logs;
}

// The rows of blocks >= `from` (in block order).
std::shared_ptr<arrow::RecordBatch> From(const std::shared_ptr<arrow::RecordBatch>& batch, uint64_t from) {
  const auto& blocks = static_cast<const arrow::UInt64Array&>(*batch->GetColumnByName("block_num"));
  const uint64_t* v = blocks.raw_values();
  int64_t first = std::lower_bound(v, v + blocks.length(), from) - v;
  return batch->Slice(first);
}

}  // namespace

EvmRpcJob::EvmRpcJob(JobConfig config, const WorkerConfig& worker, table::TableService* tables,
                     MetricsRegistry* metrics)
    : Job(worker.poll_interval_secs), config_(std::move(config)), tables_(tables), metrics_(metrics) {
  status_.dataset = config_.dataset;
  status_.source = config_.source;
  RpcOptions o;
  o.url = config_.url;
  o.ca_file = config_.ca_file;
  o.headers = config_.headers;
  o.timeout_seconds = config_.timeout;
  o.rate_limit = config_.rate_limit;
  // A poll gives up after a few seconds of trouble; the next poll tries again.
  o.max_attempts = 5;
  o.backoff_max = 2;
  auto rpc = JsonRpcClient::Make(o);
  auto finality = Finality::Parse(config_.finality);
  if (!rpc.ok()) {
    setup_ = rpc.status();
  } else if (!finality.ok()) {
    setup_ = finality.status();
  } else {
    rpc_ = std::move(*rpc);
    const LogsFrom logs_from = config_.logs_from == "receipts"      ? LogsFrom::kReceipts
                               : config_.logs_from == "eth_getLogs" ? LogsFrom::kGetLogs
                                                                    : LogsFrom::kAuto;
    source_ = std::make_unique<EvmSource>(rpc_.get(), *finality, static_cast<int>(config_.batch_size),
                                          static_cast<int>(config_.concurrency), logs_from,
                                          static_cast<uint64_t>(config_.logs_range));
  }
}

EvmRpcJob::~EvmRpcJob() { Stop(); }

JobStatus EvmRpcJob::Describe() {
  std::lock_guard<std::mutex> s(status_mu_);
  JobStatus out = status_;
  if (rpc_) out.retries = rpc_->retries();
  out.running = running();
  return out;
}

Status EvmRpcJob::PollOnce() {
  std::lock_guard<std::mutex> lock(poll_mu_);
  Status st = setup_;
  if (st.ok()) {
    try {
      st = PollLocked();
    } catch (const std::exception& e) {  // nothing should throw; if something does, the server stays up
      st = Status::IOError(fmt::format("job {}: {}", config_.dataset, e.what()));
    }
  }
  std::lock_guard<std::mutex> s(status_mu_);
  status_.last_error = st.ok() ? "" : st.ToString();
  if (!st.ok()) {
    metrics_->Counter("ingest_poll_errors_total", "Ingest polls that failed, per job.", {"dataset"})
        .With({config_.dataset})
        .Add();
  }
  return st;
}

Status EvmRpcJob::EnsureTablesLocked() {
  if (tables_ready_) return Status::OK();
  // A new table has Amp's columns; one made before (by Sediment's first schema) gains them as nullable
  // columns, a recorded schema change: its files are kept as they are.
  // Every table's schema first: a table the source cannot write stops the job before any changes.
  struct Plan {
    ChainTable t;
    std::shared_ptr<arrow::Schema> have, want;
  };
  std::vector<Plan> plans;
  for (ChainTable t : Written(config_)) {
    table::TableId id{config_.dataset, TableName(t)};
    auto existing = tables_->GetTable(id);
    if (!existing.ok() && !IsNotFound(existing.status())) return existing.status();
    auto have = existing.ok() ? existing->schema : nullptr;
    auto want = EvmWriteSchema(t, have);
    if (!want.ok()) return WithContext(want.status(), fmt::format("job {}", config_.dataset));
    plans.push_back({t, have, *want});
  }
  schemas_ = {};
  for (const auto& p : plans) {
    table::TableId id{config_.dataset, TableName(p.t)};
    if (!p.have) {
      ARROW_RETURN_NOT_OK(tables_->CreateTable(id, p.want).status());
    } else if (p.want != p.have) {
      ARROW_ASSIGN_OR_RAISE(bool evolved, tables_->EvolveTable(id, p.want));
      if (evolved) {
        spdlog::info("job {}: table {} gained {} columns", config_.dataset, id.ToString(),
                     p.want->num_fields() - p.have->num_fields());
      }
    }
    (p.t == ChainTable::kBlocks         ? schemas_.blocks
     : p.t == ChainTable::kTransactions ? schemas_.transactions
                                        : schemas_.logs) = p.want;
  }
  tables_ready_ = true;
  return Status::OK();
}

Result<uint64_t> EvmRpcJob::ResumePointLocked(ChainTable t, uint64_t latest, bool* reorg) {
  *reorg = false;
  table::TableId id{config_.dataset, TableName(t)};
  ARROW_ASSIGN_OR_RAISE(auto state, tables_->State(id));
  if (state.empty()) return static_cast<uint64_t>(config_.start_block);
  ARROW_ASSIGN_OR_RAISE(auto tail, tables_->SegmentsOverlapping(id, state.end, state.end));
  if (tail.segments.empty() || tail.segments.back().end != tail.state.end) {
    return Status::IOError(fmt::format("table {}: its last segment moved; retry", id.ToString()));
  }
  const table::SegmentRecord last = tail.segments.back();
  const uint64_t end = tail.state.end, first = tail.state.first;
  // The stored hash of block b (the window's, or the last segment's end).
  auto stored = [&](uint64_t b) -> Result<std::optional<std::string>> {
    if (b == end) return std::optional<std::string>(last.end_hash);
    return tables_->BlockHash(id, b);
  };
  // The newest block both the table and the node have: the common case is one hash that matches.
  const uint64_t top = std::min(end, latest);
  if (top < first)
    return Conflict(
        fmt::format("table {}: the node's chain ends at block {}, before the table's "
                    "first block {}",
                    id.ToString(), latest, first));
  ARROW_ASSIGN_OR_RAISE(auto node_top, source_->Hashes(top, top));
  ARROW_ASSIGN_OR_RAISE(auto stored_top, stored(top));
  // A node behind the table (and agreeing so far) has nothing new: not a reorg.
  if (stored_top && *stored_top == node_top[0]) return end + 1;
  // A reorg: the newest block of the window whose stored hash the node still has.
  *reorg = true;
  const uint64_t depth = static_cast<uint64_t>(config_.max_reorg_depth);
  const uint64_t lo = std::max(first, top > depth ? top - depth : 0);
  ARROW_ASSIGN_OR_RAISE(auto node, source_->Hashes(lo, top));
  for (uint64_t b = top; b-- > lo;) {
    ARROW_ASSIGN_OR_RAISE(auto h, stored(b));
    if (h && *h == node[b - lo]) return b + 1;
  }
  if (lo == first && first > 0) {
    // The fork is at the table's first block: its parent is still the node's.
    ARROW_ASSIGN_OR_RAISE(auto head_seg, tables_->SegmentsOverlapping(id, first, first));
    ARROW_ASSIGN_OR_RAISE(auto parent, source_->Hashes(first - 1, first - 1));
    if (!head_seg.segments.empty() && head_seg.segments.front().parent_hash == parent[0]) return first;
  }
  return Conflict(fmt::format(
      "table {}: the node's chain differs from the table's at every block from {} to {}: a reorg deeper than "
      "max_reorg_depth {} (or another chain); nothing was written",
      id.ToString(), lo, top, depth));
}

Status EvmRpcJob::PollLocked() {
  ARROW_RETURN_NOT_OK(EnsureTablesLocked());
  ARROW_ASSIGN_OR_RAISE(uint64_t latest, source_->Latest());
  ARROW_ASSIGN_OR_RAISE(auto head, source_->Head());
  {
    std::lock_guard<std::mutex> s(status_mu_);
    status_.node_head = latest;
    status_.head = head;
  }
  metrics_->Gauge("ingest_node_head_block", "The node's latest block, per evm-rpc job.", {"dataset"})
      .With({config_.dataset})
      .Set(static_cast<double>(latest));
  if (!head) return Status::OK();
  std::map<ChainTable, uint64_t> next;
  uint64_t from = UINT64_MAX;
  for (ChainTable t : Written(config_)) {
    bool reorg = false;
    ARROW_ASSIGN_OR_RAISE(next[t], ResumePointLocked(t, latest, &reorg));
    from = std::min(from, next[t]);
    if (reorg) spdlog::info("job {}: {} reorganized: going on from block {}", config_.dataset, TableName(t), next[t]);
  }
  const auto& writer = tables_->writer_config();
  const uint64_t window = static_cast<uint64_t>(writer.max_reorg_depth);
  while (from <= *head) {
    // Catching up: a range of about the [writer] target; at the head, what is new.
    uint64_t blocks = *head - from + 1;
    uint64_t per_round = static_cast<uint64_t>(config_.batch_size * config_.concurrency);
    if (bytes_per_block_ > 0) {
      per_round =
          std::max<uint64_t>(per_round, static_cast<uint64_t>(static_cast<double>(writer.bytes) / bytes_per_block_));
    }
    uint64_t to = from + std::min(blocks, per_round) - 1;
    ARROW_ASSIGN_OR_RAISE(EvmRows rows, source_->Read(from, to, schemas_));
    int64_t bytes = 0;
    for (ChainTable t : Written(config_)) {
      if (next[t] > to) continue;
      uint64_t start = std::max(from, next[t]);
      table::TableId id{config_.dataset, TableName(t)};
      auto batch = From(RowsOf(rows, t), start);
      table::AppendRequest req;
      req.start_block = start;
      req.end_block = to;
      req.end_hash = rows.hashes.back();
      req.parent_hash = start == from ? rows.parent_hash : rows.hashes[start - 1 - from];
      for (uint64_t b = to >= start + window ? to - window + 1 : start; b <= to; ++b) {
        req.block_hashes.push_back(rows.hashes[b - from]);
      }
      ARROW_ASSIGN_OR_RAISE(auto reader, arrow::RecordBatchReader::Make({batch}, batch->schema()));
      auto appended = tables_->Append(id, req, reader.get());
      if (!appended.ok()) {
        tables_ready_ = false;  // the table may have changed (a column added): the next poll looks again
        return WithContext(appended.status(), fmt::format("job {}: appending blocks {}..{} to {}", config_.dataset,
                                                          start, to, id.ToString()));
      }
      bytes += appended->segment.bytes;
      next[t] = to + 1;
      metrics_->Counter("ingest_blocks_written_total", "Blocks written by ingest jobs.", {"dataset", "table"})
          .With({config_.dataset, TableName(t)})
          .Add(static_cast<double>(to - start + 1));
      std::lock_guard<std::mutex> s(status_mu_);
      status_.segments_written++;
      if (appended->reorg) status_.reorgs++;
      status_.last_block[TableName(t)] = to;
    }
    double measured = static_cast<double>(bytes) / static_cast<double>(to - from + 1);
    bytes_per_block_ = bytes_per_block_ > 0 ? 0.7 * bytes_per_block_ + 0.3 * measured : measured;
    from = to + 1;
  }
  return Status::OK();
}

}  // namespace sediment::chain
