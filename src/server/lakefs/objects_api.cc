// lakeFS API handlers for objects: streamed upload, delete (one or many),
// download, stat and listing.
#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <fmt/format.h>

#include <charconv>
#include <ctime>

#include "base/ascii.h"
#include "base/crypto.h"
#include "base/failpoint.h"
#include "blob/blob.h"
#include "server/http/byte_range.h"
#include "server/http/errors.h"
#include "server/lakefs/api_internal.h"

namespace sediment::server::lakefs {
namespace {

using catalog::Catalog;

constexpr int64_t kMaxDeletePaths = 1000;

std::string PhysicalAddress(const catalog::Repository& repo, const std::string& address) {
  if (address.find("://") != std::string::npos) return address;
  std::string ns = repo.storage_namespace;
  if (ns.find("://") == std::string::npos) ns = "local://" + ns;
  return ns + "/" + address;
}

json ObjectJson(const catalog::Repository& repo, const std::string& path, const catalog::Entry& e) {
  return {
      {"path", path},           {"path_type", "object"},         {"physical_address", PhysicalAddress(repo, e.address)},
      {"checksum", e.checksum}, {"size_bytes", e.size},          {"mtime", e.mtime},
      {"metadata", e.metadata}, {"content_type", e.content_type}};
}

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

std::map<std::string, std::string> UserMetadata(const httplib::Request& req) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : req.headers) {
    std::string lower = AsciiLower(k);
    if (lower.rfind("x-lakefs-meta-", 0) == 0) out[lower.substr(14)] = v;
    // lakectl's own attributes (client mtime, symlink target, POSIX
    // permissions), kept under lakeFS's reserved prefix.
    if (lower.rfind("x-lakefs-internal-", 0) == 0) out["::lakefs::" + lower.substr(18)] = v;
  }
  return out;
}

// Streams the upload's content into `out`: the part named "content" of a
// multipart form, or else the whole body. Sets e's size, checksum and (from
// the part or the request) content type. A body that ends early or has no
// content part aborts `out`, so nothing is published.
Status ReceiveContent(const Req& req, const httplib::ContentReader& reader, arrow::io::OutputStream* out,
                      catalog::Entry* e) {
  Digest md5(DigestKind::kMd5);
  Status write_st;
  auto receive = [&](const char* data, size_t n) {
    write_st = out->Write(data, static_cast<int64_t>(n));
    md5.Update(data, n);
    e->size += static_cast<int64_t>(n);
    return write_st.ok();
  };
  bool complete;
  if (req.is_multipart_form_data()) {
    bool in_content = false, seen = false;
    complete = reader(
        [&](const httplib::MultipartFormData& part) {
          in_content = part.name == "content" && !seen;
          if (in_content) {
            seen = true;
            if (!part.content_type.empty()) e->content_type = part.content_type;
          }
          return true;
        },
        [&](const char* data, size_t n) { return in_content ? receive(data, n) : true; });
    if (complete && !seen) {
      (void)out->Abort();
      return InvalidArgument("multipart upload has no part named \"content\"");
    }
  } else {
    std::string ct = req.get_header_value("Content-Type");
    if (!ct.empty()) e->content_type = ct;
    complete = reader(receive);
  }
  ARROW_RETURN_NOT_OK(write_st);
  if (!complete) {
    (void)out->Abort();  // nothing is published; no entry is written
    return InvalidArgument("upload body ended early; nothing was stored");
  }
  e->checksum = md5.FinalHex();
  return Status::OK();
}

}  // namespace

