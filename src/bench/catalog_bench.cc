#include "bench/catalog_bench.h"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "auth/auth.h"
#include "base/codec.h"
#include "base/crypto.h"
#include "bench/bench_cmd.h"
#include "catalog/catalog.h"
#include "catalog/entry.h"
#include "cli/client.h"
#include "kv/kv.h"
#include "server/app.h"

namespace sediment::bench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Flags {
  std::vector<int64_t> entries = {100000, 1000000};
  std::string data_dir;
  int64_t uploads = 2000;
  int threads = 2;
  int repeats = 15;
  bool walk = true;
  bool compaction = false;
  std::string postgres_dsn;  // empty = embedded RocksDB
};

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string PathOf(int64_t i) {
  // 100 top-level prefixes of 30 sub-prefixes each, keys spread evenly.
  return fmt::format("p{:03d}/d{:02d}/f{:09d}.parquet", i % 100, (i / 100) % 30, i);
}

class Bench {
 public:
  Bench(const Flags& f, int64_t n) : f_(f), n_(n) {}

  Status Run() {
    std::string dir = fmt::format("{}/n{}", f_.data_dir, n_);
    std::filesystem::remove_all(dir);
    ARROW_ASSIGN_OR_RAISE(Config config, Config::Load("", {}));
    config.server.listen = "127.0.0.1:0";
    config.query.flight_listen = config.query.jsonl_listen = "";  // no query server ports in a bench
    config.storage.data_dir = dir;
    if (!f_.postgres_dsn.empty()) {
      config.database.type = "postgres";
      config.database.postgres_dsn = f_.postgres_dsn;
      config.database.postgres_schema = fmt::format("bench_{}", RandomHex(6));
    }
    app_ = std::make_unique<server::App>(config);
    ARROW_RETURN_NOT_OK(app_->Start());
    ARROW_RETURN_NOT_OK(app_->auth().Setup("admin", "AKIABENCH", "bench-secret-key").status());
    ARROW_RETURN_NOT_OK(app_->catalog().CreateRepository("bench", dir + "/namespaces/bench", "main", false).status());
    out_ = {{"entries", n_}, {"kv", config.database.type}};

    if (f_.uploads > 0) ARROW_RETURN_NOT_OK(Uploads());
    if (f_.compaction) ARROW_RETURN_NOT_OK(app_->catalog().CreateBranch("bench", "plain", "main").status());
    ARROW_RETURN_NOT_OK(Stage("main", 0, n_, "stage_per_s"));
    ARROW_RETURN_NOT_OK(Listings("staged"));
    if (!f_.compaction) {
      ARROW_ASSIGN_OR_RAISE(out_["commit_s"], TimeCommit("main"));
      ARROW_RETURN_NOT_OK(Listings("committed"));
    } else {
      ARROW_RETURN_NOT_OK(TimeCompaction("compact_first"));
      ARROW_RETURN_NOT_OK(Listings("compacted"));
      // 1% new keys, twice: appended under a new prefix (a new partition, the usual
      // shape of a continuous writer), then scattered evenly over every prefix.
      int64_t extra = std::max<int64_t>(1, n_ / 100);
      ARROW_RETURN_NOT_OK(Stage("main", n_, n_ + extra, "", /*clustered=*/true));
      ARROW_RETURN_NOT_OK(TimeCompaction("compact_1pct_clustered"));
      ARROW_RETURN_NOT_OK(Stage("main", n_ + extra, n_ + 2 * extra, ""));
      ARROW_RETURN_NOT_OK(TimeCompaction("compact_1pct_scattered"));
      double first = out_["compact_first"]["seconds"].get<double>();
      out_["clustered_vs_first"] = out_["compact_1pct_clustered"]["seconds"].get<double>() / first;
      out_["scattered_vs_first"] = out_["compact_1pct_scattered"]["seconds"].get<double>() / first;
      ARROW_ASSIGN_OR_RAISE(out_["commit_compacted_s"], TimeCommit("main"));
      ARROW_RETURN_NOT_OK(Stage("plain", 0, n_, ""));
      ARROW_RETURN_NOT_OK(Stage("plain", n_, n_ + extra, "", /*clustered=*/true));
      ARROW_RETURN_NOT_OK(Stage("plain", n_ + extra, n_ + 2 * extra, ""));
      ARROW_ASSIGN_OR_RAISE(out_["commit_uncompacted_s"], TimeCommit("plain"));
    }
    std::cout << out_.dump() << std::endl;
    client_.reset();  // an idle keep-alive connection would hold up the stop
    app_->Stop();
    return Status::OK();
  }

