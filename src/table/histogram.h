// The file-size histogram of a table (`sediment table histogram`): how close
// the table is to "well compacted" in the spec's sense (Tune compaction).
// A pure function of the live segments, settings and now.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "table/planner.h"
#include "table/segment.h"

namespace sediment::table {

struct HistogramBucket {
  int64_t lower = 0;  // inclusive, uncompressed bytes
  int64_t upper = 0;  // exclusive; -1 = no upper bound
  std::string label;
  int64_t files = 0;
  int64_t bytes = 0;
};

struct HistogramReport {
  std::vector<HistogramBucket> buckets;
  int64_t files = 0;
  int64_t bytes = 0;         // uncompressed
  int64_t stored_bytes = 0;  // on storage
  int64_t rows = 0;
  int64_t below_eager = 0;            // files <= max_eager_bytes
  int64_t old_below_half_target = 0;  // older than cooldown_duration, below bytes / 2
  double compression_ratio = 0;       // stored / uncompressed
  int64_t target_bytes = 0;
  int64_t max_eager_bytes = 0;
};

// Buckets: below max_eager_bytes; then doubling sizes up to half the target;
// half the target up to the target; at or above the target.
HistogramReport BuildHistogram(const std::vector<SegmentRecord>& segments, const PlannerSettings& settings,
                               TimePoint now);

std::string FormatBytes(int64_t bytes);

}  // namespace sediment::table
