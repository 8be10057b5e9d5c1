// QueryStream: a streaming query (`SETTINGS stream = true`) as Amp serves it
// (docs/query.md, "Streaming"): microbatches over consecutive block ranges of
// the tables it names, each a query of its own restricted to its range, as
// blocks are appended; a reorg that replaced blocks the client already has
// restarts the next microbatch at the last block both chains share.
//
// Data flow of Next():
//   canonical?   the last range delivered still ends on the chain the table
//                has (its end's hash); if not, the newest delivered range
//                that does, else the reorg's record of the replaced hash
//                (TableService::Abandoned), else the reorg window, gives the
//                block to go on from, and the next microbatch is a reorg
//   range        from the block after the last delivered (or the tables'
//                first) to the last block every table has, at most
//                max_blocks, ending at a segment end of the first table
//                named (whose record holds that block's hash)
//   run          QueryEngine::Run over that range; kept only if every table
//                still agrees on the hash of its end (a reorg landing in one
//                table but not yet in another is waited out)
//   wait         for a change of any table (TableWatch), another server's
//                append (poll), or the keep-alive (a microbatch with no run)
//
// Thread-safety: a QueryStream is used by one thread; TableWatch by any.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/clock.h"
#include "query/engine.h"

namespace sediment::table {
struct TableId;
}

namespace sediment::query {

// Wakes streams when a table's live set changes on this server.
class TableWatch {
 public:
  void Changed();
  uint64_t version() const;
  // Until the version is past `seen`, or `deadline`.
  void WaitPast(uint64_t seen, std::chrono::steady_clock::time_point deadline) const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  uint64_t version_ = 0;  // GUARDED_BY(mu_)
};

// Where a client is: the last block it processed, on one network (dataset).
struct StreamCursor {
  std::string network;
  uint64_t number = 0;
  std::string hash;  // lowercase hex, no 0x
};

// A microbatch's blocks: [start, end] of `network`, `hash` the hash of end,
// `prev_hash` of start - 1 ("" when not known).
struct BlockSpan {
  std::string network;
  uint64_t start = 0;
  uint64_t end = 0;
  std::string hash;
  std::string prev_hash;
};

struct StreamOptions {
  uint64_t max_blocks = 1000;
  std::chrono::milliseconds keep_alive{30'000};
  std::chrono::milliseconds poll{1'000};
};

struct Microbatch {
  std::unique_ptr<QueryRun> run;  // null: a keep-alive (nothing new for keep_alive)
  // The range's blocks; a keep-alive's: the last range delivered (Amp's
  // watermark, sent again complete), or none (network "") before the first.
  BlockSpan span;
  bool reorg = false;  // span.start is at or before a block already delivered
};

class QueryStream {
 public:
  // InvalidArgument for a query that cannot stream (a non-incremental plan,
  // no table, tables of several datasets, a cursor for another network);
  // Busy past [query] max_streams.
  static Result<std::unique_ptr<QueryStream>> Open(QueryEngine* engine, table::TableService* tables,
                                                   const TableWatch* watch, const ParsedQuery& query,
                                                   std::optional<StreamCursor> cursor, StreamOptions options);
  ~QueryStream();

  // The columns of every microbatch.
  const std::shared_ptr<arrow::Schema>& schema() const { return schema_; }
  const std::string& network() const { return network_; }

  // The next microbatch, or a keep-alive; Cancelled once `cancelled()` says so.
  Result<Microbatch> Next(const std::function<bool()>& cancelled);

 private:
  QueryStream() = default;
  // A microbatch if there is one to run now.
  Result<std::optional<Microbatch>> TryNext();
  // Where to go on from if the last delivered range left the chain.
  Status CheckCanonical();
  // Whether `hash` is still the hash of `block` in the first table (unknown: older than the window, final).
  Result<bool> IsCanonical(uint64_t block, const std::string& hash);
  // The block to go on from after the delivered ranges all left the chain: the reorg's record of `hash`.
  Result<std::optional<uint64_t>> AncestorOf(uint64_t block, const std::string& hash);
  Result<std::optional<std::string>> HashAt(const table::TableId& id, uint64_t block);

  QueryEngine* engine_ = nullptr;
  table::TableService* tables_ = nullptr;
  const TableWatch* watch_ = nullptr;
  ParsedQuery query_;
  StreamOptions options_;
  std::string network_;
  std::shared_ptr<arrow::Schema> schema_;
  // Ends of the delivered ranges (block, hash), newest last; a few hundred at most.
  std::deque<std::pair<uint64_t, std::string>> delivered_;
  std::optional<uint64_t> next_from_;   // set: the next range starts here (after a reorg, or a cursor)
  std::optional<BlockSpan> last_span_;  // the last range delivered
  bool reorg_ = false;                  // the next range follows a reorg
};

// `batch` with the columns of `schema` (a microbatch whose files are all of an
// older schema version reads narrower types): cast where they differ.
Result<std::shared_ptr<arrow::RecordBatch>> Conform(const std::shared_ptr<arrow::RecordBatch>& batch,
                                                    const std::shared_ptr<arrow::Schema>& schema);

}  // namespace sediment::query
