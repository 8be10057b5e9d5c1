// TableRegistry: a table's metadata in the KV store — its schema, its live
// segments and its GC manifest — and the one atomic step that changes them.
//
// Its keys (the table record, live segments, the state record, the GC
// manifest, block hashes) are built in table/keys.h; docs/formats.md
// describes the records.
//
// Live segments never overlap, so the first block is a unique, ordered key,
// and the segment holding block b is the floor of b's key (one index
// lookup). Nothing on the write path reads the whole live set: an append
// reads the state and the last segment, a reorg the segments from its start,
// a scan of a block range the segments that overlap it (docs/scale.md).
//
// Every change is one KV batch: each removed segment must still be live and
// unchanged, each added one's key must be free (or freed by the batch); the
// removed segments enter the GC manifest in the same batch, and the state is
// replaced (compare-and-set on the state read). If only the state moved (an
// unrelated change landed), the change is applied again on the new state.
// A snapshot reads the state before and after reading the segments and
// retries if it moved, so it is the live set at one instant; while the token
// stays the same the last whole snapshot is reused without scanning.
//
// Thread-safety: safe from many threads and many servers sharing the KV.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "kv/kv.h"
#include "table/names.h"
#include "table/scan_floors.h"
#include "table/segment.h"

namespace arrow {
class Schema;
}

namespace sediment::table {

struct TableInfo {
  TableId id;
  std::shared_ptr<arrow::Schema> schema;  // the current one
  // The schemas it had before, oldest first (EvolveTable): each one's fields
  // begin the next one's. The current schema's version is history.size() + 1.
  std::vector<std::shared_ptr<arrow::Schema>> history;
  int64_t created_at_us = 0;
  int version() const { return static_cast<int>(history.size()) + 1; }
};

// What the live set adds up to, kept in one record beside the segments and
// replaced in the same batch as them.
struct TableState {
  std::string token;  // replaced by every change; "" = the table never had a segment
  int64_t files = 0;
  int64_t rows = 0;
  int64_t bytes = 0;         // uncompressed
  int64_t stored_bytes = 0;  // on storage
  uint64_t first = 0;        // the first block (the first segment's start)
  uint64_t last = 0;         // the last segment's start
  uint64_t end = 0;          // the last block
  bool empty() const { return files == 0; }
  bool operator==(const TableState&) const = default;
};

struct Snapshot {
  std::vector<SegmentRecord> segments;  // in block order
  TableState state;                     // state.token is the snapshot's version
};

struct SegmentPage {
  std::vector<SegmentRecord> segments;
  bool has_more = false;
};

// A block a reorg replaced, found by its hash (a stream's cursor on the
// abandoned fork learns where the chains part).
struct AbandonedBlock {
  uint64_t block = 0;
  std::string hash;                  // lowercase hex
  std::optional<uint64_t> ancestor;  // the last block both chains shared then (none: the reorg replaced block 0)
  std::string ancestor_hash;         // its hash then (a later, deeper reorg may replace it too)
};

struct LiveSetChange {
  std::vector<SegmentRecord> remove;  // must be live and unchanged; they enter the GC manifest
  std::vector<SegmentRecord> add;
  std::vector<SegmentRecord> keep;  // must be live and unchanged; stay live
  // Set: the live set must still be the one of this snapshot version ("" = a
  // table that never had a segment). Appends to an empty table use it.
  std::optional<std::string> expect_version;
  std::map<uint64_t, std::string> put_hashes;  // block -> hash (hex), stored in the same batch
  std::vector<uint64_t> drop_hashes;           // blocks whose stored hashes a reorg replaced
  std::vector<AbandonedBlock> abandoned;       // what those hashes were: kept as long as the window's hashes
};

class TableRegistry {
 public:
  explicit TableRegistry(std::shared_ptr<kv::KvStore> kv) : kv_(std::move(kv)) {}

  // Creates the table, or does nothing if it exists with an equal schema
  // (returns false). Conflict if it exists with another schema.
  Result<bool> CreateTable(const TableId& id, const std::shared_ptr<arrow::Schema>& schema, TimePoint now);
  // Gives the table `schema` as its next version: its current fields, the
  // same and in order, then new nullable ones (files written before read
  // with nulls in them). False if `schema` is the current one. InvalidArgument
  // naming the field for any other change; NotFound if there is no table.
  Result<bool> EvolveTable(const TableId& id, const std::shared_ptr<arrow::Schema>& schema);
  Result<TableInfo> GetTable(const TableId& id);
  Result<std::vector<TableInfo>> ListTables();

  // Up to `limit` tables of `dataset` (all if "") after "<dataset>/<table>"
  // `after` ("" = from the start), in name order.
  Result<std::vector<TableInfo>> ListTables(const std::string& after, const std::string& dataset, size_t limit,
                                            bool* has_more);

