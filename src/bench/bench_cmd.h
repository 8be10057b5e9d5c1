// `sediment-bench ...`: the C++ side of the benchmarks in bench/ — a binary
// of its own, as RocksDB keeps db_bench apart from the library. Each command
// does one measured thing on the real code path and prints JSON.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "base/status.h"

namespace sediment::bench {

// Adds the commands to `app`; the function returned runs the one parsed.
std::function<int()> AddBenchCommands(CLI::App& app);

// Runs a command body, printing "sediment-bench: <message>" and returning 1 on error.
int Run(const std::function<Status()>& body);

}  // namespace sediment::bench
