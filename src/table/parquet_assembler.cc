#include "table/parquet_assembler.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/util/byte_size.h>
#include <arrow/util/key_value_metadata.h>
#include <fmt/format.h>
#include <parquet/arrow/schema.h>
#include <parquet/arrow/writer.h>
#include <parquet/bloom_filter.h>
#include <parquet/bloom_filter_reader.h>
#include <parquet/column_reader.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/file_writer.h>
#include <parquet/metadata.h>
#include <parquet/page_index.h>
#include <parquet/properties.h>
#include <parquet/schema.h>
#include <parquet/size_statistics.h>
#include <parquet/statistics.h>

#include <map>
#include <type_traits>

#include "table/dictionary_choice.h"
#include "table/page_joiner.h"
#include "table/parquet_guard_internal.h"
#include "table/plain_pages.h"
#include "table/row_group_blooms.h"
#include "table/stored_types.h"

namespace sediment::table {
namespace {

// Where a column chunk's bytes start: its dictionary page if it has one.
int64_t ChunkStart(const parquet::ColumnChunkMetaData& cc) {
  if (cc.has_dictionary_page() && cc.dictionary_page_offset() > 0) return cc.dictionary_page_offset();
  return cc.data_page_offset();
}

}  // namespace

std::pair<int64_t, int64_t> RowGroupByteRange(const parquet::RowGroupMetaData& rg) {
  int64_t lo = INT64_MAX, hi = 0;
  for (int c = 0; c < rg.num_columns(); ++c) {
    auto cc = rg.ColumnChunk(c);
    int64_t start = ChunkStart(*cc);
    lo = std::min(lo, start);
    hi = std::max(hi, start + cc->total_compressed_size());
  }
  if (rg.num_columns() == 0) lo = 0;
  return {lo, hi};
}

namespace {

// The per-page size statistics a column index holds for page `page`.
parquet::SizeStatistics PageSizeStats(const parquet::ColumnIndex& ci, const parquet::ColumnDescriptor& descr,
                                      size_t page) {
  parquet::SizeStatistics s;
  auto slice = [&](const std::vector<int64_t>& all, int16_t max_level) {
    size_t width = static_cast<size_t>(max_level) + 1;
    if (all.size() < (page + 1) * width) return std::vector<int64_t>();
    return std::vector<int64_t>(all.begin() + page * width, all.begin() + (page + 1) * width);
  };
  if (ci.has_definition_level_histograms()) {
    s.definition_level_histogram = slice(ci.definition_level_histograms(), descr.max_definition_level());
  }
  if (ci.has_repetition_level_histograms()) {
    s.repetition_level_histogram = slice(ci.repetition_level_histograms(), descr.max_repetition_level());
  }
  return s;
}

// What the column index says of page `page`: all null, or its bounds; its null count.
parquet::EncodedStatistics PageStatistics(const parquet::ColumnIndex& ci, size_t page) {
  parquet::EncodedStatistics s;
  if (ci.null_pages()[page]) {
    s.all_null_value = true;
  } else {
    s.set_min(ci.encoded_min_values()[page]);
    s.set_max(ci.encoded_max_values()[page]);
  }
  if (ci.has_null_counts()) s.set_null_count(ci.null_counts()[page]);
  return s;
}

// Column chunk statistics of the chunks together, with the column's own
// ordering (page_joiner.h). A chunk of nulls only has no bounds: it says so.
Result<parquet::EncodedStatistics> MergedStatistics(
    const parquet::ColumnDescriptor* column, const std::vector<std::shared_ptr<parquet::ColumnChunkMetaData>>& chunks) {
  std::vector<parquet::EncodedStatistics> parts;
  parts.reserve(chunks.size());
  for (const auto& cc : chunks) {
    auto encoded = cc->encoded_statistics();
    if (!encoded) return Status::Invalid(fmt::format("column {}: a chunk has no statistics", column->name()));
    parts.push_back(*encoded);
    auto& s = parts.back();
    if (!(s.has_min && s.has_max) && s.has_null_count && s.null_count == cc->num_values()) s.all_null_value = true;
  }
  std::vector<const parquet::EncodedStatistics*> refs;
  for (const auto& s : parts) refs.push_back(&s);
  ARROW_ASSIGN_OR_RAISE(auto out, MergeEncodedStatistics(*column, refs));
  out.all_null_value = false;  // a chunk's statistics have no such field
  return out;
}

// The chunks' size statistics added up; nullopt if one lacks them.
std::optional<parquet::SizeStatistics> MergedSizeStatistics(
    const parquet::ColumnDescriptor* column, const std::vector<std::shared_ptr<parquet::ColumnChunkMetaData>>& chunks) {
  std::optional<parquet::SizeStatistics> merged;
  for (const auto& cc : chunks) {
    auto s = cc->size_statistics();
    if (!s || !s->is_set()) return std::nullopt;
    if (!merged) {
      merged = *s;
      continue;
    }
    try {
      merged->Merge(*s);
    } catch (const std::exception&) {
      return std::nullopt;  // shapes differ (another writer's histograms): leave them out
    }
  }
  (void)column;
  return merged;
}

}  // namespace

int64_t PageRun::rows() const {
  int64_t n = 0;
  for (const auto& p : pieces) n += p.rows();
  return n;
}

bool PagesCopyable(const parquet::RowGroupMetaData& rg) {
  for (int c = 0; c < rg.num_columns(); ++c) {
    auto cc = rg.ColumnChunk(c);
    if (cc->has_dictionary_page() || !cc->is_stats_set() || cc->encoding_stats().empty()) return false;
    // Bounds that describe every value (a writer drops those of huge values):
    // merged statistics are only as good as the pieces'.
    auto stats = cc->encoded_statistics();
    const bool all_null = stats->has_null_count && stats->null_count == cc->num_values();
    if (!(stats->has_min && stats->has_max) && !all_null) return false;
    if (!cc->GetColumnIndexLocation() || !cc->GetOffsetIndexLocation()) return false;
    for (const auto& e : cc->encoding_stats()) {
      if (e.page_type != parquet::PageType::DATA_PAGE && e.page_type != parquet::PageType::DATA_PAGE_V2) return false;
      if (e.encoding == parquet::Encoding::PLAIN_DICTIONARY || e.encoding == parquet::Encoding::RLE_DICTIONARY) {
        return false;
      }
    }
  }
  return true;
}

namespace {

// The bytes of a filter's bitset (it follows the filter's header when written).
Result<std::string> Bitset(const parquet::BloomFilter& filter) {
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create(filter.GetBitsetSize() + 64));
  filter.WriteTo(sink.get());
  ARROW_ASSIGN_OR_RAISE(auto buffer, sink->Finish());
  const auto n = static_cast<int64_t>(filter.GetBitsetSize());
  if (buffer->size() < n) return Status::Invalid("a bloom filter shorter than its bitset");
  return std::string(reinterpret_cast<const char*>(buffer->data() + buffer->size() - n), static_cast<size_t>(n));
}

// Inserts the hash of every non-null value of one column chunk.
template <typename DType>
void InsertColumn(parquet::ColumnReader* reader, int type_length, parquet::BlockSplitBloomFilter* filter) {
  using T = typename DType::c_type;
  constexpr int64_t kBatch = 4096;
  std::vector<T> values(kBatch);
  std::vector<int16_t> def(kBatch), rep(kBatch);
  std::vector<uint64_t> hashes(kBatch);
  auto* typed = static_cast<parquet::TypedColumnReader<DType>*>(reader);
  while (typed->HasNext()) {
    int64_t got = 0;
    typed->ReadBatch(kBatch, def.data(), rep.data(), values.data(), &got);
    for (int64_t i = 0; i < got; ++i) {
      if constexpr (std::is_same_v<DType, parquet::FLBAType>) {
        hashes[i] = filter->Hash(&values[i], static_cast<uint32_t>(type_length));
      } else if constexpr (std::is_same_v<DType, parquet::ByteArrayType> || std::is_same_v<DType, parquet::Int96Type>) {
        hashes[i] = filter->Hash(&values[i]);
      } else {
        hashes[i] = filter->Hash(values[i]);
      }
    }
    filter->InsertHashes(hashes.data(), static_cast<int>(got));
  }
}

}  // namespace

