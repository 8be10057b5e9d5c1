// sediment-bench: measured operations on the real code paths, for the
// benchmarks in bench/ (each prints JSON). Not part of the `sediment` binary
// users run.
#include <CLI/CLI.hpp>
#include <cstdlib>

#include "bench/bench_cmd.h"
#include "blob/blob.h"

int main(int argc, char** argv) {
  // The allocator the server uses (src/cli/main.cc), so figures are the server's.
  setenv("ARROW_DEFAULT_MEMORY_POOL", "jemalloc", /*overwrite=*/0);
  CLI::App cli{"sediment-bench: measured operations for the benchmarks in bench/ (prints JSON)", "sediment-bench"};
  cli.require_subcommand(1);
  auto run = sediment::bench::AddBenchCommands(cli);
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e);
  }
  int rc = run();
  sediment::blob::FinalizeS3();  // a bench may have opened S3 (--objects s3://...)
  return rc < 0 ? 0 : rc;
}
