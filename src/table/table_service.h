// TableService: the tables half of Sediment (spec/parquet-compaction.md), the
// facade the server, the ingest jobs and the CLI call. It owns one unit per
// job and only wires them together:
//
//   Appender             appends segments, reorgs (appender.h)
//   Compactor            one pass: plan (PlanCompaction), merge (merge.h), swap (compactor.h)
//   Collector            GC of merged-away files, the orphan sweep (collector.h)
//   CompactionScheduler  when passes run; TableLeases: which server runs them (scheduler.h)
//   SnapshotPins         files held by open read snapshots (pins.h)
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
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/config.h"
#include "base/metrics.h"
#include "blob/blob.h"
#include "kv/kv.h"
#include "table/appender.h"
#include "table/collector.h"
#include "table/compactor.h"
#include "table/histogram.h"
#include "table/history.h"
#include "table/parquet_io.h"
#include "table/pins.h"
#include "table/planner.h"
#include "table/registry.h"
#include "table/scheduler.h"

namespace arrow {
class RecordBatchReader;
class Table;
}  // namespace arrow

namespace sediment::table {

struct TableMetrics;
class TableService;

// The live set of a table at one instant, with its files held against GC on
// this server until the snapshot is destroyed.
class ReadSnapshot {
 public:
  ~ReadSnapshot();
  const TableId& table() const { return table_; }
  const std::shared_ptr<arrow::Schema>& schema() const { return schema_; }
  // Every live file of the table holding blocks in the snapshot's range.
  const std::vector<SegmentRecord>& segments() const { return segments_; }
  // The table's live files at that instant, in the range or not.
  int64_t table_files() const { return table_files_; }

 private:
  friend class TableService;
  SnapshotPins* pins_ = nullptr;
  TableId table_;
  std::shared_ptr<arrow::Schema> schema_;
  std::vector<SegmentRecord> segments_;
  int64_t table_files_ = 0;
};

// Files that left the live set and wait for GC (the grace period).
struct GcBacklog {
  int64_t files = 0;
  int64_t due = 0;  // past the grace period: the next GC deletes them
  int64_t oldest_removed_us = 0;
  double grace_seconds = 0;
};

class TableService {
 public:
  // `server_id` names this server in table leases; a server that keeps its
  // name across restarts takes its own leases back at once. Empty: a fresh
  // name for this process.
  TableService(std::shared_ptr<kv::KvStore> kv, std::shared_ptr<blob::BlobStore> blobs, std::shared_ptr<Clock> clock,
               MetricsRegistry* metrics, const WriterConfig& writer, std::string server_id = "");
  ~TableService();

  // Removes orphaned files of every table (left by a crash: files older than
  // orphan_min_age, and files this server wrote under its stable name at any
  // age), starts the timer.
  // Without `background`, passes run only through CompactNow (tests).
  // `orphan_min_age`: only files at least that old count as orphans — when
  // other servers share the store, a file another one just published and is
  // about to swap in must not be taken for one.
  Status Start(bool background = true, Duration orphan_min_age = Duration::zero());
  void Stop();

  Result<bool> CreateTable(const TableId& id, const std::shared_ptr<arrow::Schema>& schema);
  // A new schema version: new nullable columns after the current ones (TableRegistry::EvolveTable).
  // Files written before read with nulls in them (scans, merges); appends must use the new schema.
  Result<bool> EvolveTable(const TableId& id, const std::shared_ptr<arrow::Schema>& schema);
  Result<TableInfo> GetTable(const TableId& id) { return registry_.GetTable(id); }
  Result<std::vector<TableInfo>> ListTables() { return registry_.ListTables(); }
  // Every live segment (whole-table work: histograms, reads of everything).
  Result<Snapshot> LiveSegments(const TableId& id);
  // The live set's totals and ends: one KV read.
  Result<TableState> State(const TableId& id);
  // The stored hash (hex) of `block`, if the table's reorg window holds it.
  Result<std::optional<std::string>> BlockHash(const TableId& id, uint64_t block) {
    return registry_.BlockHash(id, block);
  }
  // The block a reorg replaced whose hash was `hash` (hex), while the reorg window keeps it.
  Result<std::optional<AbandonedBlock>> Abandoned(const TableId& id, const std::string& hash) {
    return registry_.Abandoned(id, hash);
  }
  uint64_t max_reorg_depth() const { return static_cast<uint64_t>(writer_.max_reorg_depth); }
  // A page of live segments starting after block `after`, in block order.
  Result<SegmentPage> ListSegments(const TableId& id, std::optional<uint64_t> after, size_t limit);
  // The live segments holding blocks in [from, to], at one instant.
  Result<Snapshot> SegmentsOverlapping(const TableId& id, uint64_t from, uint64_t to);
  // A page of the tables of `dataset` (all if "") after "<dataset>/<table>" `after`, in name order.
  Result<std::vector<TableInfo>> ListTables(const std::string& after, const std::string& dataset, size_t limit,
                                            bool* has_more) {
    return registry_.ListTables(after, dataset, limit, has_more);
  }

