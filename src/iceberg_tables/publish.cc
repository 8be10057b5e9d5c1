// IcebergCatalog::Publish: the live set's change as a snapshot (catalog.h).
#include <arrow/io/interfaces.h>
#include <arrow/type.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "base/crypto.h"
#include "base/metrics.h"
#include "blob/blob.h"
#include "iceberg/file_stats.h"
#include "iceberg/schema.h"
#include "iceberg_tables/catalog.h"
#include "iceberg_tables/records_internal.h"
#include "kv/kv.h"
#include "table/registry.h"
#include "table/table_service.h"

namespace sediment::iceberg {

// One Publish in progress.
struct IcebergCatalog::Work {
  std::string old_raw;  // "" if the table had no head
  Head old_head;
  Head head;  // the new one
  table::Snapshot live;
  int64_t now_ms = 0, snapshot_id = 0, seq = 0;
  int schema_id = 0;
  std::vector<std::vector<const table::SegmentRecord*>> buckets;  // live files per current manifest
  std::vector<std::string> written;                               // files written (deleted if the CAS loses)
  kv::Batch batch;
  std::vector<std::string> replaced;  // manifests no longer current
  int64_t added_files = 0, added_rows = 0, added_size = 0;
  int64_t removed_files = 0, removed_rows = 0, removed_size = 0;
  std::vector<std::string> removed_ids;
  uint64_t removed_lo = UINT64_MAX, removed_hi = 0, added_lo = UINT64_MAX, added_hi = 0;
  std::string removed_hi_hash, added_hi_hash;  // the end hashes at removed_hi and added_hi
  PublishResult result;
};

namespace {

int64_t NewSnapshotId() {
  std::string b = RandomBytes(8);
  uint64_t v = 0;
  for (unsigned char c : b) v = (v << 8) | c;
  return static_cast<int64_t>(v >> 1) | 1;  // positive, never 0
}

std::string Digest(const std::vector<std::string>& ids) {
  std::string all;
  for (const auto& id : ids) all += id + "\n";
  return Sha256Hex(all);
}

// The current manifest that owns a file starting at `start`: the last whose first block is at or before it.
size_t Owner(const std::vector<ManifestRef>& manifests, uint64_t start) {
  size_t i = 0;
  while (i + 1 < manifests.size() && manifests[i + 1].first <= start) ++i;
  return i;
}

}  // namespace

// Under the table's own location, as Iceberg lays tables out: engines that scope the storage
// credentials loadTable gives them to the metadata's parent (DuckDB) then reach the data files too.
std::string IcebergCatalog::MetadataPrefix(const table::TableId& id) {
  return table::TableRegistry::ObjectPrefix(id) + "metadata/";
}

std::shared_ptr<std::mutex> IcebergCatalog::TableLock(const table::TableId& id) {
  std::lock_guard<std::mutex> lock(locks_mu_);
  auto& m = table_locks_[id];
  if (!m) m = std::make_shared<std::mutex>();
  return m;
}

int64_t IcebergCatalog::NowMs() const { return ToUnixMicros(clock_->Now()) / 1000; }

int64_t IcebergCatalog::RetentionMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(options_.retention).count();
}

Result<PublishResult> IcebergCatalog::Publish(const table::TableId& id) {
  ARROW_ASSIGN_OR_RAISE(table::TableInfo info, tables_->GetTable(id));
  ARROW_ASSIGN_OR_RAISE(IcebergSchema schema, IcebergSchemaOf(info));
  return PublishAs(id, info, schema);
}

Result<PublishResult> IcebergCatalog::PublishAs(const table::TableId& id, const table::TableInfo& info,
                                                const IcebergSchema& schema) {
  auto table_lock = TableLock(id);
  std::lock_guard<std::mutex> lock(*table_lock);
  for (int attempt = 0;; ++attempt) {
    bool raced = false;
    auto r = PublishOnce(id, info, schema, &raced);
    if (!raced || attempt >= 5) return r;  // another server published first: diff against its snapshot
  }
}

