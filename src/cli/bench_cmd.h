// `sediment bench ...`: the C++ side of the benchmarks in bench/. Each
// command does one measured thing on the real code path and prints JSON.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace sediment::cli {

std::function<int()> AddBenchCommands(CLI::App& app);

}  // namespace sediment::cli
