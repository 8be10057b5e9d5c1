#include "table/parquet_io.h"

#include <arrow/api.h>
#include <arrow/io/interfaces.h>
#include <arrow/util/byte_size.h>
#include <arrow/util/key_value_metadata.h>
#include <fmt/format.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/statistics.h>

#include "table/parquet_assembler.h"
#include "table/segment.h"

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

// Parquet reports I/O and corruption by throwing; keep that inside this file.
template <typename Fn>
auto Guard(const std::string& path, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return Status::IOError(fmt::format("{}: {}", path, e.what()));
  }
}

}  // namespace

Result<WriterSettings> WriterSettings::FromConfig(const WriterConfig& writer) {
  WriterSettings s;
  ARROW_ASSIGN_OR_RAISE(s.compression, ParseCompression(writer.compression));
  s.max_row_group_bytes = writer.max_row_group_mb << 20;
  s.max_row_group_rows = writer.max_row_group_rows;
  s.bloom_filter_columns = writer.bloom_filter_columns;
  return s;
}

std::shared_ptr<parquet::WriterProperties> WriterSettings::Properties(const arrow::Schema& schema) const {
  parquet::WriterProperties::Builder props;
  props.compression(*Codec(compression.codec));  // validated by ParseCompression
  if (compression.level) props.compression_level(*compression.level);
  props.max_row_group_length(max_row_group_rows);
  props.enable_statistics();
  props.enable_write_page_index();
  for (const auto& name : bloom_filter_columns) {
    if (schema.GetFieldIndex(name) < 0) continue;
    parquet::BloomFilterOptions bloom;  // sized for the row group's rows, folded to what it holds
    bloom.fpp = 0.01;
    props.enable_bloom_filter(name, bloom);
  }
  return props.build();
}

Result<std::vector<EncodedRowGroup>> EncodeForSegment(const arrow::Table& table, const WriterSettings& settings,
                                                      const std::shared_ptr<parquet::WriterProperties>& props) {
  int64_t rows_per_group = settings.max_row_group_rows;
  if (table.num_rows() > 0) {
    // Stay near max_row_group_bytes of memory per row group too.
    int64_t bytes = 0;
    for (const auto& column : table.columns()) {
      for (const auto& chunk : column->chunks()) bytes += arrow::util::TotalBufferSize(*chunk->data());
    }
    double per_row = static_cast<double>(bytes) / static_cast<double>(table.num_rows());
    if (per_row > 0) {
      rows_per_group = std::min<int64_t>(
          rows_per_group, std::max<int64_t>(1, static_cast<int64_t>(settings.max_row_group_bytes / per_row)));
    }
  }
  return EncodeRowGroups(table, props, rows_per_group);
}

bool SameSchema(const arrow::Schema& a, const arrow::Schema& b) { return a.Equals(b, /*check_metadata=*/false); }

Result<std::unique_ptr<SegmentFileWriter>> SegmentFileWriter::Open(blob::BlobStore* store, const std::string& path,
                                                                   std::shared_ptr<arrow::Schema> schema,
                                                                   const WriterSettings& settings,
                                                                   const std::string& segment_metadata_json) {
  ARROW_RETURN_NOT_OK(Codec(settings.compression.codec).status());
  std::unique_ptr<SegmentFileWriter> w(new SegmentFileWriter());
  w->path_ = path;
  w->schema_ = schema;
  w->settings_ = settings;
  w->props_ = settings.Properties(*schema);
  w->segment_metadata_ = segment_metadata_json;
  ARROW_ASSIGN_OR_RAISE(w->sink_, store->OpenWriter(path));
  auto opened = ParquetAssembler::Open(w->sink_, schema, w->props_);
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

// The buffered batches, encoded in memory and copied in.
Status SegmentFileWriter::FlushRowGroup() {
  if (pending_.empty()) return Status::OK();
  return Guard(path_, [&]() -> Status {
    ARROW_ASSIGN_OR_RAISE(auto table, arrow::Table::FromRecordBatches(schema_, pending_));
    pending_.clear();
    pending_bytes_ = 0;
    pending_rows_ = 0;
    ARROW_ASSIGN_OR_RAISE(auto groups, EncodeForSegment(*table, settings_, props_));
    for (const auto& rg : groups) ARROW_RETURN_NOT_OK(assembler_->Append(rg));
    return Status::OK();
  });
}

Result<FileFacts> SegmentFileWriter::Finish() {
  ARROW_RETURN_NOT_OK(FlushRowGroup());
  return Guard(path_, [&]() -> Result<FileFacts> {
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
  std::unique_ptr<SegmentFileReader> r(new SegmentFileReader());
  r->path_ = path;
  ARROW_ASSIGN_OR_RAISE(auto file, store->OpenReader(path));
  ARROW_ASSIGN_OR_RAISE(int64_t size, file->GetSize());
  r->file_ = file;
  Status st = Guard(path, [&]() -> Status {
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
    // A merge reads whole row groups: on object storage, one coalesced GET
    // each rather than one per column chunk (locally that costs more than it saves).
    props.set_pre_buffer(!decode_threads && store->Remote());
    props.set_use_threads(decode_threads);
    ARROW_ASSIGN_OR_RAISE(r->reader_,
                          parquet::arrow::FileReader::Make(arrow::default_memory_pool(), std::move(pq), props));
    ARROW_RETURN_NOT_OK(r->reader_->GetSchema(&r->schema_));
    return Status::OK();
  });
  ARROW_RETURN_NOT_OK(st);
  return r;
}

SegmentFileReader::~SegmentFileReader() = default;

bool SegmentFileReader::RowGroupUInt64Range(int i, int column, uint64_t* min, uint64_t* max) const {
  try {
    auto rg = reader_->parquet_reader()->metadata()->RowGroup(i);
    auto stats = rg->ColumnChunk(column)->statistics();
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

Result<EncodedRowGroup> SegmentFileReader::ReadEncoded(int i) {
  std::lock_guard<std::mutex> lock(mu_);
  auto rg = ReadEncodedRowGroup(reader_->parquet_reader(), file_.get(), i);
  if (!rg.ok()) return Status::IOError(fmt::format("{}: {}", path_, rg.status().message()));
  return rg;
}

Result<std::shared_ptr<arrow::Table>> SegmentFileReader::ReadRowGroup(int i, const std::vector<int>& columns) {
  std::lock_guard<std::mutex> lock(mu_);
  return Guard(path_, [&]() -> Result<std::shared_ptr<arrow::Table>> {
    if (columns.empty()) return reader_->ReadRowGroup(i);
    return reader_->ReadRowGroup(i, columns);
  });
}

}  // namespace sediment::table
