#include "table/registry.h"

#include <arrow/buffer.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <arrow/type.h>
#include <arrow/util/base64.h>
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "base/crypto.h"
#include "table/keys.h"
#include "table/parquet_io.h"

namespace sediment::table {
namespace {

using nlohmann::json;
constexpr int kTableFormatVersion = 1;

// A stored block hash: {"v":1,"h":"<hex>"}.
std::string EncodeBlockHash(const std::string& hex) { return json{{"v", 1}, {"h", hex}}.dump(); }

Result<std::string> DecodeBlockHash(const std::string& key, const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("v", 0) != 1 || !j.contains("h") || !j["h"].is_string()) {
    return Status::IOError(fmt::format("{}: malformed block hash record", key));
  }
  return j["h"].get<std::string>();
}

// The state record: {"v":2,"token":…,"files":…,…}. Stores written before it
// existed hold a bare token there; LoadState counts those once.
constexpr int kStateFormatVersion = 2;

std::string EncodeState(const TableState& st) {
  json j = {{"v", kStateFormatVersion}, {"token", st.token}, {"files", st.files},
            {"rows", st.rows},          {"bytes", st.bytes}, {"stored_bytes", st.stored_bytes}};
  if (!st.empty()) {
    j["first"] = st.first;
    j["last"] = st.last;
    j["end"] = st.end;
  }
  return j.dump();
}

Result<TableState> DecodeState(const std::string& key, const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("v", 0) != kStateFormatVersion || !j.contains("token")) {
    return Status::IOError(fmt::format("{}: malformed table state record", key));
  }
  TableState st;
  st.token = j.value("token", "");
  st.files = j.value("files", int64_t{0});
  st.rows = j.value("rows", int64_t{0});
  st.bytes = j.value("bytes", int64_t{0});
  st.stored_bytes = j.value("stored_bytes", int64_t{0});
  st.first = j.value("first", uint64_t{0});
  st.last = j.value("last", uint64_t{0});
  st.end = j.value("end", uint64_t{0});
  if (st.files < 0 || (!st.empty() && (st.first > st.last || st.last > st.end))) {
    return Status::IOError(fmt::format("{}: inconsistent table state record: {}", key, text));
  }
  return st;
}

void Count(TableState* st, const SegmentRecord& s, int sign) {
  st->files += sign;
  st->rows += sign * s.rows;
  st->bytes += sign * s.bytes;
  st->stored_bytes += sign * s.stored_bytes;
}

// The first block a segment file's name ("<start>-<hex>.parquet") carries.
std::optional<uint64_t> StartOfPath(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string_view name = std::string_view(path).substr(slash == std::string::npos ? 0 : slash + 1);
  size_t dash = name.find('-');
  if (dash == 0 || dash == std::string_view::npos || dash > 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : name.substr(0, dash)) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::string NewToken() { return RandomHex(8); }

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
  // Version 2: a record with a schema history (servers before it would misread such a table's files).
  if (j["v"] != kTableFormatVersion && j["v"] != 2) {
    return InvalidArgument(fmt::format("table record: format version {} is not supported", j["v"].dump()));
  }
  TableInfo t;
  t.id.dataset = j.value("dataset", "");
  t.id.table = j.value("table", "");
  t.created_at_us = j.value("created_at_us", int64_t{0});
  ARROW_ASSIGN_OR_RAISE(t.schema, DecodeSchema(j["schema"].get<std::string>()));
  if (j.contains("history")) {
    if (!j["history"].is_array()) return InvalidArgument("table record: history is not a list");
    for (const auto& h : j["history"]) {
      if (!h.is_string()) return InvalidArgument("table record: a schema in history is not a string");
      ARROW_ASSIGN_OR_RAISE(auto old, DecodeSchema(h.get<std::string>()));
      t.history.push_back(std::move(old));
    }
  }
  return t;
}