 private:
  Result<std::string> Http(const std::string& method, const std::string& path, const std::string& body = "") {
    if (!client_) {
      client_ = std::make_unique<httplib::Client>("127.0.0.1", app_->port());
      client_->set_basic_auth("AKIABENCH", "bench-secret-key");
      client_->set_keep_alive(true);
      client_->set_tcp_nodelay(true);
      client_->set_read_timeout(3600);
    }
    httplib::Result res = method == "GET" ? client_->Get(path) : client_->Post(path, body, "application/json");
    if (!res) return Status::IOError("request failed: ", httplib::to_string(res.error()));
    if (res->status >= 300)
      return Status::IOError(fmt::format("{} {}: HTTP {} {}", method, path, res->status, res->body));
    return res->body;
  }

  // Small uploads through the API, from 1 and from `threads` clients.
  Status Uploads() {
    for (int clients : {1, f_.threads}) {
      std::atomic<int64_t> next{0};
      std::atomic<bool> failed{false};
      auto t0 = Clock::now();
      std::vector<std::thread> ts;
      for (int c = 0; c < clients; ++c) {
        ts.emplace_back([&, c] {
          httplib::Client cl("127.0.0.1", app_->port());
          cl.set_basic_auth("AKIABENCH", "bench-secret-key");
          cl.set_keep_alive(true);
          cl.set_tcp_nodelay(true);
          std::string payload(1024, static_cast<char>('a' + c));
          for (int64_t i; (i = next++) < f_.uploads;) {
            auto r =
                cl.Post(fmt::format("/api/v1/repositories/bench/branches/main/objects?path=up{}/o{:06d}", clients, i),
                        payload, "application/octet-stream");
            if (!r || r->status != 201) failed = true;
          }
        });
      }
      for (auto& t : ts) t.join();
      if (failed) return Status::IOError("an upload failed");
      out_[fmt::format("uploads_per_s_{}_clients", clients)] = static_cast<double>(f_.uploads) / Seconds(t0);
    }
    std::vector<double> gets;
    for (int i = 0; i < 200; ++i) {
      auto t0 = Clock::now();
      ARROW_RETURN_NOT_OK(
          Http("GET", fmt::format("/api/v1/repositories/bench/refs/main/objects?path=up1/o{:06d}", i * 7 % f_.uploads))
              .status());
      gets.push_back(Seconds(t0) * 1000);
    }
    out_["get_ms_p50"] = Median(gets);
    return Status::OK();
  }

  // Entries [from, to) staged on `branch` in batches of 1,000 (Catalog::PutEntries) from `threads` writers.
  Status Stage(const std::string& branch, int64_t from, int64_t to, const std::string& label, bool clustered = false) {
    auto t0 = Clock::now();
    std::atomic<int64_t> next{from};
    std::vector<Status> errors(static_cast<size_t>(f_.threads));
    std::vector<std::thread> ts;
    for (int c = 0; c < f_.threads; ++c) {
      ts.emplace_back([&, c] {
        std::vector<std::pair<std::string, catalog::Entry>> batch;
        while (true) {
          int64_t start = next.fetch_add(1000);
          if (start >= to) return;
          batch.clear();
          for (int64_t i = start; i < std::min(to, start + 1000); ++i) {
            catalog::Entry e;
            e.size = 4096;
            e.mtime = 1700000000;
            e.content_type = "application/octet-stream";
            e.address = fmt::format("data/{:016x}", static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull);
            e.checksum = e.address.substr(5) + e.address.substr(5);
            batch.emplace_back(clustered ? fmt::format("q000/new/f{:09d}.parquet", i) : PathOf(i), std::move(e));
          }
          Status st = app_->catalog().PutEntries("bench", branch, batch);
          if (!st.ok()) {
            errors[static_cast<size_t>(c)] = st;
            return;
          }
        }
      });
    }
    for (auto& t : ts) t.join();
    for (auto& st : errors) ARROW_RETURN_NOT_OK(st);
    if (!label.empty()) out_[label] = static_cast<double>(to - from) / Seconds(t0);
    return Status::OK();
  }

  Result<double> TimeCommit(const std::string& branch) {
    auto t0 = Clock::now();
    ARROW_RETURN_NOT_OK(
        Http("POST", "/api/v1/repositories/bench/branches/" + branch + "/commits", R"({"message":"bench"})").status());
    return Seconds(t0);
  }

