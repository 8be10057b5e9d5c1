#include "bench/bench_cmd.h"

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <arrow/util/thread_pool.h>
#include <fmt/format.h>
#include <parquet/arrow/reader.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "bench/catalog_bench.h"
#include "bench/scale_bench.h"
#include "blob/blob.h"
#include "chain/ingest_job.h"
#include "kv/kv.h"
#include "table/table_service.h"

namespace sediment::bench {
namespace {

using table::MergeStats;

using nlohmann::json;
namespace fs = std::filesystem;

struct BenchFlags {
  int64_t segments = 2000;
  int64_t blocks_per_segment = 2;
  int64_t txs_per_block = 150;
  std::string input_dir;
  std::string data_dir;
  std::string table = "bench.logs";
  int threads = 1;
  int metadata_concurrency = 0;  // 0: threads
  int64_t bytes = 256ll << 20;
  int64_t row_group_mb = 128;
  int64_t row_group_rows = 131072;
  // Object storage for the table's files: empty = <data_dir>/objects. With
  // s3://bucket/prefix, --s3-endpoint (host:port, http) and the keys in
  // AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.
  std::string objects;
  std::string s3_endpoint;
  // ingest: run a compaction pass over every table after each poll.
  bool compact = false;
  // KEY=VALUE settings over the defaults (`--set writer.bloom_filter_columns=address`), applied last.
  std::vector<std::string> sets;
};

std::string ObjectsUri(const BenchFlags& f) { return f.objects.empty() ? f.data_dir + "/objects" : f.objects; }

S3Config BenchS3(const BenchFlags& f) {
  S3Config s3;
  if (f.s3_endpoint.empty()) return s3;
  s3.endpoint = f.s3_endpoint;
  s3.scheme = "http";
  if (const char* k = std::getenv("AWS_ACCESS_KEY_ID")) s3.access_key_id = k;
  if (const char* k = std::getenv("AWS_SECRET_ACCESS_KEY")) s3.secret_access_key = k;
  return s3;
}

struct Stack {
  std::shared_ptr<kv::KvStore> kv;
  std::shared_ptr<blob::BlobStore> blobs;
  MetricsRegistry metrics;
  std::unique_ptr<table::TableService> tables;
};

Result<std::unique_ptr<Stack>> OpenStack(const BenchFlags& f) {
  auto stack = std::make_unique<Stack>();
  ARROW_ASSIGN_OR_RAISE(stack->kv, kv::OpenRocksDb(f.data_dir + "/kv", false));
  ARROW_ASSIGN_OR_RAISE(stack->blobs, blob::OpenBlobStore(ObjectsUri(f), BenchS3(f)));
  ARROW_ASSIGN_OR_RAISE(Config config, Config::Load("", {}));
  config.writer.bytes = f.bytes;
  config.writer.max_row_group_mb = f.row_group_mb;
  config.writer.max_row_group_rows = f.row_group_rows;
  config.writer.compactor.cooldown_duration = 0;  // every file may start a group
  config.writer.compactor.skip_latest_segments = 0;
  config.writer.compactor.write_concurrency = f.threads;
  config.writer.compactor.metadata_concurrency = f.metadata_concurrency > 0 ? f.metadata_concurrency : f.threads;
  for (const auto& kv : f.sets) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) return InvalidArgument(fmt::format("--set \"{}\": expected KEY=VALUE", kv));
    ARROW_RETURN_NOT_OK(config.Set(kv.substr(0, eq), kv.substr(eq + 1), "flag --set"));
  }
  stack->tables = std::make_unique<table::TableService>(stack->kv, stack->blobs, SystemClock::Default(),
                                                        &stack->metrics, config.writer);
  ARROW_RETURN_NOT_OK(stack->tables->Start(/*background=*/false));
  return stack;
}

std::string HashOf(uint64_t block) { return fmt::format("{:064x}", block * 0x9E3779B97F4A7C15ull); }