// InvalidArgument unless `next` is `current` with new nullable fields after its own.
Status CheckEvolution(const TableId& id, const arrow::Schema& current, const arrow::Schema& next) {
  const std::string table = id.ToString();
  for (int i = 0; i < current.num_fields(); ++i) {
    const auto& f = *current.field(i);
    if (i >= next.num_fields()) {
      return InvalidArgument(
          fmt::format("table {}: the new schema drops column \"{}\"; columns can only be added", table, f.name()));
    }
    const auto& g = *next.field(i);
    if (g.name() != f.name()) {
      return InvalidArgument(fmt::format(
          "table {}: column {} is \"{}\" in the new schema, \"{}\" now; columns can only be added after the last",
          table, i + 1, g.name(), f.name()));
    }
    if (!g.Equals(f, /*check_metadata=*/false)) {
      return InvalidArgument(fmt::format("table {}: column \"{}\" changes from {}{} to {}{}; columns cannot change",
                                         table, f.name(), f.type()->ToString(), f.nullable() ? "" : " not null",
                                         g.type()->ToString(), g.nullable() ? "" : " not null"));
    }
  }
  for (int i = current.num_fields(); i < next.num_fields(); ++i) {
    const auto& g = *next.field(i);
    if (!g.nullable()) {
      return InvalidArgument(
          fmt::format("table {}: new column \"{}\" must be nullable (the rows already written have no value in it)",
                      table, g.name()));
    }
    if (next.GetFieldIndex(g.name()) != i) {
      return InvalidArgument(fmt::format("table {}: column \"{}\" appears twice", table, g.name()));
    }
  }
  return Status::OK();
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

Result<bool> TableRegistry::EvolveTable(const TableId& id, const std::shared_ptr<arrow::Schema>& schema) {
  for (;;) {
    auto raw = kv_->Get(TableKey(id));
    if (IsNotFound(raw.status())) return NotFound(fmt::format("table {} not found", id.ToString()));
    ARROW_RETURN_NOT_OK(raw.status());
    ARROW_ASSIGN_OR_RAISE(TableInfo t, DecodeTable(*raw));
    if (SameSchema(*t.schema, *schema)) return false;
    ARROW_RETURN_NOT_OK(CheckEvolution(id, *t.schema, *schema));
    // The table's own fields as they are (their metadata says how files store them: stored_types.h),
    // then the new ones.
    arrow::FieldVector fields = t.schema->fields();
    for (int i = t.schema->num_fields(); i < schema->num_fields(); ++i) fields.push_back(schema->field(i));
    json j = json::parse(*raw);
    json history = j.contains("history") ? j["history"] : json::array();
    history.push_back(j["schema"]);
    ARROW_ASSIGN_OR_RAISE(std::string encoded, EncodeSchema(*arrow::schema(fields, t.schema->metadata())));
    j["schema"] = encoded;
    j["history"] = history;
    j["v"] = 2;
    Status st = kv_->SetIf(TableKey(id), j.dump(), *raw);
    if (st.ok()) return true;
    if (!IsPreconditionFailed(st)) return st;  // changed meanwhile: check against what it is now
  }
}

Result<TableInfo> TableRegistry::GetTable(const TableId& id) {
  auto raw = kv_->Get(TableKey(id));
  if (IsNotFound(raw.status())) return NotFound(fmt::format("table {} not found", id.ToString()));
  ARROW_RETURN_NOT_OK(raw.status());
  return DecodeTable(*raw);
}

Result<std::vector<TableInfo>> TableRegistry::ListTables() {
  std::vector<TableInfo> out;
  ARROW_RETURN_NOT_OK(kv_->ScanAll(TablesPrefix(), "", [&](const kv::KeyValue& kv) -> Result<bool> {
    ARROW_ASSIGN_OR_RAISE(TableInfo t, DecodeTable(kv.value));
    out.push_back(std::move(t));
    return true;
  }));
  return out;
}

Result<std::vector<TableInfo>> TableRegistry::ListTables(const std::string& after, const std::string& dataset,
                                                         size_t limit, bool* has_more) {
  std::vector<TableInfo> out;
  *has_more = false;
  std::string prefix = dataset.empty() ? TablesPrefix() : DatasetTablesPrefix(dataset);
  std::string from = after.empty() ? "" : TablesPrefix() + after + std::string(1, '\0');
  ARROW_RETURN_NOT_OK(kv_->ScanAll(prefix, from, [&](const kv::KeyValue& kv) -> Result<bool> {
    if (out.size() == limit) {
      *has_more = true;
      return false;
    }
    ARROW_ASSIGN_OR_RAISE(TableInfo t, DecodeTable(kv.value));
    out.push_back(std::move(t));
    return true;
  }));
  return out;
}

Result<std::vector<TableId>> TableRegistry::TablesWithSegments(const std::optional<TableId>& after, size_t limit) {
  std::vector<TableId> out;
  std::string from = after ? StateKey(*after) + std::string(1, '\0') : "";
  ARROW_RETURN_NOT_OK(kv_->ScanAll(
      StatesPrefix(), from,
      [&](const kv::KeyValue& kv) -> Result<bool> {
        if (out.size() == limit) return false;
        std::optional<TableId> table = TableOfStateKey(kv.key);
        if (!table) return Status::IOError(fmt::format("{}: malformed table state key", kv.key));
        out.push_back(std::move(*table));
        return true;
      },
      std::min<size_t>(limit + 1, 1024)));
  return out;
}

Result<TableState> TableRegistry::LoadState(const TableId& id, std::string* raw) {
  auto got = kv_->Get(StateKey(id));
  if (IsNotFound(got.status())) {
    raw->clear();
    return TableState{};
  }
  ARROW_RETURN_NOT_OK(got.status());
  *raw = std::move(*got);
  if (!raw->empty() && raw->front() == '{') return DecodeState(StateKey(id), *raw);
  // A bare token, from before the state record: count the live set once
  // (the next change stores the state).
  TableState st;
  st.token = *raw;
  bool first = true;
  ARROW_RETURN_NOT_OK(kv_->ScanAll(SegmentsPrefix(id), "", [&](const kv::KeyValue& kv) -> Result<bool> {
    ARROW_ASSIGN_OR_RAISE(SegmentRecord s, DecodeSegmentRecord(kv.value));
    Count(&st, s, +1);
    if (first) st.first = s.start;
    first = false;
    st.last = s.start;
    st.end = s.end;
    return true;
  }));
  return st;
}

Result<TableState> TableRegistry::State(const TableId& id) {
  std::string raw;
  return LoadState(id, &raw);
}

Result<SegmentRecord> TableRegistry::Segment(const TableId& id, uint64_t start) {
  auto raw = kv_->Get(SegmentKey(id, start));
  if (IsNotFound(raw.status())) {
    return NotFound(fmt::format("table {}: no live segment starts at block {}", id.ToString(), start));
  }
  ARROW_RETURN_NOT_OK(raw.status());
  return DecodeSegmentRecord(*raw);
}

Result<Snapshot> TableRegistry::TakeSnapshot(const TableId& id) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    Snapshot snap;
    std::string v1, v2;
    ARROW_ASSIGN_OR_RAISE(snap.state, LoadState(id, &v1));
    if (!v1.empty()) {
      std::lock_guard<std::mutex> lock(cache_mu_);
      auto it = cache_.find(id);
      if (it != cache_.end() && it->second.state == snap.state) return it->second;
    }
    ARROW_RETURN_NOT_OK(kv_->ScanAll(SegmentsPrefix(id), "", [&](const kv::KeyValue& kv) -> Result<bool> {
      ARROW_ASSIGN_OR_RAISE(SegmentRecord s, DecodeSegmentRecord(kv.value));
      snap.segments.push_back(std::move(s));
      return true;
    }));
    ARROW_RETURN_NOT_OK(LoadState(id, &v2).status());
    if (v1 == v2) {
      if (!v1.empty()) {
        std::lock_guard<std::mutex> lock(cache_mu_);
        cache_[id] = snap;
      }
      return snap;
    }
  }
  return Busy(fmt::format("table {} changes too fast to take a snapshot", id.ToString()));
}

