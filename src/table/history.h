// TableHistory: the appends and compaction passes of each table, for the
// console's charts, `sediment table passes` and `table simulate --from`; kept
// kHistoryDays (the collector prunes them). Apart from the registry, which
// holds the live set: history is a record, never read to decide anything.
//
// KV layout: t/hist/<dataset>/<table>/<time:020>-<segment id> (appends, oldest
// first), t/pass/<dataset>/<table>/<max - time:020>-<server> (passes, newest first).
//
// Thread-safety: safe from many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "table/names.h"
#include "table/segment.h"

namespace sediment::kv {
class KvStore;
}  // namespace sediment::kv

namespace sediment::table {

// One appended segment, as the history keeps it.
struct AppendRecord {
  int64_t t_us = 0;
  int64_t bytes = 0;
  int64_t rows = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  std::string cursor;        // where a page that ends here resumes ("<time:020>-<segment id>")
  int64_t stored_bytes = 0;  // the file's size (0 in records written before it was kept)
};

// One compaction pass that planned merges, or failed, as the pass history keeps it.
struct PassRecord {
  struct Merge {
    std::string outcome;  // "merged", "failed", "discarded", "stopped"
    int64_t inputs = 0;   // files
    uint64_t start = 0, end = 0;
    int64_t bytes_in = 0, bytes_out = 0;  // stored bytes
    std::string error;
  };
  int64_t t_us = 0;  // when it started
  double seconds = 0;
  std::string server;
  int64_t files_considered = 0;
  int64_t files_after = 0, stored_bytes_after = 0;  // the live set when it ended
  std::vector<Merge> merges;                        // the first kMaxMerges of them
  int64_t merges_total = 0;
  std::string error;   // the pass failed as a whole (it could not plan, say): why
  std::string cursor;  // where a page that ends here resumes
  static constexpr size_t kMaxMerges = 64;
};

class TableHistory {
 public:
  explicit TableHistory(std::shared_ptr<kv::KvStore> kv) : kv_(std::move(kv)) {}

  // Recorded after each append.
  static constexpr int kHistoryDays = 30;
  Status RecordAppend(const TableId& id, const SegmentRecord& segment);
  // Appends since `since_us`, oldest first: up to `limit` after `cursor` ("" = from since_us).
  Result<std::vector<AppendRecord>> AppendHistory(const TableId& id, int64_t since_us, const std::string& cursor = "",
                                                  size_t limit = SIZE_MAX, bool* has_more = nullptr);
  // Deletes append and pass history records older than `before_us`.
  Status PruneHistory(const TableId& id, int64_t before_us);
  // The pass history: passes that planned merges, kept for kHistoryDays.
  Status RecordPass(const TableId& id, const PassRecord& pass);
  // Passes newest first, back to `since_us`: up to `limit` after `cursor`.
  Result<std::vector<PassRecord>> PassHistory(const TableId& id, int64_t since_us, const std::string& cursor,
                                              size_t limit, bool* has_more = nullptr);

 private:
  std::shared_ptr<kv::KvStore> kv_;
};

}  // namespace sediment::table
