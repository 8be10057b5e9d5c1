#include "cli/table_cmd.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "base/clock.h"
#include "cli/client.h"
#include "cli/simulate_cmd.h"
#include "table/histogram.h"
#include "table/names.h"

namespace sediment::cli {
namespace {

using nlohmann::json;

struct TableFlags {
  std::string server = DefaultServerUrl();
  std::string name;
  bool json = false;
  int64_t limit = 20;
};

std::string TablePath(const table::TableId& id) {
  return fmt::format("/api/v1/datasets/{}/tables/{}", id.dataset, id.table);
}

// GET of one of a table's resources; with --json, printed as is (`printed` set).
Result<json> FetchTable(const TableFlags& f, const std::string& suffix, table::TableId* id, bool* printed) {
  ARROW_ASSIGN_OR_RAISE(*id, table::ParseTableId(f.name));
  ARROW_ASSIGN_OR_RAISE(json j, Client(f.server).Get(TablePath(*id) + suffix));
  *printed = f.json;
  if (f.json) std::cout << j.dump(2) << "\n";
  return j;
}

std::string Bytes(const json& v) { return v.is_number() ? table::FormatBytes(v.get<int64_t>()) : "-"; }

Status List(const TableFlags& f) {
  Client client(f.server);
  ARROW_ASSIGN_OR_RAISE(json j, client.GetAllPages("/api/v1/tables", "tables"));
  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return Status::OK();
  }
  std::cout << fmt::format("{:<32} {:>7} {:>12} {:>12} {:>12}  {}\n", "TABLE", "FILES", "ROWS", "BYTES", "STORED",
                           "BLOCKS");
  for (const auto& t : j["tables"]) {
    std::string blocks = t["first_block"].is_null()
                             ? "-"
                             : fmt::format("{}..{}", t["first_block"].get<uint64_t>(), t["last_block"].get<uint64_t>());
    std::cout << fmt::format("{:<32} {:>7} {:>12} {:>12} {:>12}  {}\n", t["name"].get<std::string>(),
                             t.value("files", 0), t.value("rows", int64_t{0}), Bytes(t["bytes"]),
                             Bytes(t["stored_bytes"]), blocks);
  }
  return Status::OK();
}

Status Files(const TableFlags& f) {
  ARROW_ASSIGN_OR_RAISE(table::TableId id, table::ParseTableId(f.name));
  Client client(f.server);
  ARROW_ASSIGN_OR_RAISE(json j, client.GetAllPages(TablePath(id) + "/files", "files"));
  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return Status::OK();
  }
  std::cout << fmt::format("{:<28} {:>21} {:>9} {:>11} {:>11} {:>4}  {}\n", "FILE", "BLOCKS", "ROWS", "BYTES", "STORED",
                           "GEN", "CREATED");
  for (const auto& s : j["files"]) {
    std::cout << fmt::format("{:<28} {:>21} {:>9} {:>11} {:>11} {:>4}  {}\n", s["id"].get<std::string>(),
                             fmt::format("{}..{}", s["start_block"].get<uint64_t>(), s["end_block"].get<uint64_t>()),
                             s["rows"].get<int64_t>(), Bytes(s["bytes"]), Bytes(s["stored_bytes"]),
                             s["generation"].get<int64_t>(), s["created_at"].get<std::string>());
  }
  return Status::OK();
}

