// What the parts of TableRegistry (registry*.cc) share: the state record's
// codec, a segment's count in it, the block a segment file's name carries and
// the block hash record's encoding. Private to src/table.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "table/registry.h"

namespace sediment::table::registry_internal {

// The state record (TableState) as stored, and read back; IOError naming `key` if malformed.
std::string EncodeState(const TableState& st);
Result<TableState> DecodeState(const std::string& key, const std::string& text);
// Adds (sign +1) or takes away (-1) segment `s` in the state's totals.
void CountSegment(TableState* st, const SegmentRecord& s, int sign);

// The first block a segment file's name ("<start>-<hex>.parquet") carries.
std::optional<uint64_t> StartOfPath(const std::string& path);

// A stored block hash: {"v":1,"h":"<hex>"}.
std::string EncodeBlockHash(const std::string& hex);
std::string EncodeAbandonedBlock(const AbandonedBlock& b);
Result<AbandonedBlock> DecodeAbandonedBlock(const std::string& key, const std::string& text);

}  // namespace sediment::table::registry_internal
