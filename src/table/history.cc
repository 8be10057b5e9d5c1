// TableHistory: what the console's charts and `sediment table passes` read —
// the appends and the compaction passes of each table, kept kHistoryDays.
#include "table/history.h"

#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "kv/kv.h"
#include "table/keys.h"

namespace sediment::table {
namespace {

using nlohmann::json;

}  // namespace

Status TableHistory::RecordAppend(const TableId& id, const SegmentRecord& s) {
  json j = {{"v", 1},         {"t_us", s.created_at_us}, {"bytes", s.bytes}, {"stored", s.stored_bytes},
            {"rows", s.rows}, {"start", s.start},        {"end", s.end}};
  return kv_->Set(AppendHistoryKey(id, s.created_at_us, s.id), j.dump());
}

Result<std::vector<AppendRecord>> TableHistory::AppendHistory(const TableId& id, int64_t since_us,
                                                              const std::string& cursor, size_t limit, bool* has_more) {
  std::vector<AppendRecord> out;
  if (has_more) *has_more = false;
  std::string from = AppendHistoryAt(id, since_us);
  if (!cursor.empty()) from = std::max(from, AppendHistoryPrefix(id) + cursor + std::string(1, '\0'));
  ARROW_RETURN_NOT_OK(kv_->ScanAll(
      AppendHistoryPrefix(id), from,
      [&](const kv::KeyValue& kv) -> Result<bool> {
        if (out.size() == limit) {
          if (has_more) *has_more = true;
          return false;
        }
        json j = json::parse(kv.value, nullptr, false);
        if (j.is_discarded() || j.value("v", 0) != 1) {
          return Status::IOError(fmt::format("{}: malformed append history record", kv.key));
        }
        out.push_back({j.value("t_us", int64_t{0}), j.value("bytes", int64_t{0}), j.value("rows", int64_t{0}),
                       j.value("start", uint64_t{0}), j.value("end", uint64_t{0}),
                       kv.key.substr(AppendHistoryPrefix(id).size()), j.value("stored", int64_t{0})});
        return true;
      },
      std::min<size_t>(limit == SIZE_MAX ? 64 : limit + 1, 8192)));
  return out;
}

Status TableHistory::PruneHistory(const TableId& id, int64_t before_us) {
  std::string end = AppendHistoryAt(id, before_us);
  std::vector<std::string> old;
  ARROW_RETURN_NOT_OK(kv_->ScanAll(AppendHistoryPrefix(id), "", [&](const kv::KeyValue& kv) -> Result<bool> {
    if (kv.key >= end) return false;
    old.push_back(kv.key);
    return true;
  }));
  // Passes run newest first: the old ones are the tail, after those at `before_us` ('~' sorts after "-<server>").
  ARROW_RETURN_NOT_OK(
      kv_->ScanAll(PassHistoryPrefix(id), PassHistoryAfter(id, before_us), [&](const kv::KeyValue& kv) -> Result<bool> {
        old.push_back(kv.key);
        return true;
      }));
  for (const auto& k : old) ARROW_RETURN_NOT_OK(kv_->Delete(k));
  return Status::OK();
}

Status TableHistory::RecordPass(const TableId& id, const PassRecord& p) {
  json merges = json::array();
  for (const auto& m : p.merges) {
    json j = {{"outcome", m.outcome}, {"inputs", m.inputs},     {"start", m.start},
              {"end", m.end},         {"bytes_in", m.bytes_in}, {"bytes_out", m.bytes_out}};
    if (!m.error.empty()) j["error"] = m.error;
    merges.push_back(std::move(j));
  }
  json j = {{"v", 1},
            {"t_us", p.t_us},
            {"seconds", p.seconds},
            {"server", p.server},
            {"files_considered", p.files_considered},
            {"files_after", p.files_after},
            {"stored_bytes_after", p.stored_bytes_after},
            {"merges", std::move(merges)},
            {"merges_total", p.merges_total}};
  if (!p.error.empty()) j["error"] = p.error;
  // Two passes of one table never start in the same microsecond on one
  // server; the server's name keeps two servers' records apart.
  return kv_->Set(PassHistoryKey(id, p.t_us, p.server), j.dump(-1, ' ', false, json::error_handler_t::replace));
}

Result<std::vector<PassRecord>> TableHistory::PassHistory(const TableId& id, int64_t since_us,
                                                          const std::string& cursor, size_t limit, bool* has_more) {
  std::vector<PassRecord> out;
  if (has_more) *has_more = false;
  std::string end = PassHistoryAfter(id, since_us);  // past every record at since_us
  std::string from = cursor.empty() ? PassHistoryPrefix(id) : PassHistoryPrefix(id) + cursor + std::string(1, '\0');
  ARROW_RETURN_NOT_OK(kv_->ScanAll(
      PassHistoryPrefix(id), from,
      [&](const kv::KeyValue& kv) -> Result<bool> {
        if (kv.key > end) return false;
        if (out.size() == limit) {
          if (has_more) *has_more = true;
          return false;
        }
        json j = json::parse(kv.value, nullptr, false);
        if (j.is_discarded() || !j.is_object() || j.value("v", 0) != 1 || !j.contains("merges") ||
            !j["merges"].is_array()) {
          return Status::IOError(fmt::format("{}: malformed pass history record", kv.key));
        }
        PassRecord p;
        p.t_us = j.value("t_us", int64_t{0});
        p.seconds = j.value("seconds", 0.0);
        p.server = j.value("server", "");
        p.files_considered = j.value("files_considered", int64_t{0});
        p.files_after = j.value("files_after", int64_t{0});
        p.stored_bytes_after = j.value("stored_bytes_after", int64_t{0});
        p.merges_total = j.value("merges_total", int64_t{0});
        p.error = j.value("error", "");
        for (const auto& m : j["merges"]) {
          if (!m.is_object()) return Status::IOError(fmt::format("{}: malformed pass history record", kv.key));
          p.merges.push_back({m.value("outcome", ""), m.value("inputs", int64_t{0}), m.value("start", uint64_t{0}),
                              m.value("end", uint64_t{0}), m.value("bytes_in", int64_t{0}),
                              m.value("bytes_out", int64_t{0}), m.value("error", "")});
        }
        p.cursor = kv.key.substr(PassHistoryPrefix(id).size());
        out.push_back(std::move(p));
        return true;
      },
      std::min<size_t>(limit == SIZE_MAX ? 64 : limit + 1, 8192)));
  return out;
}

}  // namespace sediment::table
