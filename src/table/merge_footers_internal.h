// FooterReads: the merge's inputs' footers, read metadata_concurrency at a
// time on the footer pool a bounded distance ahead of the planning, each
// checked against the registry. Private to src/table (merge*.cc).
//
// Thread-safety: one thread calls Take; the reads run on the footer pool.
#pragma once

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "table/merge.h"

namespace parquet {
class FileMetaData;
}

namespace sediment::table::merge_internal {

// Every input's footer: read once, checked, kept for planning and for opening
// the file again without reading it twice. No file stays open between steps.
using Footers = std::vector<std::shared_ptr<parquet::FileMetaData>>;
// Small inputs on object storage, fetched whole when their footer was read
// (one request instead of two); null for the others.
using Wholes = std::vector<std::shared_ptr<arrow::Buffer>>;

struct FooterRead {
  std::shared_ptr<parquet::FileMetaData> footer;
  std::shared_ptr<arrow::Buffer> whole;
};

// Every input's footer, read metadata_concurrency at a time on the footer
// pool, a bounded distance ahead of the planning (so a merge of thousands of
// head files does not hold all their footers at once), and taken in input
// order as the merge plans: steps are planned, and run, while later footers
// are still being read. Each footer is checked against the registry; the
// first failure, by input order, names its file. Waits for the reads it
// started when destroyed.
class FooterReads {
 public:
  FooterReads(const MergeContext& ctx, const TableInfo& table, const std::vector<SegmentRecord>& inputs);
  ~FooterReads();

  // Input i's footer, checked (and its bytes, if fetched whole). Call in order.
  Result<FooterRead> Take(size_t i);

 private:
  void SubmitUpTo(size_t end);

  const MergeContext& ctx_;
  const TableInfo& table_;
  const std::vector<SegmentRecord>& inputs_;
  const size_t ahead_;
  size_t submitted_ = 0;
  std::string stored_schema_;
  std::vector<std::future<Result<FooterRead>>> opening_;
};

}  // namespace sediment::table::merge_internal
