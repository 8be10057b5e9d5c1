// Manifests of other writers, read and re-written field by field with avro-c
// (manifest_edit.h). Names are the table spec's (format version 2), with the
// version-1 names some writers keep as alternatives.
#include "iceberg/manifest_edit.h"

#include <avro.h>
#include <fmt/format.h>

#include <functional>
#include <initializer_list>
#include <optional>

#include "iceberg/avro_file.h"

namespace sediment::iceberg {
namespace {

// The field of `record` named one of `names`, nullopt if it has none.
std::optional<avro_value_t> Field(avro_value_t* record, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    avro_value_t field;
    if (avro_value_get_by_name(record, name, &field, nullptr) == 0) return field;
  }
  return std::nullopt;
}

// A union's current branch (a non-union value as it is); nullopt for null.
std::optional<avro_value_t> Unwrapped(avro_value_t v) {
  if (avro_value_get_type(&v) == AVRO_UNION) {
    avro_value_t branch;
    if (avro_value_get_current_branch(&v, &branch) != 0) return std::nullopt;
    v = branch;
  }
  if (avro_value_get_type(&v) == AVRO_NULL) return std::nullopt;
  return v;
}

Result<int64_t> Long(avro_value_t* record, std::initializer_list<const char*> names, const char* what) {
  auto f = Field(record, names);
  auto v = f ? Unwrapped(*f) : std::nullopt;
  if (!v) return InvalidArgument(fmt::format("manifest: no {}", what));
  if (avro_value_get_type(&*v) == AVRO_INT32) {
    int32_t i = 0;
    avro_value_get_int(&*v, &i);
    return i;
  }
  int64_t l = 0;
  if (avro_value_get_long(&*v, &l) != 0) return InvalidArgument(fmt::format("manifest: {} is no number", what));
  return l;
}

Result<std::string> String(avro_value_t* record, const char* name) {
  auto f = Field(record, {name});
  auto v = f ? Unwrapped(*f) : std::nullopt;
  const char* s = nullptr;
  size_t n = 0;
  if (!v || avro_value_get_string(&*v, &s, &n) != 0) return InvalidArgument(fmt::format("manifest: no {}", name));
  return std::string(s, n > 0 ? n - 1 : 0);  // avro-c counts the NUL
}

// Sets `field` (a value or a union of null and it) to null, or to `set`'s value.
Status SetOptional(avro_value_t field, bool null, const std::function<Status(avro_value_t*)>& set, const char* what) {
  if (avro_value_get_type(&field) != AVRO_UNION) {
    if (null) return InvalidArgument(fmt::format("manifest: {} is required, cannot leave it out", what));
    return set(&field);
  }
  avro_schema_t schema = avro_value_get_schema(&field);
  for (size_t i = 0; i < avro_schema_union_size(schema); ++i) {
    avro_schema_t b = avro_schema_union_branch(schema, static_cast<int>(i));
    if (null != is_avro_null(b)) continue;
    avro_value_t branch;
    if (avro_value_set_branch(&field, static_cast<int>(i), &branch) != 0) return AvroError(what);
    return null ? (avro_value_set_null(&branch) == 0 ? Status::OK() : AvroError(what)) : set(&branch);
  }
  return InvalidArgument(fmt::format("manifest: {} has no {} branch", what, null ? "null" : "value"));
}

Status SetLong(avro_value_t* record, std::initializer_list<const char*> names, std::optional<int64_t> v,
               const char* what) {
  auto f = Field(record, names);
  if (!f) return v ? InvalidArgument(fmt::format("manifest: no {} field", what)) : Status::OK();
  return SetOptional(
      *f, !v.has_value(),
      [&](avro_value_t* x) {
        int rc = avro_value_get_type(x) == AVRO_INT32 ? avro_value_set_int(x, static_cast<int32_t>(*v))
                                                      : avro_value_set_long(x, *v);
        return rc == 0 ? Status::OK() : AvroError(what);
      },
      what);
}

}  // namespace

Result<std::vector<ListedManifest>> ReadManifestList(const std::string& avro) {
  ARROW_ASSIGN_OR_RAISE(auto r, AvroFileReader::Open(avro));
  std::vector<ListedManifest> out;
  while (true) {
    ARROW_ASSIGN_OR_RAISE(avro_value_t * v, r->Next());
    if (v == nullptr) return out;
    ListedManifest m;
    ARROW_ASSIGN_OR_RAISE(m.path, String(v, "manifest_path"));
    auto content = Long(v, {"content"}, "content");
    m.content = content.ok() ? static_cast<int32_t>(*content) : 0;  // format version 1: data only
    out.push_back(std::move(m));
  }
}

Result<std::vector<LiveFile>> ReadLiveFiles(const std::string& avro) {
  ARROW_ASSIGN_OR_RAISE(auto r, AvroFileReader::Open(avro));
  std::vector<LiveFile> out;
  while (true) {
    ARROW_ASSIGN_OR_RAISE(avro_value_t * v, r->Next());
    if (v == nullptr) return out;
    ARROW_ASSIGN_OR_RAISE(int64_t status, Long(v, {"status"}, "status"));
    if (status == 2) continue;  // DELETED
    auto file = Field(v, {"data_file"});
    if (!file) return InvalidArgument("manifest: an entry without data_file");
    LiveFile f;
    ARROW_ASSIGN_OR_RAISE(f.path, String(&*file, "file_path"));
    ARROW_ASSIGN_OR_RAISE(f.records, Long(&*file, {"record_count"}, "record_count"));
    ARROW_ASSIGN_OR_RAISE(f.size, Long(&*file, {"file_size_in_bytes"}, "file_size_in_bytes"));
    out.push_back(std::move(f));
  }
}

