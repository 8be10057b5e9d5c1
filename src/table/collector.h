// Collector: garbage collection of a table's files (spec: merged files are
// handed to garbage collection, "which deletes them once queries that may
// still read them have had time to finish").
//
// RunGc deletes each GC-manifest file once gc_manifest_grace_period has
// passed since it left the live set (reading only the entries that are due:
// the manifest is ordered by removal time) and no snapshot on this server holds it
// (SnapshotPins) and the live set does not hold it (whatever the manifest
// says); only the holder of the table's lease collects, one collection per
// table at a time, and a deletion is counted once. It also
// prunes the append history past its retention and the block hashes that
// fell out of the reorg window (max_reorg_depth). SweepOrphans deletes files
// under the table's prefix that are neither live nor in the manifest — left
// by a crash between writing a file and committing it.
//
// Thread-safety: safe from many threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "base/clock.h"
#include "base/status.h"
#include "blob/blob.h"
#include "table/history.h"
#include "table/pins.h"
#include "table/registry.h"
#include "table/scheduler.h"

namespace sediment::table {

struct TableMetrics;

struct GcResult {
  int64_t deleted = 0;
  int64_t failed = 0;
  int64_t waiting = 0;  // due, but held by a snapshot
};

class Collector {
 public:
  Collector(TableRegistry* registry, TableHistory* history, blob::BlobStore* blobs, Clock* clock, TableMetrics* metrics,
            const SnapshotPins* pins, TableLeases* leases, Duration grace, uint64_t max_reorg_depth)
      : registry_(registry),
        history_(history),
        blobs_(blobs),
        clock_(clock),
        metrics_(metrics),
        pins_(pins),
        leases_(leases),
        grace_(grace),
        max_reorg_depth_(max_reorg_depth) {}

  Result<GcResult> RunGc(const TableId& id);
  // Deletes files under the table's prefix that are neither live nor in the
  // GC manifest and were last modified before `older_than` (storage time) —
  // or carry `own_tag` (segment.h), this server's own: nothing of ours is in
  // flight while the sweep runs at start-up, so those are orphans at any age.
  Result<int64_t> SweepOrphans(const TableId& id, TimePoint older_than, uint32_t own_tag = 0);

 private:
  TableRegistry* const registry_;
  TableHistory* const history_;
  blob::BlobStore* const blobs_;
  Clock* const clock_;
  TableMetrics* const metrics_;
  const SnapshotPins* const pins_;
  TableLeases* const leases_;
  const Duration grace_;
  const uint64_t max_reorg_depth_;
  std::mutex& TableMutex(const TableId& id);
  std::mutex mu_;
  std::map<TableId, std::unique_ptr<std::mutex>> running_;  // GUARDED_BY(mu_): one RunGc per table
};

}  // namespace sediment::table
