#include "table/collector.h"

#include <spdlog/spdlog.h>

#include <set>
#include <string>

#include "base/failpoint.h"
#include "table/table_metrics_internal.h"

namespace sediment::table {

std::mutex& Collector::TableMutex(const TableId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& m = running_[id];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

Result<GcResult> Collector::RunGc(const TableId& id) {
  GcResult result;
  // One collection per table at a time here (the timer and the end of a pass
  // both start one); the lease holder collects, others would only race it.
  std::unique_lock<std::mutex> running(TableMutex(id), std::try_to_lock);
  if (!running.owns_lock()) return result;
  ARROW_ASSIGN_OR_RAISE(bool mine, leases_->Hold(id));
  if (!mine) return result;
  ARROW_RETURN_NOT_OK(
      history_->PruneHistory(id, ToUnixMicros(clock_->Now() - std::chrono::hours(24 * TableHistory::kHistoryDays))));
  ARROW_ASSIGN_OR_RAISE(TableState state, registry_->State(id));
  // A reorg max_reorg_depth deep needs the hash of block head - max_reorg_depth.
  if (!state.empty() && state.end > max_reorg_depth_) {
    ARROW_RETURN_NOT_OK(registry_->PruneBlockHashes(id, state.end - max_reorg_depth_));
  }
  TimePoint now = clock_->Now();
  // Only the entries whose grace is over are read (the manifest is a queue
  // in removal order).
  ARROW_ASSIGN_OR_RAISE(auto entries, registry_->ListDueGc(id, ToUnixMicros(now - grace_) + 1));
  for (const auto& e : entries) {
    // A file in the manifest is not live, so no snapshot taken from now on
    // can hold it; one being taken right now might have read it while it
    // was live, so wait for those too.
    if (pins_->Held(e.path)) {
      result.waiting++;
      continue;
    }
    ARROW_ASSIGN_OR_RAISE(bool live, registry_->IsLive(id, e.path));
    if (live) {
      // Never delete what the live set references, whatever the manifest says.
      spdlog::error("table {}: {} is in the GC manifest but live; dropping the entry, keeping the file", id.ToString(),
                    e.path);
      (void)registry_->RemoveGcEntry(id, e);
      continue;
    }
    Status st = blobs_->Delete(e.path);
    if (st.ok()) st = failpoint::Hit("table.gc.after_delete");
    if (st.ok()) st = registry_->RemoveGcEntry(id, e);
    if (st.ok()) {
      result.deleted++;
      metrics_->gc_deleted.With(Labels(id)).Add();
    } else if (IsPreconditionFailed(st)) {
      continue;  // another collection removed it first: not ours to count
    } else {
      result.failed++;
      metrics_->gc_failed.With(Labels(id)).Add();
      spdlog::warn("table {}: cannot delete {} (will retry): {}", id.ToString(), e.path, st.ToString());
    }
  }
  return result;
}

Result<int64_t> Collector::SweepOrphans(const TableId& id, TimePoint older_than, uint32_t own_tag) {
  ARROW_ASSIGN_OR_RAISE(Snapshot snap, registry_->TakeSnapshot(id));
  ARROW_ASSIGN_OR_RAISE(auto gc, registry_->ListGc(id));
  std::set<std::string> known;
  for (const auto& s : snap.segments) known.insert(s.path);
  for (const auto& e : gc) known.insert(e.path);
  const std::string prefix = TableRegistry::ObjectPrefix(id);
  ARROW_ASSIGN_OR_RAISE(auto objects, blobs_->List(prefix));
  int64_t removed = 0;
  for (const auto& o : objects) {
    if (known.count(o.path)) continue;
    // Segment files sit right under the prefix; below it is not ours (metadata/ is the Iceberg catalog's).
    if (o.path.find('/', prefix.size()) != std::string::npos) continue;
    bool ours = own_tag != 0 && WriterTagOf(o.path.substr(o.path.rfind('/') + 1)) == own_tag;
    if (!ours && o.mtime >= older_than) continue;
    Status st = blobs_->Delete(o.path);
    if (!st.ok()) {
      spdlog::warn("table {}: cannot delete orphan {}: {}", id.ToString(), o.path, st.ToString());
      continue;
    }
    spdlog::info("table {}: deleted orphan {} (left by an interrupted write)", id.ToString(), o.path);
    metrics_->orphans.With(Labels(id)).Add();
    removed++;
  }
  return removed;
}

}  // namespace sediment::table
