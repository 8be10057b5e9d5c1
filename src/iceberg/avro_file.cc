#include "iceberg/avro_file.h"

#include <fmt/format.h>
#include <zlib.h>

#include <vector>

#include "base/crypto.h"

namespace sediment::iceberg {
namespace {

constexpr int64_t kBlockRecords = 4096;  // datums per block: a manifest's entries fit in a few

void AppendAvroBytes(const std::string& s, std::string* out) {
  AppendAvroLong(static_cast<int64_t>(s.size()), out);
  out->append(s);
}

// Raw deflate (no zlib header), what Avro's "deflate" codec is.
Result<std::string> Deflate(const std::string& in) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return arrow::Status::IOError("avro: deflateInit2 failed");
  }
  std::string out(deflateBound(&z, in.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return arrow::Status::IOError(fmt::format("avro: deflate failed ({})", rc));
  return out;
}

}  // namespace

void AppendAvroLong(int64_t v, std::string* out) {
  uint64_t n = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (n & ~uint64_t{0x7f}) {
    out->push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  out->push_back(static_cast<char>(n));
}

Status AvroError(const std::string& what) {
  return arrow::Status::IOError(fmt::format("avro: {}: {}", what, avro_strerror()));
}

Result<std::unique_ptr<AvroFileWriter>> AvroFileWriter::Make(const std::string& schema_json,
                                                             const std::map<std::string, std::string>& metadata) {
  std::unique_ptr<AvroFileWriter> w(new AvroFileWriter());
  if (avro_schema_from_json_length(schema_json.data(), schema_json.size(), &w->schema_) != 0) {
    return AvroError("schema");
  }
  w->iface_ = avro_generic_class_from_schema(w->schema_);
  if (w->iface_ == nullptr) return AvroError("value class");
  if (avro_generic_value_new(w->iface_, &w->value_) != 0) return AvroError("value");
  w->has_value_ = true;
  w->sync_ = RandomBytes(16);
  // Header: magic, the metadata map (one block of entries, then 0), the sync marker.
  w->out_ = std::string("Obj\x01", 4);
  std::map<std::string, std::string> meta = metadata;
  meta["avro.schema"] = schema_json;
  meta["avro.codec"] = "deflate";
  AppendAvroLong(static_cast<int64_t>(meta.size()), &w->out_);
  for (const auto& [k, v] : meta) {
    AppendAvroBytes(k, &w->out_);
    AppendAvroBytes(v, &w->out_);
  }
  AppendAvroLong(0, &w->out_);
  w->out_ += w->sync_;
  return w;
}

AvroFileWriter::~AvroFileWriter() {
  if (has_value_) avro_value_decref(&value_);
  if (iface_ != nullptr) avro_value_iface_decref(iface_);
  if (schema_ != nullptr) avro_schema_decref(schema_);
}

avro_value_t* AvroFileWriter::Next() {
  avro_value_reset(&value_);
  return &value_;
}

Status AvroFileWriter::Append() { return Append(&value_); }

Status AvroFileWriter::Append(avro_value_t* value) {
  size_t size = 0;
  if (avro_value_sizeof(value, &size) != 0) return AvroError("sizing a record");
  size_t at = block_.size();
  block_.resize(at + size);
  avro_writer_t writer = avro_writer_memory(block_.data() + at, static_cast<int64_t>(size));
  int rc = avro_value_write(writer, value);
  avro_writer_free(writer);
  if (rc != 0) return AvroError("encoding a record");
  in_block_++;
  total_++;
  if (in_block_ >= kBlockRecords) return FlushBlock();
  return Status::OK();
}

Status AvroFileWriter::FlushBlock() {
  if (in_block_ == 0) return Status::OK();
  ARROW_ASSIGN_OR_RAISE(std::string compressed, Deflate(block_));
  AppendAvroLong(in_block_, &out_);
  AppendAvroLong(static_cast<int64_t>(compressed.size()), &out_);
  out_ += compressed;
  out_ += sync_;
  block_.clear();
  in_block_ = 0;
  return Status::OK();
}

Result<std::string> AvroFileWriter::Finish() {
  ARROW_RETURN_NOT_OK(FlushBlock());
  return std::move(out_);
}

}  // namespace sediment::iceberg