Result<std::shared_ptr<parquet::BloomFilter>> RunBloomFilter(const std::vector<EncodedRowGroup>& pieces,
                                                             const std::vector<parquet::ParquetFileReader*>& readers,
                                                             int c, const parquet::BloomFilterOptions& options) {
  return ParquetGuard("building a bloom filter", [&]() -> Result<std::shared_ptr<parquet::BloomFilter>> {
    int64_t rows = 0;
    for (const auto& p : pieces) rows += p.rows();
    const uint32_t size = parquet::BlockSplitBloomFilter::OptimalNumOfBytes(
        static_cast<uint64_t>(std::max<int64_t>(rows, 1)), options.fpp);
    std::string bits(size, '\0');
    std::vector<size_t> read_values;
    for (size_t k = 0; k < pieces.size(); ++k) {
      const auto& piece_filter = pieces[k].bloom_filter[c];
      if (!piece_filter || piece_filter->GetBitsetSize() != size) {
        read_values.push_back(k);
        continue;
      }
      // Filters of one size map a value to the same bits.
      ARROW_ASSIGN_OR_RAISE(std::string more, Bitset(*piece_filter));
      for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<char>(bits[i] | more[i]);
    }
    auto filter = std::make_shared<parquet::BlockSplitBloomFilter>();
    filter->Init(reinterpret_cast<const uint8_t*>(bits.data()), size);
    for (size_t k : read_values) {
      // Head files' pages: read here, without a zstd context per page.
      auto cc = pieces[k].source->RowGroup(pieces[k].index)->ColumnChunk(c);
      const int64_t start = cc->data_page_offset() - pieces[k].begin;
      if (!cc->has_dictionary_page() && start >= 0 && start + cc->total_compressed_size() <= pieces[k].bytes->size()) {
        std::string_view bytes(reinterpret_cast<const char*>(pieces[k].bytes->data() + start),
                               static_cast<size_t>(cc->total_compressed_size()));
        ARROW_ASSIGN_OR_RAISE(bool read, HashPlainValues(bytes, *pieces[k].source->schema()->Column(c),
                                                         static_cast<int>(cc->compression()), filter.get()));
        if (read) continue;
      }
      auto column = readers[k]->RowGroup(pieces[k].index)->Column(c);
      const int length = column->descr()->type_length();
      switch (column->type()) {
        case parquet::Type::INT32:
          InsertColumn<parquet::Int32Type>(column.get(), length, filter.get());
          break;
        case parquet::Type::INT64:
          InsertColumn<parquet::Int64Type>(column.get(), length, filter.get());
          break;
        case parquet::Type::INT96:
          InsertColumn<parquet::Int96Type>(column.get(), length, filter.get());
          break;
        case parquet::Type::FLOAT:
          InsertColumn<parquet::FloatType>(column.get(), length, filter.get());
          break;
        case parquet::Type::DOUBLE:
          InsertColumn<parquet::DoubleType>(column.get(), length, filter.get());
          break;
        case parquet::Type::BYTE_ARRAY:
          InsertColumn<parquet::ByteArrayType>(column.get(), length, filter.get());
          break;
        case parquet::Type::FIXED_LEN_BYTE_ARRAY:
          InsertColumn<parquet::FLBAType>(column.get(), length, filter.get());
          break;
        default:
          return nullptr;  // booleans have no bloom filter
      }
    }
    if (options.fold) filter->FoldToTargetFpp(options.fpp);
    return filter;
  });
}

