#include "table/segment.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/codec.h"
#include "base/crypto.h"

namespace sediment::table {
namespace {

using nlohmann::json;

Result<json> ParseVersioned(std::string_view text, const char* what) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument(fmt::format("{}: not a JSON object", what));
  if (!j.contains("v") || !j["v"].is_number_integer()) {
    return InvalidArgument(fmt::format("{}: no format version", what));
  }
  int v = j["v"].get<int>();
  if (v != kSegmentFormatVersion) {
    return InvalidArgument(
        fmt::format("{}: format version {} is not supported (this build reads {})", what, v, kSegmentFormatVersion));
  }
  return j;
}

template <typename T>
Status Field(const json& j, const char* key, T* out, const char* what) {
  auto it = j.find(key);
  if (it == j.end()) return InvalidArgument(fmt::format("{}: missing \"{}\"", what, key));
  try {
    *out = it->template get<T>();
  } catch (const json::exception& e) {
    return InvalidArgument(fmt::format("{}: bad \"{}\": {}", what, key, e.what()));
  }
  return Status::OK();
}

json CommonJson(const SegmentRecord& s) {
  return json{{"v", kSegmentFormatVersion},
              {"id", s.id},
              {"start", s.start},
              {"end", s.end},
              {"end_hash", s.end_hash},
              {"parent_hash", s.parent_hash},
              {"generation", s.generation},
              {"parents", s.parents.get()},
              {"created_at_us", s.created_at_us},
              {"storage", s.storage}};
}

Status DecodeCommon(const json& j, SegmentRecord* s, const char* what) {
  ARROW_RETURN_NOT_OK(Field(j, "id", &s->id, what));
  ARROW_RETURN_NOT_OK(Field(j, "start", &s->start, what));
  ARROW_RETURN_NOT_OK(Field(j, "end", &s->end, what));
  ARROW_RETURN_NOT_OK(Field(j, "end_hash", &s->end_hash, what));
  ARROW_RETURN_NOT_OK(Field(j, "parent_hash", &s->parent_hash, what));
  ARROW_RETURN_NOT_OK(Field(j, "generation", &s->generation, what));
  std::vector<std::string> parents;
  ARROW_RETURN_NOT_OK(Field(j, "parents", &parents, what));
  s->parents = std::move(parents);
  ARROW_RETURN_NOT_OK(Field(j, "created_at_us", &s->created_at_us, what));
  s->storage = 0;
  if (j.contains("storage")) ARROW_RETURN_NOT_OK(Field(j, "storage", &s->storage, what));
  if (s->end < s->start) return InvalidArgument(fmt::format("{}: end {} < start {}", what, s->end, s->start));
  return Status::OK();
}

}  // namespace

std::string EncodeSegmentRecord(const SegmentRecord& s) {
  json j = CommonJson(s);
  j["path"] = s.path;
  j["rows"] = s.rows;
  j["bytes"] = s.bytes;
  j["stored_bytes"] = s.stored_bytes;
  return j.dump();
}

Result<SegmentRecord> DecodeSegmentRecord(std::string_view text) {
  const char* what = "segment record";
  ARROW_ASSIGN_OR_RAISE(json j, ParseVersioned(text, what));
  SegmentRecord s;
  ARROW_RETURN_NOT_OK(DecodeCommon(j, &s, what));
  ARROW_RETURN_NOT_OK(Field(j, "path", &s.path, what));
  ARROW_RETURN_NOT_OK(Field(j, "rows", &s.rows, what));
  ARROW_RETURN_NOT_OK(Field(j, "bytes", &s.bytes, what));
  ARROW_RETURN_NOT_OK(Field(j, "stored_bytes", &s.stored_bytes, what));
  return s;
}

std::string EncodeSegmentFileMetadata(const SegmentRecord& s) {
  json j = CommonJson(s);
  if (s.parents.size() > kFileParentsListed) {
    j.erase("parents");
    j["parents_count"] = s.parents.size();
  }
  return j.dump();
}

Result<SegmentRecord> DecodeSegmentFileMetadata(std::string_view text) {
  const char* what = "segment file metadata";
  ARROW_ASSIGN_OR_RAISE(json j, ParseVersioned(text, what));
  if (!j.contains("parents") && j.contains("parents_count")) j["parents"] = json::array();  // not listed
  SegmentRecord s;
  ARROW_RETURN_NOT_OK(DecodeCommon(j, &s, what));
  return s;
}

std::string NewSegmentId(uint64_t start, uint32_t writer_tag) {
  uint64_t bits = RandomUint64();
  if (writer_tag != 0) bits = (static_cast<uint64_t>(writer_tag) << 32) | (bits & 0xffffffffu);
  return fmt::format("{:09}-{:016x}", start, bits);
}

uint32_t WriterTag(std::string_view server_id) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : server_id) h = (h ^ c) * 16777619u;
  return h | 1u;  // never 0, which means "no tag"
}

std::optional<uint32_t> WriterTagOf(std::string_view name) {
  // <start:09+>-<16 hex>.parquet
  size_t dash = name.find('-');
  if (dash == std::string_view::npos || name.size() < dash + 1 + 16) return std::nullopt;
  const auto bytes = HexDecode(name.substr(dash + 1, 8));  // lower-case, as written
  if (!bytes) return std::nullopt;
  uint32_t tag = 0;
  for (unsigned char b : *bytes) tag = (tag << 8) | b;
  return tag;
}

Result<std::string> NormalizeHash(std::string_view what, std::string_view hex) {
  if (hex.size() < 2 || hex.size() > 128 || hex.size() % 2 != 0) {
    return InvalidArgument(
        fmt::format("{} \"{}\" must be 2 to 128 hex digits, an even number", what, hex.substr(0, 140)));
  }
  const auto bytes = HexDecode(hex, HexCase::kAny);
  if (!bytes) return InvalidArgument(fmt::format("{} \"{}\" has a character that is not a hex digit", what, hex));
  return Hex(*bytes);
}

std::string EncodeGcEntry(const GcEntry& e) {
  return json{{"v", kSegmentFormatVersion}, {"path", e.path}, {"id", e.id}, {"removed_at_us", e.removed_at_us}}.dump();
}

Result<GcEntry> DecodeGcEntry(std::string_view text) {
  const char* what = "GC manifest entry";
  ARROW_ASSIGN_OR_RAISE(json j, ParseVersioned(text, what));
  GcEntry e;
  ARROW_RETURN_NOT_OK(Field(j, "path", &e.path, what));
  ARROW_RETURN_NOT_OK(Field(j, "id", &e.id, what));
  ARROW_RETURN_NOT_OK(Field(j, "removed_at_us", &e.removed_at_us, what));
  return e;
}

}  // namespace sediment::table
