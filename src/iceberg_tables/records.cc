#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/codec.h"
#include "base/crypto.h"
#include "iceberg_tables/records_internal.h"
#include "table/stored_types.h"

namespace sediment::iceberg {
namespace {

using nlohmann::json;

json ManifestFileJson(const ManifestFile& m) {
  return {{"uri", m.uri},
          {"length", m.length},
          {"added_snapshot_id", m.added_snapshot_id},
          {"seq", m.sequence},
          {"min_seq", m.min_sequence},
          {"files", {m.added_files, m.existing_files, m.deleted_files}},
          {"rows", {m.added_rows, m.existing_rows, m.deleted_rows}}};
}

ManifestFile ManifestFileOf(const json& j) {
  ManifestFile m;
  m.uri = j.at("uri").get<std::string>();
  m.length = j.at("length").get<int64_t>();
  m.added_snapshot_id = j.at("added_snapshot_id").get<int64_t>();
  m.sequence = j.at("seq").get<int64_t>();
  m.min_sequence = j.at("min_seq").get<int64_t>();
  const auto& f = j.at("files");
  m.added_files = f.at(0).get<int32_t>();
  m.existing_files = f.at(1).get<int32_t>();
  m.deleted_files = f.at(2).get<int32_t>();
  const auto& r = j.at("rows");
  m.added_rows = r.at(0).get<int64_t>();
  m.existing_rows = r.at(1).get<int64_t>();
  m.deleted_rows = r.at(2).get<int64_t>();
  return m;
}

json OptionalHex(const std::optional<std::string>& v) { return v ? json(Hex(*v)) : json(nullptr); }

Result<std::optional<std::string>> HexOf(const json& j) {
  if (j.is_null()) return std::optional<std::string>();
  auto raw = HexDecode(j.get<std::string>());
  if (!raw) return InvalidArgument("iceberg: a stored bound is not hex");
  return raw;
}

template <typename F>
auto Decoding(const char* what, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {  // json's, and std::stoi's
    return InvalidArgument(fmt::format("iceberg: a stored {} record does not decode: {}", what, e.what()));
  }
}

}  // namespace

std::string TableUuid(const table::TableInfo& info) {
  std::string h = Sha256Hex(fmt::format("{}/{}", info.id.ToString(), info.created_at_us)).substr(0, 32);
  h[12] = '4';                               // version 4 (random-looking)
  h[16] = "89ab"[HexDigitValue(h[16]) & 3];  // the RFC 4122 variant
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20);
}

std::string EncodeHead(const Head& h) {
  json manifests = json::array();
  for (const auto& m : h.manifests) {
    manifests.push_back({{"id", m.id},
                         {"path", m.path},
                         {"file", ManifestFileJson(m.file)},
                         {"first", m.first},
                         {"digest", m.digest},
                         {"live_files", m.live_files}});
  }
  return json{{"v", 1},
              {"uuid", h.uuid},
              {"token", h.token},
              {"seq", h.seq},
              {"snapshot_id", h.snapshot_id},
              {"ts_ms", h.ts_ms},
              {"expires_floor_ms", h.expires_floor_ms},
              {"manifests", manifests}}
      .dump();
}

Result<Head> DecodeHead(const std::string& text) {
  return Decoding("head", [&]() -> Result<Head> {
    json j = json::parse(text);
    Head h;
    h.uuid = j.at("uuid").get<std::string>();
    h.token = j.at("token").get<std::string>();
    h.seq = j.at("seq").get<int64_t>();
    h.snapshot_id = j.at("snapshot_id").get<int64_t>();
    h.ts_ms = j.at("ts_ms").get<int64_t>();
    h.expires_floor_ms = j.at("expires_floor_ms").get<int64_t>();
    for (const auto& m : j.at("manifests")) {
      h.manifests.push_back({m.at("id").get<std::string>(), m.at("path").get<std::string>(),
                             ManifestFileOf(m.at("file")), m.at("first").get<uint64_t>(),
                             m.at("digest").get<std::string>(), m.at("live_files").get<int64_t>()});
    }
    return h;
  });
}