// Appends every Parquet file of --input-dir (in name order) as a segment.
Status Import(const BenchFlags& f) {
  ARROW_ASSIGN_OR_RAISE(auto id, table::ParseTableId(f.table));
  ARROW_ASSIGN_OR_RAISE(auto stack, OpenStack(f));
  std::vector<fs::path> inputs;
  for (const auto& e : fs::directory_iterator(f.input_dir)) {
    if (e.path().extension() == ".parquet") inputs.push_back(e.path());
  }
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) return InvalidArgument("no .parquet files in " + f.input_dir);
  bool created = false;
  for (const auto& p : inputs) {
    ARROW_ASSIGN_OR_RAISE(auto file, arrow::io::ReadableFile::Open(p.string()));
    ARROW_ASSIGN_OR_RAISE(auto reader, parquet::arrow::OpenFile(file, arrow::default_memory_pool()));
    ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Table> t, reader->ReadTable());
    if (!created) {
      ARROW_RETURN_NOT_OK(stack->tables->CreateTable(id, t->schema()).status());
      created = true;
    }
    auto blocks = std::static_pointer_cast<arrow::UInt64Array>(t->GetColumnByName("block_num")->chunk(0));
    uint64_t start = blocks->Value(0);
    auto last_chunk = std::static_pointer_cast<arrow::UInt64Array>(
        t->GetColumnByName("block_num")->chunk(t->GetColumnByName("block_num")->num_chunks() - 1));
    uint64_t end = last_chunk->Value(last_chunk->length() - 1);
    arrow::TableBatchReader batches(*t);
    table::AppendRequest req{start, end, HashOf(end), HashOf(start - 1)};
    ARROW_RETURN_NOT_OK(stack->tables->Append(id, req, &batches).status());
  }
  ARROW_ASSIGN_OR_RAISE(auto live, stack->tables->LiveSegments(id));
  json files = json::array();
  int64_t rows = 0, bytes = 0, stored = 0;
  for (const auto& s : live.segments) {
    files.push_back(f.objects.empty() ? fs::absolute(f.data_dir + "/objects/" + s.path).string()
                                      : f.objects + "/" + s.path);
    rows += s.rows;
    bytes += s.bytes;
    stored += s.stored_bytes;
  }
  stack->tables->Stop();
  std::cout << json{{"files", files}, {"rows", rows}, {"bytes", bytes}, {"stored_bytes", stored}}.dump() << "\n";
  return Status::OK();
}

// The process's resident bytes now.
int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// One compaction pass over the imported table, timed.
Status Compact(const BenchFlags& f) {
  ARROW_ASSIGN_OR_RAISE(auto id, table::ParseTableId(f.table));
  ARROW_RETURN_NOT_OK(arrow::SetCpuThreadPoolCapacity(f.threads));
  // Reads in flight: on object storage latency, not CPU, bounds them.
  ARROW_RETURN_NOT_OK(arrow::io::SetIOThreadPoolCapacity(std::max(f.threads, f.metadata_concurrency)));
  ARROW_ASSIGN_OR_RAISE(auto stack, OpenStack(f));
  const int64_t rss_before = ResidentBytes();
  auto t0 = std::chrono::steady_clock::now();
  ARROW_ASSIGN_OR_RAISE(auto pass, stack->tables->CompactNow(id));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int64_t read = 0, written = 0, inputs = 0, outputs = 0, failed = 0, copied = 0, encoded = 0, pages = 0, finals = 0,
          plain = 0, step_buffers = 0;
  for (const auto& m : pass.merges) {
    if (!m.output) {
      failed++;
      continue;
    }
    outputs++;
    inputs += static_cast<int64_t>(m.inputs.size());
    written += m.output->stored_bytes;
    copied += m.stats.row_groups_copied;
    pages += m.stats.row_groups_from_pages;
    encoded += m.stats.row_groups_reencoded;
    plain += m.stats.inputs_decoded_plain;
    finals += m.final ? 1 : 0;
    step_buffers = std::max(step_buffers, m.stats.step_buffers);
    read += m.output->bytes;
  }
  stack->tables->Stop();
  std::cout << json{{"seconds", seconds},
                    {"input_files", inputs},
                    {"output_files", outputs},
                    {"failed", failed},
                    {"bytes", read},
                    {"stored_bytes_written", written},
                    {"threads", f.threads},
                    {"row_groups_copied", copied},
                    {"row_groups_from_pages", pages},
                    {"row_groups_reencoded", encoded},
                    {"inputs_decoded_plain", plain},
                    {"final_outputs", finals},
                    {"step_buffers", step_buffers},
                    {"rss_before_bytes", rss_before},
                    // The process's, opening the stack included: its peak is the merge's.
                    {"arrow_pool_peak_bytes", arrow::default_memory_pool()->max_memory()}}
                   .dump()
            << "\n";
  return failed == 0 ? Status::OK() : Status::IOError(fmt::format("{} merges failed", failed));
}

// CPU seconds (user + system) this process has used so far.
double ProcessCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

// What the compaction passes of `ingest --compact` did, summed over the run.
struct CompactionTotals {
  double cpu = 0, wall = 0;
  int64_t passes = 0, merges = 0, merged_bytes = 0, final_merges = 0;
  MergeStats made;
};

