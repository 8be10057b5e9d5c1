// What the files implementing class Catalog share (catalog.cc, catalog_refs.cc,
// catalog_staging.cc, catalog_reads.cc, catalog_commit.cc, catalog_diff.cc,
// catalog_merge.cc, catalog_reset.cc): the branch record format, the
// compare-and-swap budget, and the delimited pager behind ListEntries and the
// diffs (their KV keys are keys.h's). Private to src/catalog.
//
// Thread-safety: pure functions, except those taking a kv::KvStore, which are
// as safe as the store.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>

#include "base/crypto.h"
#include "catalog/catalog.h"
#include "catalog/entry.h"
#include "catalog/keys.h"
#include "kv/kv.h"

namespace sediment::catalog::internal {

// Tries of a compare-and-swap on a branch record (and of a staged write's re-check).
constexpr int kCasRetries = 20;

inline std::string NewToken() { return RandomHex(16); }

// A drop record's value (DropKey): "" when a batch retires the token, then
// {"v":1,"seen_us":…} once the dropper has seen it (the grace runs from there).
inline std::string DropRecord(int64_t seen_us) { return fmt::format("{{\"v\":1,\"seen_us\":{}}}", seen_us); }
// The time a drop record was first seen, or -1 if not yet (or unreadable).
inline int64_t DropRecordTime(const std::string& value) {
  constexpr std::string_view kPrefix = "{\"v\":1,\"seen_us\":";
  if (value.rfind(kPrefix, 0) != 0 || value.back() != '}') return -1;
  int64_t t = -1;
  const char* end = value.data() + value.size() - 1;
  auto [p, ec] = std::from_chars(value.data() + kPrefix.size(), end, t);
  return ec == std::errc() && p == end ? t : -1;
}

// The branch record, version 1 (docs/formats.md). Defined in catalog_refs.cc.
std::string BranchJson(const Branch& b);
Result<Branch> ParseBranch(const std::string& name, const std::string& raw);

inline Status NoChanges(const std::string& what) { return InvalidArgument(fmt::format("no changes: {}", what)); }

// A page size: 100 if unset, at most 1,000.
inline int64_t ClampAmount(int64_t amount) {
  if (amount <= 0) return 100;
  return std::min<int64_t>(amount, 1000);
}

// Deletes every key under `prefix`, in batches. Defined in catalog.cc.
Status DeletePrefix(kv::KvStore& kv, const std::string& prefix);
// The same, each batch only while `still` holds; PreconditionFailed (having
// deleted some batches, or none) once it does not.
Status DeletePrefixWhile(kv::KvStore& kv, const std::string& prefix, const kv::Precondition& still);

enum class StagedProbe {
  kStopAtFirst,  // IsDirty: return at the first token that holds an entry
  kEveryToken,   // CompactStaging: probe every token, then answer
};
// True if any of the branch's tokens — the sealed ones, then the current one —
// holds a staged entry or tombstone. Ignores a compacted meta-range. Defined in
// catalog.cc.
Result<bool> HasStagedEntries(kv::KvStore& kv, const Branch& branch, StagedProbe probe);

// Where a listing page starts: the prefix, or just past `after` — past all of it
// when a delimited page ended on a common prefix. nullopt if nothing can follow.
inline std::optional<std::string> ListStart(const ListOptions& opts) {
  if (opts.after.empty() || opts.after < opts.prefix) return opts.prefix;
  if (opts.delimiter.empty() || !opts.after.ends_with(opts.delimiter)) return opts.after + '\0';
  std::string past = kv::PrefixEnd(opts.after);
  if (past.empty()) return std::nullopt;
  return past;
}

// One page of a listing over `it` (a ValueIterator or a DiffIterator): the keys
// under opts.prefix from ListStart(opts) on, at most ClampAmount(opts.amount)
// items. With a delimiter, the keys sharing a prefix up to the next delimiter
// after opts.prefix become one item, `common_prefix(path)` -> T, and the walk
// skips past them; every other key becomes `object(key)` -> Result<T>.
template <typename T, typename Iterator, typename CommonPrefixFn, typename ObjectFn>
Result<Page<T>> PageDelimited(Iterator& it, const ListOptions& opts, CommonPrefixFn common_prefix, ObjectFn object) {
  int64_t amount = ClampAmount(opts.amount);
  Page<T> out;
  auto start = ListStart(opts);
  if (!start) return out;
  it.SeekGE(*start);
  while (it.Next()) {
    const std::string& k = it.key();
    if (k.compare(0, opts.prefix.size(), opts.prefix) != 0) break;
    if (static_cast<int64_t>(out.items.size()) == amount) {
      out.has_more = true;
      break;
    }
    if (!opts.delimiter.empty()) {
      size_t pos = k.find(opts.delimiter, opts.prefix.size());
      if (pos != std::string::npos) {
        std::string path = k.substr(0, pos + opts.delimiter.size());
        std::string past = kv::PrefixEnd(path);
        out.items.push_back(common_prefix(std::move(path)));
        if (past.empty()) break;  // nothing sorts after a prefix of 0xff bytes
        it.SeekGE(past);
        continue;
      }
    }
    ARROW_ASSIGN_OR_RAISE(T item, object(k));
    out.items.push_back(std::move(item));
  }
  ARROW_RETURN_NOT_OK(it.status());
  return out;
}

}  // namespace sediment::catalog::internal
