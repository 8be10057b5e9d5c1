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
  return s;
}

bool SameSchema(const arrow::Schema& a, const arrow::Schema& b) { return a.Equals(b, /*check_metadata=*/false); }

Result<std::unique_ptr<SegmentFileWriter>> SegmentFileWriter::Open(blob::BlobStore* store, const std::string& path,
                                                                   std::shared_ptr<arrow::Schema> schema,
                                                                   const WriterSettings& settings,
                                                                   const std::string& segment_metadata_json) {
  std::unique_ptr<SegmentFileWriter> w(new SegmentFileWriter());
  w->path_ = path;
  w->schema_ = schema;
  w->max_row_group_bytes_ = settings.max_row_group_bytes;
  ARROW_ASSIGN_OR_RAISE(w->sink_, store->OpenWriter(path));
  ARROW_ASSIGN_OR_RAISE(auto codec, Codec(settings.compression.codec));
  parquet::WriterProperties::Builder props;
  props.compression(codec);
  if (settings.compression.level) props.compression_level(*settings.compression.level);
  props.max_row_group_length(std::numeric_limits<int64_t>::max());  // bounded by bytes instead
  props.enable_statistics();
  // Columns are encoded in parallel on Arrow's CPU pool; the pool's size
  // bounds the CPU a merge uses.
  auto arrow_props = parquet::ArrowWriterProperties::Builder().store_schema()->set_use_threads(true)->build();
  Status st = Guard(path, [&]() -> Status {
    ARROW_ASSIGN_OR_RAISE(w->writer_, parquet::arrow::FileWriter::Open(*schema, arrow::default_memory_pool(), w->sink_,
                                                                       props.build(), arrow_props));
    auto kv = arrow::key_value_metadata({std::string(kSegmentMetadataKey)}, {segment_metadata_json});
    return w->writer_->AddKeyValueMetadata(kv);
  });
  ARROW_RETURN_NOT_OK(st);
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
  if (pending_bytes_ >= max_row_group_bytes_ || pending_rows_ >= kMaxRowGroupRows) return FlushRowGroup();
  return Status::OK();
}

// One row group from the buffered batches, written column by column straight
// to the sink (no second, encoded copy of the row group in memory).
Status SegmentFileWriter::FlushRowGroup() {
  if (pending_.empty()) return Status::OK();
  return Guard(path_, [&]() -> Status {
    ARROW_ASSIGN_OR_RAISE(auto table, arrow::Table::FromRecordBatches(schema_, pending_));
    pending_.clear();
    pending_bytes_ = 0;
    pending_rows_ = 0;
    return writer_->WriteTable(*table, std::max<int64_t>(1, table->num_rows()));
  });
}

Result<FileFacts> SegmentFileWriter::Finish() {
  ARROW_RETURN_NOT_OK(FlushRowGroup());
  return Guard(path_, [&]() -> Result<FileFacts> {
    ARROW_RETURN_NOT_OK(writer_->Close());
    FileFacts facts;
    auto md = writer_->metadata();
    facts.rows = md->num_rows();
    facts.row_groups = md->num_row_groups();
    for (int i = 0; i < md->num_row_groups(); ++i) facts.bytes += md->RowGroup(i)->total_byte_size();
    ARROW_ASSIGN_OR_RAISE(facts.stored_bytes, sink_->Tell());
    ARROW_RETURN_NOT_OK(sink_->Close());  // publishes
    finished_ = true;
    return facts;
  });
}

Result<std::unique_ptr<SegmentFileReader>> SegmentFileReader::Open(blob::BlobStore* store, const std::string& path) {
  std::unique_ptr<SegmentFileReader> r(new SegmentFileReader());
  r->path_ = path;
  ARROW_ASSIGN_OR_RAISE(auto file, store->OpenReader(path));
  ARROW_ASSIGN_OR_RAISE(int64_t size, file->GetSize());
  Status st = Guard(path, [&]() -> Status {
    auto pq = parquet::ParquetFileReader::Open(file);
    auto md = pq->metadata();
    r->facts_.rows = md->num_rows();
    r->facts_.row_groups = md->num_row_groups();
    r->facts_.stored_bytes = size;
    for (int i = 0; i < md->num_row_groups(); ++i) r->facts_.bytes += md->RowGroup(i)->total_byte_size();
    if (auto kv = md->key_value_metadata()) {
      auto found = kv->Get(std::string(kSegmentMetadataKey));
      if (found.ok()) r->segment_metadata_ = *found;
    }
    parquet::ArrowReaderProperties props;
    props.set_pre_buffer(false);
    props.set_use_threads(true);
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

Result<std::shared_ptr<arrow::Table>> SegmentFileReader::ReadRowGroup(int i, const std::vector<int>& columns) {
  return Guard(path_, [&]() -> Result<std::shared_ptr<arrow::Table>> {
    if (columns.empty()) return reader_->ReadRowGroup(i);
    return reader_->ReadRowGroup(i, columns);
  });
}

}  // namespace sediment::table
