#include "catalog/catalog_gc.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <unordered_set>

#include "base/failpoint.h"
#include "blob/blob.h"
#include "catalog/catalog.h"
#include "catalog/entry.h"
#include "catalog/range_store.h"
#include "kv/lease.h"

namespace sediment::catalog {
namespace {

constexpr const char* kRangeDir = "_lakefs/";
constexpr size_t kReportedPaths = 1000;

// What the mark phase found reachable, as paths relative to the namespace.
struct Marks {
  std::unordered_set<std::string> files;
  std::unordered_set<std::string> ranges_done;  // range ids whose entries were marked
  std::unordered_set<std::string> commits_seen;
};

// An entry's data, if it lives in the namespace (an address with a scheme is
// someone else's storage and never ours to delete).
void MarkAddress(Marks* m, const std::string& encoded) {
  if (encoded.empty()) return;  // a tombstone
  auto e = DecodeEntry(encoded);
  if (!e.ok() || e->address.find("://") != std::string::npos) return;
  m->files.insert(e->address);
}

// Files GC may take: object data, and range/meta-range files (`_lakefs/` and
// a content hash). Anything else — `_lakefs/dummy`, the namespace's claim
// marker, or files someone else put there — is never touched.
bool Collectable(const std::string& path) {
  if (path.rfind("data/", 0) == 0) return true;
  if (path.rfind(kRangeDir, 0) != 0) return false;
  std::string_view id(path);
  id.remove_prefix(std::string_view(kRangeDir).size());
  if (id.size() != 64) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

template <typename T, typename Fn>
Status ForEachPage(Fn fetch, const std::function<Status(const T&)>& visit) {
  std::string after;
  while (true) {
    ARROW_ASSIGN_OR_RAISE(Page<T> page, fetch(after));
    for (const auto& item : page.items) ARROW_RETURN_NOT_OK(visit(item));
    if (!page.has_more || page.items.empty()) return Status::OK();
    after = page.items.back().id;
  }
}

}  // namespace

Result<GcReport> CollectGarbage(Catalog* catalog, const std::string& repo_id, const GcOptions& options) {
  ARROW_ASSIGN_OR_RAISE(Repository repo, catalog->GetRepository(repo_id));
  ARROW_ASSIGN_OR_RAISE(Namespace ns, catalog->RepositoryNamespace(repo));
  RangeStore& ranges = *catalog->ranges_;
  kv::KvStore& kv = *catalog->kv_;
  const TimePoint now = catalog->clock_->Now();
  const int64_t oldest_kept = ToUnixMicros(now - options.retention) / 1000000;
  Marks m;

  // Storage time decides "young", whatever clock drives retention; list first,
  // so everything written after the listing is simply not a candidate.
  ARROW_ASSIGN_OR_RAISE(auto files, ns->List(""));
  const TimePoint young = std::chrono::system_clock::now() - options.grace;

  auto mark_meta_range = [&](const std::string& id) -> Status {
    if (id.empty()) return Status::OK();
    ARROW_ASSIGN_OR_RAISE(auto mr, ranges.LoadMetaRange(ns, id));
    m.files.insert(kRangeDir + id);
    for (const auto& r : mr->ranges) {
      m.files.insert(kRangeDir + r.id);
      if (!m.ranges_done.insert(r.id).second) continue;
      ARROW_ASSIGN_OR_RAISE(auto it, ranges.NewRangeIterator(ns, r.id));
      while (it->Next()) MarkAddress(&m, it->value());
      ARROW_RETURN_NOT_OK(it->status());
    }
    return Status::OK();
  };
  // A commit and, within retention, its ancestors; heads and tags always.
  std::function<Status(const std::string&, bool)> mark_history = [&](const std::string& id, bool head) -> Status {
    std::vector<std::pair<std::string, bool>> todo = {{id, head}};
    while (!todo.empty()) {
      auto [cid, is_head] = todo.back();
      todo.pop_back();
      if (cid.empty() || m.commits_seen.count(cid)) continue;
      ARROW_ASSIGN_OR_RAISE(Commit c, catalog->GetCommit(repo_id, cid));
      // Older than retention: not kept through this path (nor its parents,
      // which are older), but a tag or head that names it still keeps it.
      if (!is_head && c.creation_date < oldest_kept) continue;
      m.commits_seen.insert(cid);
      ARROW_RETURN_NOT_OK(mark_meta_range(c.meta_range_id));
      for (const auto& p : c.parents) todo.emplace_back(p, false);
    }
    return Status::OK();
  };

  // Branches: head history, compacted meta-range, staged entries.
  ARROW_RETURN_NOT_OK(ForEachPage<Branch>(
      [&](const std::string& after) { return catalog->ListBranches(repo_id, "", after, 1000); },
      [&](const Branch& b) -> Status {
        ARROW_RETURN_NOT_OK(mark_history(b.commit_id, true));
        ARROW_RETURN_NOT_OK(mark_meta_range(b.compacted_meta_range_id));
        std::vector<std::string> tokens = b.sealed_tokens;
        tokens.push_back(b.staging_token);
        for (const auto& t : tokens) {
          ARROW_RETURN_NOT_OK(kv.ScanAll(StagingPrefix(t), "", [&](const kv::KeyValue& e) -> Result<bool> {
            MarkAddress(&m, e.value);
            return true;
          }));
        }
        return Status::OK();
      }));
  ARROW_RETURN_NOT_OK(ForEachPage<Tag>(
      [&](const std::string& after) { return catalog->ListTags(repo_id, "", after, 1000); },
      [&](const Tag& t) { return mark_history(t.commit_id, true); }));
  // Meta-ranges written within the grace may belong to a commit or compaction
  // not yet swapped in: the old ranges they reuse stay.
  for (const auto& f : files) {
    if (f.mtime < young || f.path.rfind(kRangeDir, 0) != 0 || m.files.count(f.path)) continue;
    Status st = mark_meta_range(f.path.substr(std::string(kRangeDir).size()));
    (void)st;  // not a meta-range (a range file), or unreadable: it is young, so it stays anyway
  }

  GcReport report;
  report.marked_files = static_cast<int64_t>(m.files.size());
  for (const auto& f : files) {
    report.scanned_files++;
    if (m.files.count(f.path)) continue;
    if (!Collectable(f.path)) continue;
    if (f.mtime >= young) {
      report.kept_young++;
      continue;
    }
    if (!options.dry_run) {
      Status st = ns->Delete(f.path);
      if (st.ok()) st = failpoint::Hit("catalog.gc.after_delete");
      if (!st.ok()) {
        report.failed++;
        spdlog::warn("catalog GC {}: cannot delete {}: {}", repo_id, f.path, st.ToString());
        continue;
      }
    }
    report.deleted++;
    report.deleted_bytes += f.size;
    if (report.paths.size() < kReportedPaths) report.paths.push_back(f.path);
  }
  return report;
}

// ---------------------------------------------------------------------------

CatalogCollector::CatalogCollector(Catalog* catalog, std::shared_ptr<kv::KvStore> kv, std::shared_ptr<Clock> clock,
                                   MetricsRegistry* metrics, std::string owner)
    : catalog_(catalog),
      kv_(std::move(kv)),
      clock_(std::move(clock)),
      owner_(std::move(owner)),
      runs_(metrics->Counter("catalog_gc_runs_total", "Garbage collections of a repository, by outcome.",
                             {"repository", "outcome"})),
      deleted_(metrics->Counter("catalog_gc_deleted_files_total", "Unreferenced files deleted by catalog GC.",
                                {"repository"})),
      deleted_bytes_(metrics->Counter("catalog_gc_deleted_bytes_total",
                                      "Bytes of unreferenced files deleted by catalog GC.", {"repository"})) {}

CatalogCollector::~CatalogCollector() { Stop(); }

void CatalogCollector::Start(Duration interval, GcOptions options) {
  scheduled_ = options;
  if (interval <= Duration::zero()) return;
  timer_ = std::make_unique<PeriodicTask>(
      "catalog-gc", std::chrono::duration_cast<std::chrono::milliseconds>(interval), [this] { Tick(); });
  timer_->Start();
}

void CatalogCollector::Stop() {
  if (timer_) timer_->Stop();
  timer_.reset();
}

void CatalogCollector::Tick() {
  std::string after;
  while (true) {
    auto page = catalog_->ListRepositories("", after, 1000);
    if (!page.ok()) {
      spdlog::warn("catalog GC: cannot list repositories: {}", page.status().ToString());
      return;
    }
    for (const auto& r : page->items) {
      auto report = Run(r.id, scheduled_);
      if (!report.ok() && !IsBusy(report.status())) {
        spdlog::warn("catalog GC {}: {}", r.id, report.status().ToString());
      }
    }
    if (!page->has_more || page->items.empty()) return;
    after = page->items.back().id;
  }
}

Result<GcReport> CatalogCollector::Run(const std::string& repo, const GcOptions& options) {
  // One collection per repository at a time, across servers.
  kv::Lease lease(kv_, "c/gcl/" + repo, owner_ + "#" + std::to_string(reinterpret_cast<uintptr_t>(this)),
                  std::chrono::hours(1));
  ARROW_ASSIGN_OR_RAISE(bool mine, lease.TryAcquire(clock_->Now()));
  if (!mine) return Busy(fmt::format("a garbage collection of repository \"{}\" is running; retry later", repo));
  auto report = CollectGarbage(catalog_, repo, options);
  Status released = lease.Release();
  if (!released.ok()) spdlog::warn("catalog GC {}: cannot release the lease: {}", repo, released.ToString());
  const char* outcome = !report.ok() ? "failed" : options.dry_run ? "dry_run" : "completed";
  runs_.With({repo, outcome}).Add();
  if (report.ok() && !options.dry_run) {
    deleted_.With({repo}).Add(static_cast<double>(report->deleted));
    deleted_bytes_.With({repo}).Add(static_cast<double>(report->deleted_bytes));
    spdlog::info("catalog GC {}: deleted {} file(s), {} bytes; {} reachable, {} young kept", repo, report->deleted,
                 report->deleted_bytes, report->marked_files, report->kept_young);
  }
  return report;
}

}  // namespace sediment::catalog