int64_t EncodedRowGroup::rows() const { return source->RowGroup(index)->num_rows(); }

Result<EncodedRowGroup> ReadEncodedRowGroup(parquet::ParquetFileReader* reader, arrow::io::RandomAccessFile* file,
                                            int index) {
  return ParquetGuard("reading a row group", [&]() -> Result<EncodedRowGroup> {
    EncodedRowGroup out;
    out.source = reader->metadata();
    out.index = index;
    auto rg = out.source->RowGroup(index);
    auto [lo, hi] = RowGroupByteRange(*rg);
    out.begin = lo;
    ARROW_ASSIGN_OR_RAISE(out.bytes, file->ReadAt(lo, hi - lo));
    if (out.bytes->size() != hi - lo) {
      return Status::IOError(fmt::format("row group {}: read {} of {} bytes", index, out.bytes->size(), hi - lo));
    }
    int n = rg->num_columns();
    out.column_index.resize(n);
    out.offset_index.resize(n);
    out.bloom_filter.resize(n);
    if (auto pages = reader->GetPageIndexReader()) {
      if (auto rg_pages = pages->RowGroup(index)) {
        for (int c = 0; c < n; ++c) {
          out.column_index[c] = rg_pages->GetColumnIndex(c);
          out.offset_index[c] = rg_pages->GetOffsetIndex(c);
        }
      }
    }
    bool any_bloom = false;
    for (int c = 0; c < n; ++c) any_bloom |= rg->ColumnChunk(c)->bloom_filter_offset().has_value();
    if (any_bloom) {
      auto blooms = reader->GetBloomFilterReader().RowGroup(index);
      for (int c = 0; c < n; ++c) {
        if (rg->ColumnChunk(c)->bloom_filter_offset()) out.bloom_filter[c] = blooms->GetColumnBloomFilter(c);
      }
    }
    return out;
  });
}

