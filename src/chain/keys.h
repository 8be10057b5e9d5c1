// The chain module's KV key layout, in one place: every key that the ingest
// jobs read or write is built here and nowhere else; docs/formats.md
// describes the records. Keys are on disk: changing a spelling here orphans
// every stored record of it. (Tables' keys are the table module's:
// table/keys.h.)
//
// Thread-safety: pure functions.
#pragma once

#include <string>

namespace sediment::chain {

// j/anchor/<dataset> -> an ingest job's chain clock: Unix microseconds of its first start.
inline std::string AnchorKey(const std::string& dataset) { return "j/anchor/" + dataset; }

}  // namespace sediment::chain