// One compaction pass over every table; an error names a merge that failed.
Status CompactEveryTable(table::TableService& tables, CompactionTotals* totals) {
  ARROW_ASSIGN_OR_RAISE(auto list, tables.ListTables());
  for (const auto& t : list) {
    ARROW_ASSIGN_OR_RAISE(auto pass, tables.CompactNow(t.id));
    totals->passes++;
    for (const auto& m : pass.merges) {
      if (!m.output) return Status::IOError(fmt::format("a merge of {} failed: {}", t.id.ToString(), m.error));
      totals->merges++;
      totals->merged_bytes += m.input_stored_bytes;
      totals->made.row_groups_copied += m.stats.row_groups_copied;
      totals->made.row_groups_from_pages += m.stats.row_groups_from_pages;
      totals->made.row_groups_reencoded += m.stats.row_groups_reencoded;
      totals->final_merges += m.final ? 1 : 0;
    }
  }
  return Status::OK();
}

// What was appended: per table, its rows, stored bytes and live files' sizes; and the sums.
struct AppendTotals {
  json per_table = json::object();
  int64_t rows = 0, stored = 0;
};

Result<AppendTotals> AppendedToEveryTable(table::TableService& tables) {
  AppendTotals totals;
  ARROW_ASSIGN_OR_RAISE(auto list, tables.ListTables());
  for (const auto& t : list) {
    ARROW_ASSIGN_OR_RAISE(auto appends, tables.AppendHistory(t.id));
    int64_t rows = 0, stored = 0;
    for (const auto& a : appends) {
      rows += a.rows;
      stored += a.stored_bytes;
    }
    ARROW_ASSIGN_OR_RAISE(auto live, tables.LiveSegments(t.id));
    json sizes = json::array();
    for (const auto& s : live.segments) sizes.push_back(s.stored_bytes);
    totals.per_table[t.id.table] = {
        {"appended_rows", rows}, {"appended_stored_bytes", stored}, {"live_stored_bytes", sizes}};
    totals.rows += rows;
    totals.stored += stored;
  }
  return totals;
}

// The line `ingest` prints: segments and head; with --compact, what appends and passes cost.
json IngestReport(const BenchFlags& f, const chain::JobStatus& status, const AppendTotals& appended, double append_cpu,
                  const CompactionTotals& c) {
  const double gib = static_cast<double>(appended.stored) / static_cast<double>(1ll << 30);
  json out{{"segments", status.segments_written}, {"head", status.head ? *status.head : 0}};
  if (f.compact) {
    out.update({{"appended_rows", appended.rows},
                {"appended_stored_bytes", appended.stored},
                {"append_cpu_seconds", append_cpu},
                {"compaction_cpu_seconds", c.cpu},
                {"compaction_wall_seconds", c.wall},
                {"compaction_cpu_seconds_per_gib_appended", gib > 0 ? c.cpu / gib : 0.0},
                {"passes", c.passes},
                {"merges", c.merges},
                {"merged_input_stored_bytes", c.merged_bytes},
                {"final_merges", c.final_merges},
                {"row_groups",
                 {{"copied", c.made.row_groups_copied},
                  {"from_pages", c.made.row_groups_from_pages},
                  {"reencoded", c.made.row_groups_reencoded}}},
                {"tables", appended.per_table}});
  }
  return out;
}

// A table written the way a job writes at the chain's head: one small segment
// per table per poll. With --compact, a compaction pass over each table after
// every poll (the clock moves a second per block, so files age through the
// cooldown as they would), and the CPU that appends and passes took: the
// whole life of a table, from empty to target-size files.
Status Ingest(const BenchFlags& f) {
  auto kv = kv::OpenRocksDb(f.data_dir + "/kv", false);
  ARROW_RETURN_NOT_OK(kv.status());
  ARROW_ASSIGN_OR_RAISE(auto blobs, blob::OpenBlobStore(f.data_dir + "/objects", S3Config{}));
  ARROW_ASSIGN_OR_RAISE(Config config, Config::Load("", {}));
  config.writer.compactor.active = f.compact;
  config.writer.bytes = f.bytes;
  config.writer.compactor.write_concurrency = f.threads;
  config.writer.compactor.metadata_concurrency = f.threads;
  ARROW_RETURN_NOT_OK(arrow::SetCpuThreadPoolCapacity(f.threads));
  MetricsRegistry metrics;
  auto clock = std::make_shared<ManualClock>();
  table::TableService tables(*kv, blobs, clock, &metrics, config.writer);
  ARROW_RETURN_NOT_OK(tables.Start(false));
  JobConfig job;
  job.dataset = "bench";
  job.history_blocks = 0;
  job.block_time = 1;
  job.txs_per_block = f.txs_per_block;
  chain::IngestJob ingest(job, config.worker, &tables, *kv, clock, &metrics);
  double append_cpu = 0;
  CompactionTotals compaction;
  for (int64_t i = 0; i <= f.segments; ++i) {  // the first poll only fixes the chain's clock
    clock->AdvanceSeconds(static_cast<double>(f.blocks_per_segment));
    double c0 = ProcessCpuSeconds();
    ARROW_RETURN_NOT_OK(ingest.PollOnce());
    double c1 = ProcessCpuSeconds();
    append_cpu += c1 - c0;
    if (!f.compact) continue;
    auto w0 = std::chrono::steady_clock::now();
    ARROW_RETURN_NOT_OK(CompactEveryTable(tables, &compaction));
    compaction.cpu += ProcessCpuSeconds() - c1;
    compaction.wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  }
  ARROW_ASSIGN_OR_RAISE(auto appended, AppendedToEveryTable(tables));
  tables.Stop();
  std::cout << IngestReport(f, ingest.Describe(), appended, append_cpu, compaction).dump() << "\n";
  return Status::OK();
}

}  // namespace