Result<std::shared_ptr<parquet::SchemaDescriptor>> ParquetSchemaFor(const arrow::Schema& schema,
                                                                    const parquet::WriterProperties& props) {
  std::shared_ptr<parquet::SchemaDescriptor> descr;
  auto arrow_props = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  ARROW_RETURN_NOT_OK(parquet::arrow::ToParquetSchema(&schema, props, *arrow_props, &descr));
  return descr;
}

Result<std::vector<EncodedRowGroup>> EncodeRowGroups(const arrow::Table& table,
                                                     std::shared_ptr<parquet::WriterProperties> props,
                                                     int64_t rows_per_group) {
  return ParquetGuard("encoding a row group", [&]() -> Result<std::vector<EncodedRowGroup>> {
    // Room for the whole encoded file up front (it is smaller than the Arrow
    // data): growing the buffer by doubling copied it over and over. Pages
    // not written are never touched.
    int64_t arrow_bytes = 0;
    for (const auto& column : table.columns()) {
      for (const auto& chunk : column->chunks()) arrow_bytes += arrow::util::TotalBufferSize(*chunk->data());
    }
    ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create(arrow_bytes + (1 << 20)));
    // Threads are ours (one row group per task), not Arrow's. Bloom filters
    // are made after the writer, from dictionaries where they can be (row_group_blooms.h).
    auto arrow_props = parquet::ArrowWriterProperties::Builder().set_use_threads(false)->build();
    ARROW_ASSIGN_OR_RAISE(auto descr, ParquetSchemaFor(*table.schema(), *props));
    const BloomPlan blooms =
        PlanBloomFilters(*table.schema(), *descr, ChooseDictionaries(table, *descr, props, rows_per_group));
    ARROW_ASSIGN_OR_RAISE(auto writer, parquet::arrow::FileWriter::Open(*table.schema(), arrow::default_memory_pool(),
                                                                        sink, blooms.props, arrow_props));
    ARROW_RETURN_NOT_OK(writer->WriteTable(table, std::max<int64_t>(1, rows_per_group)));
    ARROW_RETURN_NOT_OK(writer->Close());
    ARROW_ASSIGN_OR_RAISE(auto buffer, sink->Finish());
    auto file = std::make_shared<arrow::io::BufferReader>(buffer);
    auto reader = parquet::ParquetFileReader::Open(file);
    std::vector<EncodedRowGroup> out;
    int64_t offset = 0;
    for (int i = 0; i < reader->metadata()->num_row_groups(); ++i) {
      ARROW_ASSIGN_OR_RAISE(auto rg, ReadEncodedRowGroup(reader.get(), file.get(), i));
      if (!blooms.columns.empty()) ARROW_RETURN_NOT_OK(MakeBloomFilters(blooms, *table.Slice(offset, rg.rows()), &rg));
      offset += rg.rows();
      out.push_back(std::move(rg));
    }
    return out;
  });
}

Result<std::unique_ptr<ParquetAssembler>> ParquetAssembler::Open(std::shared_ptr<arrow::io::OutputStream> sink,
                                                                 std::shared_ptr<arrow::Schema> schema,
                                                                 std::shared_ptr<parquet::WriterProperties> props) {
  std::unique_ptr<ParquetAssembler> a(new ParquetAssembler());
  ARROW_ASSIGN_OR_RAISE(a->descr_, ParquetSchemaFor(*schema, *props));
  a->sink_ = std::move(sink);
  a->schema_ = std::move(schema);
  a->props_ = std::move(props);
  a->footer_ = parquet::FileMetaDataBuilder::Make(a->descr_.get(), a->props_);
  a->page_index_ = parquet::PageIndexBuilder::Make(a->descr_.get());
  ARROW_RETURN_NOT_OK(a->sink_->Write("PAR1", 4));
  return a;
}