Status UploadObject(const Context& ctx, const Req& req, Res& res, const httplib::ContentReader& reader,
                    const std::string& /*me*/) {
  std::string repo_id = req.matches[1], branch = req.matches[2];
  if (!req.has_param("path")) return InvalidArgument("missing query parameter path");
  std::string path = req.get_param_value("path");
  ARROW_RETURN_NOT_OK(Catalog::ValidatePath(path));
  std::string if_none_match = req.get_header_value("If-None-Match");
  if (!if_none_match.empty() && if_none_match != "*") {
    return InvalidArgument("If-None-Match supports only \"*\"");
  }
  ARROW_ASSIGN_OR_RAISE(bool force, BoolParam(req, "force"));
  ARROW_ASSIGN_OR_RAISE(auto repo, ctx.cat->GetRepository(repo_id));
  if (repo.read_only && !force) return Forbidden(fmt::format("repository \"{}\" is read-only", repo_id));
  ARROW_RETURN_NOT_OK(ctx.cat->GetBranch(repo_id, branch).status());
  ARROW_ASSIGN_OR_RAISE(auto ns, ctx.cat->RepositoryNamespace(repo));

  catalog::Entry e;
  e.address = catalog::NewDataAddress(std::time(nullptr));
  e.content_type = "application/octet-stream";
  ARROW_ASSIGN_OR_RAISE(auto out, ns->OpenWriter(e.address));
  ARROW_RETURN_NOT_OK(ReceiveContent(req, reader, out.get(), &e));
  ARROW_RETURN_NOT_OK(out->Close());
  e.mtime = std::time(nullptr);
  e.metadata = UserMetadata(req);
  SEDIMENT_FAILPOINT("catalog.upload.after_data");
  Status put = ctx.cat->PutEntry(repo, branch, path, e, if_none_match == "*", force);
  if (!put.ok()) {
    // Only an answer that proves nothing was staged frees the data; after any
    // other error the entry may have landed, and catalog GC takes the data
    // once nothing references it.
    if (IsPreconditionFailed(put) || IsForbidden(put) || IsInvalidArgument(put) || IsNotFound(put)) {
      (void)ns->Delete(e.address);
    }
    return put;
  }
  ReplyJson(res, 201, ObjectJson(repo, path, e));
  return Status::OK();
}

Status DeleteObject(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo = req.matches[1], branch = req.matches[2];
  if (!req.has_param("path")) return InvalidArgument("missing query parameter path");
  std::string path = req.get_param_value("path");
  ARROW_ASSIGN_OR_RAISE(bool force, BoolParam(req, "force"));
  // Deleting what is not there succeeds, as in lakeFS (and S3).
  ARROW_RETURN_NOT_OK(ctx.cat->DeleteEntries(repo, branch, {path}, force).status());
  res.status = 204;
  return Status::OK();
}

// Deletes the paths the caller may delete; the others are reported one by one.
Status DeleteObjects(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  std::string repo = req.matches[1], branch = req.matches[2];
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto paths, Field<std::vector<std::string>>(body, "paths"));
  if (static_cast<int64_t>(paths.size()) > kMaxDeletePaths) {
    return InvalidArgument(fmt::format("at most {} paths per request, got {}", kMaxDeletePaths, paths.size()));
  }
  json errors = json::array();
  std::vector<std::string> allowed;
  for (const auto& p : paths) {
    Status st = Catalog::ValidatePath(p);
    if (st.ok()) st = ctx.Allow(me, "fs:DeleteObject", ObjectArn(repo, p));
    if (st.ok()) {
      allowed.push_back(p);
    } else {
      errors.push_back({{"status_code", HttpStatusFor(st)}, {"message", st.message()}, {"path", p}});
    }
  }
  ARROW_ASSIGN_OR_RAISE(bool force, BoolParam(req, "force"));
  Status st = ctx.cat->DeleteEntries(repo, branch, allowed, force).status();
  if (IsForbidden(st)) {  // a protected branch or read-only repository: each path says so
    for (const auto& p : allowed) errors.push_back({{"status_code", 403}, {"message", st.message()}, {"path", p}});
  } else {
    ARROW_RETURN_NOT_OK(st);
  }
  ReplyJson(res, 200, {{"errors", errors}});
  return Status::OK();
}

