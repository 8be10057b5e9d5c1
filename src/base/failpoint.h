// Failpoints: named places in the code where a test can make the process die
// (as SIGKILL would) or an operation fail, in the spirit of RocksDB's sync
// points and Pebble's error injection. Compiled in, and inert — one relaxed
// atomic load — unless armed.
//
// Arming: the environment variable SEDIMENT_FAILPOINTS, read once at start-up
// (`sediment serve` calls ArmFromEnv), or Arm() from a unit test:
//
//   SEDIMENT_FAILPOINTS="table.append.after_commit=crash"
//   SEDIMENT_FAILPOINTS="kv.postgres.commit_lost=error*2,catalog.commit.after_seal=crash@3"
//
// An action is `crash` (the process kills itself with SIGKILL) or `error`
// (Hit returns IOError naming the failpoint); `@N` fires on the Nth hit only
// (default 1), `*N` on N hits from then on (default 1; `*0` = every hit).
// Every failpoint's name is in kAll, which the crash sweep walks.
//
// Thread-safety: Hit, Arm, DisarmAll and Hits are safe from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace sediment::failpoint {

// Every failpoint, by the step it interrupts. docs/failpoints.md says what
// each one proves.
inline constexpr std::array<std::string_view, 21> kAll = {
    // Tables: append, reorg, merge (publish, swap), GC.
    "table.append.after_write",   // the segment file is written, not committed
    "table.append.after_commit",  // committed, not yet acknowledged
    "table.reorg.after_rewrite",  // a straddling file is rewritten, the reorg not committed
    "table.reorg.after_commit",   // the reorg is committed, not yet acknowledged
    "table.merge.after_publish",  // the merged file is written, not swapped in
    "table.merge.after_swap",     // swapped in, its inputs in the GC manifest
    "table.gc.after_delete",      // a manifest file is deleted, its entry not yet removed
    // Catalog: uploads, staging writes, commit, staging compaction (seal, fold, swap, drop).
    "catalog.upload.after_data",   // the object's data is stored, its entry not staged
    "catalog.stage.after_write",   // the staged entry is written, the branch not re-checked
    "catalog.commit.after_seal",   // the staging token is sealed into the branch record
    "catalog.commit.after_fold",   // ranges and meta-range are written, the branch not swapped
    "catalog.commit.after_swap",   // the branch points at the new commit, not yet acknowledged
    "catalog.compact.after_seal",  // a staging compaction sealed the branch's token
    "catalog.compact.after_fold",  // its meta-range is written, the branch not swapped
    "catalog.compact.after_swap",  // the branch holds the compacted meta-range
    "catalog.tokens.after_drop",   // a dead staging token's keys are deleted, its record not yet
    "catalog.gc.after_delete",     // catalog GC deleted an unreferenced file, and goes on
    // Iceberg tables in repositories: a table commit.
    "iceberg.commit.after_metadata",  // the new metadata file is written, the pointer not swapped
    "iceberg.commit.after_swap",      // the pointer names it, the commit not yet acknowledged
    // KV and start-up.
    "kv.postgres.commit_lost",   // COMMIT landed, but its answer is lost (as with a dropped connection)
    "server.start.after_sweep",  // the start-up orphan sweep ran, the server does not serve yet
};

// Returns OK, or the injected error; does not return if armed to crash.
Status Hit(std::string_view name);

enum class Action { kError, kCrash };
// Arms `name`: fires on hit number `nth` (1-based) and the `times - 1` hits
// after it (times 0 = forever). InvalidArgument for an unknown name.
Status Arm(std::string_view name, Action action, int64_t nth = 1, int64_t times = 1);
// Parses a SEDIMENT_FAILPOINTS value and arms each entry.
Status ArmFromSpec(std::string_view spec);
// Arms from $SEDIMENT_FAILPOINTS, if set.
Status ArmFromEnv();
void DisarmAll();
// How often `name` was reached since it was armed (tests).
int64_t Hits(std::string_view name);

}  // namespace sediment::failpoint

// Returns the injected error from the enclosing function.
#define SEDIMENT_FAILPOINT(name) ARROW_RETURN_NOT_OK(::sediment::failpoint::Hit(name))
