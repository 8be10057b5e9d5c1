#include "table/histogram.h"

#include <fmt/format.h>

namespace sediment::table {

std::string FormatBytes(int64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  return v == static_cast<int64_t>(v) ? fmt::format("{} {}", static_cast<int64_t>(v), units[u])
                                      : fmt::format("{:.1f} {}", v, units[u]);
}

HistogramReport BuildHistogram(const std::vector<SegmentRecord>& segments, const PlannerSettings& settings,
                               TimePoint now) {
  HistogramReport r;
  r.target_bytes = settings.bytes;
  r.max_eager_bytes = settings.max_eager_bytes;
  const int64_t half = settings.bytes / 2;
  // Edges between buckets, ascending.
  // Exclusive upper edges, ascending. The first bucket is the eager files
  // (<= max_eager_bytes); then doubling sizes from max_eager_bytes.
  const int64_t eager = settings.max_eager_bytes;
  std::vector<int64_t> edges;
  int64_t step = eager > 0 ? eager : 64 * 1024;
  if (eager > 0 && eager + 1 < half) edges.push_back(eager + 1);
  for (int64_t e = step * 2; e < half; e *= 2) edges.push_back(e);
  if (half > 0 && (edges.empty() || edges.back() < half)) edges.push_back(half);
  if (edges.empty() || edges.back() < settings.bytes) edges.push_back(settings.bytes);
  int64_t lower = 0;
  for (size_t i = 0; i < edges.size(); ++i) {
    HistogramBucket b{lower, edges[i], "", 0, 0};
    if (eager > 0 && edges[i] == eager + 1) {
      b.label = fmt::format("<= {} (eager)", FormatBytes(eager));
    } else {
      b.label = fmt::format("{} - {}", FormatBytes(lower == eager + 1 ? eager : lower), FormatBytes(edges[i]));
    }
    r.buckets.push_back(b);
    lower = edges[i];
  }
  r.buckets.push_back({settings.bytes, -1, fmt::format(">= {} (target)", FormatBytes(settings.bytes)), 0, 0});

  for (const auto& s : segments) {
    r.files++;
    r.bytes += s.bytes;
    r.stored_bytes += s.stored_bytes;
    r.rows += s.rows;
    if (settings.max_eager_bytes > 0 && s.bytes <= settings.max_eager_bytes) r.below_eager++;
    if (now - s.created_at() >= settings.cooldown && s.bytes < half) r.old_below_half_target++;
    for (auto& b : r.buckets) {
      if (s.bytes >= b.lower && (b.upper < 0 || s.bytes < b.upper)) {
        b.files++;
        b.bytes += s.bytes;
        break;
      }
    }
  }
  r.compression_ratio = r.bytes > 0 ? static_cast<double>(r.stored_bytes) / static_cast<double>(r.bytes) : 0;
  return r;
}

}  // namespace sediment::table
