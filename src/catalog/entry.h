// Entry: what the catalog stores for one object path — where its bytes are
// and what they are. Entries travel through staging, ranges and iterators in
// their encoded form (EncodeEntry); an empty encoded value is a tombstone.
//
// Thread-safety: plain values and pure functions.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "base/status.h"

namespace sediment::catalog {

struct Entry {
  std::string address;  // relative to the repository's storage namespace, or a full URI
  std::string checksum;
  int64_t size = 0;
  int64_t mtime = 0;  // unix seconds
  std::string content_type;
  std::map<std::string, std::string> metadata;

  bool operator==(const Entry&) const = default;
};

// Encoded form, version 1 (docs/formats.md): never empty.
std::string EncodeEntry(const Entry& e);
// Corruption if `data` is not a version-1 entry.
Result<Entry> DecodeEntry(std::string_view data);

// What makes two entries "the same object" for diff and merge: checksum, size,
// content type and metadata (not the address or mtime). Works on encoded values;
// a tombstone ("") has identity "".
std::string EntryIdentity(std::string_view encoded);

// Where a new object's data goes in its namespace, as lakeFS lays it out:
// data/<partition>/<id>, both 20 characters of [0-9a-v]. The partition changes
// every hour (newest sorts first), so a directory never holds more than an
// hour's uploads; lakectl's tests recognise this shape.
std::string NewDataAddress(int64_t unix_seconds);
// Stable 64-bit hash (FNV-1a) used for content-defined range boundaries.
uint64_t StableHash(std::string_view data);

}  // namespace sediment::catalog
