// TableService: the tables half of Sediment (spec/parquet-compaction.md).
//
// It appends segments (handling reorgs), runs compaction passes — planned by
// PlanCompaction (policy), executed here (mechanism) with write_concurrency
// merges and metadata_concurrency footer reads at a time — swaps merged files
// in with one atomic registry commit, and garbage-collects merged-away files
// after gc_manifest_grace_period, never while a snapshot on this server still
// holds them.
//
// Background work: after each append a pass is requested (skipped if one is
// running on the table or one started less than min_interval ago), and a
// timer requests passes and runs GC on every table, so tables are compacted
// even when no writer runs.
//
// Thread-safety: all public methods are safe from many threads. Stop() joins
// every background thread; a merge in progress is abandoned (its output is
// never published).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/config.h"
#include "base/executor.h"
#include "base/metrics.h"
#include "blob/blob.h"
#include "kv/kv.h"
#include "table/histogram.h"
#include "table/parquet_io.h"
#include "table/planner.h"
#include "table/registry.h"

namespace arrow {
class RecordBatchReader;
class Table;
}  // namespace arrow

namespace sediment::table {

struct AppendRequest {
  uint64_t start_block = 0;
  uint64_t end_block = 0;
  std::string end_hash;     // hex
  std::string parent_hash;  // hex
};

struct AppendResult {
  SegmentRecord segment;
  bool reorg = false;
  std::vector<SegmentRecord> replaced;     // segments the reorg took out of the live set
  std::optional<SegmentRecord> rewritten;  // a straddling file, rewritten without the replaced blocks
};

struct MergeOutcome {
  std::vector<std::string> inputs;  // segment ids
  std::optional<SegmentRecord> output;
  std::string error;       // set if the merge failed
  bool discarded = false;  // merged, but the inputs changed meanwhile (e.g. a reorg): output deleted
};

struct PassResult {
  bool ran = false;  // false if compaction is off
  std::vector<MergeOutcome> merges;
  int64_t files_considered = 0;
  double seconds = 0;
};

struct GcResult {
  int64_t deleted = 0;
  int64_t failed = 0;
  int64_t waiting = 0;  // grace not over, or held by a snapshot
};

// Progress events of a pass, for `sediment table compact`.
struct PassProgress {
  enum class Kind { kPlanned, kMerged, kFailed, kDiscarded } kind;
  size_t groups = 0;  // for kPlanned
  const MergeOutcome* merge = nullptr;
};
using ProgressFn = std::function<void(const PassProgress&)>;

class TableService;

// The live set of a table at one instant, with its files held against GC on
// this server until the snapshot is destroyed.
class ReadSnapshot {
 public:
  ~ReadSnapshot();
  const TableId& table() const { return table_; }
  const std::shared_ptr<arrow::Schema>& schema() const { return schema_; }
  const std::vector<SegmentRecord>& segments() const { return segments_; }

 private:
  friend class TableService;
  TableService* service_ = nullptr;
  TableId table_;
  std::shared_ptr<arrow::Schema> schema_;
  std::vector<SegmentRecord> segments_;
};

class TableService {
 public:
  TableService(std::shared_ptr<kv::KvStore> kv, std::shared_ptr<blob::BlobStore> blobs, std::shared_ptr<Clock> clock,
               MetricsRegistry* metrics, const WriterConfig& writer);
  ~TableService();

  // Removes orphaned files of every table (left by a crash), starts the timer.
  // Without `background`, passes run only through CompactNow (tests).
  // `orphan_min_age`: only files at least that old count as orphans — when
  // other servers share the store, a file another one just published and is
  // about to swap in must not be taken for one.
  Status Start(bool background = true, Duration orphan_min_age = Duration::zero());
  void Stop();

  Result<bool> CreateTable(const TableId& id, const std::shared_ptr<arrow::Schema>& schema);
  Result<TableInfo> GetTable(const TableId& id) { return registry_.GetTable(id); }
  Result<std::vector<TableInfo>> ListTables() { return registry_.ListTables(); }
  Result<Snapshot> LiveSegments(const TableId& id);

