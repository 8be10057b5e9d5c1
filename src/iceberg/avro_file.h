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

// Writes `v` as an Avro long (zig-zag varint) to `out`.
void AppendAvroLong(int64_t v, std::string* out);

// Avro's error text for the last avro-c failure, as a Status.
Status AvroError(const std::string& what);

}  // namespace sediment::iceberg