ParquetAssembler::~ParquetAssembler() = default;

Status ParquetAssembler::Append(const EncodedRowGroup& rg) {
  return ParquetGuard("copying a row group", [&]() -> Status { return AppendUnguarded(rg); });
}

Status ParquetAssembler::AppendUnguarded(const EncodedRowGroup& rg) {
  if (!rg.source->schema()->Equals(*descr_)) {
    return Status::Invalid("row group's Parquet schema differs from the file's");
  }
  auto md = rg.source->RowGroup(rg.index);
  const int n = md->num_columns();
  auto* builder = footer_->AppendRowGroup();
  builder->set_num_rows(md->num_rows());
  page_index_->AppendRowGroup();
  for (int c = 0; c < n; ++c) {
    auto cc = md->ColumnChunk(c);
    if (cc->compression() != props_->compression(descr_->Column(c)->path())) {
      return Status::Invalid(fmt::format("column {} is compressed with another codec", c));
    }
    const int64_t start = ChunkStart(*cc);
    const int64_t size = cc->total_compressed_size();
    if (start < rg.begin || start + size > rg.begin + rg.bytes->size()) {
      return Status::Invalid(fmt::format("column {}: chunk [{}, {}) outside the bytes read", c, start, start + size));
    }
    ARROW_ASSIGN_OR_RAISE(int64_t at, sink_->Tell());
    ARROW_RETURN_NOT_OK(sink_->Write(rg.bytes->data() + (start - rg.begin), size));
    const int64_t delta = at - start;

    auto* col = builder->NextColumnChunk();
    if (cc->is_stats_set()) col->SetStatistics(*cc->encoded_statistics());
    if (auto ss = cc->size_statistics()) col->SetSizeStatistics(*ss);
    std::map<parquet::Encoding::type, int32_t> dict_stats, data_stats;
    bool plain_data = false;
    for (const auto& e : cc->encoding_stats()) {
      if (e.page_type == parquet::PageType::DICTIONARY_PAGE) {
        dict_stats[e.encoding] += e.count;
      } else {
        data_stats[e.encoding] += e.count;
        plain_data |= e.encoding == parquet::Encoding::PLAIN;
      }
    }
    const bool dict = cc->has_dictionary_page();
    col->Finish(cc->num_values(), dict ? cc->dictionary_page_offset() + delta : 0, -1, cc->data_page_offset() + delta,
                size, cc->total_uncompressed_size(), dict, dict && plain_data, dict_stats, data_stats);

    if (AddPageIndex(rg, c, delta, 0)) FinishPageIndex(c);
  }
  builder->Finish(md->total_byte_size(), static_cast<int16_t>(row_groups_));
  ARROW_RETURN_NOT_OK(WriteBloomFilters(rg.bloom_filter));
  ++row_groups_;
  rows_ += md->num_rows();
  return Status::OK();
}

Status ParquetAssembler::AppendPages(const PageRun& run) {
  return ParquetGuard("copying data pages", [&]() -> Status { return AppendPagesUnguarded(run); });
}

