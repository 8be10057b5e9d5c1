#include "cli/query_cmd.h"

#include <fmt/format.h>
#include <httplib.h>

#include <iostream>

#include "cli/client.h"
#include "table/names.h"

namespace sediment::cli {
namespace {

using nlohmann::json;

struct QueryFlags {
  std::string server = DefaultServerUrl();
  std::string table;
  std::optional<uint64_t> from, to;
  std::string columns, where;
  std::optional<int64_t> limit;
  bool json = false;
};

std::string Cell(const nlohmann::ordered_json& v) {
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (s.size() > 42) s = s.substr(0, 39) + "...";
  return s;
}

void PrintRows(const std::vector<std::string>& keys, const std::vector<nlohmann::ordered_json>& rows, bool header) {
  std::vector<size_t> width(keys.size());
  for (size_t c = 0; c < keys.size(); ++c) {
    width[c] = keys[c].size();
    for (const auto& r : rows) width[c] = std::max(width[c], Cell(r[keys[c]]).size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) out += fmt::format("{:<{}}  ", cells[c], width[c]);
    while (!out.empty() && out.back() == ' ') out.pop_back();
    std::cout << out << "\n";
  };
  if (header) line(keys);
  for (const auto& r : rows) {
    std::vector<std::string> cells;
    for (const auto& k : keys) cells.push_back(Cell(r[k]));
    line(cells);
  }
}

Status Query(const QueryFlags& f) {
  ARROW_ASSIGN_OR_RAISE(auto id, table::ParseTableId(f.table));
  httplib::Params params{{"format", "jsonl"}};
  if (f.from) params.emplace("from_block", std::to_string(*f.from));
  if (f.to) params.emplace("to_block", std::to_string(*f.to));
  if (!f.columns.empty()) params.emplace("columns", f.columns);
  if (!f.where.empty()) params.emplace("filter", f.where);
  if (f.limit) params.emplace("limit", std::to_string(*f.limit));
  std::string path =
      httplib::append_query_params(fmt::format("/api/v1/datasets/{}/tables/{}/scan", id.dataset, id.table), params);
  Client client(f.server);
  std::vector<std::string> keys;
  std::vector<nlohmann::ordered_json> pending;  // ordered: columns as the server sent them
  bool header = true;
  int64_t rows = 0;
  auto flush = [&] {
    if (pending.empty()) return;
    PrintRows(keys, pending, header);
    header = false;
    pending.clear();
  };
  ARROW_RETURN_NOT_OK(client.StreamLines("GET", path, [&](const std::string& line) {
    rows++;
    if (f.json) {
      std::cout << line << "\n";
      return true;
    }
    auto row = nlohmann::ordered_json::parse(line, nullptr, false);
    if (keys.empty() && row.is_object()) {
      for (const auto& [k, v] : row.items()) keys.push_back(k);
    }
    pending.push_back(std::move(row));
    if (pending.size() >= 200) flush();  // column widths from each 200 rows
    return true;
  }));
  if (!f.json) {
    flush();
    std::cout << std::flush;
    std::cerr << fmt::format("({} row{})\n", rows, rows == 1 ? "" : "s");
  }
  return Status::OK();
}

struct JobFlags {
  std::string server = DefaultServerUrl();
  std::string name;
  bool json = false;
};

void PrintJob(const json& j) {
  std::string last;
  for (const auto& [t, b] : j["last_block"].items()) last += fmt::format(" {}={}", t, b.is_null() ? "-" : b.dump());
  auto opt = [&](const char* k) { return !j.contains(k) || j[k].is_null() ? std::string("-") : j[k].dump(); };
  std::cout << fmt::format(
      "{:<16} {:<9} {:<8} head={:<10} node={:<10} lag={:<8} retries={:<5} segments={:<8} reorgs={:<5}{}{}\n",
      j["dataset"].get<std::string>(), j.value("source", ""), j["running"].get<bool>() ? "running" : "stopped",
      opt("head"), opt("node_head"), opt("lag"), j.value("retries", int64_t{0}), j["segments_written"].get<int64_t>(),
      j["reorgs"].get<int64_t>(), last,
      j["last_error"].get<std::string>().empty() ? "" : "  error: " + j["last_error"].get<std::string>());
}

}  // namespace

std::function<int()> AddQueryCommand(CLI::App& app) {
  auto f = std::make_shared<QueryFlags>();
  auto* q = app.add_subcommand("query", "Read rows of a table (one snapshot, in block order)");
  q->add_option("table", f->table, "<dataset>.<table>")->required();
  AddServerOption(q, &f->server);
  q->add_option("--from", f->from, "First block");
  q->add_option("--to", f->to, "Last block");
  q->add_option("--columns", f->columns, "Comma-separated columns (default: all)");
  q->add_option("--where", f->where, "A filter: '<column> <op> <value>', op one of = != < <= > >=; binary as 0x…");
  q->add_option("--limit", f->limit, "At most this many rows");
  q->add_flag("--json", f->json, "Print JSON lines");
  return [=]() -> int {
    if (!q->parsed()) return -1;
    return Run([&] { return Query(*f); });
  };
}

std::function<int()> AddJobCommands(CLI::App& app) {
  auto f = std::make_shared<JobFlags>();
  auto* job = app.add_subcommand("job", "List, start and stop the ingest jobs of a running server");
  job->require_subcommand(1);
  AddServerOption(job, &f->server);
  auto* list = job->add_subcommand("list", "List jobs and their progress");
  list->add_flag("--json", f->json, "Print JSON");
  auto* start = job->add_subcommand("start", "Start a job");
  start->add_option("dataset", f->name, "The job's dataset")->required();
  auto* stop = job->add_subcommand("stop", "Stop a job (its tables keep being compacted)");
  stop->add_option("dataset", f->name, "The job's dataset")->required();
  for (auto* sub : {list, start, stop}) sub->fallthrough();
  return [=]() -> int {
    if (list->parsed()) {
      return Run([&]() -> Status {
        Client client(f->server);
        ARROW_ASSIGN_OR_RAISE(json j, client.Get("/api/v1/jobs"));
        if (f->json) {
          std::cout << j.dump(2) << "\n";
        } else {
          for (const auto& job : j["jobs"]) PrintJob(job);
        }
        return Status::OK();
      });
    }
    for (auto* sub : {start, stop}) {
      if (!sub->parsed()) continue;
      return Run([&]() -> Status {
        Client client(f->server);
        ARROW_ASSIGN_OR_RAISE(json j, client.Post(fmt::format("/api/v1/jobs/{}/{}", f->name, sub->get_name())));
        PrintJob(j);
        return Status::OK();
      });
    }
    return -1;
  };
}

}  // namespace sediment::cli
