// Row groups as encoded bytes, and a writer that builds a Parquet file out of
// them without decoding: column chunks are copied byte for byte and the
// footer is rebuilt through Arrow's metadata builders (offsets moved,
// statistics and encodings kept, page index and bloom filters carried over).
//
// A merge uses this three ways: a row group of an input that is already the
// right size is read as encoded bytes and copied (no decode, no encode, no
// compression); small row groups of files without dictionaries (FileLayout
// kPages) become one row group whose column chunks are their data pages one
// after another (AppendPages: statistics merged, page indexes concatenated,
// bloom filters OR-ed or rebuilt from that column alone); other small row
// groups are decoded, concatenated and encoded in memory on a worker thread
// (EncodeForSegment: the chunk encoder, or EncodeRowGroups), and the result
// is copied. So several row groups of one
// output are prepared at once while the file itself is written in order by
// one thread.
//
// Parquet exceptions stop here and become Status.
// Thread-safety: ParquetAssembler is used by one thread at a time;
// EncodedRowGroup is immutable once made and may cross threads.
#pragma once

#include <parquet/index_location.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"

namespace arrow {
class Buffer;
class KeyValueMetadata;
class Schema;
class Table;
namespace io {
class OutputStream;
class RandomAccessFile;
}  // namespace io
}  // namespace arrow
namespace parquet {
class BloomFilter;
struct BloomFilterOptions;
class ColumnIndex;
class FileMetaData;
class FileMetaDataBuilder;
class OffsetIndex;
class PageIndexBuilder;
class RowGroupMetaData;
class ParquetFileReader;
class SchemaDescriptor;
class WriterProperties;
}  // namespace parquet

namespace sediment::table {

struct SourcePage;  // page_joiner.h

// One row group of some Parquet file, with the bytes of its column chunks.
struct EncodedRowGroup {
  std::shared_ptr<parquet::FileMetaData> source;  // the footer it is described by
  int index = 0;                                  // its ordinal there
  std::shared_ptr<arrow::Buffer> bytes;           // the source's bytes from offset `begin`
  int64_t begin = 0;
  // Per column; null where the source has none.
  std::vector<std::shared_ptr<parquet::ColumnIndex>> column_index;
  std::vector<std::shared_ptr<parquet::OffsetIndex>> offset_index;
  std::vector<std::shared_ptr<parquet::BloomFilter>> bloom_filter;

  int64_t rows() const;
};

// Small row groups of kPages files whose data pages, one after another, make
// one row group of the output (small pages joined: page_joiner.h).
struct PageRun {
  std::vector<EncodedRowGroup> pieces;  // in order
  // Per column: the bloom filter of the whole run; null where there is none.
  std::vector<std::shared_ptr<parquet::BloomFilter>> bloom_filter;

  int64_t rows() const;
};

// Whether `rg`'s column chunks can be concatenated page by page: no
// dictionary page (so each data page stands alone, with its own levels,
// values and compression), no dictionary-encoded page, statistics on every
// chunk and the page index (so the output's are built without reading values).
bool PagesCopyable(const parquet::RowGroupMetaData& rg);

// The bloom filter of column `c` for the run of `pieces` (row group
// pieces[k].index of readers[k]), sized for the run's rows: a piece's filter
// of that very size is OR-ed in (filters of one size map a value to the same
// bits); the values of the others are read from that column alone and
// inserted. Folded to what it holds, as Arrow's writer does. (Keeping runs'
// filters unfolded, so that later runs could OR them, was tried: the extra
// bytes every small row group carried cost more than reading the values.)
Result<std::shared_ptr<parquet::BloomFilter>> RunBloomFilter(const std::vector<EncodedRowGroup>& pieces,
                                                             const std::vector<parquet::ParquetFileReader*>& readers,
                                                             int c, const parquet::BloomFilterOptions& options);

// Where a row group's column chunks lie in its file: [begin, end).
std::pair<int64_t, int64_t> RowGroupByteRange(const parquet::RowGroupMetaData& rg);

// Row group `index` of `reader` (reading bytes from `file`, the same file):
// one ranged read for its column chunks, plus its page index and bloom
// filters. Not safe to call concurrently on one reader.
Result<EncodedRowGroup> ReadEncodedRowGroup(parquet::ParquetFileReader* reader, arrow::io::RandomAccessFile* file,
                                            int index);

// Encodes `table` with `props` into an in-memory Parquet file, in row groups
// of at most `rows_per_group` rows, and returns them for copying.
Result<std::vector<EncodedRowGroup>> EncodeRowGroups(const arrow::Table& table,
                                                     std::shared_ptr<parquet::WriterProperties> props,
                                                     int64_t rows_per_group);

// The Parquet schema `props` writes `schema` as (with Arrow's schema stored).
Result<std::shared_ptr<parquet::SchemaDescriptor>> ParquetSchemaFor(const arrow::Schema& schema,
                                                                    const parquet::WriterProperties& props);

class ParquetAssembler {
 public:
  // Writes the magic to `sink`. Row groups must have `schema`'s layout and
  // `props`' codec (the footer names the codec from `props`).
  static Result<std::unique_ptr<ParquetAssembler>> Open(std::shared_ptr<arrow::io::OutputStream> sink,
                                                        std::shared_ptr<arrow::Schema> schema,
                                                        std::shared_ptr<parquet::WriterProperties> props);
  ~ParquetAssembler();

  // Copies `rg` as the file's next row group.
  Status Append(const EncodedRowGroup& rg);
  // Writes `run` as the file's next row group: each column chunk is the
  // pieces' data pages in order, consecutive small ones joined into pages of
  // up to the properties' max_rows_per_page rows and data_pagesize bytes
  // (page_joiner.h); every piece PagesCopyable, with this file's schema and
  // codec.
  Status AppendPages(const PageRun& run);
  // Writes page indexes and the footer with `metadata` (plus Arrow's schema).
  // Does not close the sink.
  Result<std::shared_ptr<parquet::FileMetaData>> Finish(std::shared_ptr<const arrow::KeyValueMetadata> metadata);

  int num_row_groups() const { return row_groups_; }
  int64_t rows() const { return rows_; }

 private:
  ParquetAssembler() = default;
  // Adds the pages of column `c` of `rg` to the page index, moved by `delta`
  // bytes and `first_row` rows; false if `rg` has no page index for it.
  bool AddPageIndex(const EncodedRowGroup& rg, int c, int64_t delta, int64_t first_row);
  void FinishPageIndex(int c);
  Status AppendUnguarded(const EncodedRowGroup& rg);
  Status AppendPagesUnguarded(const PageRun& run);
  Status AddSourcePages(const EncodedRowGroup& piece, int c, int64_t first_row, std::vector<SourcePage>* pages) const;
  Status WriteBloomFilters(const std::vector<std::shared_ptr<parquet::BloomFilter>>& filters);

  std::shared_ptr<arrow::io::OutputStream> sink_;
  std::shared_ptr<arrow::Schema> schema_;
  std::shared_ptr<parquet::WriterProperties> props_;
  std::shared_ptr<parquet::SchemaDescriptor> descr_;
  std::unique_ptr<parquet::FileMetaDataBuilder> footer_;
  std::unique_ptr<parquet::PageIndexBuilder> page_index_;
  parquet::IndexLocations bloom_locations_;
  int row_groups_ = 0;
  int64_t rows_ = 0;
};

}  // namespace sediment::table
