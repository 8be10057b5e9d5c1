// `sediment table simulate`: the compaction simulator (src/table/simulator.h).
#include "cli/simulate_cmd.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/config.h"
#include "cli/client.h"
#include "table/histogram.h"
#include "table/names.h"
#include "table/simulator.h"

namespace sediment::cli {
namespace {

using nlohmann::json;

struct SimFlags {
  std::string config_path;
  std::vector<std::string> sets;
  std::string policy;
  double days = 7;
  double file_bytes = 60000;
  double file_bytes_spread = 0;
  double file_every = 12;
  double reorg_rate = 0;
  double report_every_hours = 6;
  uint64_t seed = 1;
  bool json = false;
  std::string plot;
  std::string from;
  std::string server = DefaultServerUrl();
  bool days_given = false;
};

std::string Duration(double s) {
  if (s >= 86400 && std::fmod(s, 86400) == 0) return fmt::format("{}d", s / 86400);
  if (s >= 3600) return fmt::format("{:.0f}h", s / 3600);
  return fmt::format("{:.0f}s", s);
}

void WriteSvg(const std::string& path, const std::vector<table::SimulationPoint>& points, const std::string& title) {
  const double w = 900, h = 420, left = 70, right = 70, top = 40, bottom = 50;
  double tmax = points.back().t, wa = 0, files = 0;
  for (const auto& p : points) {
    wa = std::max(wa, p.write_amplification);
    files = std::max(files, static_cast<double>(p.live_files));
  }
  wa = std::max(wa, 1e-9);
  files = std::max(files, 1.0);
  auto x = [&](double t) { return left + (w - left - right) * t / tmax; };
  auto y = [&](double v, double max) { return top + (h - top - bottom) * (1 - v / max); };
  std::string wa_line, files_line;
  for (const auto& p : points) {
    wa_line += fmt::format("{:.1f},{:.1f} ", x(p.t), y(p.write_amplification, wa));
    files_line += fmt::format("{:.1f},{:.1f} ", x(p.t), y(static_cast<double>(p.live_files), files));
  }
  std::ofstream out(path);
  out << fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" font-family="sans-serif" font-size="12">
<rect width="{0}" height="{1}" fill="white"/>
<text x="{2}" y="22" font-size="14">{3}</text>
<line x1="{2}" y1="{4}" x2="{5}" y2="{4}" stroke="#888"/>
<line x1="{2}" y1="{6}" x2="{2}" y2="{4}" stroke="#888"/>
<line x1="{5}" y1="{6}" x2="{5}" y2="{4}" stroke="#888"/>
<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{7}"/>
<polyline fill="none" stroke="#ff7f0e" stroke-width="2" points="{8}"/>
<text x="{2}" y="{9}" fill="#1f77b4">write amplification (max {10:.2f})</text>
<text x="{5}" y="{9}" fill="#ff7f0e" text-anchor="end">live files (max {11:.0f})</text>
<text x="{2}" y="{12}">0</text><text x="{5}" y="{12}" text-anchor="end">{13}</text>
</svg>
)",
      w, h, left, title, h - bottom, w - right, top, wa_line, files_line, h - bottom + 30, wa, files, h - bottom + 15,
      Duration(tmax));
}

// A replay without --config runs with the server's own planner settings
// (GET .../history says them); flags still override them.
Status UseServerSettings(const SimFlags& f, Config* config) {
  ARROW_ASSIGN_OR_RAISE(auto id, table::ParseTableId(f.from));
  Client client(f.server);
  ARROW_ASSIGN_OR_RAISE(
      json j, client.Get(fmt::format("/api/v1/datasets/{}/tables/{}/history?amount=1", id.dataset, id.table)));
  if (!j.contains("settings") || !j["settings"].is_object()) {
    std::fprintf(stderr, "sediment: %s says no settings with the history (an older server): built-in ones\n",
                 f.server.c_str());
    return Status::OK();
  }
  for (const auto& [key, value] : j["settings"].items()) {
    if (config->origins.count(key)) continue;  // the environment's SEDIMENT_ variables still win
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    ARROW_RETURN_NOT_OK(config->Set(key, text, "the server's settings (" + f.server + ")"));
  }
  return Status::OK();
}

// The settings a run uses: --config (or the server's, replaying without one), then the flags.
Result<Config> SettingsOf(const SimFlags& f) {
  ARROW_ASSIGN_OR_RAISE(Config config, Config::Load(f.config_path, CurrentEnvironment()));
  if (!f.from.empty() && f.config_path.empty()) ARROW_RETURN_NOT_OK(UseServerSettings(f, &config));
  if (!f.policy.empty()) ARROW_RETURN_NOT_OK(config.Set("writer.compactor.policy", f.policy, "flag --policy"));
  for (const auto& kv : f.sets) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) return InvalidArgument(fmt::format("--set \"{}\": expected KEY=VALUE", kv));
    ARROW_RETURN_NOT_OK(config.Set(kv.substr(0, eq), kv.substr(eq + 1), "flag --set"));
  }
  return config;
}

