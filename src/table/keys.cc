#include "table/keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace sediment::table {
namespace {

constexpr std::string_view kStates = "t/ver/";

// Newest first: a pass record's time runs backwards.
std::string PassTime(int64_t t_us) {
  return fmt::format("{:020}", std::numeric_limits<int64_t>::max() - std::max<int64_t>(0, t_us));
}

}  // namespace

std::string TableKey(const TableId& id) { return fmt::format("t/tables/{}/{}", id.dataset, id.table); }
std::string TablesPrefix() { return "t/tables/"; }
std::string DatasetTablesPrefix(const std::string& dataset) { return fmt::format("t/tables/{}/", dataset); }

std::string SegmentKey(const TableId& id, uint64_t start) { return SegmentsPrefix(id) + fmt::format("{:020}", start); }
std::string SegmentsPrefix(const TableId& id) { return fmt::format("t/seg/{}/{}/", id.dataset, id.table); }
std::string StateKey(const TableId& id) { return fmt::format("t/ver/{}/{}", id.dataset, id.table); }
std::string StatesPrefix() { return std::string(kStates); }

std::optional<TableId> TableOfStateKey(const std::string& key) {
  std::string rest = key.substr(kStates.size());
  size_t slash = rest.find('/');
  if (slash == std::string::npos) return std::nullopt;
  return TableId{rest.substr(0, slash), rest.substr(slash + 1)};
}

std::string GcQueueKey(const TableId& id, int64_t removed_at_us, const std::string& segment_id) {
  return fmt::format("{}{:020}-{}", GcQueuePrefix(id), std::max<int64_t>(0, removed_at_us), segment_id);
}
std::string GcQueuePrefix(const TableId& id) { return fmt::format("t/gcq/{}/{}/", id.dataset, id.table); }
std::string LegacyGcKey(const TableId& id, const std::string& segment_id) { return LegacyGcPrefix(id) + segment_id; }
std::string LegacyGcPrefix(const TableId& id) { return fmt::format("t/gc/{}/{}/", id.dataset, id.table); }

std::string BlockHashKey(const TableId& id, uint64_t block) {
  return BlockHashesPrefix(id) + fmt::format("{:020}", block);
}
std::string BlockHashesPrefix(const TableId& id) { return fmt::format("t/bh/{}/{}/", id.dataset, id.table); }

std::string AbandonedBlockKey(const TableId& id, const std::string& hash) { return AbandonedBlocksPrefix(id) + hash; }
std::string AbandonedBlocksPrefix(const TableId& id) { return fmt::format("t/fork/{}/{}/", id.dataset, id.table); }

std::optional<uint64_t> BlockOfHashKey(const TableId& id, const std::string& key) {
  std::string digits = key.substr(BlockHashesPrefix(id).size());
  if (digits.size() != 20) return std::nullopt;
  return std::stoull(digits);
}

std::string TableLeaseKey(const TableId& id) { return fmt::format("t/lease/{}/{}", id.dataset, id.table); }

std::string AppendHistoryKey(const TableId& id, int64_t created_at_us, const std::string& segment_id) {
  return AppendHistoryPrefix(id) + fmt::format("{:020}-{}", created_at_us, segment_id);
}
std::string AppendHistoryPrefix(const TableId& id) { return fmt::format("t/hist/{}/{}/", id.dataset, id.table); }
std::string AppendHistoryAt(const TableId& id, int64_t t_us) {
  return AppendHistoryPrefix(id) + fmt::format("{:020}", std::max<int64_t>(0, t_us));
}

std::string PassHistoryKey(const TableId& id, int64_t t_us, const std::string& server) {
  return PassHistoryPrefix(id) + PassTime(t_us) + "-" + server;
}
std::string PassHistoryPrefix(const TableId& id) { return fmt::format("t/pass/{}/{}/", id.dataset, id.table); }
std::string PassHistoryAfter(const TableId& id, int64_t t_us) { return PassHistoryPrefix(id) + PassTime(t_us) + "~"; }

}  // namespace sediment::table