namespace {

// The object a GET or HEAD of .../refs/{ref}/objects?path= names, once the
// caller may read it.
struct ReadTarget {
  catalog::Repository repo;
  std::string path;
  catalog::Entry entry;
  bool presign = false;  // ?presign=true: the answer points at the object store
};

// How long a presigned URL this server hands out lasts (lakeFS's default).
constexpr int64_t kPresignSeconds = 15 * 60;

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

// POST .../branches/{branch}/objects/copy?dest_path=: a new object with the
// source's content and metadata, its own copy of the data (lakeFS's
// "shallow" copy, sharing the data, is not offered).
Status CopyObject(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo_id = req.matches[1], branch = req.matches[2];
  if (!req.has_param("dest_path")) return InvalidArgument("missing query parameter dest_path");
  std::string dest = req.get_param_value("dest_path");
  ARROW_RETURN_NOT_OK(Catalog::ValidatePath(dest));
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto src_path, Field<std::string>(body, "src_path"));
  ARROW_ASSIGN_OR_RAISE(auto src_ref, Field<std::string>(body, "src_ref", branch));
  ARROW_ASSIGN_OR_RAISE(bool force, Field<bool>(body, "force", false));
  ARROW_ASSIGN_OR_RAISE(bool shallow, Field<bool>(body, "shallow", false));
  ARROW_ASSIGN_OR_RAISE(auto repo, ctx.cat->GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(ctx.cat->GetBranch(repo_id, branch).status());
  if (shallow) return NotImplemented("shallow copy is not implemented: copy without \"shallow\"");
  if (repo.read_only && !force) return Forbidden(fmt::format("repository \"{}\" is read-only", repo_id));
  ARROW_ASSIGN_OR_RAISE(auto e, ctx.cat->GetEntry(repo_id, src_ref, src_path));
  ARROW_ASSIGN_OR_RAISE(auto ns, ctx.cat->RepositoryNamespace(repo));
  bool copied = e.address.find("://") == std::string::npos;  // data elsewhere is shared as it is
  if (copied) {
    ARROW_ASSIGN_OR_RAISE(auto in, ns->OpenReader(e.address));
    std::string address = catalog::NewDataAddress(std::time(nullptr));
    ARROW_ASSIGN_OR_RAISE(auto out, ns->OpenWriter(address));
    if (Status st = blob::CopyBytes(in.get(), 0, e.size, out.get()); !st.ok()) {
      (void)out->Abort();
      return st;
    }
    ARROW_RETURN_NOT_OK(out->Close());
    e.address = address;
  }
  e.mtime = std::time(nullptr);
  Status put = ctx.cat->PutEntry(repo, branch, dest, e, /*if_absent=*/false, force);
  if (!put.ok()) {
    if (copied && (IsForbidden(put) || IsInvalidArgument(put) || IsNotFound(put))) (void)ns->Delete(e.address);
    return put;
  }
  ReplyJson(res, 201, ObjectJson(repo, dest, e));
  return Status::OK();
}

// GET .../branches/{branch}/staging/backing?path=: where a client may write an
// object's data itself before linking it (lakectl's direct writes).
Status GetPhysicalAddress(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo_id = req.matches[1], branch = req.matches[2];
  if (!req.has_param("path")) return InvalidArgument("missing query parameter path");
  std::string path = req.get_param_value("path");
  ARROW_RETURN_NOT_OK(Catalog::ValidatePath(path));
  ARROW_ASSIGN_OR_RAISE(auto repo, ctx.cat->GetRepository(repo_id));
  ARROW_ASSIGN_OR_RAISE(bool presign, BoolParam(req, "presign"));
  ARROW_ASSIGN_OR_RAISE(auto address, ctx.cat->IssueLinkAddress(repo, branch, path));
  json body = {{"physical_address", PhysicalAddress(repo, address)}};
  if (presign) {  // the client writes the data to the object store itself, then links it
    catalog::Entry e;
    e.address = address;
    ARROW_ASSIGN_OR_RAISE(body["presigned_url"], ctx.cat->PresignEntry(repo, e, "PUT", kPresignSeconds));
    body["presigned_url_expiry"] = static_cast<int64_t>(std::time(nullptr)) + kPresignSeconds;
  }
  ReplyJson(res, 200, body);
  return Status::OK();
}

namespace {

// The size and MD5 (hex) of what is stored at `address`; nullopt if nothing is.
Result<std::optional<std::pair<int64_t, std::string>>> StoredSizeAndMd5(const catalog::Namespace& ns,
                                                                        const std::string& address) {
  auto info = ns->Stat(address);
  if (IsNotFound(info.status())) return std::nullopt;
  ARROW_RETURN_NOT_OK(info.status());
  ARROW_ASSIGN_OR_RAISE(auto in, ns->OpenReaderSized(address, info->size));
  Digest md5(DigestKind::kMd5);
  constexpr int64_t kChunk = 1 << 20;
  for (int64_t at = 0; at < info->size; at += kChunk) {
    ARROW_ASSIGN_OR_RAISE(auto buf, in->ReadAt(at, std::min(kChunk, info->size - at)));
    md5.Update(buf->data(), static_cast<size_t>(buf->size()));
  }
  return std::make_optional(std::make_pair(info->size, md5.FinalHex()));
}

}  // namespace

// PUT .../branches/{branch}/staging/backing?path=: stages an object whose data
// the client wrote at an address GetPhysicalAddress gave for this branch and
// path, once (anything else could expose data the caller may not read). Size
// and checksum are the stored object's: a size_bytes that disagrees is refused.
// Nothing stored there yet: the client's size_bytes and checksum, as lakeFS
// (lakectl's link-same-object abuse test links such addresses); the address
// is fresh, so the entry can name no one else's data.
Status LinkPhysicalAddress(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo_id = req.matches[1], branch = req.matches[2];
  if (!req.has_param("path")) return InvalidArgument("missing query parameter path");
  std::string path = req.get_param_value("path");
  ARROW_RETURN_NOT_OK(Catalog::ValidatePath(path));
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  if (!body.contains("staging") || !body["staging"].is_object()) {
    return InvalidArgument("missing required field \"staging\" ({\"physical_address\": ...})");
  }
  ARROW_ASSIGN_OR_RAISE(auto address, Field<std::string>(body["staging"], "physical_address"));
  ARROW_ASSIGN_OR_RAISE(auto repo, ctx.cat->GetRepository(repo_id));
  std::string ns_prefix = PhysicalAddress(repo, "");
  std::string relative = address.rfind(ns_prefix, 0) == 0 ? address.substr(ns_prefix.size()) : "";
  if (relative.rfind("data/", 0) != 0 || blob::ValidateObjectPath(relative).ok() == false) {
    return InvalidArgument(
        fmt::format("physical address \"{}\" is not one this repository issued (under {}data/)", address, ns_prefix));
  }
  catalog::Entry e;
  e.address = relative;
  ARROW_ASSIGN_OR_RAISE(auto claimed_size, Field<int64_t>(body, "size_bytes", int64_t{-1}));
  // Before anything about the stored object is looked at (or told).
  ARROW_RETURN_NOT_OK(ctx.cat->CheckLinkAddress(repo_id, branch, path, relative));
  ARROW_ASSIGN_OR_RAISE(auto ns, ctx.cat->RepositoryNamespace(repo));
  ARROW_ASSIGN_OR_RAISE(auto stored, StoredSizeAndMd5(ns, relative));
  if (stored) {
    if (claimed_size >= 0 && claimed_size != stored->first) {
      return InvalidArgument(fmt::format("size_bytes is {}, but the object at \"{}\" holds {} bytes", claimed_size,
                                         address, stored->first));
    }
    e.size = stored->first;
    e.checksum = stored->second;
  } else {
    e.size = std::max<int64_t>(claimed_size, 0);
    ARROW_ASSIGN_OR_RAISE(e.checksum, Field<std::string>(body, "checksum", std::string()));
  }
  ARROW_ASSIGN_OR_RAISE(e.content_type, Field<std::string>(body, "content_type", std::string()));
  if (e.content_type.empty()) e.content_type = "application/octet-stream";  // lakectl sends "" (as lakeFS)
  ARROW_ASSIGN_OR_RAISE(e.metadata, (Field<std::map<std::string, std::string>>(body, "user_metadata",
                                                                               std::map<std::string, std::string>{})));
  ARROW_ASSIGN_OR_RAISE(e.mtime, Field<int64_t>(body, "mtime", static_cast<int64_t>(std::time(nullptr))));
  ARROW_ASSIGN_OR_RAISE(bool force, Field<bool>(body, "force", false));
  ARROW_RETURN_NOT_OK(ctx.cat->ClaimLinkAddress(repo_id, branch, path, relative));
  ARROW_RETURN_NOT_OK(ctx.cat->PutEntry(repo, branch, path, e, /*if_absent=*/false, force));
  ReplyJson(res, 200, ObjectJson(repo, path, e));
  return Status::OK();
}

// --- presigned multipart uploads (lakeFS's .../staging/pmpu) ------------------
//
// The client sends the parts of a large object to the object store itself,
// to presigned URLs, and the server assembles them. The object's address is
// a link address (Catalog::IssueLinkAddress): issued for one branch and path,
// linked once, before it expires ([catalog] link_address_ttl_secs), so every
// later call is checked against what create issued. S3 storage with a static
// key only: elsewhere 501, as lakeFS answers where it has no such support.

namespace {

constexpr int kMaxParts = 10000;
// How long an upload's address stays good (lakeFS's signed addresses: 24 h).
constexpr Duration kUploadLifetime = std::chrono::hours(24);

struct UploadTarget {
  catalog::Repository repo;
  std::string branch, path;
  catalog::Namespace ns;
  std::string address;  // relative to the namespace; empty until checked
};

// The repository, branch and ?path= of a pmpu route, once `me` may write the
// path; NotImplemented where the namespace cannot take such uploads.
Result<UploadTarget> UploadTargetOf(const Context& ctx, const Req& req, const std::string& /*me*/) {
  UploadTarget t;
  const std::string repo_id = req.matches[1];
  t.branch = req.matches[2];
  if (repo_id.empty()) return InvalidArgument("the repository name is empty");
  if (t.branch.empty()) return InvalidArgument("the branch name is empty");
  t.path = Param(req, "path");
  if (t.path.empty()) return InvalidArgument("missing query parameter path");
  ARROW_RETURN_NOT_OK(Catalog::ValidatePath(t.path));
  ARROW_ASSIGN_OR_RAISE(t.repo, ctx.cat->GetRepository(repo_id));
  ARROW_ASSIGN_OR_RAISE(t.ns, ctx.cat->RepositoryNamespace(t.repo));
  return t;
}

Status RequireClientMultipart(const UploadTarget& t) {
  if (t.ns->ClientMultipart()) return Status::OK();
  return NotImplemented(
      fmt::format("presigned multipart uploads need a storage namespace on S3 (repository \"{}\" is "
                  "at {})",
                  t.repo.id, t.repo.storage_namespace));
}

// The body's physical_address: one create issued for this branch and path,
// not yet linked and not expired.
Status CheckUploadAddress(const Context& ctx, const json& body, UploadTarget* t) {
  ARROW_ASSIGN_OR_RAISE(auto address, Field<std::string>(body, "physical_address", std::string()));
  if (address.empty()) return InvalidArgument("missing required field \"physical_address\"");
  const std::string ns_prefix = PhysicalAddress(t->repo, "");
  std::string relative = address.rfind(ns_prefix, 0) == 0 ? address.substr(ns_prefix.size()) : "";
  if (relative.rfind("data/", 0) != 0 || !blob::ValidateObjectPath(relative).ok()) {
    return InvalidArgument(
        fmt::format("physical address \"{}\" must be relative to the storage namespace {} (as "
                    "the upload's create gave it)",
                    address, ns_prefix));
  }
  ARROW_RETURN_NOT_OK(ctx.cat->CheckLinkAddress(t->repo.id, t->branch, t->path, relative));
  t->address = std::move(relative);
  return Status::OK();
}

Result<int> PartNumber(const std::string& s) {
  int n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || n < 1 || n > kMaxParts) {
    return InvalidArgument(fmt::format("part number \"{}\" is not within 1..{}", s.substr(0, 20), kMaxParts));
  }
  return n;
}

// "bytes=a-b" (inclusive, within `size` bytes).
Result<std::pair<int64_t, int64_t>> CopyRange(const std::string& range, int64_t size) {
  const auto r = ParseCopyRange(range, size);
  if (!r) {
    return InvalidArgument(fmt::format("copy_source range \"{}\" is not bytes=first-last within the object's {} bytes",
                                       range.substr(0, 64), size));
  }
  return std::make_pair(r->first, r->first + r->length - 1);
}

// What the calls on one part share: the upload's target with its address
// checked, the part number (1..10000) and the body.
struct PartRequest {
  UploadTarget t;
  int part = 0;
  json body;
};

Result<PartRequest> PartRequestOf(const Context& ctx, const Req& req, const std::string& me) {
  PartRequest p;
  ARROW_ASSIGN_OR_RAISE(p.t, UploadTargetOf(ctx, req, me));
  ARROW_ASSIGN_OR_RAISE(p.part, PartNumber(req.matches[4]));
  ARROW_RETURN_NOT_OK(RequireClientMultipart(p.t));
  ARROW_ASSIGN_OR_RAISE(p.body, Body(req));
  ARROW_RETURN_NOT_OK(CheckUploadAddress(ctx, p.body, &p.t));
  return p;
}

}  // namespace

