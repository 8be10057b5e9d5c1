// A column chunk encoded from one Arrow array without Arrow's Parquet
// writer: what a final merge's step does with each column of the rows it
// decoded, and a head file's writer with each column (columnwise_encode.h). Arrow's writer spent half of that merge
// beside compression (bench/RESULTS.md, issue 46): a new zstd context per page, a hash per value for every dictionary
// (block numbers and hashes come in runs), the Arrow-to-Parquet path's level building and copies. Here one zstd context
// per encoder is reused, a value equal to the one before it takes the same dictionary index without a hash, and pages
// are cut from the array's buffers directly.
//
// Handles flat columns (no repetition, at most one definition level) of the
// types plain_decode.h decodes, held as it holds them (PlainWidth); output
// pages are data pages v1 or v2, PLAIN or dictionary-encoded (the whole
// chunk, or none of it: a dictionary that outgrows its limit is dropped
// before any page is written), uncompressed or zstd; a chunk whose first
// page zstd barely shrinks stores its pages uncompressed (min_saving; a
// large first page's first 64 KiB are tried first).
// Statistics are Arrow's own (parquet::Statistics over the page's values,
// or over a dictionary page's distinct entries), so their ordering rules
// (signed, unsigned, NaN, -0) are the ones every other file has.
//
// Thread-safety: a ChunkEncoder is used by one thread at a time.
#pragma once

#include <parquet/bloom_filter.h>
#include <parquet/metadata.h>
#include <parquet/page_index.h>
#include <parquet/properties.h>
#include <parquet/size_statistics.h>
#include <parquet/statistics.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace arrow {
class Array;
class Buffer;
}  // namespace arrow
namespace parquet {
class ColumnDescriptor;
}  // namespace parquet

namespace sediment::table {

// How a chunk is encoded.
struct ChunkEncoding {
  int64_t page_rows = 8192;              // rows a data page holds at most
  int64_t page_bytes = 1 << 20;          // a PLAIN page is cut once its values reach this
  int64_t dictionary_limit = 256 << 10;  // bytes of a PLAIN dictionary at most; 0: no dictionary
  bool data_page_v2 = false;
  bool zstd = true;  // else uncompressed
  int zstd_level = 1;
  // Once the chunk's first data page shrinks by less than this fraction
  // under zstd (or its first 64 KiB by less than half of it), its data pages
  // are stored uncompressed, as data pages v2 (is_compressed false) whatever
  // data_page_v2 says: as RocksDB stores a block that compresses by less
  // than 1/8. 0: every page compressed.
  double min_saving = 0;
  size_t max_statistics_size = 4096;  // a longer min or max is left out, as Arrow's writer does
  // A bloom filter of this many bytes (0: none), folded to its fpp when `fold`.
  uint32_t bloom_bytes = 0;
  double bloom_fpp = 0.01;
  bool bloom_fold = true;
};

// Where chunks are encoded to: one buffer for all of a step's chunks (a
// buffer the step reuses, so its pages are not faulted in anew), grown by a
// copy into a larger one if it fills.
class ChunkSink {
 public:
  explicit ChunkSink(std::shared_ptr<arrow::Buffer> buffer) : buffer_(std::move(buffer)) {}
  Status Append(std::string_view bytes);
  int64_t size() const { return size_; }
  // The buffer written (its first size() bytes).
  const std::shared_ptr<arrow::Buffer>& buffer() const { return buffer_; }

 private:
  std::shared_ptr<arrow::Buffer> buffer_;  // mutable
  int64_t size_ = 0;
};

// One encoded column chunk, at [offset, offset + size) of its sink; page
// offsets are from its start.
struct EncodedChunk {
  int64_t offset = 0, size = 0;
  int64_t dictionary_bytes = 0;  // the dictionary page at the front, header included; 0: none
  int64_t uncompressed = 0;      // of every page, headers included
  int64_t num_values = 0;
  parquet::Encoding::type data_encoding = parquet::Encoding::PLAIN;
  std::vector<parquet::PageLocation> pages;  // data pages; first_row_index from the chunk's first row
  std::vector<parquet::EncodedStatistics> page_statistics;
  parquet::EncodedStatistics statistics;
  // Level histograms and binary bytes, as Arrow's writer keeps them (its default).
  std::vector<parquet::SizeStatistics> page_sizes;
  parquet::SizeStatistics sizes;
  std::shared_ptr<parquet::BloomFilter> bloom_filter;  // null when none asked
};

class ChunkEncoder {
 public:
  ChunkEncoder();
  ~ChunkEncoder();
  ChunkEncoder(const ChunkEncoder&) = delete;
  ChunkEncoder& operator=(const ChunkEncoder&) = delete;

  // `values` (of a type PlainWidth accepts for `column`) as one column chunk.
  // An error when the column is not flat or its type is not one handled.
  Result<EncodedChunk> Encode(const arrow::Array& values, const parquet::ColumnDescriptor& column,
                              const ChunkEncoding& how, ChunkSink* sink);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sediment::table
