#include "table/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace sediment::table {
namespace {

const TimePoint kEpoch = FromUnixMicros(1'700'000'000'000'000);

TimePoint At(double t) { return kEpoch + SecondsToDuration(t); }

// One run of the simulator: the clock, the ingest and the passes, as named steps.
class Simulation {
 public:
  explicit Simulation(const SimulationOptions& o)
      : o_(o),
        rng_(o.seed),
        size_dist_(std::log(std::max(1.0, o.file_bytes)), o.file_bytes_spread),
        uniform_(0, 1),
        tick_(std::max(1.0, o.min_interval)),
        next_tick_(tick_),
        next_report_(o.report_every) {}

  // Steps the clock to each next event (report, arrival, timer tick) until the duration is over.
  SimulationResult Run() {
    while (true) {
      double t_arrival = NextArrivalTime();
      double now = std::min({t_arrival, next_tick_, next_report_});
      if (now > o_.duration) break;
      if (now == next_report_) {
        Report(now);
        next_report_ += o_.report_every;
        continue;
      }
      if (now == t_arrival) {
        Arrive(now);
        continue;
      }
      // Timer tick.
      if (now - last_pass_ >= o_.min_interval) Pass(now);
      next_tick_ += tick_;
    }
    if (result_.points.empty() || result_.points.back().t < o_.duration) Report(o_.duration);
    return std::move(result_);
  }

 private:
  double NextArrivalTime() const {
    if (!o_.arrivals.empty()) {
      return arrival_index_ < o_.arrivals.size() ? o_.arrivals[arrival_index_].t : INFINITY;
    }
    return static_cast<double>(arrival_count_ + 1) / o_.files_per_second;
  }

  // A new file lands at `now` (replayed, or synthetic with maybe a reorg); a pass follows unless one ran
  // less than min_interval ago.
  void Arrive(double now) {
    int64_t bytes, rows;
    if (!o_.arrivals.empty()) {
      bytes = o_.arrivals[arrival_index_].bytes;
      rows = o_.arrivals[arrival_index_].rows;
      arrival_index_++;
    } else {
      SyntheticArrival(&bytes, &rows);
    }
    SegmentRecord s;
    s.start = next_block_;
    s.end = next_block_;
    next_block_++;
    s.bytes = bytes;
    s.rows = rows;
    s.created_at_us = ToUnixMicros(At(now));
    live().push_back(s);
    stats_.bytes_ingested += bytes;
    if (now - last_pass_ >= o_.min_interval) Pass(now);
  }

  // Draws a new file's size; with reorg_rate's chance it also takes back the last 1-3 files.
  void SyntheticArrival(int64_t* bytes, int64_t* rows) {
    auto& live = this->live();
    *bytes = std::max<int64_t>(1, static_cast<int64_t>(o_.file_bytes_spread > 0 ? size_dist_(rng_) : o_.file_bytes));
    *rows = static_cast<int64_t>(static_cast<double>(*bytes) * o_.rows_per_byte);
    arrival_count_++;
    if (o_.reorg_rate > 0 && !live.empty() && uniform_(rng_) < o_.reorg_rate) {
      // The last 1-3 files' blocks come back in this file.
      int64_t k = std::min<int64_t>(static_cast<int64_t>(live.size()), 1 + static_cast<int64_t>(rng_() % 3));
      for (int64_t r = 0; r < k; ++r) {
        *bytes += live.back().bytes;
        *rows += live.back().rows;
        next_block_ = live.back().start;
        live.pop_back();
      }
    }
  }

  // A compaction pass at `now`: the planner's groups, each merged instantly into one file.
  void Pass(double now) {
    auto& live = this->live();
    last_pass_ = now;
    auto groups = PlanCompaction(live, o_.planner, At(now));
    if (groups.empty()) return;
    stats_.passes_merged++;
    std::vector<SegmentRecord> next;
    size_t i = 0;
    for (const auto& g : groups) {
      for (; i < g.first; ++i) next.push_back(live[i]);
      next.push_back(Merged(g, now));
      stats_.bytes_written += g.bytes;
      i = g.first + g.count;
    }
    for (; i < live.size(); ++i) next.push_back(live[i]);
    live = std::move(next);
  }

  SegmentRecord Merged(const CompactionGroup& g, double now) const {
    const auto& live = result_.live;
    SegmentRecord merged;
    merged.start = live[g.first].start;
    merged.end = live[g.first + g.count - 1].end;
    merged.bytes = g.bytes;
    merged.rows = g.rows;
    merged.created_at_us = ToUnixMicros(At(now));
    for (size_t k = g.first; k < g.first + g.count; ++k) {
      merged.generation = std::max(merged.generation, live[k].generation + 1);
    }
    return merged;
  }

  // Appends a point of the report: the counters so far and the live files at `now`.
  void Report(double now) {
    SimulationPoint p = stats_;
    p.t = now;
    p.write_amplification = stats_.bytes_ingested > 0
                                ? static_cast<double>(stats_.bytes_written) / static_cast<double>(stats_.bytes_ingested)
                                : 0;
    p.live_files = static_cast<int64_t>(live().size());
    for (const auto& s : live()) {
      if (o_.planner.max_eager_bytes > 0 && s.bytes <= o_.planner.max_eager_bytes) p.files_below_eager++;
      if (s.bytes < o_.planner.bytes / 2) p.files_below_half_target++;
      p.largest_file = std::max(p.largest_file, s.bytes);
    }
    result_.points.push_back(p);
  }

  std::vector<SegmentRecord>& live() { return result_.live; }

  const SimulationOptions& o_;
  std::mt19937_64 rng_;
  std::lognormal_distribution<double> size_dist_;
  std::uniform_real_distribution<double> uniform_;
  SimulationResult result_;
  SimulationPoint stats_;  // the counters; a report copies them
  uint64_t next_block_ = 0;
  size_t arrival_index_ = 0;   // into o_.arrivals, when replaying
  int64_t arrival_count_ = 0;  // synthetic files so far
  const double tick_;
  double next_tick_;
  double next_report_;
  double last_pass_ = -1e300;
};

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
  return Simulation(o).Run();
}

}  // namespace sediment::table