  // Appender::Append, then requests a pass. Nothing is left behind if
  // anything fails.
  Result<AppendResult> Append(const TableId& id, const AppendRequest& request, arrow::RecordBatchReader* batches);

  // Runs a pass now (waiting for a running one on this server to finish
  // first). Busy if another server sharing the KV store holds the table's
  // compaction lease.
  Result<PassResult> CompactNow(const TableId& id, const ProgressFn& progress = nullptr);
  // Starts a pass in the background unless one is running or started less
  // than min_interval ago.
  void RequestCompaction(const TableId& id) { scheduler_->Request(id); }
  // Waits until no background pass is queued or running (tests).
  void WaitIdle() { scheduler_->WaitIdle(); }
  // One round of the timer (tests): requests a pass and runs GC on the next
  // `tables_per_tick` tables after the last round's, round-robin.
  void TickForTesting(size_t tables_per_tick) {
    tables_per_tick_ = tables_per_tick;
    Tick();
  }

  Result<GcResult> RunGc(const TableId& id) { return collector_->RunGc(id); }
  Result<int64_t> SweepOrphans(const TableId& id, TimePoint older_than) {
    return collector_->SweepOrphans(id, older_than);
  }

  // The segments holding blocks in [from, to] (every live segment by
  // default): a floor lookup and a range scan in the registry.
  Result<std::shared_ptr<ReadSnapshot>> OpenSnapshot(const TableId& id, uint64_t from = 0, uint64_t to = UINT64_MAX);
  // Every row of a snapshot, in block order (tests and small tables).
  Result<std::shared_ptr<arrow::Table>> ReadAll(const ReadSnapshot& snapshot);

  Result<HistogramReport> Histogram(const TableId& id);
  // Appends since `since_us` (Unix microseconds), oldest first.
  // A page of them: up to `limit` after `cursor`.
  Result<std::vector<AppendRecord>> AppendHistory(const TableId& id, int64_t since_us = 0,
                                                  const std::string& cursor = "", size_t limit = SIZE_MAX,
                                                  bool* has_more = nullptr);

  // Passes that planned merges, newest first, back to `since_us`: up to `limit` after `cursor`.
  Result<std::vector<PassRecord>> PassHistory(const TableId& id, int64_t since_us = 0, const std::string& cursor = "",
                                              size_t limit = SIZE_MAX, bool* has_more = nullptr);
  Result<GcBacklog> GcBacklogOf(const TableId& id);
  // The files removed from the live set that GC has not deleted yet, with when they were removed.
  Result<std::vector<GcEntry>> RemovedFiles(const TableId& id) { return registry_.ListGc(id); }
  // Calls `listener` after every change of a table's live set made through
  // this service (add them before Start()).
  void AddChangeListener(std::function<void(const TableId&)> listener) {
    change_listeners_.push_back(std::move(listener));
  }

  const WriterConfig& writer_config() const { return writer_; }
  const std::string& server_id() const { return leases_->server_id(); }
  // How long a server's claim to compact a table lasts without renewal
  // ([writer.compactor] lease_ttl).
  Duration lease_ttl() const { return leases_->ttl(); }
  const PlannerSettings& planner_settings() const { return planner_; }
  blob::BlobStore& blobs() { return *blobs_; }
  Clock& clock() { return *clock_; }

 private:
  // The pass the scheduler runs: a compaction pass, then GC if it planned anything.
  Result<PassResult> RunPass(const TableId& id, const ProgressFn& progress);
  // Records a pass that planned merges, or (`error` set) failed as a whole.
  void RecordPass(const TableId& id, const PassResult& result, int64_t started_us, const std::string& error = "");
  // The timer's round: at most tables_per_tick_ tables, so its cost does not
  // grow with the number of tables; all of them are visited every
  // ceil(tables / tables_per_tick) ticks.
  void Tick();

  std::shared_ptr<kv::KvStore> kv_;
  std::shared_ptr<blob::BlobStore> blobs_;
  std::shared_ptr<Clock> clock_;
  std::unique_ptr<TableMetrics> metrics_;
  const WriterConfig writer_;
  const PlannerSettings planner_;
  TableRegistry registry_;
  TableHistory history_;
  std::vector<std::function<void(const TableId&)>> change_listeners_;  // fixed once started
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> tables_per_tick_{256};
  std::mutex tick_mu_;
  std::optional<TableId> tick_cursor_;  // GUARDED_BY(tick_mu_): the last table the timer visited
  uint32_t writer_tag_ = 0;             // WriterTag(server_id): marks the files this server writes
  SnapshotPins pins_;
  std::unique_ptr<TableLeases> leases_;
  std::unique_ptr<Appender> appender_;
  std::unique_ptr<Compactor> compactor_;
  std::unique_ptr<Collector> collector_;
  std::unique_ptr<CompactionScheduler> scheduler_;
};

}  // namespace sediment::table
