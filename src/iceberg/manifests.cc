#include "iceberg/manifests.h"

#include <fmt/format.h>

#include "iceberg/avro_file.h"

namespace sediment::iceberg {
namespace {

// An Iceberg map<int, V> in Avro: an array of key/value records.
std::string IntMap(int id, int key_id, int value_id, const char* value_type) {
  return fmt::format(
      R"({{"name":"{}","type":["null",{{"type":"array","logicalType":"map","items":{{"type":"record","name":"k{}_v{}",)"
      R"("fields":[{{"name":"key","type":"int","field-id":{}}},{{"name":"value","type":"{}","field-id":{}}}]}}}}],)"
      R"("default":null,"field-id":{}}})",
      id == 108   ? "column_sizes"
      : id == 109 ? "value_counts"
      : id == 110 ? "null_value_counts"
      : id == 125 ? "lower_bounds"
                  : "upper_bounds",
      key_id, value_id, key_id, value_type, value_id, id);
}

std::string ManifestEntrySchema() {
  std::string data_file = std::string(R"({"type":"record","name":"r2","fields":[)") +
                          R"({"name":"content","type":"int","field-id":134},)"
                          R"({"name":"file_path","type":"string","field-id":100},)"
                          R"({"name":"file_format","type":"string","field-id":101},)"
                          R"({"name":"partition","type":{"type":"record","name":"r102","fields":[]},"field-id":102},)"
                          R"({"name":"record_count","type":"long","field-id":103},)"
                          R"({"name":"file_size_in_bytes","type":"long","field-id":104},)" +
                          IntMap(108, 117, 118, "long") + "," + IntMap(109, 119, 120, "long") + "," +
                          IntMap(110, 121, 122, "long") + "," + IntMap(125, 126, 127, "bytes") + "," +
                          IntMap(128, 129, 130, "bytes") + "," +
                          R"({"name":"sort_order_id","type":["null","int"],"default":null,"field-id":140}]})";
  return std::string(R"({"type":"record","name":"manifest_entry","fields":[)") +
         R"({"name":"status","type":"int","field-id":0},)"
         R"({"name":"snapshot_id","type":["null","long"],"default":null,"field-id":1},)"
         R"({"name":"sequence_number","type":["null","long"],"default":null,"field-id":3},)"
         R"({"name":"file_sequence_number","type":["null","long"],"default":null,"field-id":4},)"
         R"({"name":"data_file","type":)" +
         data_file + R"(,"field-id":2}]})";
}

const char* kManifestFileSchema = R"({"type":"record","name":"manifest_file","fields":[)"
                                  R"({"name":"manifest_path","type":"string","field-id":500},)"
                                  R"({"name":"manifest_length","type":"long","field-id":501},)"
                                  R"({"name":"partition_spec_id","type":"int","field-id":502},)"
                                  R"({"name":"content","type":"int","field-id":517},)"
                                  R"({"name":"sequence_number","type":"long","field-id":515},)"
                                  R"({"name":"min_sequence_number","type":"long","field-id":516},)"
                                  R"({"name":"added_snapshot_id","type":"long","field-id":503},)"
                                  R"({"name":"added_files_count","type":"int","field-id":504},)"
                                  R"({"name":"existing_files_count","type":"int","field-id":505},)"
                                  R"({"name":"deleted_files_count","type":"int","field-id":506},)"
                                  R"({"name":"added_rows_count","type":"long","field-id":512},)"
                                  R"({"name":"existing_rows_count","type":"long","field-id":513},)"
                                  R"({"name":"deleted_rows_count","type":"long","field-id":514}]})";

Result<avro_value_t> Field(avro_value_t* record, const char* name) {
  avro_value_t field;
  if (avro_value_get_by_name(record, name, &field, nullptr) != 0) return AvroError(name);
  return field;
}

#define AVRO_OK(expr, what)                  \
  do {                                       \
    if ((expr) != 0) return AvroError(what); \
  } while (false)

Status SetLong(avro_value_t* record, const char* name, int64_t v) {
  ARROW_ASSIGN_OR_RAISE(avro_value_t f, Field(record, name));
  AVRO_OK(avro_value_set_long(&f, v), name);
  return Status::OK();
}
Status SetInt(avro_value_t* record, const char* name, int32_t v) {
  ARROW_ASSIGN_OR_RAISE(avro_value_t f, Field(record, name));
  AVRO_OK(avro_value_set_int(&f, v), name);
  return Status::OK();
}
Status SetString(avro_value_t* record, const char* name, const std::string& v) {
  ARROW_ASSIGN_OR_RAISE(avro_value_t f, Field(record, name));
  AVRO_OK(avro_value_set_string_len(&f, v.c_str(), v.size() + 1), name);
  return Status::OK();
}
// An optional long: the union's second branch.
Status SetOptionalLong(avro_value_t* record, const char* name, int64_t v) {
  ARROW_ASSIGN_OR_RAISE(avro_value_t u, Field(record, name));
  avro_value_t branch;
  AVRO_OK(avro_value_set_branch(&u, 1, &branch), name);
  AVRO_OK(avro_value_set_long(&branch, v), name);
  return Status::OK();
}
Status SetNull(avro_value_t* record, const char* name) {
  ARROW_ASSIGN_OR_RAISE(avro_value_t u, Field(record, name));
  avro_value_t branch;
  AVRO_OK(avro_value_set_branch(&u, 0, &branch), name);
  AVRO_OK(avro_value_set_null(&branch), name);
  return Status::OK();
}

// A map<int, long> or map<int, bytes> from the columns' figures; `get` returns nullopt to leave a column out.
template <typename Get>
Status SetIntMap(avro_value_t* record, const char* name, const std::map<int, ColumnStats>& columns, Get get) {
  ARROW_ASSIGN_OR_RAISE(avro_value_t u, Field(record, name));
  avro_value_t array;
  AVRO_OK(avro_value_set_branch(&u, 1, &array), name);
  for (const auto& [id, stats] : columns) {
    auto v = get(stats);
    if (!v) continue;
    avro_value_t item, key, value;
    AVRO_OK(avro_value_append(&array, &item, nullptr), name);
    AVRO_OK(avro_value_get_by_name(&item, "key", &key, nullptr), name);
    AVRO_OK(avro_value_get_by_name(&item, "value", &value, nullptr), name);
    AVRO_OK(avro_value_set_int(&key, id), name);
    if constexpr (std::is_same_v<std::decay_t<decltype(*v)>, std::string>) {
      AVRO_OK(avro_value_set_bytes(&value, const_cast<char*>(v->data()), v->size()), name);
    } else {
      AVRO_OK(avro_value_set_long(&value, *v), name);
    }
  }
  return Status::OK();
}

Status FillDataFile(avro_value_t* df, const DataFile& f) {
  ARROW_RETURN_NOT_OK(SetInt(df, "content", 0));
  ARROW_RETURN_NOT_OK(SetString(df, "file_path", f.uri));
  ARROW_RETURN_NOT_OK(SetString(df, "file_format", "PARQUET"));
  ARROW_RETURN_NOT_OK(SetLong(df, "record_count", f.rows));
  ARROW_RETURN_NOT_OK(SetLong(df, "file_size_in_bytes", f.size));
  using Opt = std::optional<int64_t>;
  using OptBytes = std::optional<std::string>;
  ARROW_RETURN_NOT_OK(SetIntMap(df, "column_sizes", f.columns, [](const ColumnStats& s) { return Opt(s.size); }));
  ARROW_RETURN_NOT_OK(SetIntMap(df, "value_counts", f.columns, [](const ColumnStats& s) { return Opt(s.values); }));
  ARROW_RETURN_NOT_OK(SetIntMap(df, "null_value_counts", f.columns,
                                [](const ColumnStats& s) { return s.nulls < 0 ? Opt() : Opt(s.nulls); }));
  ARROW_RETURN_NOT_OK(SetIntMap(df, "lower_bounds", f.columns, [](const ColumnStats& s) { return OptBytes(s.lower); }));
  ARROW_RETURN_NOT_OK(SetIntMap(df, "upper_bounds", f.columns, [](const ColumnStats& s) { return OptBytes(s.upper); }));
  return SetNull(df, "sort_order_id");
}

}  // namespace

Result<std::string> WriteManifest(const std::vector<ManifestEntry>& entries, const std::string& schema_json,
                                  int schema_id) {
  ARROW_ASSIGN_OR_RAISE(auto writer,
                        AvroFileWriter::Make(ManifestEntrySchema(), {{"schema", schema_json},
                                                                     {"schema-id", std::to_string(schema_id)},
                                                                     {"partition-spec", "[]"},
                                                                     {"partition-spec-id", "0"},
                                                                     {"format-version", "2"},
                                                                     {"content", "data"}}));
  for (const ManifestEntry& e : entries) {
    avro_value_t* rec = writer->Next();
    ARROW_RETURN_NOT_OK(SetInt(rec, "status", static_cast<int32_t>(e.status)));
    ARROW_RETURN_NOT_OK(SetOptionalLong(rec, "snapshot_id", e.snapshot_id));
    ARROW_RETURN_NOT_OK(SetOptionalLong(rec, "sequence_number", e.sequence));
    ARROW_RETURN_NOT_OK(SetOptionalLong(rec, "file_sequence_number", e.sequence));
    ARROW_ASSIGN_OR_RAISE(avro_value_t df, Field(rec, "data_file"));
    ARROW_RETURN_NOT_OK(FillDataFile(&df, e.file));
    ARROW_RETURN_NOT_OK(writer->Append());
  }
  return writer->Finish();
}

Result<std::string> WriteManifestList(const std::vector<ManifestFile>& manifests, int64_t snapshot_id,
                                      std::optional<int64_t> parent_id, int64_t sequence) {
  ARROW_ASSIGN_OR_RAISE(auto writer,
                        AvroFileWriter::Make(kManifestFileSchema,
                                             {{"snapshot-id", std::to_string(snapshot_id)},
                                              {"parent-snapshot-id", parent_id ? std::to_string(*parent_id) : "null"},
                                              {"sequence-number", std::to_string(sequence)},
                                              {"format-version", "2"}}));
  for (const ManifestFile& m : manifests) {
    avro_value_t* rec = writer->Next();
    ARROW_RETURN_NOT_OK(SetString(rec, "manifest_path", m.uri));
    ARROW_RETURN_NOT_OK(SetLong(rec, "manifest_length", m.length));
    ARROW_RETURN_NOT_OK(SetInt(rec, "partition_spec_id", 0));
    ARROW_RETURN_NOT_OK(SetInt(rec, "content", 0));
    ARROW_RETURN_NOT_OK(SetLong(rec, "sequence_number", m.sequence));
    ARROW_RETURN_NOT_OK(SetLong(rec, "min_sequence_number", m.min_sequence));
    ARROW_RETURN_NOT_OK(SetLong(rec, "added_snapshot_id", m.added_snapshot_id));
    ARROW_RETURN_NOT_OK(SetInt(rec, "added_files_count", m.added_files));
    ARROW_RETURN_NOT_OK(SetInt(rec, "existing_files_count", m.existing_files));
    ARROW_RETURN_NOT_OK(SetInt(rec, "deleted_files_count", m.deleted_files));
    ARROW_RETURN_NOT_OK(SetLong(rec, "added_rows_count", m.added_rows));
    ARROW_RETURN_NOT_OK(SetLong(rec, "existing_rows_count", m.existing_rows));
    ARROW_RETURN_NOT_OK(SetLong(rec, "deleted_rows_count", m.deleted_rows));
    ARROW_RETURN_NOT_OK(writer->Append());
  }
  return writer->Finish();
}

}  // namespace sediment::iceberg
