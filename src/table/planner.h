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
// Tiered policy: everything above, and a group's first (oldest) file may be
// merged only if it is at most size_ratio times the total of the files after
// it in the group; otherwise it is left out and the next file may start the
// group. Small files therefore merge among themselves until together they are
// comparable to their older neighbour, as in LSM size-tiered compaction, and
// each byte is rewritten about log(bytes / file size) times, not
// bytes / (ingest rate x cooldown) times.
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

enum class CompactionPolicy {
  kAdjacent,  // the spec's rules, exactly
  kTiered,    // the spec's rules plus the size-ratio rule below
};

struct PlannerSettings {
  int64_t bytes = 2147483648;
  int64_t rows = 0;
  double overflow = 1.0;
  int64_t skip_latest_segments = 3;
  Duration cooldown = std::chrono::seconds(1024);
  int64_t max_eager_bytes = 102400;
  CompactionPolicy policy = CompactionPolicy::kAdjacent;
  double size_ratio = 8.0;

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
  // The output will never be merged again: it reaches the target, or neither
  // neighbour fits beside it (files only grow, so that stays true). Such an
  // output is encoded fully, once; others are written for merging by copying
  // pages (docs/compaction.md, "Page copy").
  bool final = false;
  bool operator==(const CompactionGroup&) const = default;
};

// `segments` must be in block order (as the registry lists them).
std::vector<CompactionGroup> PlanCompaction(const std::vector<SegmentRecord>& segments, const PlannerSettings& settings,
                                            TimePoint now);

}  // namespace sediment::table
