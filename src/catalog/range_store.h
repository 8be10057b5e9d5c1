// Committed storage: ranges and meta-ranges.
//
// A range is an immutable, sorted file of (path -> encoded entry) in RocksDB's
// SST format; a meta-range is a file of the same kind listing ranges (max key
// -> id, min key, count, bytes). Both are content-addressed (id = SHA-256 of
// their logical contents) and stored at `_lakefs/<id>` in the repository's
// storage namespace. Readers go through a local disk cache with a size budget
// (files are immutable, so a cached copy never goes stale) and a cache of
// open SST readers sharing one block cache.
//
// MetaRangeWriter cuts ranges at content-defined boundaries: after a key whose
// StableHash is 0 mod `split_modulus` once the range holds `min_bytes`, or at
// `max_bytes` regardless. Boundaries depend on keys, not on where a write
// started, so rewriting one region of a meta-range leaves the others' ids alone.
//
// Thread-safety: RangeStore is safe from many threads; a writer or iterator
// belongs to one thread.
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "catalog/iterator.h"

namespace rocksdb {
class SstFileReader;
class Cache;
struct Options;
}  // namespace rocksdb

namespace sediment::blob {
class BlobStore;
}

namespace sediment::catalog {

struct RangeInfo {
  std::string id;
  std::string min_key;
  std::string max_key;
  int64_t count = 0;
  int64_t bytes = 0;
};

struct MetaRange {
  std::string id;  // "" = the empty meta-range
  std::vector<RangeInfo> ranges;
  int64_t count() const;
};

struct RangeSettings {
  int64_t min_bytes = 256 << 10;
  int64_t max_bytes = 8 << 20;
  uint64_t split_modulus = 512;
};

// Where committed files of one repository live.
using Namespace = std::shared_ptr<blob::BlobStore>;

class RangeStore;

class MetaRangeWriter {
 public:
  ~MetaRangeWriter();
  // Keys strictly increasing across Add and AddRange; `value` not a tombstone.
  Status Add(std::string_view key, std::string_view value);
  // Reuses an existing range by id. REQUIRES: !range_open().
  Status AddRange(const RangeInfo& range);
  // Closes the open range, if any, at the current key.
  Status FlushRange();
  bool range_open() const { return open_ != nullptr; }
  // Writes the meta-range and returns it (kEmptyMetaRangeId, and no file, when it holds no ranges).
  Result<std::shared_ptr<const MetaRange>> Finish();

  int64_t ranges_written() const { return ranges_written_; }
  int64_t ranges_reused() const { return ranges_reused_; }

 private:
  friend class RangeStore;
  struct OpenRange;
  MetaRangeWriter(RangeStore* store, Namespace ns);

  RangeStore* store_;
  Namespace ns_;
  std::unique_ptr<OpenRange> open_;
  std::vector<RangeInfo> ranges_;
  int64_t ranges_written_ = 0;
  int64_t ranges_reused_ = 0;
};

class RangeStore {
 public:
  // `cache_dir` is created if missing; leftovers of interrupted downloads are removed.
  static Result<std::unique_ptr<RangeStore>> Open(const std::string& cache_dir, int64_t cache_bytes,
                                                  RangeSettings settings);
  ~RangeStore();

  const RangeSettings& settings() const { return settings_; }

  std::unique_ptr<MetaRangeWriter> NewWriter(Namespace ns);

  // The meta-range `id` ("" = empty). Corruption / NotFound if the file is bad or missing.
  Result<std::shared_ptr<const MetaRange>> LoadMetaRange(const Namespace& ns, const std::string& id);

  // Every entry of `mr` in order; ranges whose id is in `skip` are passed over
  // entirely (a diff uses this for ranges both sides share).
  std::unique_ptr<ValueIterator> NewIterator(Namespace ns, std::shared_ptr<const MetaRange> mr,
                                             std::shared_ptr<const std::unordered_set<std::string>> skip = nullptr);
  // Iterator over one range's entries.
  Result<std::unique_ptr<ValueIterator>> NewRangeIterator(const Namespace& ns, const std::string& range_id);

  // The encoded entry at `key` in `mr`, or nullopt.
  Result<std::optional<std::string>> Get(const Namespace& ns, const MetaRange& mr, std::string_view key);

  // Disk cache usage, for metrics and tests.
  int64_t cached_bytes() const;

 private:
  friend class MetaRangeWriter;
  RangeStore(std::string cache_dir, int64_t cache_bytes, RangeSettings settings);

  // An open reader of `id`, downloading the file into the cache if needed.
  Result<std::shared_ptr<rocksdb::SstFileReader>> Reader(const Namespace& ns, const std::string& id);
  // A just-written local file becomes cache entry `id` (and is uploaded by the caller).
  Status Adopt(const std::string& tmp_path, const std::string& id, int64_t bytes);
  std::string TempPath();
  std::string CachePath(const std::string& id) const;
  void TouchLocked(const std::string& id, int64_t bytes);  // REQUIRES: mu_ held
  void EvictLocked();                                      // REQUIRES: mu_ held

  const std::string cache_dir_;
  const int64_t cache_bytes_;
  const RangeSettings settings_;
  std::unique_ptr<rocksdb::Options> options_;
  std::shared_ptr<rocksdb::Cache> block_cache_;

  mutable std::mutex mu_;
  // Disk cache, most recently used first.
  std::list<std::pair<std::string, int64_t>> lru_;                                               // GUARDED_BY(mu_)
  std::unordered_map<std::string, std::list<std::pair<std::string, int64_t>>::iterator> files_;  // GUARDED_BY(mu_)
  int64_t used_bytes_ = 0;                                                                       // GUARDED_BY(mu_)
  // Open readers, bounded.
  std::list<std::string> reader_lru_;  // GUARDED_BY(mu_)
  std::unordered_map<std::string, std::pair<std::shared_ptr<rocksdb::SstFileReader>, std::list<std::string>::iterator>>
      readers_;                                                                    // GUARDED_BY(mu_)
  std::unordered_map<std::string, std::shared_ptr<const MetaRange>> meta_ranges_;  // GUARDED_BY(mu_)
  std::list<std::string> meta_lru_;                                                // GUARDED_BY(mu_)
};

// The id of the empty meta-range: the SHA-256 of no content. It has no file; a
// commit of an empty tree records "" (as lakeFS does) and both mean empty.
inline constexpr const char* kEmptyMetaRangeId = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
inline bool IsEmptyMetaRange(const std::string& id) { return id.empty() || id == kEmptyMetaRangeId; }
// Whether `id` has the form of a range or meta-range id: a SHA-256 in
// lowercase hexadecimal (the file is `_lakefs/<id>`).
inline bool IsRangeId(std::string_view id) {
  return id.size() == 64 && id.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}
inline bool SameMetaRange(const std::string& a, const std::string& b) {
  return a == b || (IsEmptyMetaRange(a) && IsEmptyMetaRange(b));
}

// The blob path of a committed file.
std::string CommittedPath(const std::string& id);

}  // namespace sediment::catalog