Result<PublishResult> IcebergCatalog::PublishOnce(const table::TableId& id, const table::TableInfo& info,
                                                  const IcebergSchema& schema_before, bool* raced) {
  Work w;
  auto raw = kv_->Get(HeadKey(id));
  if (!raw.ok() && !IsNotFound(raw.status())) return raw.status();
  if (raw.ok()) {
    w.old_raw = *raw;
    ARROW_ASSIGN_OR_RAISE(w.old_head, DecodeHead(*raw));
  }
  w.now_ms = NowMs();
  ARROW_ASSIGN_OR_RAISE(w.live, tables_->LiveSegments(id));
  bool first = w.old_raw.empty();
  if ((!first && w.live.state.token == w.old_head.token) || (first && w.live.segments.empty())) {
    w.result.snapshot_id = w.old_head.snapshot_id;
    return w.result;
  }
  // The table after the live set: schemas only grow, so every live file's columns are in it.
  ARROW_ASSIGN_OR_RAISE(table::TableInfo now, tables_->GetTable(id));
  std::optional<IcebergSchema> newer;
  if (now.version() != info.version()) {
    ARROW_ASSIGN_OR_RAISE(newer, IcebergSchemaOf(now));
  }
  const IcebergSchema& schema = newer ? *newer : schema_before;
  w.schema_id = schema.schema_id;
  w.head = w.old_head;
  w.head.uuid = first ? TableUuid(info) : w.old_head.uuid;
  w.head.token = w.live.state.token;
  w.seq = w.old_head.seq + 1;
  w.head.seq = w.seq;
  w.snapshot_id = NewSnapshotId();
  w.head.snapshot_id = w.snapshot_id;
  if (w.head.manifests.empty()) w.head.manifests.push_back(ManifestRef{});  // owns every block
  w.buckets.assign(w.head.manifests.size(), {});
  for (const auto& seg : w.live.segments) w.buckets[Owner(w.head.manifests, seg.start)].push_back(&seg);
  ARROW_RETURN_NOT_OK(RewriteManifests(id, schema, &w));
  Status st = WriteSnapshot(id, &w);
  if (st.ok()) st = kv_->Apply(w.batch);
  if (!st.ok()) {
    // Lost the race: nothing names the files. Any other error may have committed them after all.
    if (IsPreconditionFailed(st)) {
      for (const auto& path : w.written) (void)blobs_->Delete(path);
      *raced = true;
    }
    return st;
  }
  if (snapshots_published_) snapshots_published_->Add();
  if (bytes_written_) bytes_written_->Add(static_cast<double>(w.result.bytes_written));
  w.result.published = true;
  w.result.snapshot_id = w.snapshot_id;
  return w.result;
}

Status IcebergCatalog::WriteFile(const std::string& path, const std::string& bytes, Work* work) {
  ARROW_ASSIGN_OR_RAISE(auto out, blobs_->OpenWriter(path));
  work->written.push_back(path);
  ARROW_RETURN_NOT_OK(out->Write(bytes.data(), static_cast<int64_t>(bytes.size())));
  ARROW_RETURN_NOT_OK(out->Close());
  work->result.bytes_written += static_cast<int64_t>(bytes.size());
  return Status::OK();
}

// The entries of one changed manifest: its files that stay (existing), the
// new ones (added, with their column figures from the footer) and those gone
// (deleted).
Result<std::vector<ManifestEntry>> IcebergCatalog::BucketEntries(const table::TableId& id, const IcebergSchema& schema,
                                                                 const ManifestRef& old,
                                                                 const std::vector<const table::SegmentRecord*>& files,
                                                                 Work* w) {
  std::map<std::string, LiveEntry> known;
  if (!old.id.empty()) {
    ARROW_ASSIGN_OR_RAISE(std::string text, kv_->Get(ManifestKey(id, old.id)));
    ARROW_ASSIGN_OR_RAISE(auto entries, DecodeEntries(text));
    for (auto& e : entries) known.emplace(e.file.segment_id, std::move(e));
  }
  std::vector<ManifestEntry> out;
  for (const table::SegmentRecord* seg : files) {
    auto it = known.find(seg->id);
    if (it != known.end()) {
      out.push_back({EntryStatus::kExisting, it->second.snapshot_id, it->second.seq, it->second.file});
      known.erase(it);
      continue;
    }
    DataFile f{seg->path,     Uri(seg->path), seg->id,           seg->start, seg->end,
               seg->end_hash, seg->rows,      seg->stored_bytes, {}};
    ARROW_ASSIGN_OR_RAISE(f.columns, ReadColumnStats(blobs_.get(), seg->path, seg->stored_bytes, schema));
    out.push_back({EntryStatus::kAdded, w->snapshot_id, w->seq, std::move(f)});
    w->added_files++;
    w->added_rows += seg->rows;
    w->added_size += seg->stored_bytes;
    w->added_lo = std::min(w->added_lo, seg->start);
    if (seg->end >= w->added_hi) w->added_hi_hash = seg->end_hash;
    w->added_hi = std::max(w->added_hi, seg->end);
  }
  for (auto& [seg_id, e] : known) {
    w->removed_files++;
    w->removed_rows += e.file.rows;
    w->removed_size += e.file.size;
    w->removed_ids.push_back(seg_id);
    w->removed_lo = std::min(w->removed_lo, e.file.start);
    if (e.file.end >= w->removed_hi) w->removed_hi_hash = e.file.end_hash;
    w->removed_hi = std::max(w->removed_hi, e.file.end);
    out.push_back({EntryStatus::kDeleted, w->snapshot_id, e.seq, std::move(e.file)});
  }
  return out;
}

