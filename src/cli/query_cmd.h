// `sediment query` and `sediment job ...`: HTTP clients of a running server.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace sediment::cli {

std::function<int()> AddQueryCommand(CLI::App& app);
std::function<int()> AddJobCommands(CLI::App& app);

}  // namespace sediment::cli
