// `sediment-bench catalog`: the catalog benchmark of bench/RESULTS.md — uploads,
// gets, listings over staging and over committed ranges, commit time — on an
// in-process server with embedded RocksDB, measured over HTTP.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace sediment::bench {

// Registers the subcommand under `bench`; the returned function runs it if parsed (else returns -1).
std::function<int()> AddCatalogBench(CLI::App* bench);

}  // namespace sediment::bench