int Run(const std::function<Status()>& body) {
  Status st = body();
  if (st.ok()) return 0;
  std::fprintf(stderr, "sediment-bench: %s\n", st.message().c_str());
  return 1;
}

std::function<int()> AddBenchCommands(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* bench = &app;
  auto* import = bench->add_subcommand("import", "Append a directory of Parquet files as segments of a new table");
  import->add_option("--input-dir", flags->input_dir, "Directory of .parquet files (contiguous block ranges)")
      ->required();
  import->add_option("--data-dir", flags->data_dir, "Embedded storage to create")->required();
  import->add_option("--table", flags->table, "<dataset>.<table>");
  import->add_option("--max-row-group-rows", flags->row_group_rows, "[writer] max_row_group_rows of the imported files")
      ->check(CLI::Range(1024, 1 << 30));
  auto* compact = bench->add_subcommand("compact", "Run one timed compaction pass over an imported table");
  compact->add_option("--data-dir", flags->data_dir, "Embedded storage made by `bench import`")->required();
  compact->add_option("--table", flags->table, "<dataset>.<table>");
  compact->add_option("--threads", flags->threads, "write_concurrency and metadata_concurrency")
      ->check(CLI::Range(1, 64));
  compact
      ->add_option("--metadata-concurrency", flags->metadata_concurrency,
                   "[writer.compactor] metadata_concurrency, and reads in flight (default: --threads)")
      ->check(CLI::Range(1, 256));
  compact->add_option("--bytes", flags->bytes, "[writer] bytes: the target size, uncompressed")
      ->check(CLI::PositiveNumber);
  compact->add_option("--max-row-group-mb", flags->row_group_mb, "[writer] max_row_group_mb")
      ->check(CLI::PositiveNumber);
  compact->add_option("--max-row-group-rows", flags->row_group_rows, "[writer] max_row_group_rows")
      ->check(CLI::Range(1024, 1 << 30));
  for (auto* cmd : {import, compact}) {
    cmd->add_option("--set", flags->sets, "KEY=VALUE: a setting over the defaults, e.g. writer.bloom_filter_columns=");
    cmd->add_option("--objects", flags->objects, "Object storage URI (default: <data-dir>/objects), e.g. s3://b/p");
    cmd->add_option("--s3-endpoint", flags->s3_endpoint, "S3 endpoint host:port (plain http), e.g. a local MinIO");
  }
  auto* ingest = bench->add_subcommand(
      "ingest", "Write a chain's tables as a job does at the head (compaction off unless --compact)");
  ingest->add_option("--data-dir", flags->data_dir, "Embedded storage to create")->required();
  ingest->add_option("--segments", flags->segments, "Polls, each writing one segment per table");
  ingest->add_option("--blocks-per-segment", flags->blocks_per_segment, "New blocks per poll");
  ingest->add_option("--txs-per-block", flags->txs_per_block, "Transactions per block");
  ingest->add_flag("--compact", flags->compact, "A compaction pass over each table after every poll; prints CPU");
  ingest->add_option("--bytes", flags->bytes, "[writer] bytes: the target size, uncompressed (with --compact)")
      ->check(CLI::PositiveNumber);
  ingest->add_option("--threads", flags->threads, "write_concurrency, metadata_concurrency and Arrow's CPU pool")
      ->check(CLI::Range(1, 64));
  auto run_catalog = AddCatalogBench(bench);
  auto run_scale = AddScaleBench(bench);
  return [=]() -> int {
    spdlog::set_level(spdlog::level::warn);
    if (int rc = run_catalog(); rc >= 0) return rc;
    if (int rc = run_scale(); rc >= 0) return rc;
    if (ingest->parsed()) return Run([&] { return Ingest(*flags); });
    if (import->parsed()) return Run([&] { return Import(*flags); });
    if (compact->parsed()) return Run([&] { return Compact(*flags); });
    return -1;
  };
}

}  // namespace sediment::bench
