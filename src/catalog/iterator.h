// ValueIterator: an ordered walk over (path -> encoded entry) pairs, the one
// shape every catalog source has — a staging token in the KV store, a
// meta-range of range files, a list of pending changes — and the combinators
// that stack them into a branch's view.
//
// Protocol: Next() advances and returns false at the end or on error (then
// status() says which); SeekGE(k) repositions so the following Next() yields
// the first key >= k. key()/value() are valid after Next() returned true.
// An empty value is a tombstone (a staged delete).
//
// Thread-safety: an iterator is used by one thread at a time.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace sediment::kv {
class KvStore;
}

namespace sediment::catalog {

class ValueIterator {
 public:
  virtual ~ValueIterator() = default;
  virtual bool Next() = 0;
  virtual void SeekGE(std::string_view key) = 0;
  virtual const std::string& key() const = 0;
  virtual const std::string& value() const = 0;
  virtual Status status() const = 0;
};

struct KeyValueEntry {
  std::string key;
  std::string value;  // encoded entry, "" = tombstone
};

// Over a sorted vector (pending changes, test fixtures).
std::unique_ptr<ValueIterator> NewVectorIterator(std::vector<KeyValueEntry> sorted);

// Merges `sources` by key; where several hold a key, the earliest source in the
// list wins and the others skip it. Tombstones pass through.
std::unique_ptr<ValueIterator> NewCombinedIterator(std::vector<std::unique_ptr<ValueIterator>> sources);

// Hides tombstones.
std::unique_ptr<ValueIterator> NewTombstoneFilter(std::unique_ptr<ValueIterator> source);

// Over the KV keys `prefix + path`, yielding `path`; pages with growing sizes
// and restarts its page on SeekGE.
std::unique_ptr<ValueIterator> NewKvPrefixIterator(std::shared_ptr<kv::KvStore> kv, std::string prefix);

}  // namespace sediment::catalog
