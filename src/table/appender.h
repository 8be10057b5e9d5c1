// Appender: adds a segment to a table — writes its Parquet file, checks it
// continues the table (or replaces the blocks a reorg changed), and commits
// it to the live set in one atomic registry batch (LiveSetChange). Nothing
// is left behind if any step fails: the new file is deleted.
//
// A segment that starts right after the table's last block must name that
// block's hash as its parent_hash. A segment that starts at or before the
// last block is a reorg, and it must be proven: its parent_hash must be the
// stored hash of block start_block - 1, and it may reach at most
// max_reorg_depth blocks below the head (the table keeps the hashes of its
// newest max_reorg_depth blocks: every segment's end and parent hash, and the
// per-block hashes a writer sends). Anything else is refused with Conflict,
// naming the block and both hashes, and changes nothing — unless the request
// says `force`: then the reorg is accepted without proof (deeper than the
// window, before the table's first block, where no hash is stored, or against
// a hash that differs), logged as a warning and counted in
// table_forced_reorgs_total. An accepted reorg replaces every live file with
// blocks at or after its start, and a file that straddles the start is
// rewritten without the replaced blocks. The first append to an empty table
// requires the table to be still empty when it commits. A race with a
// compaction swap (the live set moved) is retried against the new live set.
//
// Thread-safety: safe from many threads; appends to one table commit one at
// a time on this server, and the registry's preconditions order them across
// servers.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "blob/blob.h"
#include "table/history.h"
#include "table/parquet_io.h"
#include "table/registry.h"

namespace arrow {
class RecordBatchReader;
}  // namespace arrow

namespace sediment::table {

struct TableMetrics;

struct AppendRequest {
  uint64_t start_block = 0;
  uint64_t end_block = 0;
  std::string end_hash;     // hex
  std::string parent_hash;  // hex
  // Optional: the hashes (hex) of the segment's last block_hashes.size()
  // blocks, ending with end_block's (which must equal end_hash). Those within
  // the reorg window are kept, so a later reorg from inside this segment can
  // be proven.
  std::vector<std::string> block_hashes{};
  bool force = false;  // accept a reorg without proof (logged and counted)
};

struct AppendResult {
  SegmentRecord segment;
  bool reorg = false;
  std::vector<SegmentRecord> replaced;     // segments the reorg took out of the live set
  std::optional<SegmentRecord> rewritten;  // a straddling file, rewritten without the replaced blocks
};

// The index of the block_num column; InvalidArgument if there is none or it
// is not uint64.
Result<int> BlockColumn(const arrow::Schema& schema);

class Appender {
 public:
  Appender(TableRegistry* registry, TableHistory* history, blob::BlobStore* blobs, Clock* clock, TableMetrics* metrics,
           const WriterSettings& file_settings, uint64_t max_reorg_depth, uint32_t writer_tag)
      : registry_(registry),
        history_(history),
        blobs_(blobs),
        clock_(clock),
        metrics_(metrics),
        file_settings_(file_settings),
        max_reorg_depth_(max_reorg_depth),
        writer_tag_(writer_tag) {}

  // Writes the batches as one segment covering [start_block, end_block]. The
  // batches must have the table's schema and block_num values inside the
  // range, never decreasing.
  Result<AppendResult> Append(const TableId& id, const AppendRequest& request, arrow::RecordBatchReader* batches);

 private:
  // The new segment's record, with the request checked (block range, hashes, schema).
  Result<SegmentRecord> NewSegment(const TableInfo& table, const AppendRequest& request,
                                   arrow::RecordBatchReader* batches);
  // Writes the segment's file from the batches, checking every block number.
  Status WriteSegment(const TableInfo& table, const AppendRequest& request, arrow::RecordBatchReader* batches,
                      SegmentRecord* seg);
  // The block -> hash pairs the request proves (segment end and parent, and
  // the per-block hashes), checked for form.
  Result<std::map<uint64_t, std::string>> RequestHashes(const AppendRequest& request, const SegmentRecord& seg);
  Result<AppendResult> Commit(const TableInfo& table, const SegmentRecord& seg,
                              const std::map<uint64_t, std::string>& hashes, bool force);
  // What committing `seg` over the live set of `state` changes: reads the
  // last segment, or for a reorg the segments from its start on; writes the
  // straddling file's rewrite, if any, into result->rewritten.
  Result<LiveSetChange> PlanChange(const TableInfo& table, const SegmentRecord& seg, const TableState& state,
                                   bool force, AppendResult* result);
  // Conflict unless a reorg from seg.start is proven (or forced). `tail`: the
  // live segments from block seg.start - 1 on.
  Status CheckReorg(const TableId& id, const SegmentRecord& seg, const Snapshot& tail, bool force);
  // The stored hash of block `start` - 1: a live segment's end or the first one's parent, else the window.
  Result<std::optional<std::string>> StoredHash(const TableId& id, const Snapshot& tail, uint64_t start);
  void Committed(const TableId& id, const TableState& state, const AppendResult& result, bool force);
  Result<SegmentRecord> RewriteWithout(const TableInfo& table, const SegmentRecord& s, uint64_t cut_block,
                                       const std::string& end_hash);
  std::mutex& CommitMutex(const TableId& id);

  TableRegistry* const registry_;
  TableHistory* const history_;
  blob::BlobStore* const blobs_;
  Clock* const clock_;
  TableMetrics* const metrics_;
  const WriterSettings file_settings_;
  const uint64_t max_reorg_depth_;
  const uint32_t writer_tag_;  // in the names of the files this server writes
  std::mutex mu_;
  std::map<TableId, std::unique_ptr<std::mutex>> commit_mu_;  // GUARDED_BY(mu_)
};

}  // namespace sediment::table
