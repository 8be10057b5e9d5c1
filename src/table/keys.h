// The table module's KV key layout, in one place: every key and prefix that
// TableRegistry, TableHistory and TableLeases read or write is built here
// (keys.cc) and nowhere else. Each builder says which record it names;
// docs/formats.md describes the records for operators. Keys are on disk:
// changing a spelling here orphans every stored record of it.
//
// Dataset and table names are [a-z][a-z0-9_]* (names.h), so "/" separates
// key parts unambiguously. Numbers are zero-padded to 20 digits, so keys
// sort in numeric order.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "table/names.h"

namespace sediment::table {

// --- tables -----------------------------------------------------------------

// t/tables/<ds>/<t> -> the table record (schema as Arrow IPC, base64, and its history).
std::string TableKey(const TableId& id);
// t/tables/: every table record.
std::string TablesPrefix();
// t/tables/<ds>/: the table records of one dataset.
std::string DatasetTablesPrefix(const std::string& dataset);

// --- the live set -------------------------------------------------------------

// t/seg/<ds>/<t>/<start:020> -> a live segment record, keyed by its first block.
std::string SegmentKey(const TableId& id, uint64_t start);
// t/seg/<ds>/<t>/: the table's live segments, in block order.
std::string SegmentsPrefix(const TableId& id);
// t/ver/<ds>/<t> -> the live set's state (TableState): a token replaced by
// every change, the totals, first and last segment.
std::string StateKey(const TableId& id);
// t/ver/: the state records of every table that has (or had) segments.
std::string StatesPrefix();
// The table a state key names; nullopt if it is not "t/ver/<ds>/<t>".
std::optional<TableId> TableOfStateKey(const std::string& key);

// --- the GC manifest ----------------------------------------------------------

// t/gcq/<ds>/<t>/<removed_at_us:020>-<segment id> -> a GC manifest entry, in
// removal order (a negative time counts as 0).
std::string GcQueueKey(const TableId& id, int64_t removed_at_us, const std::string& segment_id);
// t/gcq/<ds>/<t>/: the table's GC manifest queue.
std::string GcQueuePrefix(const TableId& id);
// t/gc/<ds>/<t>/<segment id> -> a GC manifest entry as written before the
// queue (still read and removed; none are written).
std::string LegacyGcKey(const TableId& id, const std::string& segment_id);
// t/gc/<ds>/<t>/: the table's legacy GC manifest entries.
std::string LegacyGcPrefix(const TableId& id);

// --- block hashes ---------------------------------------------------------------

// t/bh/<ds>/<t>/<block:020> -> a block's hash, kept within the reorg window.
std::string BlockHashKey(const TableId& id, uint64_t block);
// t/bh/<ds>/<t>/: the table's stored block hashes, in block order.
std::string BlockHashesPrefix(const TableId& id);
// t/fork/<ds>/<t>/<hash> -> a block a reorg replaced (registry.h, AbandonedBlock).
std::string AbandonedBlockKey(const TableId& id, const std::string& hash);
// t/fork/<ds>/<t>/: the table's abandoned blocks.
std::string AbandonedBlocksPrefix(const TableId& id);
// The block a block hash key of table `id` names; nullopt unless it ends in
// exactly 20 characters after the prefix (std::stoull reads them, as it always did).
std::optional<uint64_t> BlockOfHashKey(const TableId& id, const std::string& key);

// --- compaction lease -----------------------------------------------------------

// t/lease/<ds>/<t> -> which server compacts the table (kv::Lease).
std::string TableLeaseKey(const TableId& id);

// --- history ------------------------------------------------------------------

// t/hist/<ds>/<t>/<created_at_us:020>-<segment id> -> one appended segment's
// record, in time order.
std::string AppendHistoryKey(const TableId& id, int64_t created_at_us, const std::string& segment_id);
// t/hist/<ds>/<t>/: the table's append records.
std::string AppendHistoryPrefix(const TableId& id);
// t/hist/<ds>/<t>/<t_us:020>: where the append records at `t_us` begin (a
// negative time counts as 0).
std::string AppendHistoryAt(const TableId& id, int64_t t_us);
// t/pass/<ds>/<t>/<INT64_MAX - started_us:020>-<server> -> one compaction
// pass's record, newest first (the key's time runs backwards).
std::string PassHistoryKey(const TableId& id, int64_t t_us, const std::string& server);
// t/pass/<ds>/<t>/: the table's pass records, newest first.
std::string PassHistoryPrefix(const TableId& id);
// Past every pass record of time `t_us` (and before the older ones): '~'
// sorts after "-<server>".
std::string PassHistoryAfter(const TableId& id, int64_t t_us);

}  // namespace sediment::table
