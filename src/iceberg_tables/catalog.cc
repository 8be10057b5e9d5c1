// IcebergCatalog: construction, the background publisher and collector, and
// what loadTable hands out (the metadata JSON). Publishing is in publish.cc.
#include "iceberg_tables/catalog.h"

#include <arrow/io/interfaces.h>
#include <arrow/type.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "base/crypto.h"
#include "base/metrics.h"
#include "blob/blob.h"
#include "iceberg/schema.h"
#include "iceberg_tables/records_internal.h"
#include "kv/kv.h"
#include "table/table_service.h"

namespace sediment::iceberg {

using nlohmann::json;

IcebergCatalog::IcebergCatalog(table::TableService* tables, std::shared_ptr<kv::KvStore> kv,
                               std::shared_ptr<blob::BlobStore> blobs, std::shared_ptr<Clock> clock,
                               MetricsRegistry* metrics, IcebergOptions options)
    : tables_(tables),
      kv_(std::move(kv)),
      blobs_(std::move(blobs)),
      clock_(std::move(clock)),
      options_(std::move(options)) {
  if (metrics != nullptr) {
    snapshots_published_ =
        &metrics->Counter("iceberg_snapshots_published_total", "Iceberg snapshots published (one per live-set change).")
             .With({});
    bytes_written_ = &metrics
                          ->Counter("iceberg_metadata_bytes_written_total",
                                    "Bytes of Iceberg manifests and manifest lists written by published snapshots.")
                          .With({});
  }
}

IcebergCatalog::~IcebergCatalog() { Stop(); }

void IcebergCatalog::Start() {
  tables_->AddChangeListener([this](const table::TableId& id) { Changed(id); });
  worker_ = std::thread([this] { Loop(); });
}

void IcebergCatalog::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void IcebergCatalog::Changed(const table::TableId& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.insert(id);
  }
  cv_.notify_all();
}

void IcebergCatalog::Loop() {
  auto next_collect = clock_->Now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return stop_ || !pending_.empty(); });
    if (stop_) break;
    std::set<table::TableId> work = std::move(pending_);
    pending_.clear();
    lock.unlock();
    for (const auto& id : work) {
      auto r = Publish(id);
      if (!r.ok())
        spdlog::warn("iceberg: publishing a snapshot of {} failed (next change retries): {}", id.ToString(),
                     r.status().ToString());
    }
    if (clock_->Now() >= next_collect) {
      next_collect = clock_->Now() + std::chrono::minutes(1);
      auto all = tables_->ListTables();
      for (const auto& info : all.ok() ? *all : std::vector<table::TableInfo>{}) {
        auto n = Collect(info.id);
        if (!n.ok()) spdlog::warn("iceberg: collecting {} failed: {}", info.id.ToString(), n.status().ToString());
      }
    }
    lock.lock();
  }
}

Result<int64_t> IcebergCatalog::Collect(const table::TableId& id) {
  int64_t now_ms = NowMs();
  int64_t deleted = 0;
  // Trash keys sort by expiry: stop at the first that is not due.
  ARROW_RETURN_NOT_OK(kv_->ScanAll(TrashPrefix(id), "", [&](const kv::KeyValue& item) -> Result<bool> {
    int64_t expires = 0;
    std::string_view digits = std::string_view(item.key).substr(TrashPrefix(id).size(), 20);
    if (std::from_chars(digits.data(), digits.data() + digits.size(), expires).ec != std::errc()) {
      return InvalidArgument(fmt::format("iceberg: trash key {} has no expiry", item.key));
    }
    if (expires > now_ms) return false;
    Status st = blobs_->Delete(item.value);
    if (!st.ok() && !IsNotFound(st)) return st;
    ARROW_RETURN_NOT_OK(kv_->Delete(item.key));
    deleted++;
    return true;
  }));
  ARROW_RETURN_NOT_OK(kv_->ScanAll(SnapshotPrefix(id), "", [&](const kv::KeyValue& item) -> Result<bool> {
    ARROW_ASSIGN_OR_RAISE(SnapshotRecord s, DecodeSnapshot(item.value));
    if (s.expires_ms != 0 && s.expires_ms <= now_ms) ARROW_RETURN_NOT_OK(kv_->Delete(item.key));
    return true;
  }));
  return deleted;
}

Result<int64_t> IcebergCatalog::SweepOrphans(const table::TableId& id, TimePoint older_than) {
  std::set<std::string> named;
  auto raw = kv_->Get(HeadKey(id));
  if (!raw.ok() && !IsNotFound(raw.status())) return raw.status();
  if (raw.ok()) {
    ARROW_ASSIGN_OR_RAISE(Head head, DecodeHead(*raw));
    for (const auto& m : head.manifests) named.insert(m.path);
  }
  ARROW_RETURN_NOT_OK(kv_->ScanAll(SnapshotPrefix(id), "", [&](const kv::KeyValue& item) -> Result<bool> {
    ARROW_ASSIGN_OR_RAISE(SnapshotRecord s, DecodeSnapshot(item.value));
    named.insert(s.list_path);
    return true;
  }));
  ARROW_RETURN_NOT_OK(kv_->ScanAll(TrashPrefix(id), "", [&](const kv::KeyValue& item) -> Result<bool> {
    named.insert(item.value);  // deleted on its own schedule
    return true;
  }));
  ARROW_ASSIGN_OR_RAISE(auto files, blobs_->List(MetadataPrefix(id)));
  int64_t removed = 0;
  for (const auto& f : files) {
    if (named.count(f.path) || f.mtime >= older_than) continue;
    Status st = blobs_->Delete(f.path);
    if (!st.ok() && !IsNotFound(st)) return st;
    removed++;
  }
  if (removed > 0) spdlog::info("iceberg: deleted {} unrecorded metadata file(s) of {}", removed, id.ToString());
  return removed;
}

