// The compaction planner: which adjacent segments to merge. A pure function
// of (live segments in block order, settings, now) with no I/O, so the
// compactor, the simulator and the tests all run the same rules.
//
// The rules are those of spec/parquet-compaction.md, "How it works":
//  1. Leave out the newest `skip_latest_segments` files.
//  2. From the oldest, group adjacent files while the group's total stays
//     within bytes * overflow (and rows * overflow when rows > 0).
//  3. Only groups of two or more files are merged.
//  File ages: a file up to max_eager_bytes may start a group at once
//  (max_eager_bytes = 0: no file is eager); a larger file younger than
//  cooldown_duration may only join a group an older file started; an older
//  file may start one. A file that reaches the target on its own (bytes >=
//  `bytes`, or rows >= `rows` when rows > 0) is never merged again.
//
// "Stays under the target" is read as "at most": two files of exactly half
// the target merge into one of exactly the target. See docs/compaction.md.
#pragma once

#include <cstdint>
#include <vector>

#include "base/clock.h"
#include "base/config.h"
#include "table/segment.h"

namespace sediment::table {

struct PlannerSettings {
  int64_t bytes = 2147483648;
  int64_t rows = 0;
  double overflow = 1.0;
  int64_t skip_latest_segments = 3;
  Duration cooldown = std::chrono::seconds(1024);
  int64_t max_eager_bytes = 102400;

  static PlannerSettings FromConfig(const WriterConfig& writer);
};

// Where a file stands with respect to starting a group.
enum class FileAge {
  kFull,    // reaches the target alone: never merged
  kEager,   // small: may start a group at once
  kRecent,  // larger than eager and younger than the cooldown: may only join
  kOld,     // may start a group
};

FileAge ClassifyFile(const SegmentRecord& s, const PlannerSettings& settings, TimePoint now);

struct CompactionGroup {
  size_t first = 0;  // index into the planner's input
  size_t count = 0;  // >= 2
  int64_t bytes = 0;
  int64_t rows = 0;
  bool operator==(const CompactionGroup&) const = default;
};

// `segments` must be in block order (as the registry lists them).
std::vector<CompactionGroup> PlanCompaction(const std::vector<SegmentRecord>& segments, const PlannerSettings& settings,
                                            TimePoint now);

}  // namespace sediment::table