// POST .../staging/pmpu?path=&parts=N: starts an upload; N presigned part URLs.
Status CreatePresignMultipartUpload(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  ARROW_ASSIGN_OR_RAISE(auto t, UploadTargetOf(ctx, req, me));
  int parts = 0;
  if (req.has_param("parts")) {
    const std::string v = req.get_param_value("parts");
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), parts);
    if (ec != std::errc() || end != v.data() + v.size() || parts < 0 || parts > kMaxParts) {
      return InvalidArgument(
          fmt::format("parts must be a number within 0..{}, not \"{}\"", kMaxParts, v.substr(0, 20)));
    }
  }
  ARROW_RETURN_NOT_OK(RequireClientMultipart(t));
  ARROW_RETURN_NOT_OK(ctx.cat->GetBranch(t.repo.id, t.branch).status());
  ARROW_RETURN_NOT_OK(Catalog::CheckProtection(t.repo, t.branch, /*commit=*/false));
  ARROW_ASSIGN_OR_RAISE(auto address, ctx.cat->IssueLinkAddress(t.repo, t.branch, t.path, kUploadLifetime));
  ARROW_ASSIGN_OR_RAISE(auto upload_id, t.ns->CreateMultipartUpload(address));
  json body = {{"upload_id", upload_id}, {"physical_address", PhysicalAddress(t.repo, address)}};
  if (parts > 0) {
    json urls = json::array();
    for (int i = 1; i <= parts; ++i) {
      ARROW_ASSIGN_OR_RAISE(auto url, t.ns->PresignUploadPart(address, upload_id, i, kPresignSeconds));
      urls.push_back(std::move(url));
    }
    body["presigned_urls"] = std::move(urls);
    body["presigned_url_expiry"] = static_cast<int64_t>(std::time(nullptr)) + kPresignSeconds;
  }
  ReplyJson(res, 201, body);
  return Status::OK();
}

