// EvmRpcJob: a dataset job ([[jobs]] source = "evm-rpc") that follows an
// Ethereum node into the tables blocks, transactions and logs (schemas:
// evm_decode.h).
//
// Each poll: the head it may write (finality), then per table where to go on:
// after its last block if the node still has that block's hash there, else
// — a reorg — after the newest block of the reorg window whose stored hash
// the node still has (walked back at most max_reorg_depth blocks; deeper is an
// error, and nothing is written). Then blocks are read from the last table's
// resume point to the head in ranges (batch requests, several in flight),
// each range decoded and checked whole before any of it is written, and
// appended to each table as one segment from its own resume point: a reorg
// is a segment starting at or before the table's head, which the table
// applies atomically against the stored hash of the block before it. Blocks
// below the finality point are never re-checked. A failure (the node down,
// a malformed answer) fails the poll with the error named in the job's
// status; the next poll starts over from the tables.
//
// Thread-safety: Start/Stop/PollOnce/Describe are safe from any thread;
// polls are serialized.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "base/config.h"
#include "chain/evm_source.h"
#include "chain/ingest_job.h"

namespace sediment {
class MetricsRegistry;
namespace table {
class TableService;
}
}  // namespace sediment

namespace sediment::chain {

class EvmRpcJob : public Job {
 public:
  EvmRpcJob(JobConfig config, const WorkerConfig& worker, table::TableService* tables, MetricsRegistry* metrics);
  ~EvmRpcJob() override;

  Status PollOnce() override;
  JobStatus Describe() override;
  const JobConfig& config() const override { return config_; }

 private:
  // REQUIRES: poll_mu_ held.
  Status PollLocked();
  Status EnsureTablesLocked();
  // Where to go on writing table `t` (see above); *reorg if it is a reorg.
  Result<uint64_t> ResumePointLocked(ChainTable t, uint64_t latest, bool* reorg);

  const JobConfig config_;
  table::TableService* const tables_;
  MetricsRegistry* const metrics_;
  std::unique_ptr<JsonRpcClient> rpc_;
  std::unique_ptr<EvmSource> source_;
  Status setup_;  // a bad url or finality: every poll fails with it

  std::mutex poll_mu_;
  bool tables_ready_ = false;   // GUARDED_BY(poll_mu_)
  EvmSchemas schemas_;          // GUARDED_BY(poll_mu_): what each table is written with
  double bytes_per_block_ = 0;  // GUARDED_BY(poll_mu_): sizes segments while catching up

  std::mutex status_mu_;
  JobStatus status_;  // GUARDED_BY(status_mu_)
};

}  // namespace sediment::chain