Result<Snapshot> TableRegistry::TakeSnapshot(const TableId& id, uint64_t from, uint64_t to) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    Snapshot snap;
    std::string v1, v2;
    ARROW_ASSIGN_OR_RAISE(snap.state, LoadState(id, &v1));
    if (!snap.state.empty() && from <= to && from <= snap.state.end && to >= snap.state.first) {
      // The segment holding `from` (if any) starts at or before it.
      ARROW_ASSIGN_OR_RAISE(auto floor, kv_->Floor(SegmentsPrefix(id), SegmentKey(id, from)));
      std::string begin = floor ? floor->key : SegmentKey(id, from);
      ARROW_RETURN_NOT_OK(kv_->ScanAll(
          SegmentsPrefix(id), begin,
          [&](const kv::KeyValue& kv) -> Result<bool> {
            ARROW_ASSIGN_OR_RAISE(SegmentRecord s, DecodeSegmentRecord(kv.value));
            if (s.start > to) return false;
            if (s.end >= from) snap.segments.push_back(std::move(s));
            return true;
          },
          16));
    }
    ARROW_RETURN_NOT_OK(LoadState(id, &v2).status());
    if (v1 == v2) return snap;
  }
  return Busy(fmt::format("table {} changes too fast to take a snapshot", id.ToString()));
}

