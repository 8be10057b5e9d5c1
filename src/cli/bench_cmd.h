// `sediment bench ...`: the C++ side of the benchmarks in bench/. Each
// command does one measured thing on the real code path and prints JSON.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace sediment::cli {

std::function<int()> AddBenchCommands(CLI::App& app);

}  // namespace sediment::cli
