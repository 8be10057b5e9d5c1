// Reading and writing segment files: Parquet with the [writer] settings, row
// groups bounded by max_row_group_mb and max_row_group_rows, statistics, the
// page index and bloom filters for the chosen columns, and the segment's facts
// in the file's key-value metadata. Every segment file is written through a
// ParquetAssembler: row groups are encoded in memory and copied in, copied
// straight from another file's encoded bytes (a merge's full row groups), or
// made of other files' data pages one after another (a merge of head files).
//
// Two layouts (docs/compaction.md, "Page copy"): files that will be merged
// again (appends, and merges that do not reach the target) have no dictionary
// pages, so each data page stands alone and a merge concatenates them; a
// merge whose output is final encodes it fully, once, with dictionaries.
// Parquet exceptions stop here and become Status.
//
// Thread-safety: a writer is used by one thread at a time; a reader's reads
// may be called from several threads (they take turns).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/status.h"
#include "blob/blob.h"

namespace arrow {
class ChunkedArray;
class RecordBatch;
class Schema;
class Table;
}  // namespace arrow
namespace parquet {
class FileMetaData;
class WriterProperties;
}  // namespace parquet
namespace parquet::arrow {
class FileReader;
}  // namespace parquet::arrow

namespace sediment::table {

struct EncodedRowGroup;
struct PageRun;
class ParquetAssembler;

enum class FileLayout {
  kPages,  // no dictionaries: every data page stands alone, for merging by copying pages
  kFinal,  // dictionaries where they pay (up to 256 KiB): what queries read for good
};

struct WriterSettings {
  CompressionSetting compression{"zstd", 1};
  int64_t max_row_group_bytes = 128ll << 20;
  int64_t max_row_group_rows = 131072;
  // Rows per data page at most: what a block-range read decodes at least.
  // Files merged again (kPages: the chain's newest blocks, read in narrow
  // ranges) keep small pages; final files larger ones, which engines filter
  // by equality up to 12% faster; DuckDB 1.4 (the Iceberg extension's) pays
  // most per page: 7-10% slower than on its own one-page chunks at 32,768,
  // as fast at 65,536 (bench/RESULTS.md, issue 46). PLAIN pages still end
  // at 1 MiB of values (ChunkEncoding::page_bytes).
  int64_t max_page_rows = 8192;
  int64_t final_page_rows = 65536;
  std::vector<std::string> bloom_filter_columns;  // those the schema lacks are ignored
  // Chunks the codec shrinks by less than 1/8 are stored uncompressed where
  // the chunk encoder writes (head files, final merges; columnwise_encode.h);
  // false: every page compressed.
  bool store_incompressible = true;

  static Result<WriterSettings> FromConfig(const WriterConfig& writer);
  // Rows per row group for `rows` rows that take `bytes`: at most
  // max_row_group_rows, and near max_row_group_bytes per row group too.
  int64_t RowsPerGroup(int64_t rows, int64_t bytes) const;
  // How files of `schema` are encoded in `layout`: codec, statistics, page
  // index, bloom filters, and dictionaries for kFinal.
  std::shared_ptr<parquet::WriterProperties> Properties(const arrow::Schema& schema, FileLayout layout) const;
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
  // Starts writing `path`; nothing is visible until Finish() succeeds. A
  // final file, or one of `expected_bytes` >= kLargeFileBytes, is written
  // around the page cache (BlobStore::OpenLargeWriter).
  static Result<std::unique_ptr<SegmentFileWriter>> Open(blob::BlobStore* store, const std::string& path,
                                                         std::shared_ptr<arrow::Schema> schema,
                                                         const WriterSettings& settings, FileLayout layout,
                                                         const std::string& segment_metadata_json,
                                                         int64_t expected_bytes = 0);
  static constexpr int64_t kLargeFileBytes = int64_t{256} << 20;
  ~SegmentFileWriter();  // aborts if not finished

  // Buffers `batch`; a row group is written when the buffered batches reach
  // max_row_group_bytes (in memory) or max_row_group_rows rows.
  Status Write(const std::shared_ptr<arrow::RecordBatch>& batch);
  // Writes what is buffered, then copies `rg` in as the next row group. It
  // must have been encoded with properties() (same schema and codec).
  Status Append(const EncodedRowGroup& rg);
  // Writes what is buffered, then `run`'s data pages as the next row group
  // (ParquetAssembler::AppendPages).
  Status AppendPages(const PageRun& run);
  // Writes the footer and publishes the object.
  Result<FileFacts> Finish();

  const std::shared_ptr<parquet::WriterProperties>& properties() const { return props_; }
  const WriterSettings& settings() const { return settings_; }

 private:
  SegmentFileWriter() = default;
  Status FlushRowGroup();