Status Simulate(const SimFlags& f) {
  ARROW_ASSIGN_OR_RAISE(Config config, SettingsOf(f));
  table::SimulationOptions o;
  o.planner = table::PlannerSettings::FromConfig(config.writer);
  o.min_interval = config.writer.compactor.min_interval;
  o.duration = f.days * 86400;
  o.report_every = f.report_every_hours * 3600;
  o.file_bytes = f.file_bytes;
  o.file_bytes_spread = f.file_bytes_spread;
  if (!(f.file_every > 0)) return InvalidArgument(fmt::format("--file-every must be positive, got {}", f.file_every));
  o.files_per_second = 1.0 / f.file_every;
  o.reorg_rate = f.reorg_rate;
  o.seed = f.seed;
  std::string what =
      fmt::format("one {} file every {}s", table::FormatBytes(static_cast<int64_t>(f.file_bytes)), f.file_every);
  if (!f.from.empty()) {
    // Replay: every append the table's history holds (the last 30 days), at
    // the times and sizes they happened.
    ARROW_ASSIGN_OR_RAISE(auto id, table::ParseTableId(f.from));
    Client client(f.server);
    ARROW_ASSIGN_OR_RAISE(
        json j,
        client.GetAllPages(fmt::format("/api/v1/datasets/{}/tables/{}/history", id.dataset, id.table), "appends"));
    const json& appends = j["appends"];
    if (appends.size() < 2) {
      return InvalidArgument(
          fmt::format("{} has {} appends in its history; replay needs at least 2", f.from, appends.size()));
    }
    int64_t t0 = appends.front()["t_us"].get<int64_t>();
    for (const auto& a : appends) {
      o.arrivals.push_back({static_cast<double>(a["t_us"].get<int64_t>() - t0) / 1e6, a["bytes"].get<int64_t>(),
                            a["rows"].get<int64_t>()});
    }
    double span = o.arrivals.back().t;
    if (!f.days_given) o.duration = std::max(span, 1.0);
    o.report_every = std::min(o.report_every, std::max(o.duration / 10, 1.0));
    what = fmt::format("{}: its {} appends over {}", f.from, appends.size(), Duration(std::round(span)));
  }
  ARROW_ASSIGN_OR_RAISE(auto result, table::Simulate(o));
  std::string policy = config.writer.compactor.policy;
  if (f.json) {
    json points = json::array();
    for (const auto& p : result.points) {
      points.push_back({{"t", p.t},
                        {"write_amplification", p.write_amplification},
                        {"live_files", p.live_files},
                        {"files_below_max_eager_bytes", p.files_below_eager},
                        {"files_below_half_target", p.files_below_half_target},
                        {"largest_file", p.largest_file},
                        {"passes_merged", p.passes_merged},
                        {"bytes_ingested", p.bytes_ingested},
                        {"bytes_written", p.bytes_written}});
    }
    std::cout << json{{"policy", policy}, {"ingest", what}, {"points", points}}.dump(2) << "\n";
  } else {
    std::cout << fmt::format("{} policy, {} ({} target, cooldown {}s, max_eager_bytes {})\n\n", policy, what,
                             table::FormatBytes(o.planner.bytes), config.writer.compactor.cooldown_duration,
                             table::FormatBytes(o.planner.max_eager_bytes));
    std::cout << fmt::format("{:>8} {:>9} {:>10} {:>10} {:>12} {:>12} {:>14}\n", "TIME", "WRITE AMP", "LIVE FILES",
                             "<= EAGER", "< HALF TGT", "LARGEST", "MERGE PASSES");
    for (const auto& p : result.points) {
      std::cout << fmt::format("{:>8} {:>9.2f} {:>10} {:>10} {:>12} {:>12} {:>14}\n", Duration(p.t),
                               p.write_amplification, p.live_files, p.files_below_eager, p.files_below_half_target,
                               table::FormatBytes(p.largest_file), p.passes_merged);
    }
  }
  if (!f.plot.empty()) {
    if (f.plot.size() < 4 || f.plot.substr(f.plot.size() - 4) != ".svg") {
      return InvalidArgument(fmt::format("--plot {}: only SVG charts are written (name the file .svg)", f.plot));
    }
    WriteSvg(f.plot, result.points, fmt::format("{} policy, {}", policy, what));
  }
  return Status::OK();
}

}  // namespace

std::function<int()> AddSimulateCommand(CLI::App* table) {
  auto f = std::make_shared<SimFlags>();
  auto* sim = table->add_subcommand("simulate", "Simulate compaction of a table over days, with the real planner");
  sim->add_option("--config", f->config_path,
                  "A TOML config whose [writer] settings to use (default: the built-in ones, or with --from the "
                  "server's)");
  sim->add_option("--set", f->sets, "Override a setting, e.g. --set writer.compactor.cooldown_duration=60");
  sim->add_option("--policy", f->policy, "adjacent (the spec) or tiered");
  sim->add_option("--days", f->days, "Simulated time")->check(CLI::PositiveNumber);
  sim->add_option("--file-bytes", f->file_bytes, "Mean uncompressed size of a new file");
  sim->add_option("--file-bytes-spread", f->file_bytes_spread, "Lognormal sigma of new files' sizes");
  sim->add_option("--file-every", f->file_every, "Seconds between new files");
  sim->add_option("--reorg-rate", f->reorg_rate, "Chance that a new file replaces the last 1-3 files");
  sim->add_option("--report-every", f->report_every_hours, "Hours between rows of the report");
  sim->add_option("--seed", f->seed, "Random seed");
  sim->add_flag("--json", f->json, "Print JSON");
  sim->add_option("--plot", f->plot, "Write an SVG chart of write amplification and live files");
  sim->add_option("--from", f->from, "Replay a real table's appends (<dataset>.<table>, last 30 days)");
  sim->fallthrough();
  return [=]() -> int {
    if (!sim->parsed()) return -1;
    f->days_given = sim->count("--days") > 0;
    return Run([&] { return Simulate(*f); });
  };
}

}  // namespace sediment::cli