Result<LoadedTable> IcebergCatalog::Load(const table::TableId& id) {
  ARROW_ASSIGN_OR_RAISE(table::TableInfo info, tables_->GetTable(id));
  ARROW_ASSIGN_OR_RAISE(IcebergSchema schema, IcebergSchemaOf(info));
  ARROW_RETURN_NOT_OK(PublishAs(id, info, schema).status());
  Head head;
  auto raw = kv_->Get(HeadKey(id));
  if (!raw.ok() && !IsNotFound(raw.status())) return raw.status();
  if (raw.ok()) {
    ARROW_ASSIGN_OR_RAISE(head, DecodeHead(*raw));
  }
  int64_t now_ms = NowMs();
  // A metadata file outlives its use by the grace period, and by ten minutes at least.
  int64_t retention_ms = std::max<int64_t>(RetentionMs(), 600000);
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = metadata_cache_.find(id);
    if (it != metadata_cache_.end() && it->second.seq == head.seq && it->second.schema_id == schema.schema_id &&
        head.seq > 0 && now_ms < it->second.valid_until_ms) {
      return it->second.loaded;
    }
  }
  std::vector<SnapshotRecord> listed;
  ARROW_RETURN_NOT_OK(kv_->ScanAll(SnapshotPrefix(id), "", [&](const kv::KeyValue& item) -> Result<bool> {
    ARROW_ASSIGN_OR_RAISE(SnapshotRecord s, DecodeSnapshot(item.value));
    // Not those another server published since the head was read; the head's own, even if that
    // server superseded it meanwhile.
    if (s.seq < head.seq && s.expires_ms != 0 && s.expires_ms <= now_ms) return true;
    if (s.seq <= head.seq) listed.push_back(std::move(s));
    return true;
  }));
  if (head.uuid.empty()) head.uuid = TableUuid(info);  // a table with no file yet
  ARROW_ASSIGN_OR_RAISE(std::string text, MetadataJson(id, head, schema, listed, now_ms));
  LoadedTable out;
  out.snapshot_id = head.snapshot_id;
  out.metadata = std::move(text);
  std::string path = MetadataPrefix(id) + fmt::format("{:06}-{}.metadata.json", head.seq, RandomHex(8));
  ARROW_ASSIGN_OR_RAISE(auto file, blobs_->OpenWriter(path));
  ARROW_RETURN_NOT_OK(file->Write(out.metadata.data(), static_cast<int64_t>(out.metadata.size())));
  ARROW_RETURN_NOT_OK(file->Close());
  // A metadata file serves loads for half the retention, and stays readable for all of it.
  ARROW_RETURN_NOT_OK(kv_->Set(TrashKey(id, now_ms + retention_ms, RandomHex(6)), path));
  out.metadata_location = Uri(path);
  // Served again until a listed snapshot expires (or half the retention: the file must outlive its use).
  int64_t valid_until = now_ms + retention_ms / 2;
  for (const auto& s : listed) {
    if (s.expires_ms != 0 && s.seq < head.seq) valid_until = std::min(valid_until, s.expires_ms);
  }
  std::lock_guard<std::mutex> lock(cache_mu_);
  metadata_cache_[id] = {head.seq, schema.schema_id, valid_until, out};
  return out;
}

Result<std::string> IcebergCatalog::MetadataJson(const table::TableId& id, const Head& head,
                                                 const IcebergSchema& schema,
                                                 const std::vector<SnapshotRecord>& snapshots, int64_t now_ms) {
  json snaps = json::array(), log = json::array();
  for (const auto& s : snapshots) {
    json j = {{"snapshot-id", s.id},     {"sequence-number", s.seq},
              {"timestamp-ms", s.ts_ms}, {"manifest-list", Uri(s.list_path)},
              {"summary", s.summary},    {"schema-id", std::min(s.schema_id, schema.schema_id)}};
    if (s.parent != 0) j["parent-snapshot-id"] = s.parent;
    snaps.push_back(j);
    log.push_back({{"timestamp-ms", s.ts_ms}, {"snapshot-id", s.id}});
  }
  json schemas = json::array();
  for (const auto& v : schema.schemas) schemas.push_back(json::parse(v));
  json m = {{"format-version", 2},
            {"table-uuid", head.uuid},
            {"location",
             Uri(table::TableRegistry::ObjectPrefix(id).substr(0, table::TableRegistry::ObjectPrefix(id).size() - 1))},
            {"last-sequence-number", head.seq},
            {"last-updated-ms", std::max(head.ts_ms, snapshots.empty() ? now_ms : snapshots.back().ts_ms)},
            {"last-column-id", schema.last_column_id},
            {"current-schema-id", schema.schema_id},
            {"schemas", schemas},
            {"default-spec-id", 0},
            {"partition-specs", json::array({{{"spec-id", 0}, {"fields", json::array()}}})},
            {"last-partition-id", 999},
            {"default-sort-order-id", 0},
            {"sort-orders", json::array({{{"order-id", 0}, {"fields", json::array()}}})},
            {"properties",
             {{"schema.name-mapping.default", schema.name_mapping},
              {"sediment.writer", "sediment (the only writer: engines read)"}}},
            {"snapshots", snaps},
            {"snapshot-log", log},
            {"metadata-log", json::array()}};
  if (head.snapshot_id != 0) {
    m["current-snapshot-id"] = head.snapshot_id;
    m["refs"] = {{"main", {{"snapshot-id", head.snapshot_id}, {"type", "branch"}}}};
  } else {
    m["current-snapshot-id"] = -1;
    m["refs"] = json::object();
  }
  return m.dump();
}

}  // namespace sediment::iceberg
