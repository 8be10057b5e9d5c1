// `sediment table ...`: list, files, histogram and compact, as HTTP clients
// of a running server.
#pragma once

#include <CLI/CLI.hpp>

namespace sediment::cli {

// Adds the `table` command; returns a function to call after parsing, which
// runs the chosen subcommand and returns the exit code.
std::function<int()> AddTableCommands(CLI::App& app);

}  // namespace sediment::cli