Result<SegmentPage> TableRegistry::ListSegments(const TableId& id, std::optional<uint64_t> after, size_t limit) {
  SegmentPage page;
  std::string from = after ? SegmentKey(id, *after) + std::string(1, '\0') : "";
  ARROW_RETURN_NOT_OK(kv_->ScanAll(
      SegmentsPrefix(id), from,
      [&](const kv::KeyValue& kv) -> Result<bool> {
        if (page.segments.size() == limit) {
          page.has_more = true;
          return false;
        }
        ARROW_ASSIGN_OR_RAISE(SegmentRecord s, DecodeSegmentRecord(kv.value));
        page.segments.push_back(std::move(s));
        return true;
      },
      limit + 1));
  return page;
}

Result<bool> TableRegistry::IsLive(const TableId& id, const std::string& path) {
  std::optional<uint64_t> start = StartOfPath(path);
  if (!start) {
    ARROW_ASSIGN_OR_RAISE(Snapshot snap, TakeSnapshot(id));
    for (const auto& s : snap.segments) {
      if (s.path == path) return true;
    }
    return false;
  }
  auto seg = Segment(id, *start);
  if (IsNotFound(seg.status())) return false;
  ARROW_RETURN_NOT_OK(seg.status());
  return seg->path == path;
}

Result<TableState> TableRegistry::NextState(const TableId& id, const TableState& state, const LiveSetChange& change) {
  TableState next = state;
  std::set<uint64_t> removed;
  for (const auto& r : change.remove) {
    Count(&next, r, -1);
    removed.insert(r.start);
  }
  for (const auto& a : change.add) Count(&next, a, +1);
  if (next.files < 0) {
    return Status::IOError(fmt::format("table {}: the change removes more segments than are live", id.ToString()));
  }
  if (next.files == 0) {
    next.first = next.last = next.end = 0;
    return next;
  }
  // The last segment: the greatest start among those that stay and the added.
  std::optional<std::pair<uint64_t, uint64_t>> last;  // start, end
  if (!state.empty()) {
    if (!removed.count(state.last)) {
      last = {state.last, state.end};
    } else {
      // Walk back over removed segments (one floor lookup each).
      std::string at = SegmentKey(id, state.last);
      while (true) {
        ARROW_ASSIGN_OR_RAISE(auto floor, kv_->Floor(SegmentsPrefix(id), at));
        if (!floor) break;
        ARROW_ASSIGN_OR_RAISE(SegmentRecord s, DecodeSegmentRecord(floor->value));
        if (!removed.count(s.start)) {
          last = {s.start, s.end};
          break;
        }
        if (s.start == 0) break;
        at = SegmentKey(id, s.start - 1);
      }
    }
  }
  // The first segment: the smallest start among those that stay and the added.
  std::optional<uint64_t> first;
  if (!state.empty()) {
    if (!removed.count(state.first)) {
      first = state.first;
    } else {
      ARROW_RETURN_NOT_OK(
          kv_->ScanAll(SegmentsPrefix(id), SegmentKey(id, state.first), [&](const kv::KeyValue& kv) -> Result<bool> {
            ARROW_ASSIGN_OR_RAISE(SegmentRecord s, DecodeSegmentRecord(kv.value));
            if (removed.count(s.start)) return true;
            first = s.start;
            return false;
          }));
    }
  }
  for (const auto& a : change.add) {
    if (!last || a.start > last->first) last = {a.start, a.end};
    if (!first || a.start < *first) first = a.start;
  }
  if (!last || !first) {
    return Status::IOError(
        fmt::format("table {}: the live set's ends cannot be found after the change", id.ToString()));
  }
  next.first = *first;
  next.last = last->first;
  next.end = last->second;
  return next;
}

