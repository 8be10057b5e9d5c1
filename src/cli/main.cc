// sediment: the server and its command-line clients in one binary.
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/config.h"
#include "base/failpoint.h"
#include "base/logging.h"
#include "base/version.h"
#include "blob/blob.h"
#include "cli/catalog_cmd.h"
#include "cli/query_cmd.h"
#include "cli/table_cmd.h"
#include "server/app.h"
#include "server/route_table.h"

namespace sediment {
namespace {

constexpr int kExitConfig = 2;
constexpr int kExitRuntime = 1;

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "sediment: %s\n", message.c_str());
  return code;
}

struct ServeFlags {
  std::string config_path;
  std::string listen;
  std::string data_dir;
};

int Serve(const ServeFlags& flags) {
  auto loaded = Config::Load(flags.config_path, CurrentEnvironment());
  if (!loaded.ok()) return Fail(kExitConfig, loaded.status().message());
  Config config = std::move(*loaded);
  if (!flags.listen.empty()) {
    Status st = config.Set("server.listen", flags.listen, "flag --listen");
    if (!st.ok()) return Fail(kExitConfig, st.message());
  }
  if (!flags.data_dir.empty()) {
    Status st = config.Set("storage.data_dir", flags.data_dir, "flag --data-dir");
    if (!st.ok()) return Fail(kExitConfig, st.message());
  }
  if (Status st = config.Validate(); !st.ok()) return Fail(kExitConfig, st.message());
  // Before anything is created on disk.
  auto warnings = config.CheckPaths();
  if (!warnings.ok()) return Fail(kExitConfig, warnings.status().message());
  if (Status st = SetupLogging(config.log.level, config.log.format); !st.ok()) {
    return Fail(kExitConfig, st.message());
  }
  for (const auto& w : *warnings) spdlog::warn("{}", w);

  // SIGINT/SIGTERM are taken by sigwait below, never by a worker thread:
  // block them before any thread starts (threads inherit the mask).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Failpoints for crash tests (docs/failpoints.md); inert unless set.
  if (Status st = failpoint::ArmFromEnv(); !st.ok()) return Fail(kExitConfig, st.message());
  int code = 0;
  {
    server::App app(config);
    if (Status st = app.Start(); !st.ok()) {
      code = Fail(kExitRuntime, st.message());
    } else {
      int sig = 0;
      sigwait(&signals, &sig);
      spdlog::info("received {}, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
      app.Stop();
    }
  }
  blob::FinalizeS3();
  return code;
}

// `sediment check-config`: what `serve` would say of the settings, and nothing started.
int CheckConfig(const std::string& path) {
  auto loaded = Config::Load(path, CurrentEnvironment());
  if (!loaded.ok()) return Fail(kExitConfig, loaded.status().message());
  auto warnings = loaded->CheckPaths();
  if (!warnings.ok()) return Fail(kExitConfig, warnings.status().message());
  for (const auto& w : *warnings) std::fprintf(stderr, "sediment: warning: %s\n", w.c_str());
  std::printf("%s: ok\n", path.empty() ? "the built-in settings and the environment" : path.c_str());
  return 0;
}

}  // namespace
}  // namespace sediment

namespace {
bool Parsed(CLI::App& cli, const char* name) { return cli.get_subcommand(name)->parsed(); }
}  // namespace

int main(int argc, char** argv) {
  using namespace sediment;
  // Arrow's allocator: jemalloc unless the user chose (measured faster than the
  // wheel's default, mimalloc, for merges: bench/RESULTS.md). Read on first use.
  // (sediment-bench sets the same.)
  setenv("ARROW_DEFAULT_MEMORY_POOL", "jemalloc", /*overwrite=*/0);
  CLI::App cli{
      "Sediment: keeps a data lake fast while it is written continuously.\n"
      "Compacts block-ordered Parquet tables and versioned (lakeFS-compatible) catalogs.",
      "sediment"};
  cli.require_subcommand(1);
  cli.set_help_all_flag("--help-all", "Show help for every command");

  ServeFlags serve_flags;
  auto* serve = cli.add_subcommand("serve", "Run the Sediment server");
  serve->add_option("--config", serve_flags.config_path, "TOML config file (defaults are used without one)");
  serve->add_option("--listen", serve_flags.listen, "HOST:PORT to listen on (overrides server.listen)");
  serve->add_option("--data-dir", serve_flags.data_dir, "Directory for embedded storage (overrides storage.data_dir)");

  auto* version = cli.add_subcommand("version", "Print the version of sediment and of Arrow it uses");
  auto* routes = cli.add_subcommand(
      "routes", "Print the server's route table as JSON: every route, who may call it and the permissions it needs");
  std::string check_path;
  auto* check = cli.add_subcommand(
      "check-config", "Check a config file (and the SEDIMENT_* environment) as `serve` would, without starting");
  check->add_option("--config", check_path, "TOML config file (without one: the defaults and the environment)");
  auto* options = cli.add_subcommand(
      "options", "Print every setting as JSON: its key, type, default, bounds and environment variables");

  auto run_table = cli::AddTableCommands(cli);
  auto run_query = cli::AddQueryCommand(cli);
  auto run_job = cli::AddJobCommands(cli);
  auto run_catalog = cli::AddCatalogCommands(cli);

  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e);
  }
  if (serve->parsed()) return Serve(serve_flags);
  if (Parsed(cli, "table")) return run_table();
  if (Parsed(cli, "query")) return run_query();
  if (Parsed(cli, "job")) return run_job();
  if (int rc = run_catalog(); rc >= 0) return rc;
  if (routes->parsed()) {
    std::cout << server::DescribeRouteTable().dump(2) << "\n";
    return 0;
  }
  if (check->parsed()) return CheckConfig(check_path);
  if (options->parsed()) {
    auto out = nlohmann::json::array();
    for (const auto& o : DescribeOptions()) {
      out.push_back({{"key", o.key},
                     {"type", o.type},
                     {"default", o.default_value},
                     {"bound", o.bound},
                     {"choices", o.choices},
                     {"env", o.env}});
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (version->parsed()) {
    std::cout << "sediment " << kVersion << " (arrow " << kArrowVersion << ")\n";
    return 0;
  }
  return 0;
}
