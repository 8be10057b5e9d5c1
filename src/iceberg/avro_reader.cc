// AvroFileReader (avro_file.h): the container format parsed here (header,
// blocks, codecs), the datums decoded by avro-c.
#include <fmt/format.h>
#include <zlib.h>

#include <climits>
#include <nlohmann/json.hpp>

#include "iceberg/avro_file.h"

namespace sediment::iceberg {
namespace {

Status Malformed(const std::string& what) { return InvalidArgument("not an Avro container file: " + what); }

Result<int64_t> ReadLong(const std::string& d, size_t* pos) {
  uint64_t n = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= d.size()) return Malformed("truncated number");
    auto b = static_cast<uint8_t>(d[(*pos)++]);
    n |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return static_cast<int64_t>((n >> 1) ^ (~(n & 1) + 1));
  }
  return Malformed("a number longer than 10 bytes");
}

Result<std::string> ReadBytes(const std::string& d, size_t* pos) {
  ARROW_ASSIGN_OR_RAISE(int64_t n, ReadLong(d, pos));
  if (n < 0 || static_cast<uint64_t>(n) > d.size() - *pos) return Malformed("a string past the end");
  std::string out = d.substr(*pos, static_cast<size_t>(n));
  *pos += static_cast<size_t>(n);
  return out;
}

// A manifest or manifest list inflates to far less: past this a block is refused (a deflate bomb).
constexpr size_t kMaxInflated = size_t{256} << 20;

// Whether a datum of `type` (a schema's JSON) can take no bytes at all: an
// array or map of such items would make avro-c read items without end.
bool ZeroSize(const nlohmann::json& type) {
  if (type.is_string()) return type == "null";
  if (!type.is_object()) return false;
  std::string t = type.value("type", std::string());
  if (t == "fixed") return type.value("size", 1) == 0;
  if (t != "record") return false;
  for (const auto& f : type.value("fields", nlohmann::json::array())) {
    if (!f.is_object() || !ZeroSize(f.value("type", nlohmann::json()))) return false;
  }
  return true;
}

// Refuses a schema whose arrays or maps hold items of no size.
bool SafeSchema(const nlohmann::json& type, int depth = 0) {
  if (depth > 64) return false;
  if (type.is_array()) {  // a union
    for (const auto& b : type) {
      if (!SafeSchema(b, depth + 1)) return false;
    }
    return true;
  }
  if (!type.is_object()) return true;
  std::string t = type.value("type", std::string());
  if (t == "array" || t == "map") {
    const auto& items = type.value(t == "array" ? "items" : "values", nlohmann::json());
    return !ZeroSize(items) && SafeSchema(items, depth + 1);
  }
  if (t == "record") {
    for (const auto& f : type.value("fields", nlohmann::json::array())) {
      if (f.is_object() && !SafeSchema(f.value("type", nlohmann::json()), depth + 1)) return false;
    }
  }
  return !type.contains("type") || !type["type"].is_object() || SafeSchema(type["type"], depth + 1);
}

Result<std::string> Inflate(const std::string& in) {
  z_stream z{};
  if (inflateInit2(&z, -15) != Z_OK) return arrow::Status::IOError("avro: inflateInit2 failed");
  std::string out;
  char buf[65536];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      return Malformed(fmt::format("a deflate block that does not inflate ({})", rc));
    }
    out.append(buf, sizeof(buf) - z.avail_out);
    if (out.size() > kMaxInflated) {
      inflateEnd(&z);
      return Malformed(fmt::format("a block that inflates past {} MiB", kMaxInflated >> 20));
    }
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) break;  // the input ended without an end marker
  }
  inflateEnd(&z);
  return out;
}

}  // namespace

