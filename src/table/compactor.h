// Compactor: one compaction pass on one table (spec/parquet-compaction.md,
// "How it works") — the mechanism, as RocksDB's compaction job is to its
// picker. It takes the live set, asks PlanCompaction (the policy) for groups,
// merges up to write_concurrency groups at once (MergeSegments) on
// write_concurrency worker threads shared by the pass's groups, reading
// metadata_concurrency footers at a time, and swaps each merged file in with
// one atomic registry commit as soon as it is written, so one failure doesn't
// hold back the others. A swap whose inputs changed meanwhile (a reorg) is
// discarded and its output deleted; a failed merge leaves its inputs live.
//
// It neither schedules passes nor holds leases (CompactionScheduler does) nor
// deletes merged-away files (Collector does).
// The pools are the pass's own: two tables' passes each get the settings'
// threads, as the spec's settings read ("how many groups a pass merges at
// once").
//
// Thread-safety: RunPass is safe from many threads, but two passes on one
// table must not overlap (the scheduler serializes them).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/config.h"
#include "base/executor.h"
#include "blob/blob.h"
#include "table/merge.h"
#include "table/parquet_io.h"
#include "table/planner.h"
#include "table/registry.h"

namespace sediment::table {

struct TableMetrics;

// The four ways a planned merge ends.
enum class MergeStatus {
  kMerged,     // written and swapped into the live set
  kFailed,     // the merge or the swap failed; the inputs stay live
  kDiscarded,  // merged, but the inputs changed before the swap (e.g. a reorg); output deleted
  kStopped,    // the server stopped first; nothing published
};

struct MergeOutcome {
  MergeStatus status = MergeStatus::kFailed;
  std::vector<std::string> inputs;      // segment ids
  uint64_t start = 0, end = 0;          // the inputs' blocks
  int64_t input_stored_bytes = 0;       // the inputs' file sizes
  bool final = false;                   // the output is encoded fully, never to be merged again
  std::optional<SegmentRecord> output;  // kMerged
  MergeStats stats;                     // kMerged: row groups copied and re-encoded
  std::string error;                    // kFailed, kStopped: why
};

struct PassResult {
  bool ran = false;  // false if compaction is off
  std::vector<MergeOutcome> merges;
  int64_t files_considered = 0;
  double seconds = 0;
  std::optional<TableState> state_after;  // read once the pass planned anything (gauges, the pass history)
};

// Progress events of a pass, for `sediment table compact`.
struct PassProgress {
  enum class Kind { kPlanned, kMerged, kFailed, kDiscarded } kind;
  size_t groups = 0;  // for kPlanned
  const MergeOutcome* merge = nullptr;
};
using ProgressFn = std::function<void(const PassProgress&)>;

class Compactor {
 public:
  Compactor(TableRegistry* registry, blob::BlobStore* blobs, Clock* clock, TableMetrics* metrics,
            const WriterConfig& writer, const WriterSettings& file_settings, const std::atomic<bool>* stopping,
            uint32_t writer_tag);
  ~Compactor();

  // REQUIRES: no other pass on `id` runs (on any server: the caller holds the lease).
  Result<PassResult> RunPass(const TableId& id, const ProgressFn& progress);

 private:
  MergeOutcome MergeAndSwap(const TableInfo& table, const std::vector<SegmentRecord>& inputs, FileLayout layout,
                            const MergeContext& ctx);
  // Counts and logs one outcome, and tells `progress`.
  void Report(const TableId& id, const MergeOutcome& m, const ProgressFn& progress);

  TableRegistry* const registry_;
  blob::BlobStore* const blobs_;
  Clock* const clock_;
  TableMetrics* const metrics_;
  const bool active_;
  const PlannerSettings planner_;
  const WriterSettings file_settings_;
  const std::atomic<bool>* const stopping_;
  const uint32_t writer_tag_;
  const int write_concurrency_;
  const int metadata_concurrency_;

  // The threads of one pass (groups, their workers, footer readers), kept
  // between passes: making them for each pass was about 5% of a busy
  // table's compaction CPU. A pass takes a set no other pass holds, so two
  // tables' passes still each have their own.
  struct PassPools;
  std::unique_ptr<PassPools> TakePools();
  void ReturnPools(std::unique_ptr<PassPools> pools);
  std::mutex pools_mu_;
  std::vector<std::unique_ptr<PassPools>> idle_pools_;  // GUARDED_BY(pools_mu_)
};

}  // namespace sediment::table
