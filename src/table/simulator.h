// The compaction simulator: the real planner (PlanCompaction, the same pure
// function the compactor calls) against a simulated clock and ingest, so users
// see write amplification and file counts over days of a table before they
// deploy. Merges are instant and a merged file's size is the sum of its inputs.
//
// Passes happen as in TableService: after each new file unless the last pass
// started less than min_interval ago, and on a timer every max(min_interval, 1 s).
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "table/planner.h"
#include "table/segment.h"

namespace sediment::table {

struct SimArrival {
  double t = 0;  // seconds from the start
  int64_t bytes = 0;
  int64_t rows = 0;
};

struct SimulationOptions {
  PlannerSettings planner;
  double min_interval = 1.0;
  double duration = 7 * 86400.0;  // seconds
  double report_every = 6 * 3600.0;
  // Synthetic ingest, unless `arrivals` is given.
  double file_bytes = 60000;       // mean uncompressed size of a new file
  double file_bytes_spread = 0.0;  // lognormal sigma of that size (0: all equal)
  double files_per_second = 1.0 / 12;
  double reorg_rate = 0.0;  // chance a new file replaces the last 1-3 files
  double rows_per_byte = 0.01;
  uint64_t seed = 1;
  std::vector<SimArrival> arrivals;  // replay these instead (sorted by t)
};

struct SimulationPoint {
  double t = 0;
  double write_amplification = 0;  // bytes written by compaction / bytes ingested
  int64_t live_files = 0;
  int64_t files_below_eager = 0;
  int64_t files_below_half_target = 0;
  int64_t largest_file = 0;
  int64_t passes_merged = 0;  // passes so far that merged something
  int64_t bytes_ingested = 0;
  int64_t bytes_written = 0;
};

struct SimulationResult {
  std::vector<SimulationPoint> points;  // one per report_every, and the end
  std::vector<SegmentRecord> live;      // the live files at the end, in block order
};

// InvalidArgument for negative or non-finite rates and sizes.
Status ValidateSimulation(const SimulationOptions& options);
Result<SimulationResult> Simulate(const SimulationOptions& options);

}  // namespace sediment::table
