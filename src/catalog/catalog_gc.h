// Garbage collection of a repository's storage namespace: range and
// meta-range files (`_lakefs/<id>`) that no commit record and no branch
// references (superseded staging compactions, discarded work), and object
// data (`data/...`) that nothing within retention references (objects
// overwritten or deleted before a commit, history older than the retention
// period), and the lakeFS-form copies of collected range files
// (`_lakefs_sst/{meta_range|range}/<id>`). Commit metadata is kept, as lakeFS keeps it: a branch made later
// from an old commit id opens, though its expired objects may be gone.
//
// Each branch is marked until it did not change while being marked (a
// retired staging token is dropped only after its branch points at what holds
// its entries), the refs are marked a second time just before the sweep, and
// a file whose mtime moved since the listing is not deleted.
//
// Mark: what every branch (its head commit, compacted meta-range and staged
// entries), every tag, and every commit within `retention` of now reaches,
// plus the ranges that meta-range files written within `grace` reference (a
// commit or compaction in flight, not yet on its branch, may reuse old
// ranges). Sweep: every file of the namespace that is not marked and was
// last modified more than `grace` ago — so an upload whose data is written
// but whose entry is not staged yet, or a range a commit is writing, is never
// taken. Files are content-addressed or randomly named, so a marked file is
// never reused by name for other content.
//
// CatalogCollector runs GC of every repository every `[catalog] gc_interval`
// (one server at a time per repository: a KV lease), exports metrics, and is
// what `POST /api/v1/repositories/{repo}/gc` calls.
//
// Thread-safety: safe from many threads; one collection per repository at a
// time per server, and across servers through the lease.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/executor.h"
#include "base/metrics.h"
#include "base/status.h"
#include "kv/kv.h"

namespace sediment::catalog {

class Catalog;

struct GcOptions {
  bool dry_run = false;
  Duration retention = std::chrono::hours(24 * 21);  // commits younger than this keep their objects
  Duration grace = std::chrono::hours(6);            // files younger than this are never deleted
  // The repository's GC rules (lakeFS's settings/gc_rules), when it has them,
  // replace `retention`: their default for tags and most branches, and each
  // branch's own. False: `retention` for all (a run that names its retention).
  bool use_repository_rules = true;
};

struct GcReport {
  int64_t marked_files = 0;   // files found reachable
  int64_t scanned_files = 0;  // files in the namespace
  int64_t kept_young = 0;     // unreachable, but within the grace period
  int64_t deleted = 0;        // (or, on a dry run, would be)
  int64_t deleted_bytes = 0;
  int64_t failed = 0;
  std::vector<std::string> paths;  // the first 1,000 deleted (or to delete), relative to the namespace
};

// One collection of `repo`'s namespace.
Result<GcReport> CollectGarbage(Catalog* catalog, const std::string& repo, const GcOptions& options);

class CatalogCollector {
 public:
  CatalogCollector(Catalog* catalog, std::shared_ptr<kv::KvStore> kv, std::shared_ptr<Clock> clock,
                   MetricsRegistry* metrics, std::string owner);
  ~CatalogCollector();

  // Collects every repository every `interval` (zero: only on demand).
  void Start(Duration interval, GcOptions options);
  void Stop();
  // One repository now; Busy if another collection of it runs (here or on another server).
  Result<GcReport> Run(const std::string& repo, const GcOptions& options);
  // The configured retention and grace (what Start was given).
  const GcOptions& defaults() const { return scheduled_; }

 private:
  void Tick();

  Catalog* const catalog_;
  std::shared_ptr<kv::KvStore> kv_;
  std::shared_ptr<Clock> clock_;
  const std::string owner_;
  MetricFamily<CounterMetric>& runs_;
  MetricFamily<CounterMetric>& deleted_;
  MetricFamily<CounterMetric>& deleted_bytes_;
  GcOptions scheduled_;
  std::unique_ptr<PeriodicTask> timer_;
};

}  // namespace sediment::catalog
