#include "table/planner.h"

namespace sediment::table {

PlannerSettings PlannerSettings::FromConfig(const WriterConfig& writer) {
  PlannerSettings s;
  s.bytes = writer.bytes;
  s.rows = writer.rows;
  s.overflow = writer.overflow;
  s.skip_latest_segments = writer.compactor.skip_latest_segments;
  s.cooldown = SecondsToDuration(writer.compactor.cooldown_duration);
  s.max_eager_bytes = writer.compactor.max_eager_bytes;
  s.policy = writer.compactor.policy == "tiered" ? CompactionPolicy::kTiered : CompactionPolicy::kAdjacent;
  s.size_ratio = writer.compactor.size_ratio;
  return s;
}

FileAge ClassifyFile(const SegmentRecord& s, const PlannerSettings& settings, TimePoint now) {
  if (s.bytes >= settings.bytes || (settings.rows > 0 && s.rows >= settings.rows)) return FileAge::kFull;
  if (settings.max_eager_bytes > 0 && s.bytes <= settings.max_eager_bytes) return FileAge::kEager;
  if (now - s.created_at() < settings.cooldown) return FileAge::kRecent;
  return FileAge::kOld;
}

namespace {

bool Fit(int64_t bytes, int64_t rows, const PlannerSettings& settings) {
  if (static_cast<double>(bytes) > static_cast<double>(settings.bytes) * settings.overflow) return false;
  return settings.rows <= 0 || static_cast<double>(rows) <= static_cast<double>(settings.rows) * settings.overflow;
}

// Whether group `g`'s output can never be merged again. Its left neighbour
// is the previous group's output when that group ends right before it. No
// right neighbour yet: newer files may come that fit.
bool Final(const std::vector<SegmentRecord>& segments, const std::vector<CompactionGroup>& groups,
           const CompactionGroup& g, const PlannerSettings& settings, TimePoint now) {
  if (g.bytes >= settings.bytes || (settings.rows > 0 && g.rows >= settings.rows)) return true;
  const size_t end = g.first + g.count;
  if (end >= segments.size()) return false;
  auto joins = [&](int64_t bytes, int64_t rows) { return Fit(g.bytes + bytes, g.rows + rows, settings); };
  const SegmentRecord& right = segments[end];
  if (ClassifyFile(right, settings, now) != FileAge::kFull && joins(right.bytes, right.rows)) return false;
  if (g.first == 0) return true;
  if (!groups.empty() && groups.back().first + groups.back().count == g.first) {
    const CompactionGroup& prev = groups.back();
    const bool prev_full = prev.bytes >= settings.bytes || (settings.rows > 0 && prev.rows >= settings.rows);
    return prev_full || !joins(prev.bytes, prev.rows);
  }
  const SegmentRecord& left = segments[g.first - 1];
  return ClassifyFile(left, settings, now) == FileAge::kFull || !joins(left.bytes, left.rows);
}

}  // namespace

std::vector<CompactionGroup> PlanCompaction(const std::vector<SegmentRecord>& segments, const PlannerSettings& settings,
                                            TimePoint now) {
  std::vector<CompactionGroup> groups;
  size_t skip = static_cast<size_t>(std::max<int64_t>(0, settings.skip_latest_segments));
  if (segments.size() <= skip) return groups;
  const size_t n = segments.size() - skip;
  const double max_bytes = static_cast<double>(settings.bytes) * settings.overflow;
  const double max_rows = static_cast<double>(settings.rows) * settings.overflow;

  size_t i = 0;
  while (i < n) {
    FileAge age = ClassifyFile(segments[i], settings, now);
    if (age == FileAge::kFull || age == FileAge::kRecent) {
      ++i;
      continue;
    }
    CompactionGroup g{i, 1, segments[i].bytes, segments[i].rows};
    size_t j = i + 1;
    for (; j < n; ++j) {
      const SegmentRecord& next = segments[j];
      if (ClassifyFile(next, settings, now) == FileAge::kFull) break;
      if (static_cast<double>(g.bytes + next.bytes) > max_bytes) break;
      if (settings.rows > 0 && static_cast<double>(g.rows + next.rows) > max_rows) break;
      g.count++;
      g.bytes += next.bytes;
      g.rows += next.rows;
    }
    if (settings.policy == CompactionPolicy::kTiered) {
      // Leave out a first file much larger than what follows it, and any
      // next first file that may not start a group.
      while (g.count >= 2) {
        const SegmentRecord& first = segments[g.first];
        double rest = static_cast<double>(g.bytes - first.bytes);
        bool too_big = static_cast<double>(first.bytes) > settings.size_ratio * rest;
        FileAge first_age = ClassifyFile(first, settings, now);
        bool may_start = first_age == FileAge::kEager || first_age == FileAge::kOld;
        if (!too_big && may_start) break;
        g.first++;
        g.count--;
        g.bytes -= first.bytes;
        g.rows -= first.rows;
      }
    }
    if (g.count >= 2) {
      g.final = Final(segments, groups, g, settings, now);
      groups.push_back(g);
    }
    i = j;  // the file that did not fit may start the next group
  }
  return groups;
}

}  // namespace sediment::table
