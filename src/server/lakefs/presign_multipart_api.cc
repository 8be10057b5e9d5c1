// lakeFS API handlers for presigned multipart uploads (.../staging/pmpu).
//
// The client sends the parts of a large object to the object store itself,
// to presigned URLs, and the server assembles them. The object's address is
// a link address (Catalog::IssueLinkAddress): issued for one branch and path,
// linked once, before it expires ([catalog] link_address_ttl_secs), so every
// later call is checked against what create issued. S3 storage with a static
// key only: elsewhere 501, as lakeFS answers where it has no such support.
#include <fmt/format.h>

#include <charconv>
#include <ctime>

#include "blob/blob.h"
#include "server/http/byte_range.h"
#include "server/http/errors.h"
#include "server/lakefs/api_internal.h"

namespace sediment::server::lakefs {
namespace {

using catalog::Catalog;

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
}  // namespace sediment::server::lakefs
