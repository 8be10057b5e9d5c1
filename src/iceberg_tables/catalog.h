// IcebergCatalog: the chain tables as Iceberg tables, for engines that attach
// through the REST catalog (server/iceberg). Sediment stays the tables' only
// writer; this turns each change of a table's live set into an Iceberg
// snapshot (docs/iceberg.md):
//
//   registry commit ──listener──▶ Publish(table): diff the live set against the
//     current snapshot's manifests, rewrite only the manifests whose files
//     changed (a new file lands in the manifest that owns its first block),
//     write a manifest list, and record the snapshot — one KV batch, compare-
//     and-set on the head, so servers sharing the KV never fork the history.
//   loadTable ──▶ Load(table): Publish (catch up), then the metadata JSON of the
//     snapshots still listed, written beside the manifests.
//
// Operation: only files added is "append"; the same rows over the same
// blocks in other files is "replace" (a compaction swap); anything else is
// "overwrite" (a reorg). Changes that land while a Publish runs become one
// snapshot.
//
// One policy with GC: a snapshot superseded by a change that removed files
// is listed until the first of those removals is gc_manifest_grace_period
// old, exactly when table GC may delete the files; the current snapshot is
// always listed. Metadata files go when the last snapshot naming them does.
//
// Thread-safety: safe from many threads and many servers sharing the KV.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "table/names.h"

namespace sediment {
class CounterMetric;
class MetricsRegistry;
namespace kv {
class KvStore;
}
namespace blob {
class BlobStore;
}
namespace table {
class TableService;
struct Snapshot;
struct SegmentRecord;
struct TableInfo;
}  // namespace table
}  // namespace sediment

namespace sediment::iceberg {

struct Head;
struct IcebergSchema;
struct ManifestRef;
struct SnapshotRecord;
struct LiveEntry;
struct ManifestEntry;

struct IcebergOptions {
  // The blob store's root as engines open it: file:///abs/path or s3://bucket/prefix.
  std::string objects_uri;
  // How long a superseded snapshot stays listed after the change that removed its files.
  Duration retention = std::chrono::seconds(1800);
  // A manifest is split in two when its live files pass this many.
  size_t max_manifest_files = 512;
};

struct LoadedTable {
  std::string metadata_location;  // URI of the metadata JSON
  std::string metadata;           // its text
  int64_t snapshot_id = 0;        // current (0: the table has no file yet)
};

// What one Publish did, for tests, metrics and the benchmark.
struct PublishResult {
  bool published = false;  // false: the current snapshot already was the live set
  int64_t snapshot_id = 0;
  std::string operation;
  int manifests_written = 0, manifests_kept = 0;
  int64_t bytes_written = 0;  // manifests and manifest list
};

class IcebergCatalog {
 public:
  IcebergCatalog(table::TableService* tables, std::shared_ptr<kv::KvStore> kv, std::shared_ptr<blob::BlobStore> blobs,
                 std::shared_ptr<Clock> clock, MetricsRegistry* metrics, IcebergOptions options);
  ~IcebergCatalog();  // Stop()

  // Listens to the tables' changes and publishes them in the background; collects expired metadata.
  void Start();
  void Stop();

  // Makes the current snapshot the table's live set (nothing if it is already).
  Result<PublishResult> Publish(const table::TableId& id);
  // Publishes, then the table's metadata as the REST catalog hands it out.
  Result<LoadedTable> Load(const table::TableId& id);
  // Deletes the metadata files and snapshot records that expired; returns files deleted.
  Result<int64_t> Collect(const table::TableId& id);
  // Deletes files under the table's metadata/ that nothing names (left by a publish or a load cut
  // off between writing a file and recording it) and that are older than `older_than`.
  Result<int64_t> SweepOrphans(const table::TableId& id, TimePoint older_than);
  // Queues `id` for the background publisher.
  void Changed(const table::TableId& id);

  static std::string MetadataPrefix(const table::TableId& id);

 private:
  struct Work;
  // Publish for a table whose record and Iceberg schema the caller has read already.
  Result<PublishResult> PublishAs(const table::TableId& id, const table::TableInfo& info, const IcebergSchema& schema);
  Result<PublishResult> PublishOnce(const table::TableId& id, const table::TableInfo& info, const IcebergSchema& schema,
                                    bool* raced);
  int64_t NowMs() const;
  int64_t RetentionMs() const;
  Status RewriteManifests(const table::TableId& id, const IcebergSchema& schema, Work* w);
  Result<std::vector<ManifestEntry>> BucketEntries(const table::TableId& id, const IcebergSchema& schema,
                                                   const ManifestRef& old,
                                                   const std::vector<const table::SegmentRecord*>& files, Work* w);
  Result<ManifestRef> WriteManifestOf(const table::TableId& id, const IcebergSchema& schema,
                                      const std::vector<ManifestEntry>& entries, uint64_t first, int part, Work* w);
  Status WriteSnapshot(const table::TableId& id, Work* w);
  Result<int64_t> PreviousExpiry(const table::TableId& id, const Work& w);
  static std::string OperationOf(const Work& w);
  Status WriteFile(const std::string& path, const std::string& bytes, Work* work);
  Result<std::string> MetadataJson(const table::TableId& id, const Head& head, const IcebergSchema& schema,
                                   const std::vector<SnapshotRecord>& snapshots, int64_t now_ms);
  std::string Uri(const std::string& path) const { return options_.objects_uri + "/" + path; }
  void Loop();
  void RunPending(const std::set<table::TableId>& work, TimePoint* next_collect);

  table::TableService* tables_;
  std::shared_ptr<kv::KvStore> kv_;
  std::shared_ptr<blob::BlobStore> blobs_;
  std::shared_ptr<Clock> clock_;
  IcebergOptions options_;
  CounterMetric* snapshots_published_ = nullptr;
  CounterMetric* bytes_written_ = nullptr;  // manifests and manifest lists

  // One Publish of a table at a time on this server (other servers race through the head's CAS).
  std::shared_ptr<std::mutex> TableLock(const table::TableId& id);
  std::mutex locks_mu_;
  std::map<table::TableId, std::shared_ptr<std::mutex>> table_locks_;  // GUARDED_BY(locks_mu_)
  struct CachedMetadata {
    int64_t seq = 0;
    int schema_id = 0;
    int64_t valid_until_ms = 0;
    LoadedTable loaded;
  };
  std::mutex cache_mu_;
  std::map<table::TableId, CachedMetadata> metadata_cache_;  // GUARDED_BY(cache_mu_)

  std::mutex mu_;
  std::condition_variable cv_;
  std::set<table::TableId> pending_;  // GUARDED_BY(mu_)
  bool stop_ = false;                 // GUARDED_BY(mu_)
  std::thread worker_;
};

}  // namespace sediment::iceberg