// Writes one manifest of `entries` (deleted ones included) owning blocks from `first`.
Result<ManifestRef> IcebergCatalog::WriteManifestOf(const table::TableId& id, const IcebergSchema& schema,
                                                    const std::vector<ManifestEntry>& entries, uint64_t first, int part,
                                                    Work* w) {
  ManifestRef ref;
  ref.id = fmt::format("{:06}-{}-{}", w->seq, part, RandomHex(4));
  ref.path = MetadataPrefix(id) + ref.id + "-m.avro";
  ref.first = first;
  ManifestFile& m = ref.file;
  m.uri = Uri(ref.path);
  m.added_snapshot_id = w->snapshot_id;
  m.sequence = w->seq;
  m.min_sequence = w->seq;
  std::vector<std::string> ids;
  std::vector<LiveEntry> live;
  for (const auto& e : entries) {
    if (e.status == EntryStatus::kDeleted) {
      m.deleted_files++;
      m.deleted_rows += e.file.rows;
      continue;
    }
    (e.status == EntryStatus::kAdded ? m.added_files : m.existing_files)++;
    (e.status == EntryStatus::kAdded ? m.added_rows : m.existing_rows) += e.file.rows;
    m.min_sequence = std::min(m.min_sequence, e.sequence);
    ids.push_back(e.file.segment_id);
    live.push_back({e.snapshot_id, e.sequence, e.file});
  }
  ARROW_ASSIGN_OR_RAISE(std::string bytes, WriteManifest(entries, schema.json, schema.schema_id));
  m.length = static_cast<int64_t>(bytes.size());
  ARROW_RETURN_NOT_OK(WriteFile(ref.path, bytes, w));
  ref.digest = Digest(ids);
  ref.live_files = static_cast<int64_t>(ids.size());
  w->batch.Put(ManifestKey(id, ref.id), EncodeEntries(live));
  w->result.manifests_written++;
  return ref;
}

Status IcebergCatalog::RewriteManifests(const table::TableId& id, const IcebergSchema& schema, Work* w) {
  std::vector<ManifestRef> next;
  for (size_t i = 0; i < w->head.manifests.size(); ++i) {
    const ManifestRef& old = w->head.manifests[i];
    std::vector<std::string> ids;
    for (const auto* seg : w->buckets[i]) ids.push_back(seg->id);
    if (!old.id.empty() && Digest(ids) == old.digest) {
      next.push_back(old);
      w->result.manifests_kept++;
      continue;
    }
    if (!old.id.empty()) {
      w->replaced.push_back(old.path);
      w->batch.Delete(ManifestKey(id, old.id));
    }
    ARROW_ASSIGN_OR_RAISE(auto entries, BucketEntries(id, schema, old, w->buckets[i], w));
    // Live entries in block order, deleted ones after them; split when too many.
    size_t live = w->buckets[i].size();
    if (live == 0) continue;  // the manifest goes; its blocks fall to its neighbour
    size_t parts = live > options_.max_manifest_files
                       ? (live + options_.max_manifest_files / 2 - 1) / (options_.max_manifest_files / 2)
                       : 1;
    size_t per = (live + parts - 1) / parts;
    for (size_t p = 0; p < parts; ++p) {
      size_t from = p * per, to = std::min(live, from + per);
      std::vector<ManifestEntry> part(entries.begin() + from, entries.begin() + to);
      if (p == 0) part.insert(part.end(), entries.begin() + live, entries.end());
      uint64_t first = p == 0 ? old.first : part.front().file.start;
      ARROW_ASSIGN_OR_RAISE(auto ref, WriteManifestOf(id, schema, part, first, static_cast<int>(p), w));
      next.push_back(std::move(ref));
    }
  }
  if (!next.empty()) next.front().first = 0;  // the first manifest owns every block before the others
  w->head.manifests = std::move(next);
  return Status::OK();
}

// Append, replace (the same rows over the same blocks in other files), delete or overwrite.
std::string IcebergCatalog::OperationOf(const Work& w) {
  if (w.removed_files == 0) return "append";
  // A swap puts the same rows of the same blocks in other files; a reorg of as many blocks and rows
  // changes the chain, so the last block's hash differs.
  if (w.added_rows == w.removed_rows && w.added_lo == w.removed_lo && w.added_hi == w.removed_hi &&
      w.added_hi_hash == w.removed_hi_hash) {
    return "replace";
  }
  if (w.added_files == 0) return "delete";
  return "overwrite";
}

