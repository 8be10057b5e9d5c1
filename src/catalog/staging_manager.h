// StagingManager: the catalog's staging area (graveler's StagingManager).
// Entries are staged in tokens (c/s/<token>/<path>; "" is a tombstone); a
// token that no branch reads any more is retired (c/d/<token>) and dropped by
// a background task once its grace is over. It knows tokens, not branches:
// which tokens a branch reads is its record's (RefManager), and the Catalog
// composes the two (a write re-checked against a seal, a swap that retires
// the folded tokens in the branch's own batch).
//
// Owns: the background dropper (PeriodicTask) and the grace of retired
// tokens; its records are in the shared KV store (keys.h).
//
// Thread-safety: every method is safe to call from many threads, except
// StartDropper and StopDropper, which must not race with each other or with
// TriggerDrop (the Catalog calls them from Start and Stop only).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "catalog/committed.h"
#include "catalog/entry.h"
#include "catalog/iterator.h"
#include "catalog/records.h"

namespace sediment {
class PeriodicTask;
namespace kv {
class KvStore;
struct Batch;
struct Precondition;
}  // namespace kv
}  // namespace sediment

namespace sediment::catalog {

enum class StagedProbe {
  kStopAtFirst,  // IsDirty: return at the first token that holds an entry
  kEveryToken,   // CompactStaging: probe every token, then answer
};

class StagingManager {
 public:
  // `dropped_token_grace`: how long a retired token stays readable (CatalogOptions).
  StagingManager(std::shared_ptr<kv::KvStore> kv, std::shared_ptr<Clock> clock, Duration dropped_token_grace);
  ~StagingManager();  // StopDropper()

  // Starts the background task that runs `pass` every 2 s and whenever
  // TriggerDrop asks (the Catalog's pass also finishes deleted repositories).
  void StartDropper(std::function<void()> pass);
  void StopDropper();
  // Asks the background task for a pass soon; nothing if it is not running.
  void TriggerDrop();

  // Adds `token`'s drop record to `batch`: the batch that makes a branch stop
  // reading the token retires it atomically.
  static void Retire(kv::Batch* batch, const std::string& token);
  // Retires `token` on its own (a write that may have landed in a dropped token).
  Status QueueDrop(const std::string& token);
  // Deletes the entries of every retired token whose grace is over (stamping
  // the records seen for the first time), then their records.
  Status DropRetiredTokens();

  // Stages `value` (EncodeEntry, "" = tombstone) at `path` in `token`.
  Status Set(const std::string& token, const std::string& path, const std::string& value);
  // Stages entries[begin, end) in `token`, in one atomic batch.
  Status SetEntries(const std::string& token, const std::vector<std::pair<std::string, Entry>>& entries, size_t begin,
                    size_t end);
  // The value `path` is staged with in the branch's tokens, newest first (the
  // current token only if `include_current`): "" for a tombstone, nullopt if
  // no token stages it.
  Result<std::optional<std::string>> Lookup(const Branch& branch, const std::string& path, bool include_current);
  // The branch's staged entries (tombstones included): the current token over
  // the sealed ones, newest first; the current one only if `include_current`.
  std::unique_ptr<ValueIterator> View(const Branch& branch, bool include_current = true);
  // True if any of the branch's tokens — the sealed ones, then the current one —
  // holds a staged entry or tombstone. Ignores a compacted meta-range.
  Result<bool> HasStagedEntries(const Branch& branch, StagedProbe probe);
  // Calls `visit` with every value staged in `token` (tombstones included), in
  // path order; GC marks what they reference.
  Status ForEachStaged(const std::string& token, const std::function<Status(const std::string& value)>& visit);

  // Removes from `token` what it stages at `path`, or under it if `prefix`.
  Status Unstage(const std::string& token, const std::string& path, bool prefix);
  // Stages in `token` the left side of `diff` ("" where absent: a tombstone)
  // from where it stands for as long as `in_scope(key)` holds.
  Status StageLeft(const std::string& token, DiffIterator& diff,
                   const std::function<bool(const std::string&)>& in_scope);

 private:
  const std::shared_ptr<kv::KvStore> kv_;
  const std::shared_ptr<Clock> clock_;
  const Duration grace_;
  std::unique_ptr<PeriodicTask> dropper_;  // between StartDropper and StopDropper
};

namespace internal {

// Deletes every key under `prefix`, in batches. Defined in staging_manager.cc.
Status DeletePrefix(kv::KvStore& kv, const std::string& prefix);
// The same, each batch only while `still` holds; PreconditionFailed (having
// deleted some batches, or none) once it does not.
Status DeletePrefixWhile(kv::KvStore& kv, const std::string& prefix, const kv::Precondition& still);

}  // namespace internal

}  // namespace sediment::catalog
