// AvroFileWriter: an Avro object container file (Avro 1.11 specification,
// "Object Container Files") built in memory, as Iceberg's manifests and
// manifest lists are: the datums are encoded by Apache Avro C (avro-c), the
// header is written here because Iceberg needs what avro-c's file writer
// cannot give — the schema text with its "field-id" attributes kept, and
// key-value metadata of its own. Blocks are compressed with the "deflate"
// codec (raw deflate), which every Iceberg reader supports.
//
//   ARROW_ASSIGN_OR_RAISE(auto w, AvroFileWriter::Make(schema_json, {{"format-version", "2"}}));
//   avro_value_t* rec = w->Next();         // a cleared record of the schema
//   ... avro_value_get_by_name(rec, "status", &field, nullptr); avro_value_set_int(&field, 1); ...
//   ARROW_RETURN_NOT_OK(w->Append());
//   ARROW_ASSIGN_OR_RAISE(std::string bytes, w->Finish());
//
// Thread-safety: one thread at a time.
#pragma once

#include <avro.h>

#include <map>
#include <memory>
#include <string>

#include "base/status.h"

namespace sediment::iceberg {

class AvroFileWriter {
 public:
  // `schema_json` is written to the header as given (Iceberg's attributes
  // included) and parsed by avro-c to encode the datums.
  static Result<std::unique_ptr<AvroFileWriter>> Make(const std::string& schema_json,
                                                      const std::map<std::string, std::string>& metadata);
  ~AvroFileWriter();
  AvroFileWriter(const AvroFileWriter&) = delete;
  AvroFileWriter& operator=(const AvroFileWriter&) = delete;

  // The record to fill for the next Append(), reset to its defaults.
  avro_value_t* Next();
  // Encodes the filled record into the current block.
  Status Append();
  // Encodes `value` (a datum of the same schema, e.g. read by AvroFileReader).
  Status Append(avro_value_t* value);
  // The whole file.
  Result<std::string> Finish();
  int64_t count() const { return total_; }

 private:
  AvroFileWriter() = default;
  Status FlushBlock();

  avro_schema_t schema_ = nullptr;
  avro_value_iface_t* iface_ = nullptr;
  avro_value_t value_{};
  bool has_value_ = false;
  std::string out_;    // the file so far
  std::string block_;  // encoded datums of the current block
  int64_t in_block_ = 0, total_ = 0;
  std::string sync_;  // 16 random bytes
};

// AvroFileReader: the datums of an Avro object container file of any writer
// schema, with the "null" or "deflate" codec (what Iceberg's writers use for
// manifests and manifest lists), decoded by avro-c with that schema.
//
//   ARROW_ASSIGN_OR_RAISE(auto r, AvroFileReader::Open(bytes));
//   while (true) {
//     ARROW_ASSIGN_OR_RAISE(avro_value_t* v, r->Next());   // null at the end
//     if (v == nullptr) break;
//     ...
//   }
class AvroFileReader {
 public:
  // InvalidArgument (naming what) for a file that is not an Avro container.
  static Result<std::unique_ptr<AvroFileReader>> Open(std::string data);
  ~AvroFileReader();
  AvroFileReader(const AvroFileReader&) = delete;
  AvroFileReader& operator=(const AvroFileReader&) = delete;

  const std::string& schema_json() const { return schema_json_; }
  // The header's key-value metadata, without avro.schema and avro.codec.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The next datum (valid until the next call), or nullptr after the last.
  Result<avro_value_t*> Next();

 private:
  AvroFileReader() = default;
  Status LoadBlock();

  std::string data_;
  size_t pos_ = 0;
  std::string schema_json_, codec_, sync_;
  std::map<std::string, std::string> metadata_;
  avro_schema_t schema_ = nullptr;
  avro_value_iface_t* iface_ = nullptr;
  avro_value_t value_{};
  bool has_value_ = false;
  std::string block_;  // the current block, decompressed
  avro_reader_t reader_ = nullptr;
  int64_t left_in_block_ = 0;
};

// Writes `v` as an Avro long (zig-zag varint) to `out`.
void AppendAvroLong(int64_t v, std::string* out);

// Avro's error text for the last avro-c failure, as a Status.
Status AvroError(const std::string& what);

}  // namespace sediment::iceberg