// When the previous snapshot stops being listed: `retention` after the first
// removal of one of its files (GC deletes that file no earlier), or after now
// if none was removed; never before the snapshots older than it.
Result<int64_t> IcebergCatalog::PreviousExpiry(const table::TableId& id, const Work& w) {
  int64_t from_ms = w.now_ms;
  int64_t retention_ms = RetentionMs();
  if (!w.removed_ids.empty()) {
    ARROW_ASSIGN_OR_RAISE(auto gc, tables_->RemovedFiles(id));
    std::map<std::string, int64_t> removed_at;
    for (const auto& e : gc) removed_at[e.id] = e.removed_at_us / 1000;
    for (const auto& seg_id : w.removed_ids) {
      auto it = removed_at.find(seg_id);
      // Collected already (publishing lagged past the grace period): the file is gone, so the
      // snapshot that named it goes now.
      if (it == removed_at.end()) return std::max<int64_t>(1, w.now_ms);
      from_ms = std::min(from_ms, it->second);
    }
  }
  return std::max<int64_t>(1, std::max(from_ms + retention_ms, w.old_head.expires_floor_ms));
}

Status IcebergCatalog::WriteSnapshot(const table::TableId& id, Work* w) {
  std::vector<ManifestFile> files;
  for (const auto& m : w->head.manifests) files.push_back(m.file);
  std::optional<int64_t> parent;
  if (w->old_head.snapshot_id != 0) parent = w->old_head.snapshot_id;
  ARROW_ASSIGN_OR_RAISE(std::string list, WriteManifestList(files, w->snapshot_id, parent, w->seq));
  SnapshotRecord snap;
  snap.id = w->snapshot_id;
  snap.parent = parent.value_or(0);
  snap.seq = w->seq;
  snap.ts_ms = std::max(w->now_ms, w->old_head.ts_ms);
  snap.schema_id = w->schema_id;
  snap.list_path = MetadataPrefix(id) + fmt::format("snap-{}-{}-{}.avro", w->snapshot_id, w->seq, RandomHex(4));
  ARROW_RETURN_NOT_OK(WriteFile(snap.list_path, list, w));
  const auto& state = w->live.state;
  w->result.operation = OperationOf(*w);
  snap.summary = {{"operation", w->result.operation},
                  {"added-data-files", std::to_string(w->added_files)},
                  {"deleted-data-files", std::to_string(w->removed_files)},
                  {"added-records", std::to_string(w->added_rows)},
                  {"deleted-records", std::to_string(w->removed_rows)},
                  {"added-files-size", std::to_string(w->added_size)},
                  {"removed-files-size", std::to_string(w->removed_size)},
                  {"total-data-files", std::to_string(state.files)},
                  {"total-records", std::to_string(state.rows)},
                  {"total-files-size", std::to_string(state.stored_bytes)},
                  {"total-delete-files", "0"},
                  {"total-position-deletes", "0"},
                  {"total-equality-deletes", "0"},
                  {"manifests-created", std::to_string(w->result.manifests_written)},
                  {"manifests-kept", std::to_string(w->result.manifests_kept)},
                  {"manifests-replaced", std::to_string(w->replaced.size())}};
  w->head.ts_ms = snap.ts_ms;
  if (w->old_head.seq > 0) {
    ARROW_ASSIGN_OR_RAISE(std::string prev_raw, kv_->Get(SnapshotKey(id, w->old_head.seq)));
    ARROW_ASSIGN_OR_RAISE(SnapshotRecord prev, DecodeSnapshot(prev_raw));
    ARROW_ASSIGN_OR_RAISE(prev.expires_ms, PreviousExpiry(id, *w));
    // What only it and older snapshots name goes when the last of them does.
    int64_t last = std::max(prev.expires_ms, w->old_head.expires_floor_ms);
    w->head.expires_floor_ms = last;
    w->batch.Put(SnapshotKey(id, prev.seq), EncodeSnapshot(prev));
    w->batch.Put(TrashKey(id, prev.expires_ms, RandomHex(6)), prev.list_path);
    for (const auto& path : w->replaced) w->batch.Put(TrashKey(id, last, RandomHex(6)), path);
  }
  w->batch.Put(SnapshotKey(id, snap.seq), EncodeSnapshot(snap));
  w->batch.Require(w->old_raw.empty() ? kv::Precondition::Absent(HeadKey(id))
                                      : kv::Precondition::Equals(HeadKey(id), w->old_raw));
  w->batch.Put(HeadKey(id), EncodeHead(w->head));
  return Status::OK();
}

}  // namespace sediment::iceberg