  // Writes the batches as one segment covering [start_block, end_block]. The
  // batches must have the table's schema and block_num values inside the
  // range, never decreasing. Nothing is left behind if anything fails.
  Result<AppendResult> Append(const TableId& id, const AppendRequest& request, arrow::RecordBatchReader* batches);

  // Runs a pass now (waiting for a running one on this server to finish
  // first). Busy if another server sharing the KV store holds the table's
  // compaction lease.
  Result<PassResult> CompactNow(const TableId& id, const ProgressFn& progress = nullptr);
  // Starts a pass in the background unless one is running or started less
  // than min_interval ago.
  void RequestCompaction(const TableId& id);
  // Waits until no background pass is queued or running (tests).
  void WaitIdle();

  Result<GcResult> RunGc(const TableId& id);
  // Deletes files under the table's prefix that are neither live nor in the
  // GC manifest and were last modified before `older_than`.
  Result<int64_t> SweepOrphans(const TableId& id, TimePoint older_than);

  Result<std::shared_ptr<ReadSnapshot>> OpenSnapshot(const TableId& id);
  // Every row of a snapshot, in block order (tests and small tables).
  Result<std::shared_ptr<arrow::Table>> ReadAll(const ReadSnapshot& snapshot);

  Result<HistogramReport> Histogram(const TableId& id);
  // Appends since `since_us` (Unix microseconds), oldest first.
  Result<std::vector<AppendRecord>> AppendHistory(const TableId& id, int64_t since_us = 0);

  const WriterConfig& writer_config() const { return writer_; }
  const std::string& server_id() const { return server_id_; }
  // How long a server's claim to compact a table lasts without renewal
  // ([writer.compactor] lease_ttl).
  Duration lease_ttl() const {
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(writer_.compactor.lease_ttl));
  }
  const PlannerSettings& planner_settings() const { return planner_; }
  blob::BlobStore& blobs() { return *blobs_; }
  Clock& clock() { return *clock_; }

 private:
  friend class ReadSnapshot;
  struct TableState;
  struct Metrics;

  std::shared_ptr<TableState> State(const TableId& id);
  // REQUIRES: state->pass_mu held.
  Result<PassResult> RunPassLocked(const TableId& id, const ProgressFn& progress);
  Result<SegmentRecord> MergeGroup(const TableInfo& table, const std::vector<SegmentRecord>& inputs);
  Result<AppendResult> CommitAppend(const TableInfo& table, SegmentRecord segment);
  Result<SegmentRecord> RewriteWithout(const TableInfo& table, const SegmentRecord& s, uint64_t cut_block,
                                       const std::string& end_hash);
  void Tick();
  // Takes or renews the table's compaction lease; false if another server holds it.
  Result<bool> HoldLease(const TableId& id);
  void UpdateGauges(const TableId& id, const std::vector<SegmentRecord>& live);
  void Unpin(const std::vector<SegmentRecord>& segments);

  std::shared_ptr<kv::KvStore> kv_;
  std::shared_ptr<blob::BlobStore> blobs_;
  std::shared_ptr<Clock> clock_;
  MetricsRegistry* metrics_registry_;
  std::unique_ptr<Metrics> metrics_;
  const WriterConfig writer_;
  const PlannerSettings planner_;
  WriterSettings file_settings_;
  TableRegistry registry_;
  const std::string server_id_;
  std::atomic<bool> stopping_{false};
  bool background_ = false;

  std::unique_ptr<ThreadPool> pass_pool_;
  std::unique_ptr<ThreadPool> merge_pool_;
  std::unique_ptr<ThreadPool> footer_pool_;
  std::unique_ptr<PeriodicTask> timer_;

  std::mutex mu_;
  std::map<TableId, std::shared_ptr<TableState>> states_;  // GUARDED_BY(mu_)
  std::map<std::string, int> pins_;                        // GUARDED_BY(mu_): path -> open snapshots
  int snapshots_opening_ = 0;                              // GUARDED_BY(mu_)
};

}  // namespace sediment::table