  Status TimeCompaction(const std::string& label) {
    auto t0 = Clock::now();
    ARROW_ASSIGN_OR_RAISE(auto r, app_->catalog().CompactStaging("bench", "main"));
    if (r.outcome != catalog::CompactionOutcome::kCompleted) return Status::IOError("compaction did not complete");
    out_[label] = {{"seconds", Seconds(t0)},
                   {"entries", r.staged_entries},
                   {"ranges_written", r.stats.ranges_written},
                   {"ranges_reused", r.stats.ranges_reused}};
    return Status::OK();
  }

  Result<double> TimeMs(const std::string& path) {
    std::vector<double> v;
    for (int i = 0; i < f_.repeats; ++i) {
      auto t0 = Clock::now();
      ARROW_RETURN_NOT_OK(Http("GET", path).status());
      v.push_back(Seconds(t0) * 1000);
    }
    return Median(v);
  }

  Status Listings(const std::string& phase) {
    const std::string ls = "/api/v1/repositories/bench/refs/main/objects/ls?amount=1000";
    json j;
    ARROW_ASSIGN_OR_RAISE(j["recursive_first_page_ms"], TimeMs(ls));
    ARROW_ASSIGN_OR_RAISE(j["recursive_mid_page_ms"], TimeMs(ls + "&after=" + PathOf(n_ / 2)));
    ARROW_ASSIGN_OR_RAISE(j["delimited_root_ms"], TimeMs(ls + "&delimiter=/"));
    ARROW_ASSIGN_OR_RAISE(j["delimited_prefix_ms"], TimeMs(ls + "&delimiter=/&prefix=p042/"));
    ARROW_ASSIGN_OR_RAISE(j["stat_ms"],
                          TimeMs("/api/v1/repositories/bench/refs/main/objects/stat?path=" + PathOf(n_ / 3)));
    if (f_.walk) {
      auto t0 = Clock::now();
      std::string after;
      int64_t seen = 0;
      while (true) {
        ARROW_ASSIGN_OR_RAISE(auto body,
                              Http("GET", ls + "&after=" + PercentEncode(after, PercentSet::kUnreservedAndSlash)));
        // Only the pagination is parsed: the walk measures the server, not a client's JSON parser.
        auto cut = body.find(R"(,"results":[)");
        if (cut == std::string::npos) return Status::IOError("unexpected listing body");
        auto pagination = json::parse(body.substr(0, cut) + "}")["pagination"];
        seen += pagination["results"].get<int64_t>();
        if (!pagination["has_more"].get<bool>()) break;
        after = pagination["next_offset"].get<std::string>();
      }
      j["recursive_walk_s"] = Seconds(t0);
      j["walked"] = seen;
    }
    out_[phase] = j;
    return Status::OK();
  }

  const Flags& f_;
  int64_t n_;
  std::unique_ptr<server::App> app_;
  std::unique_ptr<httplib::Client> client_;
  json out_;
};

}  // namespace

std::function<int()> AddCatalogBench(CLI::App* bench) {
  auto flags = std::make_shared<Flags>();
  auto* cmd = bench->add_subcommand("catalog", "Catalog uploads, gets, listings and commits over HTTP (JSON lines)");
  cmd->add_option("--data-dir", flags->data_dir, "Scratch directory (emptied)")->required();
  cmd->add_option("--entries", flags->entries, "Staged entries per run (one run each)");
  cmd->add_option("--uploads", flags->uploads, "Small uploads through the API");
  cmd->add_option("--threads", flags->threads, "Writer threads / concurrent clients")->check(CLI::Range(1, 64));
  cmd->add_option("--repeats", flags->repeats, "Timed repetitions per listing (median reported)");
  cmd->add_flag("!--no-walk", flags->walk, "Skip the full recursive walk");
  cmd->add_flag("--compaction", flags->compaction,
                "Staging compaction instead of commit: listings before/after, a second compaction after 1% new "
                "keys, commit of a compacted vs an uncompacted branch");
  cmd->add_option("--postgres-dsn", flags->postgres_dsn, "Use PostgreSQL (a fresh schema) instead of RocksDB");
  return [=]() -> int {
    if (!cmd->parsed()) return -1;
    return Run([&]() -> Status {
      for (int64_t n : flags->entries) {
        Bench b(*flags, n);
        ARROW_RETURN_NOT_OK(b.Run());
      }
      return Status::OK();
    });
  };
}

}  // namespace sediment::bench