Result<bool> TableRegistry::SegmentsStillHold(const TableId& id, const LiveSetChange& change) {
  auto unchanged = [&](const SegmentRecord& r) -> Result<bool> {
    auto raw = kv_->Get(SegmentKey(id, r.start));
    if (IsNotFound(raw.status())) return false;
    ARROW_RETURN_NOT_OK(raw.status());
    return *raw == EncodeSegmentRecord(r);
  };
  std::set<uint64_t> freed;
  for (const auto& r : change.remove) {
    ARROW_ASSIGN_OR_RAISE(bool same, unchanged(r));
    if (!same) return false;
    freed.insert(r.start);
  }
  for (const auto& k : change.keep) {
    ARROW_ASSIGN_OR_RAISE(bool same, unchanged(k));
    if (!same) return false;
  }
  for (const auto& a : change.add) {
    if (freed.count(a.start)) continue;
    auto raw = kv_->Get(SegmentKey(id, a.start));
    if (!IsNotFound(raw.status())) {
      ARROW_RETURN_NOT_OK(raw.status());
      return false;
    }
  }
  return true;
}

Result<TableState> TableRegistry::Commit(const TableId& id, const LiveSetChange& change, TimePoint now) {
  for (const auto& a : change.add) {
    // IsLive finds a segment by the first block its file name carries.
    if (StartOfPath(a.path) != std::optional<uint64_t>(a.start)) {
      return InvalidArgument(
          fmt::format("table {}: segment file {} does not name its first block {}", id.ToString(), a.path, a.start));
    }
  }
  for (int attempt = 0;; ++attempt) {
    std::string raw;
    ARROW_ASSIGN_OR_RAISE(TableState state, LoadState(id, &raw));
    if (change.expect_version && state.token != *change.expect_version) {
      return PreconditionFailed(fmt::format("table {}: the live set changed", id.ToString()));
    }
    ARROW_ASSIGN_OR_RAISE(TableState next, NextState(id, state, change));
    next.token = NewToken();
    kv::Batch batch = CommitBatch(id, change, now);
    batch.Require(raw.empty() ? kv::Precondition::Absent(StateKey(id)) : kv::Precondition::Equals(StateKey(id), raw));
    batch.Put(StateKey(id), EncodeState(next));
    Status st = kv_->Apply(batch);
    if (st.ok()) {
      UpdateCache(id, state, next, change);
      if (on_commit_) on_commit_(id);
      return next;
    }
    // Only the state moved (another change landed beside ours): apply ours to the new state.
    if (!IsPreconditionFailed(st) || attempt >= 50) return st;
    ARROW_ASSIGN_OR_RAISE(bool holds, SegmentsStillHold(id, change));
    if (!holds) return st;
  }
}

// A snapshot cached at exactly the state this commit replaced becomes the
// new state's by applying the change (the commit's precondition on the state
// record says nothing else landed in between): a pass after each append does
// not read the whole live set again. Any other cached snapshot is stale and
// is read again when next asked for (its state differs).
void TableRegistry::UpdateCache(const TableId& id, const TableState& before, const TableState& after,
                                const LiveSetChange& change) {
  std::lock_guard<std::mutex> lock(cache_mu_);
  auto it = cache_.find(id);
  if (it == cache_.end() || !(it->second.state == before)) return;
  std::set<std::string> removed;
  for (const auto& r : change.remove) removed.insert(r.id);
  auto& segments = it->second.segments;
  std::erase_if(segments, [&](const SegmentRecord& s) { return removed.count(s.id) > 0; });
  for (const auto& a : change.add) {
    auto stored = DecodeSegmentRecord(EncodeSegmentRecord(a));  // exactly what a scan would read
    if (!stored.ok()) {
      cache_.erase(it);
      return;
    }
    segments.push_back(std::move(*stored));
  }
  std::sort(segments.begin(), segments.end(),
            [](const SegmentRecord& a, const SegmentRecord& b) { return a.start < b.start; });
  it->second.state = after;
}