Status ParquetAssembler::AppendPagesUnguarded(const PageRun& run) {
  if (run.pieces.empty()) return Status::Invalid("a run of no row groups");
  for (const auto& piece : run.pieces) {
    if (!piece.source->schema()->Equals(*descr_)) return Status::Invalid("row group's Parquet schema differs");
  }
  const int n = descr_->num_columns();
  auto* builder = footer_->AppendRowGroup();
  builder->set_num_rows(run.rows());
  page_index_->AppendRowGroup();
  int64_t total_bytes = 0;
  for (const auto& piece : run.pieces) total_bytes += piece.source->RowGroup(piece.index)->total_byte_size();
  JoinLimits limits;
  limits.max_rows = props_->max_rows_per_page();
  limits.max_uncompressed = props_->data_pagesize();
  for (int c = 0; c < n; ++c) {
    const auto* column = descr_->Column(c);
    const auto codec = props_->compression(column->path());
    int64_t values = 0;
    std::vector<std::shared_ptr<parquet::ColumnChunkMetaData>> chunks;
    std::vector<SourcePage> pages;
    int64_t first_row = 0;
    for (const auto& piece : run.pieces) {
      auto md = piece.source->RowGroup(piece.index);
      auto cc = md->ColumnChunk(c);
      if (cc->has_dictionary_page()) return Status::Invalid(fmt::format("column {}: a dictionary page", c));
      if (cc->compression() != codec) {
        return Status::Invalid(
            fmt::format("column {} is compressed with another codec", column->path()->ToDotString()));
      }
      ARROW_RETURN_NOT_OK(AddSourcePages(piece, c, first_row, &pages));
      values += cc->num_values();
      first_row += md->num_rows();
      chunks.push_back(std::move(cc));
    }
    ARROW_ASSIGN_OR_RAISE(auto joined, JoinPages(*column, static_cast<int>(codec), pages, limits));
    ARROW_ASSIGN_OR_RAISE(const int64_t first, sink_->Tell());
    int64_t compressed = 0, uncompressed = 0;
    std::map<parquet::Encoding::type, int32_t> data_stats;
    auto* offsets = page_index_->GetOffsetIndexBuilder(c);
    auto* bounds = page_index_->GetColumnIndexBuilder(c);
    for (const auto& page : joined) {
      ARROW_ASSIGN_OR_RAISE(const int64_t at, sink_->Tell());
      if (!page.head.empty()) ARROW_RETURN_NOT_OK(sink_->Write(page.head.data(), page.head.size()));
      for (const auto& part : page.parts) ARROW_RETURN_NOT_OK(sink_->Write(part.data(), part.size()));
      offsets->AddPage(at, static_cast<int32_t>(page.size), page.first_row, page.unencoded_bytes);
      bounds->AddPage(page.stats, page.sizes);
      data_stats[static_cast<parquet::Encoding::type>(page.encoding)] += 1;
      compressed += page.size;
      uncompressed += page.uncompressed;
    }
    FinishPageIndex(c);
    auto* col = builder->NextColumnChunk();
    ARROW_ASSIGN_OR_RAISE(auto stats, MergedStatistics(column, chunks));
    col->SetStatistics(stats);
    if (auto sizes = MergedSizeStatistics(column, chunks)) col->SetSizeStatistics(*sizes);
    col->Finish(values, 0, -1, first, compressed, uncompressed, false, false, {}, data_stats);
  }
  builder->Finish(total_bytes, static_cast<int16_t>(row_groups_));
  ARROW_RETURN_NOT_OK(WriteBloomFilters(run.bloom_filter));
  ++row_groups_;
  rows_ += run.rows();
  return Status::OK();
}

// The data pages of column `c` of `piece`, which must fill its chunk one
// after another, with their page index entries; rows counted from `first_row`.
Status ParquetAssembler::AddSourcePages(const EncodedRowGroup& piece, int c, int64_t first_row,
                                        std::vector<SourcePage>* pages) const {
  auto md = piece.source->RowGroup(piece.index);
  auto cc = md->ColumnChunk(c);
  const auto& ci = piece.column_index[c];
  const auto& oi = piece.offset_index[c];
  if (!ci || !oi) return Status::Invalid(fmt::format("column {}: a row group of the run has no page index", c));
  const auto& locs = oi->page_locations();
  const auto& nulls = ci->null_pages();
  const auto& unencoded = oi->unencoded_byte_array_data_bytes();
  const int64_t start = cc->data_page_offset();
  const int64_t end = start + cc->total_compressed_size();
  if (start < piece.begin || end > piece.begin + piece.bytes->size()) {
    return Status::Invalid(fmt::format("column {}: chunk [{}, {}) outside the bytes read", c, start, end));
  }
  if (nulls.size() != locs.size() || ci->encoded_min_values().size() != locs.size() ||
      ci->encoded_max_values().size() != locs.size()) {
    return Status::Invalid(fmt::format("column {}: the column index and the offset index disagree", c));
  }
  int64_t at = start;
  for (size_t p = 0; p < locs.size(); ++p) {
    const auto& loc = locs[p];
    if (loc.offset != at || loc.compressed_page_size <= 0 || loc.offset + loc.compressed_page_size > end) {
      return Status::Invalid(fmt::format("column {}: page {} at [{}, +{}) does not follow the one before in its chunk",
                                         c, p, loc.offset, loc.compressed_page_size));
    }
    at += loc.compressed_page_size;
    const int64_t next_row = p + 1 < locs.size() ? locs[p + 1].first_row_index : md->num_rows();
    SourcePage page;
    page.bytes = std::string_view(reinterpret_cast<const char*>(piece.bytes->data() + (loc.offset - piece.begin)),
                                  static_cast<size_t>(loc.compressed_page_size));
    page.first_row = first_row + loc.first_row_index;
    page.rows = next_row - loc.first_row_index;
    page.stats = PageStatistics(*ci, p);
    page.sizes = PageSizeStats(*ci, *descr_->Column(c), p);
    if (unencoded.size() == locs.size()) page.unencoded_bytes = unencoded[p];
    pages->push_back(std::move(page));
  }
  if (at != end) return Status::Invalid(fmt::format("column {}: pages do not fill their chunk", c));
  return Status::OK();
}

