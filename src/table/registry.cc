#include "table/registry.h"

#include <arrow/buffer.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <arrow/type.h>
#include <arrow/util/base64.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "table/parquet_io.h"

namespace sediment::table {
namespace {

using nlohmann::json;
constexpr int kTableFormatVersion = 1;

std::string TableKey(const TableId& id) { return fmt::format("t/tables/{}/{}", id.dataset, id.table); }
std::string SegPrefix(const TableId& id) { return fmt::format("t/seg/{}/{}/", id.dataset, id.table); }
std::string SegKey(const TableId& id, uint64_t start) { return SegPrefix(id) + fmt::format("{:020}", start); }
std::string GcPrefix(const TableId& id) { return fmt::format("t/gc/{}/{}/", id.dataset, id.table); }
std::string HistPrefix(const TableId& id) { return fmt::format("t/hist/{}/{}/", id.dataset, id.table); }
std::string VerKey(const TableId& id) { return fmt::format("t/ver/{}/{}", id.dataset, id.table); }
std::string HashPrefix(const TableId& id) { return fmt::format("t/bh/{}/{}/", id.dataset, id.table); }
std::string HashKey(const TableId& id, uint64_t block) { return HashPrefix(id) + fmt::format("{:020}", block); }

// A stored block hash: {"v":1,"h":"<hex>"}.
std::string EncodeBlockHash(const std::string& hex) { return json{{"v", 1}, {"h", hex}}.dump(); }

Result<std::string> DecodeBlockHash(const std::string& key, const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("v", 0) != 1 || !j.contains("h") || !j["h"].is_string()) {
    return Status::IOError(fmt::format("{}: malformed block hash record", key));
  }
  return j["h"].get<std::string>();
}

Result<uint64_t> BlockOfHashKey(const TableId& id, const std::string& key) {
  std::string digits = key.substr(HashPrefix(id).size());
  if (digits.size() != 20) return Status::IOError(fmt::format("{}: malformed block hash key", key));
  return std::stoull(digits);
}

std::string NewToken() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return fmt::format("{:016x}", rng());
}

Result<std::string> EncodeSchema(const arrow::Schema& schema) {
  ARROW_ASSIGN_OR_RAISE(auto buf, arrow::ipc::SerializeSchema(schema));
  return arrow::util::base64_encode(std::string_view(reinterpret_cast<const char*>(buf->data()), buf->size()));
}

Result<std::shared_ptr<arrow::Schema>> DecodeSchema(const std::string& b64) {
  ARROW_ASSIGN_OR_RAISE(std::string raw, arrow::util::base64_decode(b64));
  arrow::io::BufferReader reader(std::make_shared<arrow::Buffer>(raw));
  arrow::ipc::DictionaryMemo memo;
  return arrow::ipc::ReadSchema(&reader, &memo);
}

Result<TableInfo> DecodeTable(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("v") || !j.contains("schema")) {
    return InvalidArgument("table record: malformed");
  }
  if (j["v"] != kTableFormatVersion) {
    return InvalidArgument(fmt::format("table record: format version {} is not supported", j["v"].dump()));
  }
  TableInfo t;
  t.id.dataset = j.value("dataset", "");
  t.id.table = j.value("table", "");
  t.created_at_us = j.value("created_at_us", int64_t{0});
  ARROW_ASSIGN_OR_RAISE(t.schema, DecodeSchema(j["schema"].get<std::string>()));
  return t;
}

}  // namespace

std::string TableRegistry::ObjectPrefix(const TableId& id) {
  return fmt::format("tables/{}/{}/", id.dataset, id.table);
}

std::string TableRegistry::SegmentPath(const TableId& id, const std::string& segment_id) {
  return ObjectPrefix(id) + segment_id + ".parquet";
}

