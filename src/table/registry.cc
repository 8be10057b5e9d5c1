// TableRegistry's one atomic step: a change of the live set (segments
// removed, added and kept, block hashes put and dropped) applied as one KV
// batch with the state record's compare-and-set; and the object paths of a
// table's files. The other records are in registry_*.cc.
#include "table/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/crypto.h"
#include "table/keys.h"
#include "table/registry_internal.h"

namespace sediment::table {
namespace {

std::string NewToken() { return RandomHex(8); }

}  // namespace

std::string TableRegistry::ObjectPrefix(const TableId& id) {
  return fmt::format("tables/{}/{}/", id.dataset, id.table);
}

std::string TableRegistry::SegmentPath(const TableId& id, const std::string& segment_id) {
  return ObjectPrefix(id) + segment_id + ".parquet";
}

Result<TableState> TableRegistry::NextState(const TableId& id, const TableState& state, const LiveSetChange& change) {
  TableState next = state;
  std::set<uint64_t> removed;
  for (const auto& r : change.remove) {
    registry_internal::CountSegment(&next, r, -1);
    removed.insert(r.start);
  }
  for (const auto& a : change.add) registry_internal::CountSegment(&next, a, +1);
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
    if (registry_internal::StartOfPath(a.path) != std::optional<uint64_t>(a.start)) {
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
    batch.Put(StateKey(id), registry_internal::EncodeState(next));
    // Keys below the floors of later scans (scan_floors.h): announced before they land.
    const bool removes = !change.remove.empty(), hashes = !change.put_hashes.empty();
    if (removes) floors_.BeginWrite(GcQueuePrefix(id), GcQueueKey(id, ToUnixMicros(now), ""));
    if (hashes) floors_.BeginWrite(BlockHashesPrefix(id), BlockHashKey(id, change.put_hashes.begin()->first));
    Status st = kv_->Apply(batch);
    if (removes) floors_.EndWrite(GcQueuePrefix(id));
    if (hashes) floors_.EndWrite(BlockHashesPrefix(id));
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
  for (const auto& a : change.abandoned)
    batch.Put(AbandonedBlockKey(id, a.hash), registry_internal::EncodeAbandonedBlock(a));
  for (const auto& [b, h] : change.put_hashes) batch.Put(BlockHashKey(id, b), registry_internal::EncodeBlockHash(h));
  return batch;
}

}  // namespace sediment::table
