// Joins the small data pages of a page run (parquet_assembler.h) into pages
// of up to max_page_rows rows, without decompressing them: a head file's
// page holds a poll's rows, so a run of thousands of head files would
// otherwise keep thousands of pages per column, each with its own header,
// decoder set-up and zstd frame, which every full scan pays for.
//
// A data page v2 keeps its levels apart from its values, uncompressed, and
// compresses only the values. Consecutive v2 pages of PLAIN values join into
// one: the levels are decoded and encoded again as one run (small), and the
// values are the pages' value bytes one after another, still compressed.
// PLAIN values concatenate (fixed widths, or each with its length), and so
// do zstd frames: a zstd stream is one or more frames (RFC 8878, section 3),
// and every reader decompresses the page's value bytes as one stream. The
// joined page's statistics are merged from the pages' column index entries
// with the column's ordering (signed or unsigned, bytes unsigned).
//
// What does not join is copied as it is: data pages v1 (their levels are
// compressed with the values: files written before this change), other
// encodings, booleans (PLAIN booleans are bit-packed across the page),
// columns without a known ordering, codecs other than zstd and none.
//
// Thread-safety: pure functions over the caller's bytes.
#pragma once

#include <parquet/size_statistics.h>
#include <parquet/statistics.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace parquet {
class ColumnDescriptor;
}  // namespace parquet

namespace sediment::table {

// A page as its file holds it, with what the page index says of it.
struct SourcePage {
  std::string_view bytes;  // header and body
  int64_t first_row = 0;   // of the run
  int64_t rows = 0;
  parquet::EncodedStatistics stats;  // all_null_value, or min and max; null_count
  parquet::SizeStatistics sizes;     // level histograms, if the column index has them
  std::optional<int64_t> unencoded_bytes;
};

// A page of the output: `head` (a new header and the levels; empty when the
// page is one source page as it was) then `parts` (value bytes, or the whole
// source page).
struct JoinedPage {
  std::string head;
  std::vector<std::string_view> parts;
  int64_t first_row = 0;
  int64_t size = 0;          // bytes written: head and parts
  int64_t uncompressed = 0;  // header and uncompressed body, for the chunk's total
  int32_t encoding = -1;
  parquet::EncodedStatistics stats;
  parquet::SizeStatistics sizes;
  std::optional<int64_t> unencoded_bytes;
};

struct JoinLimits {
  int64_t max_rows = 8192;                      // rows a joined page holds at most
  int64_t max_uncompressed = int64_t{1} << 20;  // and its body's bytes before compression
};

// The pages of one column, `pages` in order, joined where they can be.
// `codec` is the chunk's compression (arrow::Compression::type). An error
// when a page header is malformed or does not fit its bytes.
Result<std::vector<JoinedPage>> JoinPages(const parquet::ColumnDescriptor& column, int codec,
                                          const std::vector<SourcePage>& pages, const JoinLimits& limits);

// Statistics of pages (or chunks) together, with the column's ordering:
// null counts added, minimum and maximum over those that have them,
// all_null_value if every one is. No distinct count.
Result<parquet::EncodedStatistics> MergeEncodedStatistics(const parquet::ColumnDescriptor& column,
                                                          const std::vector<const parquet::EncodedStatistics*>& parts);

}  // namespace sediment::table
