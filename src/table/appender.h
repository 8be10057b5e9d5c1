// Appender: adds a segment to a table — writes its Parquet file, checks it
// continues the table (or replaces the blocks a reorg changed), and commits
// it to the live set in one atomic registry batch (LiveSetChange). Nothing
// is left behind if any step fails: the new file is deleted.
//
// A segment that starts right after the table's last block must name that
// block's hash as its parent_hash. A segment that starts at or before the
// last block is a reorg: every live file with blocks at or after its start
// is replaced, and a file that straddles the start is rewritten without the
// replaced blocks. A race with a compaction swap (the live set moved) is
// retried against the new live set.
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
  Appender(TableRegistry* registry, blob::BlobStore* blobs, Clock* clock, TableMetrics* metrics,
           const WriterSettings& file_settings)
      : registry_(registry), blobs_(blobs), clock_(clock), metrics_(metrics), file_settings_(file_settings) {}

  // Writes the batches as one segment covering [start_block, end_block]. The
  // batches must have the table's schema and block_num values inside the
  // range, never decreasing.
  Result<AppendResult> Append(const TableId& id, const AppendRequest& request, arrow::RecordBatchReader* batches);

 private:
  // Writes the segment's file from the batches, checking every block number.
  Result<SegmentRecord> WriteSegment(const TableInfo& table, const AppendRequest& request,
                                     arrow::RecordBatchReader* batches);
  Result<AppendResult> Commit(const TableInfo& table, const SegmentRecord& seg);
  // What committing `seg` over `live` changes; writes the straddling file's
  // rewrite, if any, into result->rewritten.
  Result<LiveSetChange> PlanChange(const TableInfo& table, const SegmentRecord& seg,
                                   const std::vector<SegmentRecord>& live, AppendResult* result);
  void Committed(const TableId& id, const std::vector<SegmentRecord>& live, const AppendResult& result);
  Result<SegmentRecord> RewriteWithout(const TableInfo& table, const SegmentRecord& s, uint64_t cut_block,
                                       const std::string& end_hash);
  std::mutex& CommitMutex(const TableId& id);

  TableRegistry* const registry_;
  blob::BlobStore* const blobs_;
  Clock* const clock_;
  TableMetrics* const metrics_;
  const WriterSettings file_settings_;
  std::mutex mu_;
  std::map<TableId, std::unique_ptr<std::mutex>> commit_mu_;  // GUARDED_BY(mu_)
};

}  // namespace sediment::table
