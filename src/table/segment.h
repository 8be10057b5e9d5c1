// Segment: one Parquet file of a table, covering blocks [start, end].
//
// The registry (KV) holds a SegmentRecord per live segment; the file itself
// carries the same facts in its Parquet key-value metadata under
// kSegmentMetadataKey, so the registry can be checked against the files.
// Both encodings are versioned JSON; see docs/formats.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"

namespace sediment::table {

inline constexpr std::string_view kSegmentMetadataKey = "sediment.segment";
inline constexpr int kSegmentFormatVersion = 1;
// How a file stores the table's types: 0, Parquet's unsigned integers (files
// written before 2026-12); 1, unsigned integers as signed ones that hold them
// (table/stored_types.h). The compactor rewrites files below the current one.
inline constexpr int kStorageVersion = 1;

// The ids a merged file was made from. Copies share one list (a compaction
// pass copies every live record of its table, and a head merge lists up to
// dozens of parents); it is replaced whole, never changed in place.
class IdList {
 public:
  IdList() = default;
  IdList(std::vector<std::string> ids)  // NOLINT(google-explicit-constructor): a list of ids is one
      : ids_(std::make_shared<const std::vector<std::string>>(std::move(ids))) {}
  IdList(std::initializer_list<std::string> ids) : IdList(std::vector<std::string>(ids)) {}
  const std::vector<std::string>& get() const { return ids_ ? *ids_ : None(); }
  size_t size() const { return get().size(); }
  bool empty() const { return get().empty(); }
  bool operator==(const IdList& o) const { return get() == o.get(); }

 private:
  static const std::vector<std::string>& None() {
    static const std::vector<std::string> none;
    return none;
  }
  std::shared_ptr<const std::vector<std::string>> ids_;
};

struct SegmentRecord {
  std::string id;    // "<start:09>-<16 hex>", the file name without ".parquet"
  std::string path;  // object path in the blob store
  uint64_t start = 0;
  uint64_t end = 0;
  std::string end_hash;     // lowercase hex: hash of block `end`
  std::string parent_hash;  // lowercase hex: parent hash of block `start`
  int64_t rows = 0;
  int64_t bytes = 0;              // uncompressed size of the data (sum of row groups' sizes)
  int64_t stored_bytes = 0;       // size of the file on storage
  int64_t generation = 0;         // 0 written, max(inputs) + 1 merged
  IdList parents;                 // ids of the files it was merged from
  int64_t created_at_us = 0;      // Unix microseconds
  int storage = kStorageVersion;  // 0 when the record does not say (older files)

  TimePoint created_at() const { return FromUnixMicros(created_at_us); }
  bool operator==(const SegmentRecord&) const = default;
};

// Registry value.
std::string EncodeSegmentRecord(const SegmentRecord& s);
Result<SegmentRecord> DecodeSegmentRecord(std::string_view text);

// Parquet key-value metadata (the facts known before the file is written:
// no sizes or row counts, which the footer itself holds). Parents are listed
// up to kFileParentsListed; beyond, only `parents_count` (the registry
// record lists them all): every engine parses the footer on every query, and
// a final merge of 3,000 head files made it 147 KB instead of 60 (Polars
// filtered 5% slower, bench/RESULTS.md).
inline constexpr size_t kFileParentsListed = 64;
std::string EncodeSegmentFileMetadata(const SegmentRecord& s);
Result<SegmentRecord> DecodeSegmentFileMetadata(std::string_view text);

// "000000100-9f86d081884c7d65": the first block, then 16 hex digits. With a
// writer tag (WriterTag of the server's stable name) the first 8 of them are
// the tag and the rest random, so a restarted server recognizes the files it
// wrote itself (its orphans) whatever their age.
std::string NewSegmentId(uint64_t start, uint32_t writer_tag = 0);
uint32_t WriterTag(std::string_view server_id);
// The writer tag a segment file name ("<id>.parquet") carries, if it has the form.
std::optional<uint32_t> WriterTagOf(std::string_view file_name);

// InvalidArgument unless `hex` is 2..128 lowercase or uppercase hex digits
// (an even number); returns it lowercased.
Result<std::string> NormalizeHash(std::string_view what, std::string_view hex);

// One entry of a table's GC manifest: a file that left the live set.
struct GcEntry {
  std::string path;
  std::string id;
  int64_t removed_at_us = 0;
  bool operator==(const GcEntry&) const = default;
};
std::string EncodeGcEntry(const GcEntry& e);
Result<GcEntry> DecodeGcEntry(std::string_view text);

}  // namespace sediment::table