std::vector<std::shared_ptr<arrow::Schema>> Versions(const table::TableInfo& info) {
  auto out = info.history;
  out.push_back(info.schema);
  return out;
}

Result<IcebergSchema> IcebergSchemaOf(const table::TableInfo& info) {
  return ToIcebergSchema(Versions(info), std::string(table::kStoreMicrosKey), std::string(table::kStoreBinaryKey));
}

std::string EncodeSnapshot(const SnapshotRecord& s) {
  return json{{"v", 1},
              {"id", s.id},
              {"parent", s.parent},
              {"seq", s.seq},
              {"ts_ms", s.ts_ms},
              {"expires_ms", s.expires_ms},
              {"list_path", s.list_path},
              {"summary", s.summary},
              {"schema_id", s.schema_id}}
      .dump();
}

Result<SnapshotRecord> DecodeSnapshot(const std::string& text) {
  return Decoding("snapshot", [&]() -> Result<SnapshotRecord> {
    json j = json::parse(text);
    SnapshotRecord s;
    s.id = j.at("id").get<int64_t>();
    s.parent = j.at("parent").get<int64_t>();
    s.seq = j.at("seq").get<int64_t>();
    s.ts_ms = j.at("ts_ms").get<int64_t>();
    s.expires_ms = j.at("expires_ms").get<int64_t>();
    s.list_path = j.at("list_path").get<std::string>();
    s.summary = j.at("summary").get<std::map<std::string, std::string>>();
    s.schema_id = j.value("schema_id", 0);
    return s;
  });
}

std::string EncodeEntries(const std::vector<LiveEntry>& entries) {
  json out = json::array();
  for (const auto& e : entries) {
    json columns = json::object();
    for (const auto& [id, c] : e.file.columns) {
      columns[std::to_string(id)] = {c.size, c.values, c.nulls, OptionalHex(c.lower), OptionalHex(c.upper)};
    }
    out.push_back({{"snap", e.snapshot_id},
                   {"seq", e.seq},
                   {"path", e.file.path},
                   {"uri", e.file.uri},
                   {"seg", e.file.segment_id},
                   {"blocks", {e.file.start, e.file.end}},
                   {"eh", e.file.end_hash},
                   {"rows", e.file.rows},
                   {"size", e.file.size},
                   {"cols", columns}});
  }
  return json{{"v", 1}, {"entries", out}}.dump();
}

Result<std::vector<LiveEntry>> DecodeEntries(const std::string& text) {
  return Decoding("manifest entries", [&]() -> Result<std::vector<LiveEntry>> {
    json j = json::parse(text);
    std::vector<LiveEntry> out;
    for (const auto& e : j.at("entries")) {
      LiveEntry le;
      le.snapshot_id = e.at("snap").get<int64_t>();
      le.seq = e.at("seq").get<int64_t>();
      le.file.path = e.at("path").get<std::string>();
      le.file.uri = e.at("uri").get<std::string>();
      le.file.segment_id = e.at("seg").get<std::string>();
      le.file.start = e.at("blocks").at(0).get<uint64_t>();
      le.file.end = e.at("blocks").at(1).get<uint64_t>();
      le.file.end_hash = e.at("eh").get<std::string>();
      le.file.rows = e.at("rows").get<int64_t>();
      le.file.size = e.at("size").get<int64_t>();
      for (const auto& [id, c] : e.at("cols").items()) {
        ColumnStats s{c.at(0).get<int64_t>(), c.at(1).get<int64_t>(), c.at(2).get<int64_t>(), {}, {}};
        ARROW_ASSIGN_OR_RAISE(s.lower, HexOf(c.at(3)));
        ARROW_ASSIGN_OR_RAISE(s.upper, HexOf(c.at(4)));
        le.file.columns[std::stoi(id)] = std::move(s);
      }
      out.push_back(std::move(le));
    }
    return out;
  });
}

}  // namespace sediment::iceberg