Status Histogram(const TableFlags& f) {
  table::TableId id;
  bool printed = false;
  ARROW_ASSIGN_OR_RAISE(json j, FetchTable(f, "/histogram", &id, &printed));
  if (printed) return Status::OK();
  const json& s = j["summary"];
  int64_t max_files = 1;
  for (const auto& b : j["buckets"]) max_files = std::max<int64_t>(max_files, b["files"].get<int64_t>());
  std::cout << fmt::format("{}: {} files, {} uncompressed, {} stored, {} rows\n\n", id.ToString(),
                           s["files"].get<int64_t>(), Bytes(s["bytes"]), Bytes(s["stored_bytes"]),
                           s["rows"].get<int64_t>());
  std::cout << fmt::format("{:<26} {:>7} {:>11}\n", "SIZE (UNCOMPRESSED)", "FILES", "BYTES");
  for (const auto& b : j["buckets"]) {
    int64_t n = b["files"].get<int64_t>();
    int width = static_cast<int>((n * 40 + max_files - 1) / max_files);
    std::string bar;
    for (int i = 0; i < width; ++i) bar += "\u2588";
    std::cout << fmt::format("{:<26} {:>7} {:>11}  {}\n", b["label"].get<std::string>(), n, Bytes(b["bytes"]), bar);
  }
  std::cout << fmt::format(
      "\nfiles below max_eager_bytes ({}): {}\n"
      "files older than cooldown_duration ({}s) below half the target ({}): {}\n"
      "compression ratio (stored / uncompressed): {:.3f}\n",
      Bytes(s["max_eager_bytes"]), s["files_below_max_eager_bytes"].get<int64_t>(),
      j["cooldown_duration"].get<double>(), table::FormatBytes(s["target_bytes"].get<int64_t>() / 2),
      s["old_files_below_half_target"].get<int64_t>(), s["compression_ratio"].get<double>());
  return Status::OK();
}

Status Compact(const TableFlags& f) {
  ARROW_ASSIGN_OR_RAISE(auto id, table::ParseTableId(f.name));
  Client client(f.server);
  Status failure;
  int merged = 0, failed = 0, discarded = 0;
  ARROW_RETURN_NOT_OK(client.PostLines(TablePath(id) + "/compact?stream=true", [&](const std::string& line) {
    json e = json::parse(line, nullptr, false);
    if (e.is_discarded()) return;
    if (f.json) {
      std::cout << line << "\n" << std::flush;
    }
    std::string event = e.value("event", "");
    if (event == "planned" && !f.json) {
      std::cout << fmt::format("{}: {} group(s) to merge\n", id.ToString(), e["groups"].get<int64_t>()) << std::flush;
    } else if (event == "merged") {
      merged++;
      if (!f.json) {
        const json& o = e["output"];
        std::cout << fmt::format("  merged {} files -> {} (blocks {}..{}, {} rows, {} -> {} stored)\n",
                                 e["inputs"].size(), o["id"].get<std::string>(), o["start_block"].get<uint64_t>(),
                                 o["end_block"].get<uint64_t>(), o["rows"].get<int64_t>(), Bytes(o["bytes"]),
                                 Bytes(o["stored_bytes"]))
                  << std::flush;
      }
    } else if (event == "failed") {
      failed++;
      if (!f.json) std::cout << "  failed: " << e.value("error", "") << "\n" << std::flush;
    } else if (event == "discarded") {
      discarded++;
      if (!f.json) std::cout << "  discarded (the files changed meanwhile)\n" << std::flush;
    } else if (event == "done" && !f.json) {
      if (!e["ran"].get<bool>()) {
        std::cout << "compaction is off ([writer.compactor] active = false)\n";
      } else {
        std::cout << fmt::format("done in {:.2f}s: {} merged, {} failed, {} discarded\n", e["seconds"].get<double>(),
                                 merged, failed, discarded);
      }
    } else if (event == "error") {
      failure = Status::IOError(e.value("message", "compaction failed"));
    }
  }));
  ARROW_RETURN_NOT_OK(failure);
  if (failed > 0) return Status::IOError(fmt::format("{} merge(s) failed; see the server log", failed));
  return Status::OK();
}

