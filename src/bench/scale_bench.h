// `sediment-bench scale-tables | scale-merge | scale-log`: the operations of
// the scale benchmark (bench/scale_bench.py, issue 17), each printing JSON:
// append, 10-block scan and files-page latency as a table grows to 10^5 live
// files; a merge of two branches that differ in N entries (the script
// measures its peak memory); paging a long commit log.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace sediment::bench {

// Registers the subcommands under `bench`; the returned function runs the parsed one (else returns -1).
std::function<int()> AddScaleBench(CLI::App* bench);

}  // namespace sediment::bench
