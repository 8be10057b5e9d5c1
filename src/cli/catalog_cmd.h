// Catalog commands of the CLI — `sediment setup|repo|branch|object|commit|log|
// diff|merge|tag ...` — HTTP clients of the lakeFS-compatible API.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace sediment::cli {

// Registers the commands; the returned function runs whichever was parsed (or returns -1).
std::function<int()> AddCatalogCommands(CLI::App& app);

}  // namespace sediment::cli