Result<bool> TableRegistry::CreateTable(const TableId& id, const std::shared_ptr<arrow::Schema>& schema,
                                        TimePoint now) {
  ARROW_ASSIGN_OR_RAISE(std::string encoded, EncodeSchema(*schema));
  json j = {{"v", kTableFormatVersion},
            {"dataset", id.dataset},
            {"table", id.table},
            {"schema", encoded},
            {"created_at_us", ToUnixMicros(now)}};
  Status st = kv_->SetIf(TableKey(id), j.dump(), std::nullopt);
  if (st.ok()) return true;
  if (!IsPreconditionFailed(st)) return st;
  ARROW_ASSIGN_OR_RAISE(TableInfo existing, GetTable(id));
  if (SameSchema(*existing.schema, *schema)) return false;
  return Conflict(fmt::format("table {} exists with another schema: {}", id.ToString(), existing.schema->ToString()));
}

Result<TableInfo> TableRegistry::GetTable(const TableId& id) {
  auto raw = kv_->Get(TableKey(id));
  if (IsNotFound(raw.status())) return NotFound(fmt::format("table {} not found", id.ToString()));
  ARROW_RETURN_NOT_OK(raw.status());
  return DecodeTable(*raw);
}

Result<std::vector<TableInfo>> TableRegistry::ListTables() {
  std::vector<TableInfo> out;
  ARROW_RETURN_NOT_OK(kv_->ScanAll("t/tables/", "", [&](const kv::KeyValue& kv) -> Result<bool> {
    ARROW_ASSIGN_OR_RAISE(TableInfo t, DecodeTable(kv.value));
    out.push_back(std::move(t));
    return true;
  }));
  return out;
}

Result<Snapshot> TableRegistry::TakeSnapshot(const TableId& id) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    Snapshot snap;
    auto v1 = kv_->Get(VerKey(id));
    if (!v1.ok() && !IsNotFound(v1.status())) return v1.status();
    if (v1.ok()) {
      std::lock_guard<std::mutex> lock(cache_mu_);
      auto it = cache_.find(id);
      if (it != cache_.end() && it->second.version == *v1) return it->second;
    }
    ARROW_RETURN_NOT_OK(kv_->ScanAll(SegPrefix(id), "", [&](const kv::KeyValue& kv) -> Result<bool> {
      ARROW_ASSIGN_OR_RAISE(SegmentRecord s, DecodeSegmentRecord(kv.value));
      snap.segments.push_back(std::move(s));
      return true;
    }));
    auto v2 = kv_->Get(VerKey(id));
    if (!v2.ok() && !IsNotFound(v2.status())) return v2.status();
    std::string a = v1.ok() ? *v1 : "", b = v2.ok() ? *v2 : "";
    if (a == b) {
      snap.version = a;
      if (!a.empty()) {
        std::lock_guard<std::mutex> lock(cache_mu_);
        cache_[id] = snap;
      }
      return snap;
    }
  }
  return Busy(fmt::format("table {} changes too fast to take a snapshot", id.ToString()));
}

Status TableRegistry::Commit(const TableId& id, const LiveSetChange& change, TimePoint now) {
  kv::Batch batch;
  std::set<uint64_t> freed;
  for (const auto& r : change.remove) {
    std::string key = SegKey(id, r.start);
    batch.Require(kv::Precondition::Equals(key, EncodeSegmentRecord(r)));
    batch.Delete(key);
    batch.Put(GcPrefix(id) + r.id, EncodeGcEntry(GcEntry{r.path, r.id, ToUnixMicros(now)}));
    freed.insert(r.start);
  }
  for (const auto& k : change.keep) {
    batch.Require(kv::Precondition::Equals(SegKey(id, k.start), EncodeSegmentRecord(k)));
  }
  for (const auto& a : change.add) {
    std::string key = SegKey(id, a.start);
    if (!freed.count(a.start)) batch.Require(kv::Precondition::Absent(key));
    batch.Put(key, EncodeSegmentRecord(a));
  }
  if (change.expect_version) {
    batch.Require(change.expect_version->empty() ? kv::Precondition::Absent(VerKey(id))
                                                 : kv::Precondition::Equals(VerKey(id), *change.expect_version));
  }
  for (uint64_t b : change.drop_hashes) batch.Delete(HashKey(id, b));
  for (const auto& [b, h] : change.put_hashes) batch.Put(HashKey(id, b), EncodeBlockHash(h));
  batch.Put(VerKey(id), NewToken());
  return kv_->Apply(batch);
}

