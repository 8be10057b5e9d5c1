// IngestJob: a raw dataset job. It follows a chain source, writing the
// dataset's tables (blocks, transactions, logs) through the TableService:
// while catching up it fills segments up to the [writer] bytes/rows target;
// at the head it writes one segment per table each time new blocks arrive;
// when the chain reorganizes (the stored hash of the last block no longer
// matches the chain) it resends from the first block that changed, and the
// table replaces the affected segments. It resumes from the live segments
// after a restart, so nothing is written twice.
//
// The source is the synthetic ChainGenerator; its head advances with the
// clock: history_blocks exist when the job first starts (the start time is
// stored in the KV store, so a restart continues the same chain), then one
// block every block_time seconds.
//
// Thread-safety: Start/Stop/PollOnce/Describe are safe from any thread;
// polls are serialized.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/config.h"
#include "base/executor.h"
#include "base/metrics.h"
#include "chain/generator.h"
#include "kv/kv.h"
#include "table/table_service.h"

namespace sediment::chain {

struct JobStatus {
  std::string dataset;
  std::string source;  // synthetic | evm-rpc
  bool running = false;
  std::optional<uint64_t> head;                               // the newest block the job may write
  std::optional<uint64_t> node_head;                          // evm-rpc: the node's latest block
  int64_t retries = 0;                                        // evm-rpc: requests retried
  std::map<std::string, std::optional<uint64_t>> last_block;  // per table: last block written
  int64_t segments_written = 0;
  int64_t reorgs = 0;
  std::string last_error;
};

// What JobManager runs: a job that follows a chain source into a dataset's tables.
// Start() polls every poll_interval_secs on a thread of its own until Stop();
// a subclass's destructor must call Stop() before its members go.
class Job {
 public:
  virtual ~Job() = default;
  Status Start();
  void Stop();
  bool running();
  virtual Status PollOnce() = 0;
  virtual JobStatus Describe() = 0;
  virtual const JobConfig& config() const = 0;

 protected:
  explicit Job(double poll_interval_secs) : poll_interval_secs_(poll_interval_secs) {}

 private:
  const double poll_interval_secs_;
  std::mutex run_mu_;
  std::unique_ptr<PeriodicTask> task_;  // GUARDED_BY(run_mu_)
};

class IngestJob : public Job {
 public:
  IngestJob(JobConfig config, const WorkerConfig& worker, table::TableService* tables, std::shared_ptr<kv::KvStore> kv,
            std::shared_ptr<Clock> clock, MetricsRegistry* metrics);
  ~IngestJob() override;

  // One poll (creating the tables if needed): writes whatever the source has beyond the tables.
  Status PollOnce() override;
  JobStatus Describe() override;

  const JobConfig& config() const override { return config_; }
  const ChainGenerator& generator() const { return generator_; }
  // The source's head at `now`, if any block exists yet.
  Result<std::optional<uint64_t>> HeadAt(TimePoint now);

 private:
  // REQUIRES: poll_mu_ held.
  Result<std::optional<uint64_t>> HeadAtLocked(TimePoint now);
  // REQUIRES: poll_mu_ held.
  Status EnsureTablesLocked();
  // Where to continue writing `table`: after its last block, or — when the
  // chain reorganized under it — at the first block that differs (*reorg).
  // `live`: the table's last live segments; nullopt if the fork is not
  // within them (unless they are `whole`: then the table's first block).
  // REQUIRES: poll_mu_ held.
  std::optional<uint64_t> ResumePointLocked(ChainTable table, const std::vector<table::SegmentRecord>& live,
                                            uint64_t head, bool whole, bool* reorg);
  Status PollTableLocked(ChainTable table, uint64_t head);
  // Updates the bytes-per-block estimate from a segment of `blocks` blocks just written.
  void LearnBlockSizeLocked(ChainTable table, const table::SegmentRecord& segment, uint64_t blocks);

  const JobConfig config_;
  const WorkerConfig worker_;
  const ChainGenerator generator_;
  table::TableService* tables_;
  std::shared_ptr<kv::KvStore> kv_;
  std::shared_ptr<Clock> clock_;
  MetricsRegistry* metrics_;

  std::mutex poll_mu_;                                                    // one poll at a time
  bool tables_ready_ = false;                                             // GUARDED_BY(poll_mu_)
  std::optional<int64_t> anchor_us_;                                      // GUARDED_BY(poll_mu_)
  std::map<ChainTable, std::map<uint64_t, std::string>> written_hashes_;  // GUARDED_BY(poll_mu_)
  std::map<ChainTable, double> bytes_per_block_;                          // GUARDED_BY(poll_mu_)

  mutable std::mutex status_mu_;
  JobStatus status_;  // GUARDED_BY(status_mu_)
};

// All jobs of a server, from [[jobs]].
class JobManager {
 public:
  JobManager(const Config& config, table::TableService* tables, std::shared_ptr<kv::KvStore> kv,
             std::shared_ptr<Clock> clock, MetricsRegistry* metrics);
  // Starts the jobs with autostart = true.
  Status Start();
  void Stop();
  std::vector<JobStatus> List();
  Result<JobStatus> StartJob(const std::string& dataset);
  Result<JobStatus> StopJob(const std::string& dataset);
  Job* Find(const std::string& dataset);

 private:
  std::map<std::string, std::unique_ptr<Job>> jobs_;
};

}  // namespace sediment::chain