Result<CopiedManifest> CopyAsAdded(const std::string& avro, const std::set<std::string>& paths, int64_t snapshot_id) {
  ARROW_ASSIGN_OR_RAISE(auto r, AvroFileReader::Open(avro));
  ARROW_ASSIGN_OR_RAISE(auto w, AvroFileWriter::Make(r->schema_json(), r->metadata()));
  CopiedManifest out;
  while (true) {
    ARROW_ASSIGN_OR_RAISE(avro_value_t * v, r->Next());
    if (v == nullptr) break;
    ARROW_ASSIGN_OR_RAISE(int64_t status, Long(v, {"status"}, "status"));
    auto file = Field(v, {"data_file"});
    if (status == 2 || !file) continue;
    ARROW_ASSIGN_OR_RAISE(auto path, String(&*file, "file_path"));
    if (!paths.count(path)) continue;
    ARROW_RETURN_NOT_OK(SetLong(v, {"status"}, 1, "status"));
    ARROW_RETURN_NOT_OK(SetLong(v, {"snapshot_id"}, snapshot_id, "snapshot_id"));
    ARROW_RETURN_NOT_OK(SetLong(v, {"sequence_number"}, std::nullopt, "sequence_number"));
    ARROW_RETURN_NOT_OK(SetLong(v, {"file_sequence_number"}, std::nullopt, "file_sequence_number"));
    ARROW_RETURN_NOT_OK(w->Append(v));
    out.files++;
    ARROW_ASSIGN_OR_RAISE(int64_t records, Long(&*file, {"record_count"}, "record_count"));
    ARROW_ASSIGN_OR_RAISE(int64_t size, Long(&*file, {"file_size_in_bytes"}, "file_size_in_bytes"));
    out.records += records;
    out.size += size;
  }
  ARROW_ASSIGN_OR_RAISE(out.avro, w->Finish());
  return out;
}

namespace {

// A new manifest_file record: every field set, unknown optional ones null.
Status FillListed(avro_value_t* rec, const NewManifest& m, int64_t snapshot_id, int64_t sequence) {
  size_t n = 0;
  avro_value_get_size(rec, &n);
  for (size_t i = 0; i < n; ++i) {
    avro_value_t field;
    const char* name = nullptr;
    avro_value_get_by_index(rec, i, &field, &name);
    if (avro_value_get_type(&field) == AVRO_UNION) ARROW_RETURN_NOT_OK(SetOptional(field, true, nullptr, name));
  }
  auto path = Field(rec, {"manifest_path"});
  if (!path || avro_value_set_string_len(&*path, m.path.c_str(), m.path.size() + 1) != 0) {
    return InvalidArgument("manifest list: no manifest_path");
  }
  const auto& c = m.counts;
  ARROW_RETURN_NOT_OK(SetLong(rec, {"manifest_length"}, m.length, "manifest_length"));
  ARROW_RETURN_NOT_OK(SetLong(rec, {"partition_spec_id"}, m.spec_id, "partition_spec_id"));
  ARROW_RETURN_NOT_OK(SetLong(rec, {"content"}, 0, "content"));
  ARROW_RETURN_NOT_OK(SetLong(rec, {"sequence_number"}, sequence, "sequence_number"));
  ARROW_RETURN_NOT_OK(SetLong(rec, {"min_sequence_number"}, sequence, "min_sequence_number"));
  ARROW_RETURN_NOT_OK(SetLong(rec, {"added_snapshot_id"}, snapshot_id, "added_snapshot_id"));
  ARROW_RETURN_NOT_OK(SetLong(rec, {"added_files_count", "added_data_files_count"}, c.files, "added_files_count"));
  ARROW_RETURN_NOT_OK(SetLong(rec, {"existing_files_count", "existing_data_files_count"}, 0, "existing_files_count"));
  ARROW_RETURN_NOT_OK(SetLong(rec, {"deleted_files_count", "deleted_data_files_count"}, 0, "deleted_files_count"));
  ARROW_RETURN_NOT_OK(SetLong(rec, {"added_rows_count"}, c.records, "added_rows_count"));
  ARROW_RETURN_NOT_OK(SetLong(rec, {"existing_rows_count"}, 0, "existing_rows_count"));
  ARROW_RETURN_NOT_OK(SetLong(rec, {"deleted_rows_count"}, 0, "deleted_rows_count"));
  return Status::OK();
}

}  // namespace

Result<std::string> ExtendManifestList(const std::string& list, const std::vector<NewManifest>& added,
                                       int64_t snapshot_id, int64_t parent_id, int64_t sequence) {
  ARROW_ASSIGN_OR_RAISE(auto r, AvroFileReader::Open(list));
  auto header = r->metadata();
  header["snapshot-id"] = std::to_string(snapshot_id);
  header["parent-snapshot-id"] = std::to_string(parent_id);
  header["sequence-number"] = std::to_string(sequence);
  ARROW_ASSIGN_OR_RAISE(auto w, AvroFileWriter::Make(r->schema_json(), header));
  while (true) {
    ARROW_ASSIGN_OR_RAISE(avro_value_t * v, r->Next());
    if (v == nullptr) break;
    ARROW_RETURN_NOT_OK(w->Append(v));
  }
  for (const auto& m : added) {
    ARROW_RETURN_NOT_OK(FillListed(w->Next(), m, snapshot_id, sequence));
    ARROW_RETURN_NOT_OK(w->Append());
  }
  return w->Finish();
}

}  // namespace sediment::iceberg
