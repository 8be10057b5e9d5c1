// KvStore: the ordered key-value store that holds all of Sediment's metadata
// (table registries, GC manifests, refs, staging areas, leases, users).
//
// Keys and values are arbitrary byte strings; keys sort bytewise. Drivers:
// RocksDB (embedded default), in-memory (tests), PostgreSQL (shared by many
// servers). Every driver passes kv_conformance_test.cc.
//
// Consistency contract, for every driver:
//  - Each call is atomic and linearizable: a Set acknowledged is seen by every
//    later Get, from any thread (and any process sharing the store).
//  - SetIf and Apply check their preconditions and write in one atomic step;
//    a failed precondition returns PreconditionFailed and changes nothing.
//  - Scan returns keys in order and reads a consistent page; successive pages
//    (continuing from the last key) may observe later writes.
//
// Thread-safety: all methods are safe to call from many threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace sediment::kv {

struct KeyValue {
  std::string key;
  std::string value;
  bool operator==(const KeyValue&) const = default;
};

// What a key must look like for a write to go ahead.
struct Precondition {
  enum class Kind {
    kAbsent,   // the key must not exist
    kPresent,  // the key must exist, any value
    kEquals,   // the key must exist with exactly `value`
  };
  std::string key;
  Kind kind = Kind::kAbsent;
  std::string value;

  static Precondition Absent(std::string key) { return {std::move(key), Kind::kAbsent, {}}; }
  static Precondition Present(std::string key) { return {std::move(key), Kind::kPresent, {}}; }
  static Precondition Equals(std::string key, std::string value) {
    return {std::move(key), Kind::kEquals, std::move(value)};
  }
};

struct Mutation {
  enum class Kind { kPut, kDelete };
  Kind kind = Kind::kPut;
  std::string key;
  std::string value;
};

// An atomic batch: if every precondition holds, every mutation is applied;
// otherwise nothing is. Mutations apply in order (a later one on the same key wins).
struct Batch {
  std::vector<Precondition> preconditions;
  std::vector<Mutation> mutations;

  Batch& Require(Precondition p) {
    preconditions.push_back(std::move(p));
    return *this;
  }
  Batch& Put(std::string key, std::string value) {
    mutations.push_back({Mutation::Kind::kPut, std::move(key), std::move(value)});
    return *this;
  }
  Batch& Delete(std::string key) {
    mutations.push_back({Mutation::Kind::kDelete, std::move(key), {}});
    return *this;
  }
};

struct ScanPage {
  std::vector<KeyValue> items;
  bool has_more = false;  // more keys with the prefix after the last item
};

class KvStore {
 public:
  virtual ~KvStore() = default;

  // NotFound if the key does not exist.
  virtual Result<std::string> Get(std::string_view key) = 0;
  virtual Status Set(std::string_view key, std::string_view value) = 0;
  // Sets `key` to `value` if its current value is `expected`, or if it is
  // absent when `expected` is nullopt. PreconditionFailed otherwise.
  virtual Status SetIf(std::string_view key, std::string_view value, const std::optional<std::string>& expected);
  // Deleting an absent key is not an error.
  virtual Status Delete(std::string_view key) = 0;
  // Up to `limit` keys that start with `prefix` and are >= `from` (from the
  // start of the prefix when `from` is empty or sorts before it), in order.
  virtual Result<ScanPage> Scan(std::string_view prefix, std::string_view from, size_t limit) = 0;
  // The greatest key that starts with `prefix` and is <= `at`, or nullopt.
  // `at` must start with `prefix`.
  // With keys ordered by position (a block number, a time), it finds the
  // entry that covers a position in one index lookup.
  virtual Result<std::optional<KeyValue>> Floor(std::string_view prefix, std::string_view at) = 0;
  virtual Status Apply(const Batch& batch) = 0;

  // Drivers with a name for logs and errors ("rocksdb:/path", "mem", ...).
  virtual std::string Describe() const = 0;

  // Visits every key with `prefix` from `from`, paging with growing page
  // sizes from `first_page`; stops early if `visit` returns false or an
  // error. Not a snapshot.
  Status ScanAll(std::string_view prefix, std::string_view from,
                 const std::function<Result<bool>(const KeyValue&)>& visit, size_t first_page = 64);
};

// Options for opening a store. `type` is rocksdb | mem (| postgres later).
struct OpenOptions {
  std::string type = "rocksdb";
  std::string rocksdb_path;
  bool rocksdb_sync = false;
  std::string postgres_dsn;
  std::string postgres_schema = "sediment";
};

Result<std::shared_ptr<KvStore>> Open(const OpenOptions& options);
std::shared_ptr<KvStore> NewMemoryStore();
Result<std::shared_ptr<KvStore>> OpenRocksDb(const std::string& path, bool sync);
// Tables live in `schema` (created if missing), so one database can hold several stores.
Result<std::shared_ptr<KvStore>> OpenPostgres(const std::string& dsn, const std::string& schema = "sediment");

// The smallest key greater than every key starting with `prefix` ("" if none).
std::string PrefixEnd(std::string_view prefix);

}  // namespace sediment::kv
