// TableRegistry's state record (t/ver/): what the live set adds up to, read
// in one KV read; stores from before the record hold a bare token there.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "table/keys.h"
#include "table/registry.h"
#include "table/registry_internal.h"

namespace sediment::table {
namespace registry_internal {
namespace {

using nlohmann::json;

// The state record: {"v":2,"token":…,"files":…,…}. Stores written before it
// existed hold a bare token there; LoadState counts those once.
constexpr int kStateFormatVersion = 2;

}  // namespace

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

void CountSegment(TableState* st, const SegmentRecord& s, int sign) {
  st->files += sign;
  st->rows += sign * s.rows;
  st->bytes += sign * s.bytes;
  st->stored_bytes += sign * s.stored_bytes;
}

}  // namespace registry_internal

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
  if (!raw->empty() && raw->front() == '{') return registry_internal::DecodeState(StateKey(id), *raw);
  // A bare token, from before the state record: count the live set once
  // (the next change stores the state).
  TableState st;
  st.token = *raw;
  bool first = true;
  ARROW_RETURN_NOT_OK(kv_->ScanAll(SegmentsPrefix(id), "", [&](const kv::KeyValue& kv) -> Result<bool> {
    ARROW_ASSIGN_OR_RAISE(SegmentRecord s, DecodeSegmentRecord(kv.value));
    registry_internal::CountSegment(&st, s, +1);
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

}  // namespace sediment::table
