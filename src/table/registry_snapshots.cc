// TableRegistry's reads of the live set (t/seg/): one segment, a snapshot of
// all of them or of those overlapping a block range (read between two reads
// of the state, so it is the live set at one instant), pages of them, and
// whether a file is live.
#include <fmt/format.h>

#include "table/keys.h"
#include "table/registry.h"
#include "table/registry_internal.h"

namespace sediment::table {
namespace registry_internal {

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

}  // namespace registry_internal

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
  std::optional<uint64_t> start = registry_internal::StartOfPath(path);
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

}  // namespace sediment::table
