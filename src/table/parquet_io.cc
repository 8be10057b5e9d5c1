#include "table/parquet_io.h"

#include <arrow/api.h>
#include <arrow/io/interfaces.h>
#include <arrow/io/memory.h>
#include <arrow/util/byte_size.h>
#include <arrow/util/key_value_metadata.h>
#include <fmt/format.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/arrow/writer.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/page_index.h>
#include <parquet/properties.h>
#include <parquet/schema.h>
#include <parquet/statistics.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>

#include "table/chunk_encoder.h"
#include "table/columnwise_encode.h"
#include "table/parquet_assembler.h"
#include "table/parquet_guard_internal.h"
#include "table/plain_decode.h"
#include "table/segment.h"
#include "table/stored_types.h"

namespace sediment::table {
namespace {

Result<arrow::Compression::type> Codec(const std::string& name) {
  if (name == "zstd") return arrow::Compression::ZSTD;
  if (name == "snappy") return arrow::Compression::SNAPPY;
  if (name == "lz4") return arrow::Compression::LZ4;
  if (name == "gzip") return arrow::Compression::GZIP;
  if (name == "brotli") return arrow::Compression::BROTLI;
  if (name == "none") return arrow::Compression::UNCOMPRESSED;
  return InvalidArgument("unknown codec " + name);
}

// Whether the chunk encoder writes `table` as `props` ask: flat columns of
// the types it holds, and no dictionaries (the layout of files merged again).
bool EncodesWithoutArrow(const arrow::Table& table, const parquet::SchemaDescriptor& descr,
                         const parquet::WriterProperties& props) {
  if (descr.num_columns() != table.num_columns() || !ColumnwiseEncodable(descr, props)) return false;
  // What the chunk encoder does not do: older format versions (Arrow
  // coerces times there), page checksums, encryption, other encodings.
  if (props.version() != parquet::ParquetVersion::PARQUET_2_6 || props.page_checksum_enabled() ||
      props.file_encryption_properties() != nullptr) {
    return false;
  }
  for (int c = 0; c < descr.num_columns(); ++c) {
    const auto* column = descr.Column(c);
    const auto encoding = props.encoding(column->path());  // UNKNOWN: the writer's choice, PLAIN here
    const bool plain = encoding == parquet::Encoding::PLAIN || encoding == parquet::Encoding::UNKNOWN;
    if (props.dictionary_enabled(column->path()) || !plain ||
        PlainWidth(*column, *table.schema()->field(c)->type()) < 0) {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<WriterSettings> WriterSettings::FromConfig(const WriterConfig& writer) {
  WriterSettings s;
  ARROW_ASSIGN_OR_RAISE(s.compression, ParseCompression(writer.compression));
  s.max_row_group_bytes = writer.max_row_group_mb << 20;
  s.max_row_group_rows = writer.max_row_group_rows;
  s.bloom_filter_columns = writer.bloom_filter_columns;
  s.store_incompressible = writer.store_incompressible;
  return s;
}

std::shared_ptr<parquet::WriterProperties> WriterSettings::Properties(const arrow::Schema& schema,
                                                                      FileLayout layout) const {
  parquet::WriterProperties::Builder props;
  // Files to be merged again: no dictionary, so PLAIN pages, each
  // compressed on its own (or stored as they are where zstd cannot shrink
  // them, chunk_encoder.h); data pages v2, whose levels stand apart from the
  // compressed values, so a merge joins small pages without decompressing
  // them (page_joiner.h). Final files keep data page v1 (the default),
  // which DuckDB reads faster; a chunk whose values zstd cannot shrink is
  // stored uncompressed in pages v2 (chunk_encoder.h).
  if (layout == FileLayout::kPages) {
    props.disable_dictionary();
    props.data_page_version(parquet::ParquetDataPageVersion::V2);
  }
  props.compression(*Codec(compression.codec));  // validated by ParseCompression
  if (compression.level) props.compression_level(*compression.level);
  props.max_row_group_length(max_row_group_rows);
  props.max_rows_per_page(layout == FileLayout::kFinal ? final_page_rows : max_page_rows);
  // A dictionary that outgrows 256 KiB is dropped for the rest of the column
  // chunk: high-cardinality columns (values, hashes, payloads) stop paying for
  // hashing sooner, and zstd compresses their plain pages better (docs/compaction.md).
  props.dictionary_pagesize_limit(256 << 10);
  props.enable_statistics();
  props.enable_write_page_index();
  for (const auto& name : bloom_filter_columns) {
    auto field = schema.GetFieldByName(name);
    // Columns the table lacks are skipped (the setting serves every table), and
    // so are those Parquet keeps no bloom filter for (booleans, nested).
    if (!field || field->type()->id() == arrow::Type::BOOL || field->type()->num_fields() > 0) continue;
    parquet::BloomFilterOptions bloom;  // sized for the row group's rows, folded to what it holds
    bloom.fpp = 0.01;
    props.enable_bloom_filter(name, bloom);
  }
  return props.build();
}

int64_t WriterSettings::RowsPerGroup(int64_t rows, int64_t bytes) const {
  if (rows <= 0 || bytes <= 0) return max_row_group_rows;
  const double per_row = static_cast<double>(bytes) / static_cast<double>(rows);
  const double fit = std::min<double>(static_cast<double>(max_row_group_rows), max_row_group_bytes / per_row);
  return std::max<int64_t>(1, static_cast<int64_t>(fit));
}

Result<std::vector<EncodedRowGroup>> EncodeForSegment(const std::shared_ptr<arrow::Table>& table,
                                                      const WriterSettings& settings,
                                                      const std::shared_ptr<parquet::WriterProperties>& props) {
  auto size_of = [](const arrow::Table& t) {
    int64_t bytes = 0;
    for (const auto& column : t.columns()) {
      for (const auto& chunk : column->chunks()) bytes += arrow::util::TotalBufferSize(*chunk->data());
    }
    return bytes;
  };
  const int64_t rows_per_group = settings.RowsPerGroup(table->num_rows(), size_of(*table));
  // Stored as the files store them (table/stored_types.h).
  ARROW_ASSIGN_OR_RAISE(auto stored, Retype(table, StoredSchema(table->schema())));
  ARROW_ASSIGN_OR_RAISE(auto descr, ParquetSchemaFor(*stored->schema(), *props));
  if (stored->num_rows() == 0 || !EncodesWithoutArrow(*stored, *descr, *props)) {
    return EncodeRowGroups(*stored, props, rows_per_group);
  }
  // Head files through the chunk encoder, as final files are: a column zstd
  // cannot shrink (hashes, payloads) is stored as it is, so neither this
  // write nor the merges that read it spend time on its compression. An
  // encoder per call: its scratch (as large as the largest page) is not kept.
  ChunkEncoder encoder;
  auto column = [&](int c) -> Result<std::shared_ptr<arrow::Array>> {
    const auto& chunks = stored->column(c)->chunks();
    if (chunks.size() == 1) return chunks.front();
    return arrow::Concatenate(chunks);
  };
  // Room for the stored values as they are, with a page header's and a
  // compression bound's slack per group and column.
  const int64_t groups = (stored->num_rows() + rows_per_group - 1) / rows_per_group;
  const int64_t room = size_of(*stored) * 65 / 64 + groups * descr->num_columns() * (64 << 10);
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> buffer, arrow::AllocateResizableBuffer(room));
  return EncodeColumnwise(*descr, props, stored->num_rows(), rows_per_group, column, std::move(buffer), &encoder,
                          settings.store_incompressible ? kMinCompressionSaving : 0);
}

bool SameSchema(const arrow::Schema& a, const arrow::Schema& b) { return a.Equals(b, /*check_metadata=*/false); }

Result<std::unique_ptr<SegmentFileWriter>> SegmentFileWriter::Open(blob::BlobStore* store, const std::string& path,
                                                                   std::shared_ptr<arrow::Schema> schema,
                                                                   const WriterSettings& settings, FileLayout layout,
                                                                   const std::string& segment_metadata_json,
                                                                   int64_t expected_bytes) {
  ARROW_RETURN_NOT_OK(Codec(settings.compression.codec).status());
  std::unique_ptr<SegmentFileWriter> w(new SegmentFileWriter());
  w->path_ = path;
  w->schema_ = schema;
  w->settings_ = settings;
  w->props_ = settings.Properties(*schema, layout);
  w->segment_metadata_ = segment_metadata_json;
  // A final file is written once and read later, not at once by the next
  // merge: around the page cache. So is a large file: copying it into new
  // cache pages cost more than the merge's own work (bench/RESULTS.md).
  if (layout == FileLayout::kFinal || expected_bytes >= kLargeFileBytes) {
    ARROW_ASSIGN_OR_RAISE(w->sink_, store->OpenLargeWriter(path));
  } else {
    ARROW_ASSIGN_OR_RAISE(w->sink_, store->OpenWriter(path));
  }
  auto opened = ParquetAssembler::Open(w->sink_, StoredSchema(schema), w->props_);
  if (!opened.ok()) return Status::IOError(fmt::format("{}: {}", path, opened.status().message()));
  w->assembler_ = std::move(*opened);
  return w;
}

SegmentFileWriter::~SegmentFileWriter() {
  if (!finished_ && sink_) (void)sink_->Abort();
}

Status SegmentFileWriter::Write(const std::shared_ptr<arrow::RecordBatch>& batch) {
  if (batch->num_rows() == 0) return Status::OK();
  pending_bytes_ += arrow::util::TotalBufferSize(*batch);
  pending_rows_ += batch->num_rows();
  pending_.push_back(batch);
  if (pending_bytes_ >= settings_.max_row_group_bytes || pending_rows_ >= settings_.max_row_group_rows) {
    return FlushRowGroup();
  }
  return Status::OK();
}

Status SegmentFileWriter::Append(const EncodedRowGroup& rg) {
  ARROW_RETURN_NOT_OK(FlushRowGroup());
  Status st = assembler_->Append(rg);
  if (!st.ok()) return Status::IOError(fmt::format("{}: {}", path_, st.message()));
  return st;
}

Status SegmentFileWriter::AppendPages(const PageRun& run) {
  ARROW_RETURN_NOT_OK(FlushRowGroup());
  Status st = assembler_->AppendPages(run);
  if (!st.ok()) return Status::IOError(fmt::format("{}: {}", path_, st.message()));
  return st;
}

// The buffered batches, encoded in memory and copied in.
Status SegmentFileWriter::FlushRowGroup() {
  if (pending_.empty()) return Status::OK();
  return ParquetGuard(path_, [&]() -> Status {
    ARROW_ASSIGN_OR_RAISE(auto table, arrow::Table::FromRecordBatches(schema_, pending_));
    pending_.clear();
    pending_bytes_ = 0;
    pending_rows_ = 0;
    ARROW_ASSIGN_OR_RAISE(auto groups, EncodeForSegment(table, settings_, props_));
    for (const auto& rg : groups) ARROW_RETURN_NOT_OK(assembler_->Append(rg));
    return Status::OK();
  });
}

Result<FileFacts> SegmentFileWriter::Finish() {
  ARROW_RETURN_NOT_OK(FlushRowGroup());
  return ParquetGuard(path_, [&]() -> Result<FileFacts> {
    auto kv = arrow::key_value_metadata({std::string(kSegmentMetadataKey)}, {segment_metadata_});
    ARROW_ASSIGN_OR_RAISE(auto md, assembler_->Finish(kv));
    FileFacts facts;
    facts.rows = md->num_rows();
    facts.row_groups = md->num_row_groups();
    for (int i = 0; i < md->num_row_groups(); ++i) facts.bytes += md->RowGroup(i)->total_byte_size();
    ARROW_ASSIGN_OR_RAISE(facts.stored_bytes, sink_->Tell());
    ARROW_RETURN_NOT_OK(sink_->Close());  // publishes
    finished_ = true;
    return facts;
  });
}

Result<std::unique_ptr<SegmentFileReader>> SegmentFileReader::Open(blob::BlobStore* store, const std::string& path,
                                                                   bool decode_threads,
                                                                   std::shared_ptr<parquet::FileMetaData> footer) {
  ARROW_ASSIGN_OR_RAISE(auto file, store->OpenReader(path));
  // A merge reads whole row groups: on object storage, one coalesced GET
  // each rather than one per column chunk (locally that costs more than it saves).
  return Open(std::move(file), path, decode_threads, std::move(footer), !decode_threads && store->Remote());
}

namespace {

// Whether two schemas' fields have the same names, position by position, at
// every level of structs (a list's or map's own child names are Parquet's
// and Arrow's conventions, not the table's: only what lies under them).
bool SameFieldNames(const arrow::FieldVector& a, const arrow::FieldVector& b, bool compare_names) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (compare_names && a[i]->name() != b[i]->name()) return false;
    const auto& ta = *a[i]->type();
    if (!SameFieldNames(ta.fields(), b[i]->type()->fields(), ta.id() == arrow::Type::STRUCT)) return false;
  }
  return true;
}

}  // namespace

Result<std::shared_ptr<arrow::Schema>> FooterStoredSchema(const std::string& path, const parquet::FileMetaData& md) {
  const parquet::ArrowReaderProperties props;
  auto kv = md.key_value_metadata();
  std::shared_ptr<arrow::Schema> read;  // what Arrow's reader reads: "ARROW:schema" applied to the columns
  Status st = parquet::arrow::FromParquetSchema(md.schema(), props, kv, &read);
  if (!st.ok()) return Status::Invalid(fmt::format("{}: its schema: {}", path, st.message()));
  if (!kv || !kv->Contains(std::string(kStoredSchemaKey))) return read;
  auto named = ParseStoredArrowSchema(*kv->Get(std::string(kStoredSchemaKey)));
  if (!named.ok()) {
    return Status::Invalid(
        fmt::format("{}: its {} is not a schema: {}", path, kStoredSchemaKey, named.status().message()));
  }
  if (!SameFieldNames((*named)->fields(), read->fields(), true)) {
    return Status::Invalid(fmt::format("{}: its {} ({}) names other fields than it holds ({})", path, kStoredSchemaKey,
                                       (*named)->ToString(), read->ToString()));
  }
  std::shared_ptr<arrow::Schema> whole;
  st = parquet::arrow::FromParquetSchema(md.schema(), props, WithStoredSchema(kv), &whole);
  if (!st.ok()) return Status::Invalid(fmt::format("{}: its {}: {}", path, kStoredSchemaKey, st.message()));
  if (!whole->Equals(*read, /*check_metadata=*/false)) {
    return Status::Invalid(fmt::format("{}: its {} ({}) differs from its columns ({})", path, kStoredSchemaKey,
                                       whole->ToString(), read->ToString()));
  }
  return whole;
}

Result<std::unique_ptr<SegmentFileReader>> SegmentFileReader::Open(std::shared_ptr<arrow::io::RandomAccessFile> file,
                                                                   const std::string& path, bool decode_threads,
                                                                   std::shared_ptr<parquet::FileMetaData> footer,
                                                                   bool coalesce_reads) {
  std::unique_ptr<SegmentFileReader> r(new SegmentFileReader());
  r->path_ = path;
  ARROW_ASSIGN_OR_RAISE(int64_t size, file->GetSize());
  r->file_ = file;
  Status st = ParquetGuard(path, [&]() -> Status {
    auto pq = parquet::ParquetFileReader::Open(file, parquet::default_reader_properties(), footer);
    auto md = pq->metadata();
    r->metadata_ = md;
    r->facts_.rows = md->num_rows();
    r->facts_.row_groups = md->num_row_groups();
    r->facts_.stored_bytes = size;
    for (int i = 0; i < md->num_row_groups(); ++i) r->facts_.bytes += md->RowGroup(i)->total_byte_size();
    if (auto kv = md->key_value_metadata()) {
      auto found = kv->Get(std::string(kSegmentMetadataKey));
      if (found.ok()) r->segment_metadata_ = *found;
    }
    parquet::ArrowReaderProperties props;
    props.set_pre_buffer(coalesce_reads);
    props.set_use_threads(decode_threads);
    ARROW_ASSIGN_OR_RAISE(r->reader_,
                          parquet::arrow::FileReader::Make(arrow::default_memory_pool(), std::move(pq), props));
    // The schema Arrow's reader reads the columns as (FooterStoredSchema makes it the same way), with the markers.
    ARROW_ASSIGN_OR_RAISE(r->stored_schema_, FooterStoredSchema(path, *md));
    r->schema_ = TableSchemaOf(r->stored_schema_);
    r->file_columns_ = r->schema_->num_fields();
    return Status::OK();
  });
  ARROW_RETURN_NOT_OK(st);
  return r;
}

SegmentFileReader::~SegmentFileReader() = default;

bool SegmentFileReader::RowGroupUInt64Range(int i, int column, uint64_t* min, uint64_t* max) const {
  try {
    // The column's Parquet leaf (a nested column before it has several).
    if (column < 0 || column >= file_columns_) return false;
    const auto& field = reader_->manifest().schema_fields[static_cast<size_t>(column)];
    if (!field.is_leaf()) return false;
    auto rg = reader_->parquet_reader()->metadata()->RowGroup(i);
    auto stats = rg->ColumnChunk(field.column_index)->statistics();
    if (!stats || !stats->HasMinMax()) return false;
    auto typed = std::dynamic_pointer_cast<parquet::Int64Statistics>(stats);
    if (!typed) return false;
    *min = static_cast<uint64_t>(typed->min());
    *max = static_cast<uint64_t>(typed->max());
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

Result<std::shared_ptr<arrow::Table>> SegmentFileReader::ReadRowGroupBlocks(int i, const std::vector<int>& columns,
                                                                            int block_column, uint64_t from,
                                                                            uint64_t to) {
  std::lock_guard<std::mutex> lock(mu_);
  return ParquetGuard(path_, [&]() -> Result<std::shared_ptr<arrow::Table>> {
    auto whole = [&]() { return ReadColumnsLocked(i, columns); };
    auto rg = metadata_->RowGroup(i);
    const int64_t rows = rg->num_rows();
    const auto* descr = metadata_->schema();
    if (descr->num_columns() != file_columns_) return whole();  // nested columns
    auto pages = reader_->parquet_reader()->GetPageIndexReader();
    auto rg_pages = pages ? pages->RowGroup(i) : nullptr;
    if (!rg_pages) return whole();
    auto block_index = std::dynamic_pointer_cast<parquet::Int64ColumnIndex>(rg_pages->GetColumnIndex(block_column));
    auto block_offsets = rg_pages->GetOffsetIndex(block_column);
    if (!block_index || !block_offsets) return whole();
    // Rows [r0, r1): the pages whose block range meets [from, to] (in order).
    const auto& locs = block_offsets->page_locations();
    const auto& non_null = block_index->non_null_page_indices();
    int64_t r0 = -1, r1 = -1;
    for (size_t k = 0; k < non_null.size(); ++k) {
      const size_t p = static_cast<size_t>(non_null[k]);
      if (static_cast<uint64_t>(block_index->max_values()[k]) < from ||
          static_cast<uint64_t>(block_index->min_values()[k]) > to) {
        continue;
      }
      if (r0 < 0) r0 = locs[p].first_row_index;
      r1 = p + 1 < locs.size() ? locs[p + 1].first_row_index : rows;
    }
    std::vector<std::shared_ptr<arrow::Field>> fields;
    for (int c : columns) fields.push_back(schema_->field(c));
    auto out_schema = arrow::schema(fields);
    if (r0 < 0) return arrow::Table::MakeEmpty(out_schema);
    if ((r1 - r0) * 2 > rows) return whole();
    std::vector<std::shared_ptr<arrow::ChunkedArray>> out;
    for (int c : columns) {
      if (c >= file_columns_) {  // a column added after the file was written
        ARROW_ASSIGN_OR_RAISE(auto nulls, arrow::MakeArrayOfNull(schema_->field(c)->type(), r1 - r0));
        out.push_back(std::make_shared<arrow::ChunkedArray>(nulls));
        continue;
      }
      if (descr->Column(c)->max_repetition_level() > 0) return whole();
      ARROW_ASSIGN_OR_RAISE(auto column, ReadColumnPages(i, c, r0, r1));
      if (!column) return whole();
      ARROW_ASSIGN_OR_RAISE(auto typed, Retype(arrow::Table::Make(arrow::schema({stored_schema_->field(c)}), {column}),
                                               arrow::schema({schema_->field(c)})));
      out.push_back(typed->column(0));
    }
    return arrow::Table::Make(out_schema, out, r1 - r0);
  });
}

// The pages of column `c` that hold rows [r0, r1), with its dictionary page,
// laid out as a one-column Parquet file in memory and read by Arrow's reader,
// then sliced to [r0, r1). Null when the column has no offset index.
Result<std::shared_ptr<arrow::ChunkedArray>> SegmentFileReader::ReadColumnPages(int i, int c, int64_t r0, int64_t r1) {
  auto rg = metadata_->RowGroup(i);
  auto cc = rg->ColumnChunk(c);
  auto offsets = reader_->parquet_reader()->GetPageIndexReader()->RowGroup(i)->GetOffsetIndex(c);
  if (!offsets) return nullptr;
  const auto& locs = offsets->page_locations();
  if (locs.empty()) return nullptr;
  size_t first = 0, last = 0;
  for (size_t p = 0; p < locs.size(); ++p) {
    if (locs[p].first_row_index <= r0) first = p;
    if (locs[p].first_row_index < r1) last = p;
  }
  const int64_t first_row = locs[first].first_row_index;
  const int64_t end_row = last + 1 < locs.size() ? locs[last + 1].first_row_index : rg->num_rows();
  const bool dict = cc->has_dictionary_page() && cc->dictionary_page_offset() > 0;
  const int64_t dict_len = dict ? locs.front().offset - cc->dictionary_page_offset() : 0;
  const int64_t pages_len = locs[last].offset + locs[last].compressed_page_size - locs[first].offset;
  // "PAR1", the dictionary page, the data pages; the footer is given to the reader.
  ARROW_ASSIGN_OR_RAISE(auto buffer, arrow::AllocateResizableBuffer(4 + dict_len + pages_len));
  uint8_t* at = buffer->mutable_data();
  std::memcpy(at, "PAR1", 4);
  if (dict) {
    ARROW_ASSIGN_OR_RAISE(int64_t n, file_->ReadAt(cc->dictionary_page_offset(), dict_len, at + 4));
    if (n != dict_len) return Status::IOError("short read of a dictionary page");
  }
  ARROW_ASSIGN_OR_RAISE(int64_t n, file_->ReadAt(locs[first].offset, pages_len, at + 4 + dict_len));
  if (n != pages_len) return Status::IOError("short read of data pages");

  const auto* leaf =
      static_cast<const parquet::schema::PrimitiveNode*>(metadata_->schema()->Column(c)->schema_node().get());
  auto node = parquet::schema::PrimitiveNode::Make(leaf->name(), leaf->repetition(), leaf->logical_type(),
                                                   leaf->physical_type(), leaf->type_length(), leaf->field_id());
  parquet::SchemaDescriptor one;
  one.Init(parquet::schema::GroupNode::Make("schema", parquet::Repetition::REQUIRED, {node}));
  auto props = parquet::WriterProperties::Builder().compression(cc->compression())->build();
  auto footer = parquet::FileMetaDataBuilder::Make(&one, props);
  auto* group = footer->AppendRowGroup();
  group->set_num_rows(end_row - first_row);
  std::map<parquet::Encoding::type, int32_t> dict_stats, data_stats;
  for (const auto& e : cc->encoding_stats()) {
    (e.page_type == parquet::PageType::DICTIONARY_PAGE ? dict_stats : data_stats)[e.encoding] += e.count;
  }
  group->NextColumnChunk()->Finish(end_row - first_row, dict ? 4 : 0, -1, 4 + dict_len, dict_len + pages_len,
                                   dict_len + pages_len, dict, false, dict_stats, data_stats);
  group->Finish(dict_len + pages_len, 0);
  ARROW_ASSIGN_OR_RAISE(auto stored, StoredArrowSchema(*arrow::schema({stored_schema_->field(c)})));
  std::shared_ptr<parquet::FileMetaData> md = footer->Finish(arrow::key_value_metadata({"ARROW:schema"}, {stored}));
  auto source = std::make_shared<arrow::io::BufferReader>(std::shared_ptr<arrow::Buffer>(std::move(buffer)));
  parquet::ArrowReaderProperties arrow_props;
  arrow_props.set_use_threads(false);
  std::unique_ptr<parquet::arrow::FileReader> reader;
  ARROW_ASSIGN_OR_RAISE(
      reader, parquet::arrow::FileReader::Make(
                  arrow::default_memory_pool(),
                  parquet::ParquetFileReader::Open(source, parquet::default_reader_properties(), md), arrow_props));
  std::shared_ptr<arrow::ChunkedArray> column;
  ARROW_RETURN_NOT_OK(reader->ReadColumn(0, &column));
  return column->Slice(r0 - first_row, r1 - r0);
}

Result<EncodedRowGroup> SegmentFileReader::ReadEncoded(int i) {
  std::lock_guard<std::mutex> lock(mu_);
  auto rg = ReadEncodedRowGroup(reader_->parquet_reader(), file_.get(), i);
  if (!rg.ok()) return Status::IOError(fmt::format("{}: {}", path_, rg.status().message()));
  return rg;
}

Result<std::shared_ptr<arrow::Table>> SegmentFileReader::ReadRowGroup(int i, const std::vector<int>& columns) {
  std::lock_guard<std::mutex> lock(mu_);
  return ParquetGuard(path_, [&]() { return ReadColumnsLocked(i, columns); });
}

Status SegmentFileReader::ReadAs(const std::shared_ptr<arrow::Schema>& table) {
  const auto own = TableSchemaOf(stored_schema_);
  bool prefix = own->num_fields() <= table->num_fields();
  for (int c = 0; prefix && c < own->num_fields(); ++c) {
    prefix = own->field(c)->Equals(*table->field(c), /*check_metadata=*/false);
  }
  if (!prefix) {
    return Status::Invalid(fmt::format("{}: its schema {} is not an earlier version of the table's {}", path_,
                                       own->ToString(), table->ToString()));
  }
  schema_ = table;
  return Status::OK();
}

Status SegmentFileReader::ReadStoredAs(const std::shared_ptr<arrow::Schema>& table) {
  ARROW_RETURN_NOT_OK(ReadAs(table));
  schema_ = StoredSchema(table);
  stored_reads_ = true;
  return Status::OK();
}

Result<std::shared_ptr<arrow::Table>> SegmentFileReader::ReadColumnsLocked(int i, std::vector<int> columns) {
  if (columns.empty()) {
    for (int c = 0; c < schema_->num_fields(); ++c) columns.push_back(c);
  }
  // The file's columns as Parquet leaves (a nested column has several), read in one call.
  const auto& manifest = reader_->manifest();
  std::vector<int> leaves, own;
  std::function<void(const parquet::arrow::SchemaField&)> add_leaves = [&](const parquet::arrow::SchemaField& f) {
    if (f.is_leaf()) leaves.push_back(f.column_index);
    for (const auto& child : f.children) add_leaves(child);
  };
  for (int c : columns) {
    if (c < 0 || c >= schema_->num_fields()) {
      return Status::Invalid(fmt::format("column {} of a table of {} columns", c, schema_->num_fields()));
    }
    if (c < file_columns_ && std::find(own.begin(), own.end(), c) == own.end()) {
      own.push_back(c);
      add_leaves(manifest.schema_fields[static_cast<size_t>(c)]);
    }
  }
  std::sort(own.begin(), own.end());
  std::sort(leaves.begin(), leaves.end());
  const int64_t rows = metadata_->RowGroup(i)->num_rows();
  std::shared_ptr<arrow::Table> read;
  if (!own.empty()) {
    ARROW_ASSIGN_OR_RAISE(read, reader_->ReadRowGroup(i, leaves));
    // To what the reads return: the table's types, or its stored ones
    // (ReadStoredAs; a file written before may store them otherwise).
    arrow::FieldVector wanted;
    for (int c : own) wanted.push_back(schema_->field(c));
    ARROW_ASSIGN_OR_RAISE(read, Retype(read, arrow::schema(std::move(wanted))));
    if (stored_reads_) ARROW_RETURN_NOT_OK(CheckStoredValues(*read));
  }
  // In the order asked for: the file's columns (read in file order), nulls for the others.
  arrow::FieldVector fields;
  std::vector<std::shared_ptr<arrow::ChunkedArray>> out;
  for (int c : columns) {
    fields.push_back(schema_->field(c));
    if (c < file_columns_) {
      out.push_back(read->column(static_cast<int>(std::lower_bound(own.begin(), own.end(), c) - own.begin())));
    } else {
      ARROW_ASSIGN_OR_RAISE(auto nulls, arrow::MakeArrayOfNull(schema_->field(c)->type(), rows));
      out.push_back(std::make_shared<arrow::ChunkedArray>(nulls));
    }
  }
  return arrow::Table::Make(arrow::schema(fields), out, rows);
}

}  // namespace sediment::table
