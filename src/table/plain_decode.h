// Row groups of PLAIN pages decoded into one Arrow table without Arrow's
// column reader, for a merge that encodes them again (merge_steps.cc). A
// final merge of head files decodes thousands of small row groups whose
// pages hold a few hundred values each: through Arrow's reader every page
// makes its own zstd context and every row group its own arrays, which are
// then concatenated. Here the pages are walked by ForEachPlainPage (one zstd
// context per thread) and every row group of a step is appended to one
// array per column.
//
// Handles flat columns (no repetition, at most one definition level) whose
// Arrow type holds the physical values as they are: INT32 as int32, date32,
// time32; INT64 as int64, timestamp, time64 (not in seconds: Arrow stores
// those as milliseconds); FLOAT; DOUBLE; BYTE_ARRAY as binary or string;
// FIXED_LEN_BYTE_ARRAY as fixed_size_binary of its width. PlainDecodable
// says whether a row group is all such chunks; the caller reads others
// through Arrow. Hostile pages are refused before anything is sized from
// them (a page claims at most its row group's rows), and stored values are
// checked as the conversion to the table's types would (fixed widths,
// unsigned bounds).
//
// Thread-safety: a PlainTableBuilder is used by one thread.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace arrow {
class Array;
class DataType;
class ResizableBuffer;
class Schema;
class Table;
}  // namespace arrow
namespace parquet {
class ColumnDescriptor;
class RowGroupMetaData;
class SchemaDescriptor;
}  // namespace parquet

namespace sediment::table {

// Bytes a PLAIN value of `column` takes held as `type`: 0 for binary, -1 if
// the stored values are not the Arrow values as they are (the types listed
// above). Bloom filters made from Arrow values use it too (row_group_blooms.h).
int PlainWidth(const parquet::ColumnDescriptor& column, const arrow::DataType& type);

// Whether `rg` (of a file whose Parquet schema is `descr`) can be read by a
// PlainTableBuilder as `schema`: `descr` is the one `schema` is written as,
// and every column chunk is PLAIN data pages, uncompressed or zstd, of a
// column of a type listed above.
bool PlainDecodable(const parquet::RowGroupMetaData& rg, const parquet::SchemaDescriptor& descr,
                    const parquet::SchemaDescriptor& expected, const arrow::Schema& schema);

// Buffers a builder decodes one column into, kept from column to column and
// from builder to builder (a merge's steps): each column then writes into
// pages already faulted in, not into new ones the allocator keeps resident
// after they are freed.
struct PlainColumnBuffers {
  std::shared_ptr<arrow::ResizableBuffer> validity, values, offsets;
};

class PlainTableBuilder {
 public:
  // A table of `schema`, which is written as `descr` (it must outlive the builder).
  PlainTableBuilder(std::shared_ptr<arrow::Schema> schema, const parquet::SchemaDescriptor& descr);
  ~PlainTableBuilder();

  // Room for `rows` more rows, whose chunks take `uncompressed` bytes per column.
  Status Reserve(int64_t rows, const std::vector<int64_t>& uncompressed);
  // Appends the rows of `rg` (PlainDecodable), whose column chunks lie in
  // `bytes`, the file's bytes from offset `begin`. An error (naming the
  // column) if a page is malformed, not PLAIN after all, holds another number
  // of values than the row group's rows, or a value of a fixed-size binary
  // column stored as binary (kFixedSizeKey) has another length.
  Status Append(const parquet::RowGroupMetaData& rg, std::string_view bytes, int64_t begin);
  // The table of every row appended.
  Result<std::shared_ptr<arrow::Table>> Finish();

  // One column at a time (columnwise_encode.h): Append and Finish above are
  // these for every column. AppendColumn checks what Append does, for column
  // `c` alone; FinishColumn gives its array and drops the builder's buffers.
  Status ReserveColumn(int c, int64_t rows, int64_t uncompressed);
  // ReserveColumn builds into `reuse` (kept by the caller, used by one
  // builder at a time) where no array FinishColumn gave still holds them;
  // FinishColumn's arrays are slices of them.
  void ReuseBuffers(PlainColumnBuffers* reuse) { reuse_ = reuse; }
  Status AppendColumn(int c, const parquet::RowGroupMetaData& rg, std::string_view bytes, int64_t begin);
  Result<std::shared_ptr<arrow::Array>> FinishColumn(int c);

 private:
  struct Column;
  std::shared_ptr<arrow::Schema> schema_;
  std::vector<std::unique_ptr<Column>> columns_;
  int64_t rows_ = 0;
  PlainColumnBuffers* reuse_ = nullptr;
};

}  // namespace sediment::table
