#include "catalog/catalog_gc.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>
#include <unordered_map>
#include <unordered_set>

#include "base/failpoint.h"
#include "blob/blob.h"
#include "catalog/catalog.h"
#include "catalog/committed_manager.h"
#include "catalog/entry.h"
#include "catalog/keys.h"
#include "catalog/range_store.h"
#include "catalog/ref_manager.h"
#include "catalog/staging_manager.h"
#include "kv/lease.h"

namespace sediment::catalog {
namespace {

constexpr const char* kRangeDir = "_lakefs/";
// lakeFS-form copies of range files, kept for presigned reads
// (server/lakefs/repositories_api.cc): `{meta_range|range}/{range id}`.
constexpr std::string_view kCopyDir = "_lakefs_sst/";
constexpr size_t kReportedPaths = 1000;

// What the mark phase found reachable, as paths relative to the namespace.
struct Marks {
  std::unordered_set<std::string> files;
  std::unordered_set<std::string> ranges_done;   // range ids whose entries were marked
  std::unordered_set<std::string> commits_seen;  // marked (objects kept)
  // Expired, passed through: the oldest creation date a walk through it kept
  // (a walk with an older limit, from a branch kept longer, goes through again).
  std::unordered_map<std::string, int64_t> commits_walked;
  // Entries whose data names more files (ReferenceWalker::Names), by address.
  std::unordered_map<std::string, Entry> naming;
  std::unordered_set<std::string> walked;  // addresses of `naming` whose references are marked
  std::vector<std::string> dirs;           // kept whole ("dir/"), from a ReferenceWalker
};

// An entry's data, if it lives in the namespace (an address with a scheme is
// someone else's storage and never ours to delete).
Status MarkAddress(Marks* m, const std::string& encoded, const ReferenceWalker* walker) {
  if (encoded.empty()) return Status::OK();  // a tombstone
  auto e = DecodeEntry(encoded);
  // An entry we cannot read (a newer format, corruption) stops the collection:
  // its data must not be taken for garbage.
  if (!e.ok()) return Status::IOError("catalog GC: an entry it cannot decode: ", e.status().message());
  if (e->address.find("://") != std::string::npos) return Status::OK();
  m->files.insert(e->address);
  if (walker != nullptr && walker->Names(*e)) m->naming.emplace(e->address, *e);
  return Status::OK();
}

// The range id a kept lakeFS-form copy was made from; empty if `path` is not one.
std::string_view CopiedRangeId(std::string_view path) {
  if (path.substr(0, kCopyDir.size()) != kCopyDir) return {};
  path.remove_prefix(kCopyDir.size());
  for (std::string_view kind : {"meta_range/", "range/"}) {
    if (path.substr(0, kind.size()) == kind && IsRangeId(path.substr(kind.size()))) return path.substr(kind.size());
  }
  return {};
}

// Files GC may take: object data, range/meta-range files (`_lakefs/` and a
// content hash) and the lakeFS-form copies made of them. Anything else —
// `_lakefs/dummy`, the namespace's claim marker, or files someone else put
// there — is never touched.
bool Collectable(const std::string& path, const ReferenceWalker* walker) {
  if (path.rfind("data/", 0) == 0) return true;
  if (walker != nullptr && path.rfind(walker->CollectableDir(), 0) == 0) return true;
  if (!CopiedRangeId(path).empty()) return true;
  if (path.rfind(kRangeDir, 0) != 0) return false;
  return IsRangeId(std::string_view(path).substr(std::string_view(kRangeDir).size()));
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

// One collection: marks, then sweeps. REQUIRES: used by one thread.
class GcRun {
 public:
  // `oldest_kept_s`: commits created before it lose their objects, unless
  // `branch_oldest_kept_s` gives the branch they are reached from its own.
  GcRun(Catalog* catalog, std::string repo, Namespace ns, RangeStore* ranges, const GcOptions& options,
        int64_t oldest_kept_s, std::map<std::string, int64_t> branch_oldest_kept_s)
      : catalog_(catalog),
        repo_(std::move(repo)),
        ns_(std::move(ns)),
        ranges_(ranges),
        options_(options),
        oldest_kept_s_(oldest_kept_s),
        branch_oldest_kept_s_(std::move(branch_oldest_kept_s)) {}

  // Every commit record's meta-range and ranges stay (metadata, as lakeFS
  // keeps it): a branch or tag made later from any commit id still opens.
  // Only its objects' data follows retention.
  Status MarkCommitMetadata() {
    ARROW_ASSIGN_OR_RAISE(std::vector<std::string> ids, catalog_->refs().CommitIds(repo_));
    for (const auto& id : ids) {
      ARROW_ASSIGN_OR_RAISE(Commit c, catalog_->GetCommit(repo_, id));
      if (c.meta_range_id.empty()) continue;
      ARROW_ASSIGN_OR_RAISE(auto mr, ranges_->LoadMetaRange(ns_, c.meta_range_id));
      m_.files.insert(kRangeDir + c.meta_range_id);
      for (const auto& r : mr->ranges) m_.files.insert(kRangeDir + r.id);
    }
    return Status::OK();
  }

  // Every branch (head history, compacted meta-range, staged entries) and tag.
  Status MarkRefs() {
    ARROW_RETURN_NOT_OK(
        ForEachPage<Branch>([&](const std::string& after) { return catalog_->ListBranches(repo_, "", after, 1000); },
                            [&](const Branch& b) { return MarkBranch(b); }));
    return ForEachPage<Tag>([&](const std::string& after) { return catalog_->ListTags(repo_, "", after, 1000); },
                            [&](const Tag& t) { return MarkHistory(t.commit_id, /*head=*/true, oldest_kept_s_); });
  }

  // Meta-ranges written within the grace may belong to a commit or compaction
  // not yet swapped in: the old ranges they reuse stay.
  void MarkYoungMetaRanges(const std::vector<blob::ObjectInfo>& files, TimePoint young) {
    for (const auto& f : files) {
      if (f.mtime < young || f.path.rfind(kRangeDir, 0) != 0 || m_.files.count(f.path)) continue;
      Status st = MarkMetaRange(f.path.substr(std::string(kRangeDir).size()));
      (void)st;  // not a meta-range (a range file), or unreadable: it is young, so it stays anyway
    }
  }

  // The files the kept entries' data names (ReferenceWalker), once each.
  Status MarkReferences(const Repository& repo) {
    if (walker_ == nullptr) return Status::OK();
    auto keep = [&](const std::string& path) {
      if (!path.empty() && path.back() == '/') {
        m_.dirs.push_back(path);
        return false;
      }
      return m_.files.insert(path).second;
    };
    for (const auto& [address, entry] : m_.naming) {
      if (!m_.walked.insert(address).second) continue;
      Status st;
      try {
        st = walker_->ForEachReference(repo, entry, keep);
      } catch (const std::exception& e) {  // a walker's bug must not take the server down
        st = Status::IOError(e.what());
      }
      // Unreadable: what it names cannot be known, so nothing it might name is taken.
      if (!st.ok()) return Status::IOError("catalog GC: cannot read what ", address, " names: ", st.message());
    }
    return Status::OK();
  }

  GcReport Sweep(const std::vector<blob::ObjectInfo>& files, TimePoint young) {
    GcReport report;
    report.marked_files = static_cast<int64_t>(m_.files.size());
    for (const auto& f : files) {
      report.scanned_files++;
      if (Marked(f.path) || !Collectable(f.path, walker_)) continue;
      if (f.mtime >= young) {
        report.kept_young++;
        continue;
      }
      if (!options_.dry_run) {
        // Written again since the listing (a content-addressed file rebuilt
        // with the same bytes): no longer garbage.
        // (S3 listings and HEAD answers differ in precision: a second's slack.)
        auto now = ns_->Stat(f.path);
        if (now.ok() && now->mtime > f.mtime + std::chrono::seconds(1)) {
          report.kept_young++;
          continue;
        }
        Status st = ns_->Delete(f.path);
        if (st.ok()) st = failpoint::Hit("catalog.gc.after_delete");
        if (!st.ok()) {
          report.failed++;
          spdlog::warn("catalog GC {}: cannot delete {}: {}", repo_, f.path, st.ToString());
          continue;
        }
      }
      report.deleted++;
      report.deleted_bytes += f.size;
      if (report.paths.size() < kReportedPaths) report.paths.push_back(f.path);
    }
    return report;
  }

 private:
  // Reached, or a copy of a range file that is (a copy goes with its range).
  bool Marked(const std::string& path) const {
    if (m_.files.count(path)) return true;
    for (const auto& dir : m_.dirs) {
      if (path.starts_with(dir)) return true;
    }
    const std::string_view id = CopiedRangeId(path);
    return !id.empty() && m_.files.count(kRangeDir + std::string(id));
  }

  // Marks a branch as it is now, again and again until it did not change
  // while being marked: a token is dropped only after the branch points at
  // what holds its entries, so a stable state misses nothing.
  Status MarkBranch(const Branch& listed) {
    ARROW_ASSIGN_OR_RAISE(Branch b, catalog_->GetBranch(repo_, listed.id));
    for (int round = 0;; ++round) {
      std::vector<std::string> tokens = b.sealed_tokens;
      tokens.push_back(b.staging_token);
      for (const auto& t : tokens) {
        ARROW_RETURN_NOT_OK(catalog_->staging().ForEachStaged(
            t, [&](const std::string& value) { return MarkAddress(&m_, value, walker_); }));
      }
      auto own = branch_oldest_kept_s_.find(b.id);
      ARROW_RETURN_NOT_OK(
          MarkHistory(b.commit_id, /*head=*/true, own == branch_oldest_kept_s_.end() ? oldest_kept_s_ : own->second));
      ARROW_RETURN_NOT_OK(MarkMetaRange(b.compacted_meta_range_id));
      auto again = catalog_->GetBranch(repo_, listed.id);
      if (IsNotFound(again.status())) return Status::OK();  // deleted meanwhile
      ARROW_RETURN_NOT_OK(again.status());
      if (again->commit_id == b.commit_id && again->staging_token == b.staging_token &&
          again->sealed_tokens == b.sealed_tokens && again->compacted_meta_range_id == b.compacted_meta_range_id) {
        return Status::OK();
      }
      if (round >= 100) return Busy(fmt::format("catalog GC: branch \"{}\" keeps changing", listed.id));
      b = std::move(*again);
    }
  }

  Status MarkMetaRange(const std::string& id) {
    if (id.empty()) return Status::OK();
    ARROW_ASSIGN_OR_RAISE(auto mr, ranges_->LoadMetaRange(ns_, id));
    m_.files.insert(kRangeDir + id);
    for (const auto& r : mr->ranges) {
      m_.files.insert(kRangeDir + r.id);
      if (!m_.ranges_done.insert(r.id).second) continue;
      ARROW_ASSIGN_OR_RAISE(auto it, ranges_->NewRangeIterator(ns_, r.id));
      while (it->Next()) ARROW_RETURN_NOT_OK(MarkAddress(&m_, it->value(), walker_));
      ARROW_RETURN_NOT_OK(it->status());
    }
    return Status::OK();
  }

  // A commit and its ancestors: heads and tags keep their objects, others
  // only within retention. The walk goes on through expired commits (a commit
  // may carry an old date while its parents are younger).
  Status MarkHistory(const std::string& id, bool head, int64_t oldest_kept_s) {
    std::vector<std::pair<std::string, bool>> todo = {{id, head}};
    while (!todo.empty()) {
      auto [cid, is_head] = todo.back();
      todo.pop_back();
      if (cid.empty() || m_.commits_seen.count(cid)) continue;
      ARROW_ASSIGN_OR_RAISE(Commit c, catalog_->GetCommit(repo_, cid));
      bool keep = is_head || c.creation_date >= oldest_kept_s;
      if (keep) {
        m_.commits_seen.insert(cid);
        ARROW_RETURN_NOT_OK(MarkMetaRange(c.meta_range_id));
      } else {
        auto [at, first] = m_.commits_walked.emplace(cid, oldest_kept_s);
        if (!first && at->second <= oldest_kept_s) continue;  // walked already, keeping as much or more
        at->second = oldest_kept_s;
      }
      for (const auto& p : c.parents) todo.emplace_back(p, false);
    }
    return Status::OK();
  }

  Catalog* const catalog_;
  const std::string repo_;
  const Namespace ns_;
  RangeStore* const ranges_;
  const GcOptions options_;
  const int64_t oldest_kept_s_;
  const std::map<std::string, int64_t> branch_oldest_kept_s_;
  ReferenceWalker* const walker_ = catalog_->reference_walker();
  Marks m_;
};

}  // namespace

Result<GcReport> CollectGarbage(Catalog* catalog, const std::string& repo_id, const GcOptions& options) {
  ARROW_ASSIGN_OR_RAISE(Repository repo, catalog->GetRepository(repo_id));
  ARROW_ASSIGN_OR_RAISE(Namespace ns, catalog->RepositoryNamespace(repo));
  const TimePoint now = catalog->clock().Now();
  int64_t oldest_kept_s = ToUnixMicros(now - options.retention) / 1000000;
  std::map<std::string, int64_t> branch_oldest_kept_s;
  if (options.use_repository_rules && repo.gc_rules) {
    auto days_ago = [&](int64_t days) { return ToUnixMicros(now - std::chrono::hours(24 * days)) / 1000000; };
    oldest_kept_s = days_ago(repo.gc_rules->default_retention_days);
    for (const auto& [branch, days] : repo.gc_rules->branches) branch_oldest_kept_s[branch] = days_ago(days);
  }
  GcRun run(catalog, repo_id, ns, &catalog->committed().ranges(), options, oldest_kept_s,
            std::move(branch_oldest_kept_s));
  // Storage time decides "young", whatever clock drives retention; list first,
  // so everything written after the listing is simply not a candidate.
  ARROW_ASSIGN_OR_RAISE(auto files, ns->List(""));
  const TimePoint young = std::chrono::system_clock::now() - options.grace;
  ARROW_RETURN_NOT_OK(run.MarkCommitMetadata());
  ARROW_RETURN_NOT_OK(run.MarkRefs());
  run.MarkYoungMetaRanges(files, young);
  // Refs created or moved while marking (a branch made from an old commit)
  // are marked again just before the sweep.
  ARROW_RETURN_NOT_OK(run.MarkRefs());
  ARROW_RETURN_NOT_OK(run.MarkReferences(repo));
  if (!options.dry_run) ARROW_RETURN_NOT_OK(catalog->PruneLinkAddresses(repo_id));
  return run.Sweep(files, young);
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
  timer_ = std::make_unique<PeriodicTask>("catalog-gc", std::chrono::duration_cast<std::chrono::milliseconds>(interval),
                                          [this] { Tick(); });
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
  kv::Lease lease(kv_, GcLeaseKey(repo), owner_ + "#" + std::to_string(reinterpret_cast<uintptr_t>(this)),
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
