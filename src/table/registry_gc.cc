// TableRegistry's GC manifest (t/gcq/, and t/gc/ as written before the
// queue): the segments a change removed, listed when due and removed once
// their files are deleted. Entries are written by Commit, in the same batch.
#include <fmt/format.h>

#include <optional>

#include "table/keys.h"
#include "table/registry.h"

namespace sediment::table {

// Whole: its callers (the orphan sweep, the Iceberg catalog's expiry) need
// every entry, another server's below the floor too.
Result<std::vector<GcEntry>> TableRegistry::ListGc(const TableId& id) { return ListQueued(id, INT64_MAX, false); }

Result<std::vector<GcEntry>> TableRegistry::ListDueGc(const TableId& id, int64_t removed_before_us) {
  return ListQueued(id, removed_before_us, true);
}

Result<std::vector<GcEntry>> TableRegistry::ListQueued(const TableId& id, int64_t removed_before_us, bool from_floor) {
  std::vector<GcEntry> out;
  auto add = [&](const kv::KeyValue& kv) -> Result<bool> {
    ARROW_ASSIGN_OR_RAISE(GcEntry e, DecodeGcEntry(kv.value));
    if (e.removed_at_us < removed_before_us) out.push_back(std::move(e));
    return true;
  };
  ARROW_RETURN_NOT_OK(kv_->ScanAll(LegacyGcPrefix(id), "", add));
  const std::string end = GcQueueKey(id, removed_before_us, "");
  const std::string prefix = GcQueuePrefix(id);
  ScanFloors::Ticket ticket = floors_.Start(prefix);
  if (!from_floor) ticket.from.clear();
  std::optional<std::string> first;  // the lowest queue key read
  ARROW_RETURN_NOT_OK(kv_->ScanAll(prefix, ticket.from, [&](const kv::KeyValue& kv) -> Result<bool> {
    if (!first) first = kv.key;
    if (kv.key >= end) return false;  // in removal order: the rest are not due
    return add(kv);
  }));
  // Entries listed stay until their files are deleted: the floor is the first
  // read, or the queue's end when it is empty from the floor on.
  floors_.Finish(prefix, ticket, first ? *first : kv::PrefixEnd(prefix));
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
