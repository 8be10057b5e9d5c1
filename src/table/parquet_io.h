// Reading and writing segment files: Parquet with the [writer] settings, row
// groups bounded by max_row_group_mb, and the segment's facts in the file's
// key-value metadata. Parquet exceptions stop here and become Status.
//
// Thread-safety: a writer or reader is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/config.h"
#include "base/status.h"
#include "blob/blob.h"

namespace arrow {
class RecordBatch;
class Schema;
class Table;
}  // namespace arrow
namespace parquet::arrow {
class FileReader;
class FileWriter;
}  // namespace parquet::arrow

namespace sediment::table {

// Rows per row group at most, whatever their size. Row groups are what a
// block-range query skips by and decodes whole: 32Ki rows keeps a 10-block
// query of a compacted logs table near DuckDB's latency (bench/RESULTS.md;
// 128Ki rows was 3x slower there, 16Ki rows made full scans 2x slower).
inline constexpr int64_t kMaxRowGroupRows = 1 << 15;

struct WriterSettings {
  CompressionSetting compression{"zstd", 1};
  int64_t max_row_group_bytes = 128ll << 20;

  static Result<WriterSettings> FromConfig(const WriterConfig& writer);
};

// What the footer says about a finished file.
struct FileFacts {
  int64_t rows = 0;
  int64_t bytes = 0;  // uncompressed: sum of row groups' total_byte_size
  int64_t stored_bytes = 0;
  int row_groups = 0;
};

class SegmentFileWriter {
 public:
  // Starts writing `path`; nothing is visible until Finish() succeeds.
  static Result<std::unique_ptr<SegmentFileWriter>> Open(blob::BlobStore* store, const std::string& path,
                                                         std::shared_ptr<arrow::Schema> schema,
                                                         const WriterSettings& settings,
                                                         const std::string& segment_metadata_json);
  ~SegmentFileWriter();  // aborts if not finished

  // Buffers `batch`; a row group is written when the buffered batches reach
  // max_row_group_bytes (in memory) or kMaxRowGroupRows rows.
  Status Write(const std::shared_ptr<arrow::RecordBatch>& batch);
  // Writes the footer and publishes the object.
  Result<FileFacts> Finish();

 private:
  SegmentFileWriter() = default;
  Status FlushRowGroup();

  std::string path_;
  std::shared_ptr<arrow::Schema> schema_;
  std::vector<std::shared_ptr<arrow::RecordBatch>> pending_;
  int64_t pending_rows_ = 0;
  std::shared_ptr<arrow::io::OutputStream> sink_;
  std::unique_ptr<parquet::arrow::FileWriter> writer_;
  int64_t max_row_group_bytes_ = 0;
  int64_t pending_bytes_ = 0;
  bool finished_ = false;
};

class SegmentFileReader {
 public:
  static Result<std::unique_ptr<SegmentFileReader>> Open(blob::BlobStore* store, const std::string& path);
  ~SegmentFileReader();

  const FileFacts& facts() const { return facts_; }
  const std::shared_ptr<arrow::Schema>& schema() const { return schema_; }
  // The JSON under kSegmentMetadataKey, or empty.
  const std::string& segment_metadata() const { return segment_metadata_; }
  int num_row_groups() const { return facts_.row_groups; }
  // Min and max of column `column` in row group `i`, from its statistics, if present.
  bool RowGroupUInt64Range(int i, int column, uint64_t* min, uint64_t* max) const;
  Result<std::shared_ptr<arrow::Table>> ReadRowGroup(int i, const std::vector<int>& columns = {});

 private:
  SegmentFileReader() = default;
  std::string path_;
  std::unique_ptr<parquet::arrow::FileReader> reader_;
  std::shared_ptr<arrow::Schema> schema_;
  std::string segment_metadata_;
  FileFacts facts_;
};

// The schema without metadata, for comparing a file's or a batch's schema to the table's.
bool SameSchema(const arrow::Schema& a, const arrow::Schema& b);

}  // namespace sediment::table
