#include "table/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace sediment::table {
namespace {

const TimePoint kEpoch = FromUnixMicros(1'700'000'000'000'000);

TimePoint At(double t) { return kEpoch + SecondsToDuration(t); }

}  // namespace

Status ValidateSimulation(const SimulationOptions& o) {
  auto check = [](double v, const char* name, bool positive) -> Status {
    if (!std::isfinite(v) || v < 0 || (positive && v == 0)) {
      return InvalidArgument(
          fmt::format("{} must be {} a finite number, got {}", name, positive ? "a positive" : "a non-negative", v));
    }
    return Status::OK();
  };
  ARROW_RETURN_NOT_OK(check(o.duration, "duration", true));
  ARROW_RETURN_NOT_OK(check(o.report_every, "report interval", true));
  ARROW_RETURN_NOT_OK(check(o.min_interval, "min_interval", false));
  if (o.arrivals.empty()) {
    ARROW_RETURN_NOT_OK(check(o.file_bytes, "file size", true));
    ARROW_RETURN_NOT_OK(check(o.file_bytes_spread, "file size spread", false));
    ARROW_RETURN_NOT_OK(check(o.files_per_second, "files per second", true));
    ARROW_RETURN_NOT_OK(check(o.rows_per_byte, "rows per byte", false));
    if (!(o.reorg_rate >= 0 && o.reorg_rate <= 1)) {
      return InvalidArgument(fmt::format("reorg rate must be from 0 to 1, got {}", o.reorg_rate));
    }
  }
  if (o.planner.bytes <= 0) return InvalidArgument("[writer] bytes must be positive");
  return Status::OK();
}

Result<SimulationResult> Simulate(const SimulationOptions& o) {
  ARROW_RETURN_NOT_OK(ValidateSimulation(o));
  std::mt19937_64 rng(o.seed);
  std::lognormal_distribution<double> size_dist(std::log(std::max(1.0, o.file_bytes)), o.file_bytes_spread);
  std::uniform_real_distribution<double> uniform(0, 1);

  SimulationResult result;
  std::vector<SegmentRecord>& live = result.live;
  SimulationPoint stats;
  uint64_t next_block = 0;
  size_t arrival_index = 0;
  int64_t arrival_count = 0;
  const double tick = std::max(1.0, o.min_interval);
  double next_tick = tick;
  double next_report = o.report_every;
  double last_pass = -1e300;

  auto next_arrival_time = [&]() -> double {
    if (!o.arrivals.empty()) {
      return arrival_index < o.arrivals.size() ? o.arrivals[arrival_index].t : INFINITY;
    }
    return static_cast<double>(arrival_count + 1) / o.files_per_second;
  };

  auto pass = [&](double now) {
    last_pass = now;
    auto groups = PlanCompaction(live, o.planner, At(now));
    if (groups.empty()) return;
    stats.passes_merged++;
    std::vector<SegmentRecord> next;
    size_t i = 0;
    for (const auto& g : groups) {
      for (; i < g.first; ++i) next.push_back(live[i]);
      SegmentRecord merged;
      merged.start = live[g.first].start;
      merged.end = live[g.first + g.count - 1].end;
      merged.bytes = g.bytes;
      merged.rows = g.rows;
      merged.created_at_us = ToUnixMicros(At(now));
      for (size_t k = g.first; k < g.first + g.count; ++k) {
        merged.generation = std::max(merged.generation, live[k].generation + 1);
      }
      stats.bytes_written += g.bytes;
      next.push_back(merged);
      i = g.first + g.count;
    }
    for (; i < live.size(); ++i) next.push_back(live[i]);
    live = std::move(next);
  };

  auto report = [&](double now) {
    SimulationPoint p = stats;
    p.t = now;
    p.write_amplification = stats.bytes_ingested > 0
                                ? static_cast<double>(stats.bytes_written) / static_cast<double>(stats.bytes_ingested)
                                : 0;
    p.live_files = static_cast<int64_t>(live.size());
    for (const auto& s : live) {
      if (o.planner.max_eager_bytes > 0 && s.bytes <= o.planner.max_eager_bytes) p.files_below_eager++;
      if (s.bytes < o.planner.bytes / 2) p.files_below_half_target++;
      p.largest_file = std::max(p.largest_file, s.bytes);
    }
    result.points.push_back(p);
  };

  while (true) {
    double t_arrival = next_arrival_time();
    double now = std::min({t_arrival, next_tick, next_report});
    if (now > o.duration) break;
    if (now == next_report) {
      report(now);
      next_report += o.report_every;
      continue;
    }
    if (now == t_arrival) {
      int64_t bytes, rows;
      if (!o.arrivals.empty()) {
        bytes = o.arrivals[arrival_index].bytes;
        rows = o.arrivals[arrival_index].rows;
        arrival_index++;
      } else {
        bytes = std::max<int64_t>(1, static_cast<int64_t>(o.file_bytes_spread > 0 ? size_dist(rng) : o.file_bytes));
        rows = static_cast<int64_t>(static_cast<double>(bytes) * o.rows_per_byte);
        arrival_count++;
        if (o.reorg_rate > 0 && !live.empty() && uniform(rng) < o.reorg_rate) {
          // The last 1-3 files' blocks come back in this file.
          int64_t k = std::min<int64_t>(static_cast<int64_t>(live.size()), 1 + static_cast<int64_t>(rng() % 3));
          for (int64_t r = 0; r < k; ++r) {
            bytes += live.back().bytes;
            rows += live.back().rows;
            next_block = live.back().start;
            live.pop_back();
          }
        }
      }
      SegmentRecord s;
      s.start = next_block;
      s.end = next_block;
      next_block++;
      s.bytes = bytes;
      s.rows = rows;
      s.created_at_us = ToUnixMicros(At(now));
      live.push_back(s);
      stats.bytes_ingested += bytes;
      if (now - last_pass >= o.min_interval) pass(now);
      continue;
    }
    // Timer tick.
    if (now - last_pass >= o.min_interval) pass(now);
    next_tick += tick;
  }
  if (result.points.empty() || result.points.back().t < o.duration) report(o.duration);
  return result;
}

}  // namespace sediment::table