// PUT .../staging/pmpu/{uploadId}/parts/{n}: a presigned URL for part n.
Status UploadPart(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  ARROW_ASSIGN_OR_RAISE(auto p, PartRequestOf(ctx, req, me));
  ARROW_ASSIGN_OR_RAISE(auto url, p.t.ns->PresignUploadPart(p.t.address, req.matches[3], p.part, kPresignSeconds));
  ReplyJson(
      res, 200,
      {{"presigned_url", url}, {"presigned_url_expiry", static_cast<int64_t>(std::time(nullptr)) + kPresignSeconds}});
  return Status::OK();
}

// PUT .../staging/pmpu/{uploadId}/parts/{n}/copy: part n is (a range of) an
// object the caller may read, copied by the object store.
Status UploadPartCopy(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  ARROW_ASSIGN_OR_RAISE(auto p, PartRequestOf(ctx, req, me));
  const json& body = p.body;
  if (!body.contains("copy_source") || !body["copy_source"].is_object()) {
    return InvalidArgument("missing required field \"copy_source\" ({\"repository\", \"ref\", \"path\", \"range\"})");
  }
  const json& src = body["copy_source"];
  ARROW_ASSIGN_OR_RAISE(auto src_repo_id, Field<std::string>(src, "repository"));
  ARROW_ASSIGN_OR_RAISE(auto src_ref, Field<std::string>(src, "ref"));
  ARROW_ASSIGN_OR_RAISE(auto src_path, Field<std::string>(src, "path"));
  ARROW_ASSIGN_OR_RAISE(auto range_text, Field<std::string>(src, "range", std::string()));
  ARROW_RETURN_NOT_OK(ctx.Allow(me, "fs:ReadObject", ObjectArn(src_repo_id, src_path)));
  ARROW_ASSIGN_OR_RAISE(auto src_repo, ctx.cat->GetRepository(src_repo_id));
  ARROW_ASSIGN_OR_RAISE(auto e, ctx.cat->GetEntry(src_repo_id, src_ref, src_path));
  std::optional<std::pair<int64_t, int64_t>> range;
  if (!range_text.empty()) {
    ARROW_ASSIGN_OR_RAISE(range, CopyRange(range_text, e.size));
  }
  std::pair<catalog::Namespace, std::string> object;
  if (e.address.find("://") == std::string::npos) {
    ARROW_ASSIGN_OR_RAISE(object.first, ctx.cat->RepositoryNamespace(src_repo));
    object.second = e.address;
  } else {
    ARROW_ASSIGN_OR_RAISE(auto where, ctx.cat->CheckImportedAddress(e.address));
    if (where.kind != catalog::NamespaceKind::kS3) {
      return InvalidArgument(
          fmt::format("object \"{}\" is on local disk: a part is copied on the object store only", src_path));
    }
    ARROW_ASSIGN_OR_RAISE(object, ctx.cat->ImportedS3Object(where));
  }
  ARROW_ASSIGN_OR_RAISE(
      auto etag, p.t.ns->UploadPartCopy(p.t.address, req.matches[3], p.part, *object.first, object.second, range));
  // lakeFS answers the part's ETag without its quotes.
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  res.set_header("ETag", etag);
  res.status = 204;
  return Status::OK();
}