  // Up to `limit` tables that have (or had) segments, in name order after
  // `after` (nullopt: from the first): what background work visits. Reads
  // the small state records, not the table records with their schemas.
  Result<std::vector<TableId>> TablesWithSegments(const std::optional<TableId>& after, size_t limit);
  // One KV read.
  Result<TableState> State(const TableId& id);
  // The segment that starts at `start`; NotFound if none does.
  Result<SegmentRecord> Segment(const TableId& id, uint64_t start);
  // Every live segment (the compactor's planning, GC's sweep, whole-table reads).
  Result<Snapshot> TakeSnapshot(const TableId& id);
  // The live segments that hold blocks in [from, to], at one instant: a floor
  // lookup and a range scan, whatever the number of live files.
  Result<Snapshot> TakeSnapshot(const TableId& id, uint64_t from, uint64_t to);
  // Up to `limit` live segments that start after block `after` (all if
  // nullopt), in block order. Pages are not one snapshot.
  Result<SegmentPage> ListSegments(const TableId& id, std::optional<uint64_t> after, size_t limit);
  // Whether a live segment has this file: one read (the file name starts with
  // the segment's first block).
  Result<bool> IsLive(const TableId& id, const std::string& path);
  // PreconditionFailed if the live set changed in a way that conflicts.
  // Returns the state after the change.
  Result<TableState> Commit(const TableId& id, const LiveSetChange& change, TimePoint now);
  // Called after each successful Commit (set once, before any Commit).
  void SetCommitListener(std::function<void(const TableId&)> listener) { on_commit_ = std::move(listener); }

  // The stored hash of `block` (hex), if the reorg window holds it.
  Result<std::optional<std::string>> BlockHash(const TableId& id, uint64_t block);
  // Blocks at or after `from` that have a stored hash, in order, with it.
  Result<std::vector<std::pair<uint64_t, std::string>>> HashesFrom(const TableId& id, uint64_t from);
  // The block a reorg replaced that had `hash` (hex), while the window keeps it.
  Result<std::optional<AbandonedBlock>> Abandoned(const TableId& id, const std::string& hash);
  // Deletes stored hashes of blocks before `before` (they left the window),
  // and the abandoned blocks' before it.
  Status PruneBlockHashes(const TableId& id, uint64_t before);

  Result<std::vector<GcEntry>> ListGc(const TableId& id);
  // PreconditionFailed if the entry is gone already (another collection removed it).
  Status RemoveGcEntry(const TableId& id, const GcEntry& entry);
  // The entries removed before `removed_before_us`: reads only those (and
  // any legacy ones), not the whole manifest.
  Result<std::vector<GcEntry>> ListDueGc(const TableId& id, int64_t removed_before_us);

  // Object path prefix of a table's files, and a new segment's path.
  static std::string ObjectPrefix(const TableId& id);
  static std::string SegmentPath(const TableId& id, const std::string& segment_id);

 private:
  // The state and its stored text ("" if the table never had a segment).
  Result<TableState> LoadState(const TableId& id, std::string* raw);
  // The state after `change` is applied to the live set of `state`.
  Result<TableState> NextState(const TableId& id, const TableState& state, const LiveSetChange& change);
  // Whether the change's own preconditions (segments, free keys) still hold.
  Result<bool> SegmentsStillHold(const TableId& id, const LiveSetChange& change);
  // The change's segment and GC mutations and their preconditions (not the state's).
  static kv::Batch CommitBatch(const TableId& id, const LiveSetChange& change, TimePoint now);

  std::shared_ptr<kv::KvStore> kv_;
  std::function<void(const TableId&)> on_commit_;
  // The last snapshot of each table, reused while the version token is the
  // same (every change replaces it), so reads of a busy table don't decode
  // every segment record each time.
  void UpdateCache(const TableId& id, const TableState& before, const TableState& after, const LiveSetChange& change);

  std::mutex cache_mu_;
  std::map<TableId, Snapshot> cache_;  // GUARDED_BY(cache_mu_)
  // Each table's record as last read, by key, and it decoded: appends and
  // passes read it each time, and decoding its schemas cost more than the read.
  Result<TableInfo> DecodeCached(const std::string& key, const std::string& raw);
  std::map<std::string, std::pair<std::string, TableInfo>> decoded_tables_;  // GUARDED_BY(cache_mu_)

  // The queue's entries removed before `removed_before_us`, read from the
  // floor (ListDueGc) or from the start (ListGc).
  Result<std::vector<GcEntry>> ListQueued(const TableId& id, int64_t removed_before_us, bool from_floor);
  // Where scans of the GC queue and of the block hashes start (both are
  // deleted from their front; scan_floors.h).
  ScanFloors floors_;
};

}  // namespace sediment::table