// The last passes that merged or failed, newest first, and the GC backlog.
Status Passes(const TableFlags& f) {
  ARROW_ASSIGN_OR_RAISE(table::TableId id, table::ParseTableId(f.name));
  if (f.limit < 1 || f.limit > 10000) return InvalidArgument(fmt::format("--limit {} is not in 1..10000", f.limit));
  Client client(f.server);
  ARROW_ASSIGN_OR_RAISE(json passes, client.Get(TablePath(id) + fmt::format("/passes?amount={}", f.limit)));
  ARROW_ASSIGN_OR_RAISE(json gc, client.Get(TablePath(id) + "/gc"));
  if (f.json) {
    std::cout << json{{"passes", passes["passes"]}, {"gc", gc}}.dump(2) << "\n";
    return Status::OK();
  }
  std::cout << fmt::format("{:<27} {:>8} {:>6} {:>6} {:>6} {:>9} {:>23} {:>6}  {}\n", "STARTED", "TOOK", "SEEN",
                           "MERGED", "FAILED", "DISCARDED", "BYTES IN -> OUT", "AFTER", "SERVER / ERRORS");
  for (const auto& p : passes["passes"]) {
    int64_t merged = 0, failed = 0, discarded = 0, in = 0, out = 0;
    std::string errors = p["server"].get<std::string>();
    if (p["error"].is_string()) {
      ++failed;
      errors += ": the pass failed: " + p["error"].get<std::string>();
    }
    for (const auto& m : p["merges"]) {
      std::string outcome = m["outcome"].get<std::string>();
      if (outcome == "merged") {
        ++merged;
        in += m["bytes_in"].get<int64_t>();
        out += m["bytes_out"].get<int64_t>();
      } else if (outcome == "failed") {
        ++failed;
        errors += fmt::format("; blocks {}..{}: {}", m["start_block"].get<uint64_t>(), m["end_block"].get<uint64_t>(),
                              m.value("error", ""));
      } else if (outcome == "discarded") {
        ++discarded;
      }
    }
    std::cout << fmt::format("{:<27} {:>7.2f}s {:>6} {:>6} {:>6} {:>9} {:>23} {:>6}  {}\n",
                             FormatTime(FromUnixMicros(p["t_us"].get<int64_t>())), p["seconds"].get<double>(),
                             p["files_considered"].get<int64_t>(), merged, failed, discarded,
                             merged ? table::FormatBytes(in) + " -> " + table::FormatBytes(out) : "-",
                             p["error"].is_string() ? "-" : std::to_string(p["files_after"].get<int64_t>()), errors);
  }
  if (passes["passes"].empty()) std::cout << "(no pass merged anything or failed in the last 30 days)\n";
  std::cout << fmt::format("GC backlog: {} files ({} past the {:.0f} s grace period)\n", gc["files"].get<int64_t>(),
                           gc["due"].get<int64_t>(), gc["grace_seconds"].get<double>());
  return Status::OK();
}

}  // namespace

std::function<int()> AddTableCommands(CLI::App& app) {
  auto flags = std::make_shared<TableFlags>();
  auto* table = app.add_subcommand("table", "Inspect and compact tables on a running server");
  table->require_subcommand(1);
  AddServerOption(table, &flags->server);

  auto* list = table->add_subcommand("list", "List tables with their files, rows and sizes");
  list->add_flag("--json", flags->json, "Print JSON");
  auto* files = table->add_subcommand("files", "List a table's live files");
  files->add_option("table", flags->name, "<dataset>.<table>")->required();
  files->add_flag("--json", flags->json, "Print JSON");
  auto* histogram = table->add_subcommand("histogram", "Show a table's file sizes against the compaction target");
  histogram->add_option("table", flags->name, "<dataset>.<table>")->required();
  histogram->add_flag("--json", flags->json, "Print JSON");
  auto* compact = table->add_subcommand("compact", "Run a compaction pass now and show its progress");
  compact->add_option("table", flags->name, "<dataset>.<table>")->required();
  compact->add_flag("--json", flags->json, "Print progress as JSON lines");

  auto* passes = table->add_subcommand("passes", "Show a table's last compaction passes and its GC backlog");
  passes->add_option("table", flags->name, "<dataset>.<table>")->required();
  passes->add_option("--limit", flags->limit, "How many passes, newest first (default 20)");
  passes->add_flag("--json", flags->json, "Print JSON");

  auto run_simulate = AddSimulateCommand(table);
  // --server may come after the subcommand too.
  for (auto* sub : {list, files, histogram, compact, passes}) sub->fallthrough();

  return [=]() -> int {
    if (list->parsed()) return Run([&] { return List(*flags); });
    if (files->parsed()) return Run([&] { return Files(*flags); });
    if (histogram->parsed()) return Run([&] { return Histogram(*flags); });
    if (compact->parsed()) return Run([&] { return Compact(*flags); });
    if (passes->parsed()) return Run([&] { return Passes(*flags); });
    if (int code = run_simulate(); code >= 0) return code;
    return -1;
  };
}

}  // namespace sediment::cli