// PUT .../staging/pmpu/{uploadId}?path=: assembles the parts and stages the object.
Status CompletePresignMultipartUpload(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  ARROW_ASSIGN_OR_RAISE(auto t, UploadTargetOf(ctx, req, me));
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_RETURN_NOT_OK(CheckUploadAddress(ctx, body, &t));
  ARROW_RETURN_NOT_OK(RequireClientMultipart(t));
  if (!body.contains("parts") || !body["parts"].is_array() || body["parts"].empty()) {
    return InvalidArgument("parts must list the uploaded parts ([{\"part_number\", \"etag\"}], at least one)");
  }
  if (body["parts"].size() > kMaxParts) return InvalidArgument(fmt::format("more than {} parts", kMaxParts));
  std::vector<blob::BlobStore::Part> parts;
  for (const auto& p : body["parts"]) {
    if (!p.is_object()) return InvalidArgument("each of parts is {\"part_number\", \"etag\"}");
    blob::BlobStore::Part part;
    ARROW_ASSIGN_OR_RAISE(part.number, Field<int>(p, "part_number"));
    ARROW_ASSIGN_OR_RAISE(part.etag, Field<std::string>(p, "etag"));
    if (part.number < 1 || part.number > kMaxParts) {
      return InvalidArgument(fmt::format("part_number {} is not within 1..{}", part.number, kMaxParts));
    }
    parts.push_back(std::move(part));
  }
  catalog::Entry e;
  ARROW_ASSIGN_OR_RAISE(e.content_type, Field<std::string>(body, "content_type", std::string()));
  if (e.content_type.empty()) e.content_type = "application/octet-stream";
  ARROW_ASSIGN_OR_RAISE(e.metadata, (Field<std::map<std::string, std::string>>(body, "user_metadata",
                                                                               std::map<std::string, std::string>{})));
  ARROW_ASSIGN_OR_RAISE(bool force, Field<bool>(body, "force", false));
  ARROW_ASSIGN_OR_RAISE(e.checksum, t.ns->CompleteMultipartUpload(t.address, req.matches[3], parts));
  ARROW_ASSIGN_OR_RAISE(auto info, t.ns->Stat(t.address));
  e.address = t.address;
  e.size = info.size;
  e.mtime = ToUnixMicros(info.mtime) / 1000000;
  ARROW_RETURN_NOT_OK(ctx.cat->ClaimLinkAddress(t.repo.id, t.branch, t.path, t.address));
  ARROW_RETURN_NOT_OK(ctx.cat->PutEntry(t.repo, t.branch, t.path, e, /*if_absent=*/false, force));
  ReplyJson(res, 200, ObjectJson(t.repo, t.path, e));
  return Status::OK();
}

// DELETE .../staging/pmpu/{uploadId}?path=: the parts sent are dropped.
Status AbortPresignMultipartUpload(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  ARROW_ASSIGN_OR_RAISE(auto t, UploadTargetOf(ctx, req, me));
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_RETURN_NOT_OK(CheckUploadAddress(ctx, body, &t));
  ARROW_RETURN_NOT_OK(RequireClientMultipart(t));
  ARROW_RETURN_NOT_OK(t.ns->AbortMultipartUpload(t.address, req.matches[3]));
  res.status = 204;
  return Status::OK();
}

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