Result<std::unique_ptr<AvroFileReader>> AvroFileReader::Open(std::string data) {
  std::unique_ptr<AvroFileReader> r(new AvroFileReader());
  r->data_ = std::move(data);
  const std::string& d = r->data_;
  if (d.size() < 4 || d.compare(0, 4, std::string("Obj\x01", 4)) != 0) return Malformed("no magic");
  size_t pos = 4;
  while (true) {
    ARROW_ASSIGN_OR_RAISE(int64_t count, ReadLong(d, &pos));
    if (count == 0) break;
    if (count < 0) {
      if (count == INT64_MIN) return Malformed("a bad metadata block count");
      count = -count;
      ARROW_RETURN_NOT_OK(ReadLong(d, &pos).status());  // the block's size in bytes
    }
    for (int64_t i = 0; i < count; ++i) {
      ARROW_ASSIGN_OR_RAISE(auto key, ReadBytes(d, &pos));
      ARROW_ASSIGN_OR_RAISE(auto value, ReadBytes(d, &pos));
      if (key == "avro.schema") {
        r->schema_json_ = value;
      } else if (key == "avro.codec") {
        r->codec_ = value;
      } else {
        r->metadata_[key] = value;
      }
    }
  }
  if (d.size() - pos < 16) return Malformed("no sync marker");
  r->sync_ = d.substr(pos, 16);
  r->pos_ = pos + 16;
  if (r->codec_.empty()) r->codec_ = "null";
  if (r->codec_ != "null" && r->codec_ != "deflate") {
    return NotImplemented(fmt::format("Avro codec \"{}\" (this reader knows null and deflate)", r->codec_));
  }
  if (!SafeSchema(nlohmann::json::parse(r->schema_json_, nullptr, /*allow_exceptions=*/false))) {
    return Malformed("a schema with arrays or maps of items that take no bytes");
  }
  if (avro_schema_from_json_length(r->schema_json_.data(), r->schema_json_.size(), &r->schema_) != 0) {
    return AvroError("the file's schema");
  }
  r->iface_ = avro_generic_class_from_schema(r->schema_);
  if (r->iface_ == nullptr) return AvroError("value class");
  if (avro_generic_value_new(r->iface_, &r->value_) != 0) return AvroError("value");
  r->has_value_ = true;
  return r;
}

AvroFileReader::~AvroFileReader() {
  if (reader_ != nullptr) avro_reader_free(reader_);
  if (has_value_) avro_value_decref(&value_);
  if (iface_ != nullptr) avro_value_iface_decref(iface_);
  if (schema_ != nullptr) avro_schema_decref(schema_);
}

Status AvroFileReader::LoadBlock() {
  ARROW_ASSIGN_OR_RAISE(int64_t count, ReadLong(data_, &pos_));
  ARROW_ASSIGN_OR_RAISE(int64_t size, ReadLong(data_, &pos_));
  if (count < 0 || size < 0 || static_cast<uint64_t>(size) + 16 > data_.size() - pos_) {
    return Malformed("a block past the end");
  }
  std::string raw = data_.substr(pos_, static_cast<size_t>(size));
  pos_ += static_cast<size_t>(size);
  if (data_.compare(pos_, 16, sync_) != 0) return Malformed("a block without the sync marker");
  pos_ += 16;
  if (codec_ == "deflate") {
    ARROW_ASSIGN_OR_RAISE(block_, Inflate(raw));
  } else {
    block_ = std::move(raw);
  }
  if (count > static_cast<int64_t>(block_.size())) return Malformed("a block with more datums than bytes");
  if (reader_ != nullptr) avro_reader_free(reader_);
  reader_ = avro_reader_memory(block_.data(), static_cast<int64_t>(block_.size()));
  left_in_block_ = count;
  return Status::OK();
}

Result<avro_value_t*> AvroFileReader::Next() {
  while (left_in_block_ == 0) {
    if (pos_ >= data_.size()) return nullptr;
    ARROW_RETURN_NOT_OK(LoadBlock());
  }
  avro_value_reset(&value_);
  if (avro_value_read(reader_, &value_) != 0) return AvroError("decoding a datum");
  left_in_block_--;
  return &value_;
}

}  // namespace sediment::iceberg