Status TableRegistry::RecordAppend(const TableId& id, const SegmentRecord& s) {
  json j = {{"v", 1},         {"t_us", s.created_at_us}, {"bytes", s.bytes},
            {"rows", s.rows}, {"start", s.start},        {"end", s.end}};
  return kv_->Set(HistPrefix(id) + fmt::format("{:020}-{}", s.created_at_us, s.id), j.dump());
}

Result<std::vector<AppendRecord>> TableRegistry::AppendHistory(const TableId& id, int64_t since_us) {
  std::vector<AppendRecord> out;
  std::string from = HistPrefix(id) + fmt::format("{:020}", std::max<int64_t>(0, since_us));
  ARROW_RETURN_NOT_OK(kv_->ScanAll(HistPrefix(id), from, [&](const kv::KeyValue& kv) -> Result<bool> {
    json j = json::parse(kv.value, nullptr, false);
    if (j.is_discarded() || j.value("v", 0) != 1) return InvalidArgument("append history: malformed record");
    out.push_back({j.value("t_us", int64_t{0}), j.value("bytes", int64_t{0}), j.value("rows", int64_t{0}),
                   j.value("start", uint64_t{0}), j.value("end", uint64_t{0})});
    return true;
  }));
  return out;
}

Status TableRegistry::PruneHistory(const TableId& id, int64_t before_us) {
  std::string end = HistPrefix(id) + fmt::format("{:020}", std::max<int64_t>(0, before_us));
  std::vector<std::string> old;
  ARROW_RETURN_NOT_OK(kv_->ScanAll(HistPrefix(id), "", [&](const kv::KeyValue& kv) -> Result<bool> {
    if (kv.key >= end) return false;
    old.push_back(kv.key);
    return true;
  }));
  for (const auto& k : old) ARROW_RETURN_NOT_OK(kv_->Delete(k));
  return Status::OK();
}

Result<std::optional<std::string>> TableRegistry::BlockHash(const TableId& id, uint64_t block) {
  std::string key = HashKey(id, block);
  auto raw = kv_->Get(key);
  if (IsNotFound(raw.status())) return std::optional<std::string>();
  ARROW_RETURN_NOT_OK(raw.status());
  ARROW_ASSIGN_OR_RAISE(std::string hex, DecodeBlockHash(key, *raw));
  return std::optional<std::string>(std::move(hex));
}

Result<std::vector<uint64_t>> TableRegistry::HashedBlocksFrom(const TableId& id, uint64_t from) {
  std::vector<uint64_t> out;
  ARROW_RETURN_NOT_OK(kv_->ScanAll(HashPrefix(id), HashKey(id, from), [&](const kv::KeyValue& kv) -> Result<bool> {
    ARROW_ASSIGN_OR_RAISE(uint64_t b, BlockOfHashKey(id, kv.key));
    out.push_back(b);
    return true;
  }));
  return out;
}

Status TableRegistry::PruneBlockHashes(const TableId& id, uint64_t before) {
  std::string end = HashKey(id, before);
  std::vector<std::string> old;
  ARROW_RETURN_NOT_OK(kv_->ScanAll(HashPrefix(id), "", [&](const kv::KeyValue& kv) -> Result<bool> {
    if (kv.key >= end) return false;
    old.push_back(kv.key);
    return true;
  }));
  for (const auto& k : old) ARROW_RETURN_NOT_OK(kv_->Delete(k));
  return Status::OK();
}

Result<std::vector<GcEntry>> TableRegistry::ListGc(const TableId& id) {
  std::vector<GcEntry> out;
  ARROW_RETURN_NOT_OK(kv_->ScanAll(GcPrefix(id), "", [&](const kv::KeyValue& kv) -> Result<bool> {
    ARROW_ASSIGN_OR_RAISE(GcEntry e, DecodeGcEntry(kv.value));
    out.push_back(std::move(e));
    return true;
  }));
  return out;
}

Status TableRegistry::RemoveGcEntry(const TableId& id, const std::string& segment_id) {
  kv::Batch batch;
  batch.Require(kv::Precondition::Present(GcPrefix(id) + segment_id));
  batch.Delete(GcPrefix(id) + segment_id);
  return kv_->Apply(batch);
}

}  // namespace sediment::table
