#include "bench/scale_bench.h"

#include <arrow/api.h>
#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "auth/auth.h"
#include "base/crypto.h"
#include "bench/bench_cmd.h"
#include "catalog/catalog.h"
#include "catalog/entry.h"
#include "cli/client.h"
#include "server/app.h"
#include "table/scan.h"
#include "table/table_service.h"

namespace sediment::bench {
namespace {

using nlohmann::json;
using Steady = std::chrono::steady_clock;

double MsSince(Steady::time_point t0) { return std::chrono::duration<double, std::milli>(Steady::now() - t0).count(); }

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

struct Common {
  std::string data_dir;
  std::string postgres_dsn;  // empty: embedded RocksDB
  std::string schema;        // PostgreSQL schema ("" = a fresh one)
};

Result<Config> BenchConfig(const Common& c, bool fresh) {
  if (fresh) std::filesystem::remove_all(c.data_dir);
  ARROW_ASSIGN_OR_RAISE(Config config, Config::Load("", {}));
  config.server.listen = "127.0.0.1:0";
  config.query.flight_listen = config.query.jsonl_listen = "";  // no query server ports in a bench
  config.storage.data_dir = c.data_dir;
  config.writer.compactor.active = false;  // the live set only grows: the case of a table behind on compaction
  config.graveler.compaction.auto_trigger = false;
  if (!c.postgres_dsn.empty()) {
    config.database.type = "postgres";
    config.database.postgres_dsn = c.postgres_dsn;
    config.database.postgres_schema = c.schema.empty() ? fmt::format("bench_{}", RandomHex(6)) : c.schema;
  }
  return config;
}

std::unique_ptr<httplib::Client> HttpClient(server::App& app) {
  auto client = std::make_unique<httplib::Client>("127.0.0.1", app.port());
  client->set_basic_auth("AKIABENCH", "bench-secret-key");
  client->set_keep_alive(true);
  client->set_tcp_nodelay(true);
  client->set_read_timeout(3600);
  return client;
}

// --- tables ------------------------------------------------------------------

struct TablesFlags {
  Common common;
  std::vector<int64_t> checkpoints = {1000, 10000, 100000};
  int samples = 100;
};

std::shared_ptr<arrow::Schema> LogSchema() {
  return arrow::schema({arrow::field("block_num", arrow::uint64(), false), arrow::field("log_index", arrow::int32()),
                        arrow::field("data", arrow::binary())});
}

std::string BlockHash(uint64_t b) { return fmt::format("{:064x}", b * 0x9E3779B97F4A7C15ull + 1); }

// One block of 4 rows, as one segment: a writer at the head with compaction off.
Status AppendBlock(table::TableService& tables, const table::TableId& id, uint64_t b) {
  arrow::UInt64Builder blocks;
  arrow::Int32Builder idx;
  arrow::BinaryBuilder data;
  for (int i = 0; i < 4; ++i) {
    ARROW_RETURN_NOT_OK(blocks.Append(b));
    ARROW_RETURN_NOT_OK(idx.Append(i));
    ARROW_RETURN_NOT_OK(data.Append(std::string(64, static_cast<char>('a' + (b + i) % 26))));
  }
  std::vector<std::shared_ptr<arrow::Array>> cols(3);
  ARROW_RETURN_NOT_OK(blocks.Finish(&cols[0]));
  ARROW_RETURN_NOT_OK(idx.Finish(&cols[1]));
  ARROW_RETURN_NOT_OK(data.Finish(&cols[2]));
  auto batch = arrow::RecordBatch::Make(LogSchema(), 4, cols);
  ARROW_ASSIGN_OR_RAISE(auto reader, arrow::RecordBatchReader::Make({batch}, LogSchema()));
  table::AppendRequest req{b, b, BlockHash(b), BlockHash(b - 1)};
  return tables.Append(id, req, reader.get()).status();
}

Status RunTables(const TablesFlags& f) {
  ARROW_ASSIGN_OR_RAISE(Config config, BenchConfig(f.common, true));
  server::App app(config);
  ARROW_RETURN_NOT_OK(app.Start());
  ARROW_RETURN_NOT_OK(app.auth().Setup("admin", "AKIABENCH", "bench-secret-key").status());
  auto& tables = app.tables();
  table::TableId id{"bench", "logs"};
  ARROW_RETURN_NOT_OK(tables.CreateTable(id, LogSchema()).status());
  auto http = HttpClient(app);
  std::mt19937_64 rng(17);
  uint64_t next = 1;
  for (int64_t checkpoint : f.checkpoints) {
    auto seed0 = Steady::now();
    while (static_cast<int64_t>(next) <= checkpoint) ARROW_RETURN_NOT_OK(AppendBlock(tables, id, next++));
    double seed_s = MsSince(seed0) / 1000;
    ARROW_ASSIGN_OR_RAISE(auto state, tables.State(id));
    std::vector<double> append, scan, page, page_http, state_ms;
    for (int i = 0; i < f.samples; ++i) {
      auto t0 = Steady::now();
      ARROW_RETURN_NOT_OK(AppendBlock(tables, id, next++));
      append.push_back(MsSince(t0));
    }
    for (int i = 0; i < f.samples; ++i) {
      uint64_t from = 1 + rng() % (next - 11);
      auto t0 = Steady::now();
      table::ScanRequest req;
      req.from_block = from;
      req.to_block = from + 9;
      ARROW_ASSIGN_OR_RAISE(auto s, table::Scan::Open(&tables, id, req));
      int64_t rows = 0;
      while (true) {
        ARROW_ASSIGN_OR_RAISE(auto batch, s->Next());
        if (!batch) break;
        rows += batch->num_rows();
      }
      scan.push_back(MsSince(t0));
      if (rows != 40)
        return Status::IOError(fmt::format("scan of [{}, {}] gave {} rows, not 40", from, from + 9, rows));
    }
    for (int i = 0; i < f.samples; ++i) {
      uint64_t after = rng() % (next - 1000);
      auto t0 = Steady::now();
      ARROW_ASSIGN_OR_RAISE(auto p, tables.ListSegments(id, after, 1000));
      page.push_back(MsSince(t0));
      if (p.segments.size() != 1000) return Status::IOError("a files page was short");
      t0 = Steady::now();
      auto res = http->Get(fmt::format("/api/v1/datasets/bench/tables/logs/files?amount=1000&after={}", after));
      if (!res || res->status != 200) return Status::IOError("GET files failed");
      page_http.push_back(MsSince(t0));
      t0 = Steady::now();
      ARROW_RETURN_NOT_OK(tables.State(id).status());
      state_ms.push_back(MsSince(t0));
    }
    json out = {{"kv", config.database.type},
                {"live_files", state.files},
                {"seed_appends_per_s", static_cast<double>(state.files) / std::max(seed_s, 1e-9)},
                {"append_ms_p50", Quantile(append, 0.5)},
                {"append_ms_p90", Quantile(append, 0.9)},
                {"scan10_ms_p50", Quantile(scan, 0.5)},
                {"scan10_ms_p90", Quantile(scan, 0.9)},
                {"files_page1000_ms_p50", Quantile(page, 0.5)},
                {"files_page1000_http_ms_p50", Quantile(page_http, 0.5)},
                {"table_state_ms_p50", Quantile(state_ms, 0.5)}};
    std::cout << out.dump() << std::endl;
  }
  http.reset();
  app.Stop();
  return Status::OK();
}

// --- catalog: a merge of a big diff ------------------------------------------

struct MergeFlags {
  Common common;
  int64_t entries = 1000000;
  bool prepare = false;
};

Status RunMerge(const MergeFlags& f) {
  ARROW_ASSIGN_OR_RAISE(Config config, BenchConfig(f.common, f.prepare));
  server::App app(config);
  ARROW_RETURN_NOT_OK(app.Start());
  auto& cat = app.catalog();
  if (f.prepare) {
    ARROW_RETURN_NOT_OK(cat.CreateRepository("bench", f.common.data_dir + "/namespaces/bench", "main", false).status());
    ARROW_RETURN_NOT_OK(cat.CreateBranch("bench", "feature", "main").status());
    auto t0 = Steady::now();
    std::vector<std::pair<std::string, catalog::Entry>> batch;
    for (int64_t start = 0; start < f.entries; start += 1000) {
      batch.clear();
      for (int64_t i = start; i < std::min(f.entries, start + 1000); ++i) {
        catalog::Entry e;
        e.size = 4096;
        e.mtime = 1700000000;
        e.address = fmt::format("data/{:016x}", static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull);
        e.checksum = e.address.substr(5);
        batch.emplace_back(fmt::format("p{:03d}/f{:09d}.parquet", i % 100, i), std::move(e));
      }
      ARROW_RETURN_NOT_OK(cat.PutEntries("bench", "feature", batch));
    }
    catalog::CommitParams p;
    p.message = "feature";
    ARROW_RETURN_NOT_OK(cat.CommitBranch("bench", "feature", p).status());
    std::cout << json{{"prepared_entries", f.entries}, {"seconds", MsSince(t0) / 1000}}.dump() << std::endl;
  } else {
    auto t0 = Steady::now();
    auto merged = cat.Merge("bench", "feature", "main", {}, catalog::MergeStrategy::kNone);
    ARROW_RETURN_NOT_OK(merged.status());
    std::cout
        << json{{"kv", config.database.type}, {"merged_entries", f.entries}, {"seconds", MsSince(t0) / 1000}}.dump()
        << std::endl;
  }
  app.Stop();
  return Status::OK();
}

// --- catalog: paging a long log ----------------------------------------------

struct LogFlags {
  Common common;
  int64_t commits = 100000;
  int64_t amount = 1000;
};

Status RunLog(const LogFlags& f) {
  ARROW_ASSIGN_OR_RAISE(Config config, BenchConfig(f.common, true));
  server::App app(config);
  ARROW_RETURN_NOT_OK(app.Start());
  ARROW_RETURN_NOT_OK(app.auth().Setup("admin", "AKIABENCH", "bench-secret-key").status());
  auto& cat = app.catalog();
  ARROW_RETURN_NOT_OK(cat.CreateRepository("bench", f.common.data_dir + "/namespaces/bench", "main", false).status());
  auto t0 = Steady::now();
  catalog::CommitParams p;
  p.allow_empty = true;
  for (int64_t i = 0; i < f.commits; ++i) {
    p.message = fmt::format("c{}", i);
    ARROW_RETURN_NOT_OK(cat.CommitBranch("bench", "main", p).status());
  }
  double build_s = MsSince(t0) / 1000;
  auto http = HttpClient(app);
  std::string after;
  std::vector<double> pages;
  int64_t listed = 0;
  while (true) {
    auto t1 = Steady::now();
    auto res = http->Get(fmt::format("/api/v1/repositories/bench/refs/main/commits?amount={}{}", f.amount,
                                     after.empty() ? "" : "&after=" + after));
    if (!res || res->status != 200) return Status::IOError("GET commits failed");
    pages.push_back(MsSince(t1));
    json j = json::parse(res->body);
    listed += static_cast<int64_t>(j["results"].size());
    if (!j["pagination"]["has_more"].get<bool>()) break;
    after = j["pagination"]["next_offset"].get<std::string>();
  }
  double total = 0;
  for (double ms : pages) total += ms;
  size_t tenth = std::max<size_t>(1, pages.size() / 10);
  std::vector<double> first(pages.begin(), pages.begin() + static_cast<std::ptrdiff_t>(tenth));
  std::vector<double> last(pages.end() - static_cast<std::ptrdiff_t>(tenth), pages.end());
  std::cout << json{{"kv", config.database.type},
                    {"commits", f.commits + 1},
                    {"listed", listed},
                    {"build_commits_per_s", static_cast<double>(f.commits) / std::max(build_s, 1e-9)},
                    {"pages", pages.size()},
                    {"page_ms_first_tenth_p50", Quantile(first, 0.5)},
                    {"page_ms_last_tenth_p50", Quantile(last, 0.5)},
                    {"total_s", total / 1000}}
                   .dump()
            << std::endl;
  http.reset();
  app.Stop();
  return Status::OK();
}

void CommonFlags(CLI::App* cmd, Common* c) {
  cmd->add_option("--data-dir", c->data_dir, "Scratch directory")->required();
  cmd->add_option("--postgres-dsn", c->postgres_dsn, "Use PostgreSQL instead of RocksDB");
  cmd->add_option("--postgres-schema", c->schema, "PostgreSQL schema (default: a fresh one)");
}

}  // namespace

std::function<int()> AddScaleBench(CLI::App* bench) {
  auto tf = std::make_shared<TablesFlags>();
  auto* tables = bench->add_subcommand("scale-tables", "Append, 10-block scan and files-page latency at N live files");
  CommonFlags(tables, &tf->common);
  tables->add_option("--checkpoints", tf->checkpoints, "Live-file counts to measure at")->delimiter(',');
  tables->add_option("--samples", tf->samples, "Timed operations of each kind per checkpoint");
  auto mf = std::make_shared<MergeFlags>();
  auto* merge = bench->add_subcommand("scale-merge", "Merge a branch that differs from main in N entries");
  CommonFlags(merge, &mf->common);
  merge->add_option("--entries", mf->entries, "Entries the branches differ in");
  merge->add_flag("--prepare", mf->prepare, "Build the repository (else: merge, in a process of its own)");
  auto lf = std::make_shared<LogFlags>();
  auto* log = bench->add_subcommand("scale-log", "Page through a log of N commits over HTTP");
  CommonFlags(log, &lf->common);
  log->add_option("--commits", lf->commits, "Commits in the history");
  log->add_option("--amount", lf->amount, "Commits per page");
  return [=]() -> int {
    if (tables->parsed()) return Run([&] { return RunTables(*tf); });
    if (merge->parsed()) return Run([&] { return RunMerge(*mf); });
    if (log->parsed()) return Run([&] { return RunLog(*lf); });
    return -1;
  };
}

}  // namespace sediment::bench
