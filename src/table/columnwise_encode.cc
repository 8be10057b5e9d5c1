#include "table/columnwise_encode.h"

#include <arrow/api.h>
#include <fmt/format.h>
#include <parquet/metadata.h>
#include <parquet/page_index.h>
#include <parquet/properties.h>
#include <parquet/schema.h>
#include <parquet/size_statistics.h>

#include <algorithm>
#include <cstring>

#include "table/chunk_encoder.h"
#include "table/parquet_guard_internal.h"

namespace sediment::table {
namespace {

ChunkEncoding EncodingFor(const parquet::ColumnDescriptor& column, const parquet::WriterProperties& props,
                          double min_saving, int64_t group_rows) {
  const auto path = column.path();
  ChunkEncoding how;
  how.page_rows = props.max_rows_per_page();
  how.page_bytes = props.data_pagesize();
  how.dictionary_limit = props.dictionary_enabled(path) ? props.dictionary_pagesize_limit() : 0;
  how.data_page_v2 = props.data_page_version() == parquet::ParquetDataPageVersion::V2;
  how.min_saving = min_saving;
  how.zstd = props.compression(path) == arrow::Compression::ZSTD;
  const int level = props.compression_level(path);
  how.zstd_level = level == arrow::util::kUseDefaultCompressionLevel ? 1 : level;
  how.max_statistics_size = props.max_statistics_size(path);
  if (auto bloom = props.bloom_filter_options(path)) {
    how.bloom_bytes = parquet::BlockSplitBloomFilter::OptimalNumOfBytes(
        static_cast<uint64_t>(bloom->ndv.value_or(std::min(group_rows, props.max_row_group_length()))), bloom->fpp);
    how.bloom_fpp = bloom->fpp;
    how.bloom_fold = bloom->fold;
  }
  return how;
}

// Chunk `chunk`'s place in the footer (its bytes at `at`) and its page index.
void Describe(const EncodedChunk& chunk, const parquet::ColumnDescriptor& column, int64_t at,
              parquet::ColumnChunkMetaDataBuilder* meta, EncodedRowGroup* rg, int c) {
  meta->SetStatistics(chunk.statistics);
  if (chunk.sizes.is_set()) meta->SetSizeStatistics(chunk.sizes);
  std::map<parquet::Encoding::type, int32_t> dict_stats, data_stats;
  const bool dict = chunk.dictionary_bytes > 0;
  if (dict) dict_stats[parquet::Encoding::PLAIN] = 1;
  data_stats[chunk.data_encoding] = static_cast<int32_t>(chunk.pages.size());
  meta->Finish(chunk.num_values, dict ? at : 0, -1, at + chunk.dictionary_bytes, chunk.size, chunk.uncompressed, dict,
               false, dict_stats, data_stats);
  auto ci = parquet::ColumnIndexBuilder::Make(&column);
  auto oi = parquet::OffsetIndexBuilder::Make();
  for (size_t p = 0; p < chunk.pages.size(); ++p) {
    ci->AddPage(chunk.page_statistics[p], chunk.page_sizes[p]);
    const auto& loc = chunk.pages[p];
    oi->AddPage(at + loc.offset, loc.compressed_page_size, loc.first_row_index,
                chunk.page_sizes[p].unencoded_byte_array_data_bytes);
  }
  ci->Finish();
  oi->Finish(0);
  rg->column_index[c] = std::shared_ptr<parquet::ColumnIndex>(ci->Build());
  rg->offset_index[c] = std::shared_ptr<parquet::OffsetIndex>(oi->Build());
  rg->bloom_filter[c] = chunk.bloom_filter;
}

// The footer that describes the chunks (in `buffer`, where the sink put
// them: a step's column after column), and its row groups over that buffer.
std::vector<EncodedRowGroup> Describe(const parquet::SchemaDescriptor& descr,
                                      const std::shared_ptr<parquet::WriterProperties>& props,
                                      const std::vector<std::vector<EncodedChunk>>& chunks,
                                      const std::shared_ptr<arrow::Buffer>& buffer) {
  auto footer = parquet::FileMetaDataBuilder::Make(&descr, props);
  std::vector<EncodedRowGroup> out(chunks.size());
  for (size_t g = 0; g < chunks.size(); ++g) {
    auto* meta = footer->AppendRowGroup();
    EncodedRowGroup& rg = out[g];
    rg.index = static_cast<int>(g);
    rg.bytes = buffer;
    rg.column_index.resize(chunks[g].size());
    rg.offset_index.resize(chunks[g].size());
    rg.bloom_filter.resize(chunks[g].size());
    int64_t uncompressed = 0;
    for (size_t c = 0; c < chunks[g].size(); ++c) {
      const EncodedChunk& chunk = chunks[g][c];
      if (c == 0) meta->set_num_rows(chunk.num_values);
      Describe(chunk, *descr.Column(static_cast<int>(c)), chunk.offset, meta->NextColumnChunk(), &rg,
               static_cast<int>(c));
      uncompressed += chunk.uncompressed;
    }
    meta->Finish(uncompressed, static_cast<int16_t>(g));
  }
  std::shared_ptr<parquet::FileMetaData> md = footer->Finish();
  for (auto& rg : out) rg.source = md;
  return out;
}

}  // namespace

bool ColumnwiseEncodable(const parquet::SchemaDescriptor& descr, const parquet::WriterProperties& props) {
  for (int c = 0; c < descr.num_columns(); ++c) {
    const auto* column = descr.Column(c);
    const auto codec = props.compression(column->path());
    if (column->max_repetition_level() != 0 || column->max_definition_level() > 1 ||
        (codec != arrow::Compression::ZSTD && codec != arrow::Compression::UNCOMPRESSED) ||
        !props.statistics_enabled(column->path()) || !props.page_index_enabled(column->path())) {
      return false;
    }
  }
  return true;
}

Result<std::vector<EncodedRowGroup>> EncodeColumnwise(
    const parquet::SchemaDescriptor& descr, const std::shared_ptr<parquet::WriterProperties>& props, int64_t rows,
    int64_t rows_per_group, const std::function<Result<std::shared_ptr<arrow::Array>>(int c)>& column,
    std::shared_ptr<arrow::Buffer> buffer, ChunkEncoder* encoder, double min_saving) {
  return ParquetGuard("encoding a row group", [&]() -> Result<std::vector<EncodedRowGroup>> {
    rows_per_group = std::max<int64_t>(1, rows_per_group);
    const size_t groups = static_cast<size_t>((rows + rows_per_group - 1) / rows_per_group);
    std::vector<std::vector<EncodedChunk>> chunks(groups, std::vector<EncodedChunk>(descr.num_columns()));
    ChunkSink sink(std::move(buffer));
    // Parquet's magic first: an offset of 0 reads as "none".
    ARROW_RETURN_NOT_OK(sink.Append("PAR1"));
    for (int c = 0; c < descr.num_columns(); ++c) {
      ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Array> values, column(c));
      if (values->length() != rows) {
        return Status::Invalid(
            fmt::format("column {} holds {} values for {} rows", descr.Column(c)->name(), values->length(), rows));
      }
      // Bloom filters sized for the rows a group holds (then folded to what it holds).
      const ChunkEncoding how = EncodingFor(*descr.Column(c), *props, min_saving, std::min(rows, rows_per_group));
      for (size_t g = 0; g < groups; ++g) {
        const int64_t from = static_cast<int64_t>(g) * rows_per_group;
        const auto slice = values->Slice(from, std::min(rows_per_group, rows - from));
        ARROW_ASSIGN_OR_RAISE(chunks[g][c], encoder->Encode(*slice, *descr.Column(c), how, &sink));
      }
    }
    return Describe(descr, props, chunks, sink.buffer());
  });
}

}  // namespace sediment::table
