// What the files implementing class Catalog and its managers share
// (catalog*.cc, ref_manager*.cc): the branch record format, the
// compare-and-swap budget, and the delimited pager behind ListEntries and the
// diffs (their KV keys are keys.h's; the staging helpers, DeletePrefix among
// them, staging_manager.h's). Private to src/catalog.
//
// Thread-safety: pure functions, except those taking a kv::KvStore, which are
// as safe as the store.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

#include "base/crypto.h"
#include "catalog/catalog.h"
#include "catalog/entry.h"
#include "catalog/keys.h"
#include "catalog/staging_manager.h"
#include "kv/kv.h"

namespace sediment::catalog::internal {

// Tries of a compare-and-swap on a branch record (and of a staged write's re-check).
constexpr int kCasRetries = 20;

inline std::string NewToken() { return RandomHex(16); }

// The branch record, version 1 (docs/formats.md). Defined in ref_manager.cc.
std::string BranchJson(const Branch& b);
Result<Branch> ParseBranch(const std::string& name, const std::string& raw);

inline Status NoChanges(const std::string& what) { return InvalidArgument(fmt::format("no changes: {}", what)); }

// A page size: 100 if unset, at most 1,000.
inline int64_t ClampAmount(int64_t amount) {
  if (amount <= 0) return 100;
  return std::min<int64_t>(amount, 1000);
}

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
