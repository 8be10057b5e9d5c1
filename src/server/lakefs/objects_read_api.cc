// lakeFS API handlers that read objects: download (GetObject), stat and
// listing, each with lakeFS's presigned variant (?presign=true).
#include <fmt/format.h>

#include <ctime>

#include "server/http/byte_range.h"
#include "server/http/errors.h"
#include "server/lakefs/api_internal.h"

namespace sediment::server::lakefs {
namespace {

// Appends `s` as a JSON string. Fast path for the common case; strings with
// non-ASCII bytes go through nlohmann (which replaces invalid UTF-8).
void AppendJsonString(std::string* out, std::string_view s) {
  for (unsigned char c : s) {
    if (c >= 0x80) {
      *out += json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
      return;
    }
  }
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\r':
        *out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          *out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

// An ObjectStatsList written directly: listing pages of 1,000 entries are the
// hottest responses, and building a json tree for each entry tripled their cost.
// `presigned`: each object's presigned GET URL (presign=true), in the order listed; none = addresses.
std::string ObjectListBody(const catalog::Repository& repo, const catalog::Page<catalog::ListItem>& page,
                           int64_t amount, const std::vector<std::string>* presigned = nullptr, int64_t expiry = 0) {
  std::string out;
  out.reserve(64 + page.items.size() * 320);
  std::string next = page.items.empty() ? "" : page.items.back().path;
  out +=
      R"({"pagination":)" +
      Pagination(page.has_more, next, page.items.size(), amount).dump(-1, ' ', false, json::error_handler_t::replace);
  out += R"(,"results":[)";
  bool first = true;
  for (const auto& item : page.items) {
    if (!first) out.push_back(',');
    first = false;
    out += R"({"path":)";
    AppendJsonString(&out, item.path);
    if (item.common_prefix) {
      out += R"(,"path_type":"common_prefix","physical_address":"","checksum":"","mtime":0})";
      continue;
    }
    const catalog::Entry& e = item.entry;
    out += R"(,"path_type":"object","physical_address":)";
    if (presigned != nullptr) {
      AppendJsonString(&out, (*presigned)[&item - page.items.data()]);
      out += fmt::format(R"(,"physical_address_expiry":{})", expiry);
    } else {
      AppendJsonString(&out, PhysicalAddress(repo, e.address));
    }
    out += R"(,"checksum":)";
    AppendJsonString(&out, e.checksum);
    out += fmt::format(R"(,"size_bytes":{},"mtime":{},"content_type":)", e.size, e.mtime);
    AppendJsonString(&out, e.content_type);
    out += R"(,"metadata":{)";
    bool first_meta = true;
    for (const auto& [k, v] : e.metadata) {
      if (!first_meta) out.push_back(',');
      first_meta = false;
      AppendJsonString(&out, k);
      out.push_back(':');
      AppendJsonString(&out, v);
    }
    out += "}}";
  }
  out += "]}";
  return out;
}

// The object a GET or HEAD of .../refs/{ref}/objects?path= names, once the
// caller may read it.
struct ReadTarget {
  catalog::Repository repo;
  std::string path;
  catalog::Entry entry;
  bool presign = false;  // ?presign=true: the answer points at the object store
};

Result<ReadTarget> ReadableObject(const Context& ctx, const Req& req, const std::string& /*me*/) {
  std::string repo_id = req.matches[1], refname = req.matches[2];
  if (!req.has_param("path")) return InvalidArgument("missing query parameter path");
  ReadTarget t;
  ARROW_ASSIGN_OR_RAISE(t.presign, BoolParam(req, "presign"));
  t.path = req.get_param_value("path");
  ARROW_ASSIGN_OR_RAISE(t.repo, ctx.cat->GetRepository(repo_id));
  ARROW_ASSIGN_OR_RAISE(t.entry, ctx.cat->GetEntry(repo_id, refname, t.path));
  return t;
}

}  // namespace

Status GetObject(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  ARROW_ASSIGN_OR_RAISE(auto t, ReadableObject(ctx, req, me));
  const auto& repo = t.repo;
  const auto& e = t.entry;
  std::string etag = "\"" + e.checksum + "\"";
  if (req.get_header_value("If-None-Match") == etag) {
    res.status = 304;
    return Status::OK();
  }
  if (t.presign) {  // lakeFS's answer: a redirect to the object store
    ARROW_ASSIGN_OR_RAISE(auto url, ctx.cat->PresignEntry(repo, e, "GET", kPresignSeconds));
    res.status = 302;
    res.set_header("Location", url);
    return Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(auto file, ctx.cat->OpenEntry(repo, e));  // imported objects are read where they are
  res.set_header("ETag", etag);
  res.set_header("Last-Modified", HttpDate(e.mtime));
  res.set_header("Accept-Ranges", "bytes");
  // Ranges are served here, clamped to the object (httplib's own handling does
  // not clamp, and would promise bytes past the end).
  bool unsatisfiable = false;
  auto range = ParseByteRange(req.get_header_value("Range"), e.size, &unsatisfiable);
  const_cast<Req&>(req).ranges.clear();
  if (unsatisfiable) {
    res.set_header("Content-Range", fmt::format("bytes */{}", e.size));
    ReplyError(res, 416,
               fmt::format("the range \"{}\" is not satisfiable for {} bytes", req.get_header_value("Range"), e.size));
    return Status::OK();
  }
  int64_t first = range ? range->first : 0, length = range ? range->length : e.size;
  res.status = 200;
  if (range) {
    res.status = 206;
    res.set_header("Content-Range", fmt::format("bytes {}-{}/{}", first, first + length - 1, e.size));
  }
  StreamObject(res, file, first, length, e.content_type);
  return Status::OK();
}

Status StatObject(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  ARROW_ASSIGN_OR_RAISE(auto t, ReadableObject(ctx, req, me));
  const auto& repo = t.repo;
  const auto& path = t.path;
  const auto& e = t.entry;
  json body = ObjectJson(repo, path, e);
  if (t.presign) {
    ARROW_ASSIGN_OR_RAISE(body["physical_address"], ctx.cat->PresignEntry(repo, e, "GET", kPresignSeconds));
    body["physical_address_expiry"] = static_cast<int64_t>(std::time(nullptr)) + kPresignSeconds;
  }
  if (req.has_param("user_metadata")) {
    ARROW_ASSIGN_OR_RAISE(bool with_metadata, BoolParam(req, "user_metadata"));
    if (!with_metadata) body.erase("metadata");
  }
  ReplyJson(res, 200, body);
  return Status::OK();
}

Status ListObjects(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  std::string repo_id = req.matches[1], refname = req.matches[2];
  ARROW_ASSIGN_OR_RAISE(bool presign, BoolParam(req, "presign"));
  ARROW_ASSIGN_OR_RAISE(auto o, ListParams(req));
  ARROW_ASSIGN_OR_RAISE(auto repo, ctx.cat->GetRepository(repo_id));
  ARROW_ASSIGN_OR_RAISE(auto page, ctx.cat->ListEntries(repo, refname, o));
  res.status = 200;
  if (!presign) {
    res.set_content(ObjectListBody(repo, page, o.amount), "application/json");
    return Status::OK();
  }
  // presign=true: each object's physical address is a GET URL of the object
  // store, as lakeFS answers (S3 storage only: elsewhere 501, as for stat).
  // A URL reads the object with no further check, so each one needs the
  // permission a read would: fs:ReadObject on every object listed.
  std::vector<std::string> urls(page.items.size());
  for (size_t i = 0; i < page.items.size(); ++i) {
    if (page.items[i].common_prefix) continue;
    ARROW_RETURN_NOT_OK(ctx.Allow(me, "fs:ReadObject", ObjectArn(repo_id, page.items[i].path)));
    ARROW_ASSIGN_OR_RAISE(urls[i], ctx.cat->PresignEntry(repo, page.items[i].entry, "GET", kPresignSeconds));
  }
  int64_t expiry = static_cast<int64_t>(std::time(nullptr)) + kPresignSeconds;
  res.set_content(ObjectListBody(repo, page, o.amount, &urls, expiry), "application/json");
  return Status::OK();
}

}  // namespace sediment::server::lakefs