kv::Batch TableRegistry::CommitBatch(const TableId& id, const LiveSetChange& change, TimePoint now) {
  kv::Batch batch;
  std::set<uint64_t> freed;
  for (const auto& r : change.remove) {
    std::string key = SegmentKey(id, r.start);
    batch.Require(kv::Precondition::Equals(key, EncodeSegmentRecord(r)));
    batch.Delete(key);
    const int64_t now_us = ToUnixMicros(now);
    batch.Put(GcQueueKey(id, now_us, r.id), EncodeGcEntry(GcEntry{r.path, r.id, now_us}));
    freed.insert(r.start);
  }
  for (const auto& k : change.keep) {
    batch.Require(kv::Precondition::Equals(SegmentKey(id, k.start), EncodeSegmentRecord(k)));
  }
  for (const auto& a : change.add) {
    std::string key = SegmentKey(id, a.start);
    if (!freed.count(a.start)) batch.Require(kv::Precondition::Absent(key));
    batch.Put(key, EncodeSegmentRecord(a));
  }
  for (uint64_t b : change.drop_hashes) batch.Delete(BlockHashKey(id, b));
  for (const auto& [b, h] : change.put_hashes) batch.Put(BlockHashKey(id, b), EncodeBlockHash(h));
  return batch;
}

Result<std::optional<std::string>> TableRegistry::BlockHash(const TableId& id, uint64_t block) {
  std::string key = BlockHashKey(id, block);
  auto raw = kv_->Get(key);
  if (IsNotFound(raw.status())) return std::optional<std::string>();
  ARROW_RETURN_NOT_OK(raw.status());
  ARROW_ASSIGN_OR_RAISE(std::string hex, DecodeBlockHash(key, *raw));
  return std::optional<std::string>(std::move(hex));
}

Result<std::vector<uint64_t>> TableRegistry::HashedBlocksFrom(const TableId& id, uint64_t from) {
  std::vector<uint64_t> out;
  ARROW_RETURN_NOT_OK(
      kv_->ScanAll(BlockHashesPrefix(id), BlockHashKey(id, from), [&](const kv::KeyValue& kv) -> Result<bool> {
        std::optional<uint64_t> b = BlockOfHashKey(id, kv.key);
        if (!b) return Status::IOError(fmt::format("{}: malformed block hash key", kv.key));
        out.push_back(*b);
        return true;
      }));
  return out;
}

Status TableRegistry::PruneBlockHashes(const TableId& id, uint64_t before) {
  std::string end = BlockHashKey(id, before);
  std::vector<std::string> old;
  ARROW_RETURN_NOT_OK(kv_->ScanAll(BlockHashesPrefix(id), "", [&](const kv::KeyValue& kv) -> Result<bool> {
    if (kv.key >= end) return false;
    old.push_back(kv.key);
    return true;
  }));
  for (const auto& k : old) ARROW_RETURN_NOT_OK(kv_->Delete(k));
  return Status::OK();
}

Result<std::vector<GcEntry>> TableRegistry::ListGc(const TableId& id) { return ListDueGc(id, INT64_MAX); }

Result<std::vector<GcEntry>> TableRegistry::ListDueGc(const TableId& id, int64_t removed_before_us) {
  std::vector<GcEntry> out;
  auto add = [&](const kv::KeyValue& kv) -> Result<bool> {
    ARROW_ASSIGN_OR_RAISE(GcEntry e, DecodeGcEntry(kv.value));
    if (e.removed_at_us < removed_before_us) out.push_back(std::move(e));
    return true;
  };
  ARROW_RETURN_NOT_OK(kv_->ScanAll(LegacyGcPrefix(id), "", add));
  const std::string end = GcQueueKey(id, removed_before_us, "");
  ARROW_RETURN_NOT_OK(kv_->ScanAll(GcQueuePrefix(id), "", [&](const kv::KeyValue& kv) -> Result<bool> {
    if (kv.key >= end) return false;  // in removal order: the rest are not due
    return add(kv);
  }));
  return out;
}

Status TableRegistry::RemoveGcEntry(const TableId& id, const GcEntry& entry) {
  for (const std::string& key : {GcQueueKey(id, entry.removed_at_us, entry.id), LegacyGcKey(id, entry.id)}) {
    kv::Batch batch;
    batch.Require(kv::Precondition::Present(key));
    batch.Delete(key);
    Status st = kv_->Apply(batch);
    if (!IsPreconditionFailed(st)) return st;
  }
  return PreconditionFailed(fmt::format("table {}: GC entry {} is gone", id.ToString(), entry.id));
}

}  // namespace sediment::table
