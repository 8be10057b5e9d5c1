// `sediment table simulate`.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace sediment::cli {

std::function<int()> AddSimulateCommand(CLI::App* table);

}  // namespace sediment::cli