  std::string path_;
  std::shared_ptr<arrow::Schema> schema_;
  WriterSettings settings_;
  std::shared_ptr<parquet::WriterProperties> props_;
  std::string segment_metadata_;
  std::vector<std::shared_ptr<arrow::RecordBatch>> pending_;
  int64_t pending_rows_ = 0;
  std::shared_ptr<arrow::io::OutputStream> sink_;
  std::unique_ptr<ParquetAssembler> assembler_;
  int64_t pending_bytes_ = 0;
  bool finished_ = false;
};

// Encodes `table` as row groups of `settings` (at most max_row_group_rows
// rows, and about max_row_group_bytes), ready for SegmentFileWriter::Append.
Result<std::vector<EncodedRowGroup>> EncodeForSegment(const std::shared_ptr<arrow::Table>& table,
                                                      const WriterSettings& settings,
                                                      const std::shared_ptr<parquet::WriterProperties>& props);

// The stored schema of a segment file's footer, with the fields' markers
// (stored_types.h): Arrow's schema of its columns, given kStoredSchemaKey's
// field metadata where the footer has that key (files written before hold it
// under "ARROW:schema"). Invalid, naming `path` and the key, if the key is no
// schema, or names other columns or types than the file holds: Arrow applies
// a stored schema by position, so one naming other fields is refused here.
Result<std::shared_ptr<arrow::Schema>> FooterStoredSchema(const std::string& path, const parquet::FileMetaData& md);

class SegmentFileReader {
 public:
  // `decode_threads`: decode a row group's columns in parallel on Arrow's CPU
  // pool (scans); a merge decodes many row groups at once on its own threads
  // and reads each row group in one coalesced read. `footer`: the file's
  // footer, read before (it is not read again).
  static Result<std::unique_ptr<SegmentFileReader>> Open(blob::BlobStore* store, const std::string& path,
                                                         bool decode_threads = true,
                                                         std::shared_ptr<parquet::FileMetaData> footer = nullptr);
  // Over a file already open (`path` names it in errors); `coalesce_reads`:
  // read each row group's column chunks in one request.
  static Result<std::unique_ptr<SegmentFileReader>> Open(std::shared_ptr<arrow::io::RandomAccessFile> file,
                                                         const std::string& path, bool decode_threads,
                                                         std::shared_ptr<parquet::FileMetaData> footer,
                                                         bool coalesce_reads);
  ~SegmentFileReader();

  const FileFacts& facts() const { return facts_; }
  // The table's types (table/stored_types.h): what the reads return. The
  // file's own columns, or the table's once ReadAs says so.
  const std::shared_ptr<arrow::Schema>& schema() const { return schema_; }
  // Reads the file as one of a table whose schema is `table` (a later
  // version of the file's, TableRegistry::EvolveTable): the file's columns
  // must begin the table's, and the table's others read as nulls. Invalid
  // (naming the file) otherwise. Column numbers are then the table's.
  Status ReadAs(const std::shared_ptr<arrow::Schema>& table);
  // As ReadAs, but the reads return the types the table's files store
  // (StoredSchema(table), table/stored_types.h): a merge that encodes the
  // rows again skips converting them to the table's types and back (a fifth
  // of a final merge's time, bench/RESULTS.md).
  Status ReadStoredAs(const std::shared_ptr<arrow::Schema>& table);
  // How many of schema()'s columns the file holds.
  int file_columns() const { return file_columns_; }
  // The JSON under kSegmentMetadataKey, or empty.
  const std::string& segment_metadata() const { return segment_metadata_; }
  int num_row_groups() const { return facts_.row_groups; }
  // Min and max of column `column` in row group `i`, from its statistics, if present.
  bool RowGroupUInt64Range(int i, int column, uint64_t* min, uint64_t* max) const;
  Result<std::shared_ptr<arrow::Table>> ReadRowGroup(int i, const std::vector<int>& columns = {});
  // The rows of row group `i` (columns `columns`) that the pages holding
  // blocks [from, to] cover: the page index of `block_column` (uint64, in
  // order) says which pages, and only those pages of each column are read
  // and decoded. A superset of the range's rows, in order; the whole row
  // group when the file has no page index, a column is nested, or the pages
  // cover most of it.
  Result<std::shared_ptr<arrow::Table>> ReadRowGroupBlocks(int i, const std::vector<int>& columns, int block_column,
                                                           uint64_t from, uint64_t to);
  // Row group `i` as encoded bytes with its page index and bloom filters.
  Result<EncodedRowGroup> ReadEncoded(int i);
  const std::shared_ptr<parquet::FileMetaData>& parquet_metadata() const { return metadata_; }
  const std::string& path() const { return path_; }

 private:
  SegmentFileReader() = default;
  // Rows [r0, r1) of column `c` of row group `i`, from its pages that hold them.
  Result<std::shared_ptr<arrow::ChunkedArray>> ReadColumnPages(int i, int c, int64_t r0, int64_t r1);
  // Row group `i`, columns `columns` of schema() (all if empty); REQUIRES: mu_ held.
  Result<std::shared_ptr<arrow::Table>> ReadColumnsLocked(int i, std::vector<int> columns);

  std::string path_;
  std::shared_ptr<arrow::io::RandomAccessFile> file_;
  std::shared_ptr<parquet::FileMetaData> metadata_;
  std::mutex mu_;  // Arrow's readers are not safe to share: one read at a time
  std::unique_ptr<parquet::arrow::FileReader> reader_;
  std::shared_ptr<arrow::Schema> schema_;
  std::shared_ptr<arrow::Schema> stored_schema_;  // as the file stores it
  int file_columns_ = 0;                          // the file's top-level columns
  bool stored_reads_ = false;                     // ReadStoredAs: reads return stored types
  std::string segment_metadata_;
  FileFacts facts_;
};

// The schema without metadata, for comparing a file's or a batch's schema to the table's.
bool SameSchema(const arrow::Schema& a, const arrow::Schema& b);

}  // namespace sediment::table