// Bloom filters follow their row group (readers find them by offset).
Status ParquetAssembler::WriteBloomFilters(const std::vector<std::shared_ptr<parquet::BloomFilter>>& filters) {
  for (size_t c = 0; c < filters.size(); ++c) {
    if (!filters[c]) continue;
    ARROW_ASSIGN_OR_RAISE(int64_t at, sink_->Tell());
    filters[c]->WriteTo(sink_.get());
    ARROW_ASSIGN_OR_RAISE(int64_t end, sink_->Tell());
    bloom_locations_.push_back({parquet::ColumnChunkId{row_groups_, static_cast<int32_t>(c)},
                                parquet::IndexLocation{at, static_cast<int32_t>(end - at)}});
  }
  return Status::OK();
}

bool ParquetAssembler::AddPageIndex(const EncodedRowGroup& rg, int c, int64_t delta, int64_t first_row) {
  const auto& ci = rg.column_index[c];
  const auto& oi = rg.offset_index[c];
  if (!ci || !oi) return false;
  auto* ob = page_index_->GetOffsetIndexBuilder(c);
  const auto& locs = oi->page_locations();
  const auto& unencoded = oi->unencoded_byte_array_data_bytes();
  for (size_t p = 0; p < locs.size(); ++p) {
    std::optional<int64_t> bytes;
    if (unencoded.size() == locs.size()) bytes = unencoded[p];
    ob->AddPage(locs[p].offset + delta, locs[p].compressed_page_size, locs[p].first_row_index + first_row, bytes);
  }
  auto* cb = page_index_->GetColumnIndexBuilder(c);
  const auto& nulls = ci->null_pages();
  for (size_t p = 0; p < nulls.size(); ++p)
    cb->AddPage(PageStatistics(*ci, p), PageSizeStats(*ci, *descr_->Column(c), p));
  return true;
}

void ParquetAssembler::FinishPageIndex(int c) {
  page_index_->GetOffsetIndexBuilder(c)->Finish(0);
  page_index_->GetColumnIndexBuilder(c)->Finish();
}

Result<std::shared_ptr<parquet::FileMetaData>> ParquetAssembler::Finish(
    std::shared_ptr<const arrow::KeyValueMetadata> metadata) {
  return ParquetGuard("writing a footer", [&]() -> Result<std::shared_ptr<parquet::FileMetaData>> {
    page_index_->Finish();
    auto locations = page_index_->WriteTo(sink_.get());
    footer_->SetIndexLocations(parquet::IndexKind::kColumnIndex, locations.column_index_locations);
    footer_->SetIndexLocations(parquet::IndexKind::kOffsetIndex, locations.offset_index_locations);
    footer_->SetIndexLocations(parquet::IndexKind::kBloomFilter, bloom_locations_);
    auto kv = metadata ? metadata->Copy() : std::make_shared<arrow::KeyValueMetadata>();
    ARROW_RETURN_NOT_OK(AppendSchemaKeys(*schema_, kv.get()));
    std::shared_ptr<parquet::FileMetaData> md = footer_->Finish(kv);
    parquet::WriteFileMetaData(*md, sink_.get());
    return md;
  });
}

}  // namespace sediment::table
