// Operations on committed data: applying sorted changes to a meta-range
// (reusing every range no change touches) and diffing views.
//
// Thread-safety: functions are reentrant; iterators belong to one thread.
#pragma once
#include <memory>
#include <string>

#include "catalog/iterator.h"
#include "catalog/range_store.h"

namespace sediment::catalog {

struct ApplyStats {
  int64_t changes = 0;
  int64_t ranges_written = 0;
  int64_t ranges_reused = 0;
};

// A new meta-range: `base` with `changes` applied (sorted by key; a tombstone
// deletes). A range that no change falls into is reused by id; a rewritten
// range that ended at a content-defined boundary ends the new range there too,
// so the ranges after it are reused.
Result<std::shared_ptr<const MetaRange>> ApplyChanges(RangeStore& store, const Namespace& ns,
                                                      const std::shared_ptr<const MetaRange>& base,
                                                      ValueIterator& changes, ApplyStats* stats = nullptr);

// Keys whose entries differ (by EntryIdentity) between a left and a right view.
// left()/right() are encoded entries, "" where the key is absent on that side.
class DiffIterator {
 public:
  virtual ~DiffIterator() = default;
  virtual bool Next() = 0;
  virtual void SeekGE(std::string_view key) = 0;
  virtual const std::string& key() const = 0;
  virtual const std::string& left() const = 0;
  virtual const std::string& right() const = 0;
  virtual Status status() const = 0;
  // True when the change conflicts (a three-dot compare: both sides changed it).
  virtual bool conflict() const { return false; }
};

// Merge-walk of two complete views (tombstones count as absent).
std::unique_ptr<DiffIterator> NewDiffIterator(std::unique_ptr<ValueIterator> left,
                                              std::unique_ptr<ValueIterator> right);

// Diff of two meta-ranges that never reads a range both of them contain.
std::unique_ptr<DiffIterator> DiffMetaRanges(RangeStore& store, const Namespace& ns,
                                             const std::shared_ptr<const MetaRange>& left,
                                             const std::shared_ptr<const MetaRange>& right);

// `candidates` yields (key, right value) for every key that may differ; the
// left value is looked up in `left` (a forward-seeking view). Cost is
// proportional to the candidates, not to the left view.
std::unique_ptr<DiffIterator> NewLookupDiff(std::unique_ptr<ValueIterator> candidates,
                                            std::unique_ptr<ValueIterator> left);

// A three-dot compare (lakeFS's default diff): the changes `diff` (left ->
// right) that the right side made since `base` (their merge base, a
// forward-seeking view). A key both sides changed alike is no change; one
// they changed differently is a conflict.
std::unique_ptr<DiffIterator> NewCompareIterator(std::unique_ptr<DiffIterator> diff,
                                                 std::unique_ptr<ValueIterator> base);

// (key, right) of each record: the changes that turn the left view into the right.
std::unique_ptr<ValueIterator> DiffAsChanges(std::unique_ptr<DiffIterator> diff);

// True if two encoded values are the same object (or both absent).
bool SameObject(const std::string& a, const std::string& b);

}  // namespace sediment::catalog
