// S3 gateway: single objects — GetObject/HeadObject (ranges, conditions),
// PutObject (streamed), CopyObject and DeleteObject.
#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <fmt/format.h>

#include <charconv>
#include <ctime>

#include "base/failpoint.h"
#include "blob/blob.h"
#include "server/http/byte_range.h"
#include "server/http/errors.h"
#include "server/lakefs/api_internal.h"
#include "server/s3/gateway_internal.h"

namespace sediment::server::s3 {
namespace {

// S3's words for a range that cannot be satisfied.
Result<std::optional<ByteRange>> ParseRange(const std::string& header, int64_t size) {
  bool unsatisfiable = false;
  auto range = ParseByteRange(header, size, &unsatisfiable);
  if (unsatisfiable) {
    return S3Error(416, "InvalidRange", fmt::format("the range \"{}\" is not satisfiable for {} bytes", header, size));
  }
  return range;
}

// S3's conditional GET/HEAD: 412 for a failed If-Match/If-Unmodified-Since,
// 304 for a matching If-None-Match or an unmodified If-Modified-Since.
// Returns the status to answer, or 0 to serve the object.
int Conditions(const Req& req, const std::string& etag, int64_t mtime) {
  auto matches = [&](const std::string& list) {
    if (list == "*") return true;
    size_t start = 0;
    while (start < list.size()) {
      size_t comma = list.find(',', start);
      std::string one = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      while (!one.empty() && one.front() == ' ') one.erase(0, 1);
      while (!one.empty() && one.back() == ' ') one.pop_back();
      if (one.rfind("W/", 0) == 0) one = one.substr(2);
      if (one == etag || "\"" + one + "\"" == etag) return true;
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return false;
  };
  std::string if_match = req.get_header_value("If-Match");
  std::string if_none = req.get_header_value("If-None-Match");
  if (!if_match.empty() && !matches(if_match)) return 412;
  if (if_match.empty()) {
    auto t = ParseHttpDate(req.get_header_value("If-Unmodified-Since"));
    if (t && mtime > *t) return 412;
  }
  if (!if_none.empty() && matches(if_none)) return 304;
  if (if_none.empty()) {
    auto t = ParseHttpDate(req.get_header_value("If-Modified-Since"));
    if (t && mtime <= *t) return 304;
  }
  return 0;
}

void ObjectHeaders(Res& res, const catalog::Entry& e, const std::string& etag) {
  res.set_header("ETag", etag);
  res.set_header("Last-Modified", HttpDate(e.mtime));
  res.set_header("Accept-Ranges", "bytes");
  MetadataHeaders(res, e.metadata);
}

// The object a write names must be a path on a branch the caller may write.
Result<catalog::Repository> WriteTarget(const Gateway& gw, const Target& t, const Caller& /*c*/) {
  ARROW_RETURN_NOT_OK(catalog::Catalog::ValidatePath(t.path));
  return WritableBranch(gw, t);
}

Status CheckIfNoneMatch(const Req& req, bool* if_absent) {
  std::string v = req.get_header_value("If-None-Match");
  if (req.has_header("If-Match")) return S3Error(501, "NotImplemented", "If-Match on a write is not supported");
  if (!v.empty() && v != "*") return S3Error(501, "NotImplemented", "If-None-Match on a write supports only \"*\"");
  *if_absent = v == "*";
  return Status::OK();
}

// Stages `e`, whose data this request wrote, at the target (the catalog
// deletes the data if nothing was staged: Catalog::PutUploadedEntry).
Status Publish(const Gateway& gw, const catalog::Repository& repo, const Target& t, const catalog::Entry& e,
               bool if_absent) {
  SEDIMENT_FAILPOINT("catalog.upload.after_data");
  Status put = gw.cat->PutUploadedEntry(repo, t.ref, t.path, e, if_absent);
  if (IsPreconditionFailed(put)) {
    return S3Error(412, "PreconditionFailed", fmt::format("\"{}\" exists (If-None-Match: *)", t.key));
  }
  return put;
}

}  // namespace

Status GetObject(const Gateway& gw, const Target& t, const Req& req, Res& res, const Caller& /*c*/) {
  // We serve ranges ourselves (S3's rules differ from httplib's), errors included.
  const_cast<Req&>(req).ranges.clear();
  ARROW_ASSIGN_OR_RAISE(auto repo, LoadBucket(gw, t.bucket));
  auto got = gw.cat->GetEntry(t.bucket, t.ref, t.path);
  if (!got.ok()) return KeyNotFound(got.status(), t.key);
  const catalog::Entry& e = *got;
  std::string etag = "\"" + e.checksum + "\"";
  if (int code = Conditions(req, etag, e.mtime); code != 0) {
    if (code == 412) return S3Error(412, "PreconditionFailed", "At least one of the preconditions did not hold");
    res.status = 304;
    res.set_header("ETag", etag);
    res.set_header("Last-Modified", HttpDate(e.mtime));
    return Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(auto range, ParseRange(req.get_header_value("Range"), e.size));
  ObjectHeaders(res, e, etag);
  int64_t first = 0, length = e.size;
  res.status = 200;
  if (range) {
    first = range->first;
    length = range->length;
    res.status = 206;
    res.set_header("Content-Range", fmt::format("bytes {}-{}/{}", first, first + length - 1, e.size));
  }
  std::string content_type = e.content_type.empty() ? "application/octet-stream" : e.content_type;
  for (const auto& [k, v] : t.query) {  // response-* overrides, as S3 allows on signed requests
    if (k == "response-content-type") content_type = v;
    if (k == "response-content-disposition") res.set_header("Content-Disposition", v);
    if (k == "response-cache-control") res.set_header("Cache-Control", v);
    if (k == "response-content-encoding") res.set_header("Content-Encoding", v);
    if (k == "response-content-language") res.set_header("Content-Language", v);
    if (k == "response-expires") res.set_header("Expires", v);
  }
  if (req.method == "HEAD") {
    res.set_header("Content-Length", std::to_string(length));
    res.set_header("Content-Type", content_type);
    return Status::OK();
  }
  // lakeFS's redirection: a client that says it follows redirects (its
  // User-Agent holds "s3RedirectionSupport") is sent to the object store
  // itself with a presigned URL (S3 storage; elsewhere it is served here).
  if (req.get_header_value("User-Agent").find("s3RedirectionSupport") != std::string::npos) {
    auto url = gw.cat->PresignEntry(repo, e, "GET", 15 * 60);
    if (url.ok()) {
      res = Res();
      res.status = 307;
      res.set_header("Location", *url);
      return Status::OK();
    }
  }
  auto file = gw.cat->OpenEntry(repo, e);  // imported objects are read where they are
  if (IsNotFound(file.status())) {
    return S3Error(404, "NoSuchVersion", fmt::format("the data of \"{}\" is gone from the object store", t.key));
  }
  ARROW_RETURN_NOT_OK(file.status());
  StreamObject(res, *file, first, length, content_type);
  return Status::OK();
}

Status PutObject(const Gateway& gw, const Target& t, const Req& req, Res& res, const Reader& body, const Caller& c) {
  bool if_absent = false;
  ARROW_RETURN_NOT_OK(CheckIfNoneMatch(req, &if_absent));
  ARROW_ASSIGN_OR_RAISE(auto repo, WriteTarget(gw, t, c));
  if (if_absent) {
    auto existing = gw.cat->GetEntry(t.bucket, t.ref, t.path);
    if (existing.ok())
      return S3Error(412, "PreconditionFailed", fmt::format("\"{}\" exists (If-None-Match: *)", t.key));
  }
  ARROW_ASSIGN_OR_RAISE(auto ns, gw.cat->RepositoryNamespace(repo));
  catalog::Entry e;
  e.address = catalog::NewDataAddress(std::time(nullptr));
  e.content_type = req.get_header_value("Content-Type");
  if (e.content_type.empty()) e.content_type = "application/octet-stream";
  ARROW_ASSIGN_OR_RAISE(auto out, ns->OpenWriter(e.address));
  ARROW_ASSIGN_OR_RAISE(auto got, ReceiveBody(req, body, c, out.get()));
  ARROW_RETURN_NOT_OK(out->Close());
  e.size = got.size;
  e.checksum = got.md5_hex;
  e.mtime = std::time(nullptr);
  e.metadata = AmzMetadata(req);
  ARROW_RETURN_NOT_OK(Publish(gw, repo, t, e, if_absent));
  res.status = 200;
  res.set_header("ETag", "\"" + e.checksum + "\"");
  return Status::OK();
}

Status CopyObject(const Gateway& gw, const Target& t, const Req& req, Res& res, const Caller& c) {
  ARROW_ASSIGN_OR_RAISE(Target src, CopySource(req));
  ARROW_RETURN_NOT_OK(gw.Allow(c.user, "fs:ReadObject", lakefs::ObjectArn(src.bucket, src.path)));
  ARROW_ASSIGN_OR_RAISE(auto repo, WriteTarget(gw, t, c));
  ARROW_ASSIGN_OR_RAISE(auto src_repo, LoadBucket(gw, src.bucket));
  auto got = gw.cat->GetEntry(src.bucket, src.ref, src.path);
  if (!got.ok()) return KeyNotFound(got.status(), src.key);
  catalog::Entry e = *got;
  ARROW_ASSIGN_OR_RAISE(auto ns, gw.cat->RepositoryNamespace(repo));
  bool owned = e.address.find("://") == std::string::npos;
  if (src.bucket != t.bucket && owned) {
    // Another repository's data is its GC's to delete: copy the bytes.
    ARROW_ASSIGN_OR_RAISE(auto src_ns, gw.cat->RepositoryNamespace(src_repo));
    auto in = src_ns->OpenReader(e.address);
    if (IsNotFound(in.status())) {
      return S3Error(400, "InvalidRequest", fmt::format("the data of \"{}\" is gone from the object store", src.key));
    }
    ARROW_RETURN_NOT_OK(in.status());
    std::string address = catalog::NewDataAddress(std::time(nullptr));
    ARROW_ASSIGN_OR_RAISE(auto out, ns->OpenWriter(address));
    if (Status st = blob::CopyBytes(in->get(), 0, e.size, out.get()); !st.ok()) {
      (void)out->Abort();
      return st;
    }
    ARROW_RETURN_NOT_OK(out->Close());
    e.address = address;
  }
  // Within a repository the copy shares the data: catalog GC keeps data while
  // any entry refers to it. Data that is gone is not shared (as a copy of it
  // would fail on the object store: 400, what lakeFS answers).
  if (src.bucket == t.bucket && owned && IsNotFound(ns->Stat(e.address).status())) {
    return S3Error(400, "InvalidRequest", fmt::format("the data of \"{}\" is gone from the object store", src.key));
  }
  e.mtime = std::time(nullptr);
  std::string directive = req.get_header_value("x-amz-metadata-directive");
  if (directive == "REPLACE") {
    e.metadata = AmzMetadata(req);
    if (req.has_header("Content-Type")) e.content_type = req.get_header_value("Content-Type");
  } else if (!directive.empty() && directive != "COPY") {
    return S3Error(400, "InvalidArgument",
                   fmt::format("x-amz-metadata-directive \"{}\" must be COPY or REPLACE", directive));
  }
  bool if_absent = false;
  ARROW_RETURN_NOT_OK(CheckIfNoneMatch(req, &if_absent));
  if (src.bucket != t.bucket && owned) {
    ARROW_RETURN_NOT_OK(Publish(gw, repo, t, e, if_absent));
  } else {
    Status put = gw.cat->PutEntry(repo, t.ref, t.path, e, if_absent);
    if (IsPreconditionFailed(put)) return S3Error(412, "PreconditionFailed", fmt::format("\"{}\" exists", t.key));
    ARROW_RETURN_NOT_OK(put);
  }
  ReplyXml(
      res, 200,
      fmt::format(
          R"(<CopyObjectResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LastModified>{}</LastModified><ETag>&quot;{}&quot;</ETag></CopyObjectResult>)",
          IsoTime(e.mtime), XmlEscape(e.checksum)));
  return Status::OK();
}

Status DeleteObject(const Gateway& gw, const Target& t, const Req&, Res& res, const Caller& /*c*/) {
  ARROW_RETURN_NOT_OK(catalog::Catalog::ValidatePath(t.path));
  ARROW_RETURN_NOT_OK(WritableBranch(gw, t).status());
  Status st = gw.cat->DeleteEntry(t.bucket, t.ref, t.path);
  if (!st.ok() && !IsNotFound(st)) return st;  // deleting what is not there succeeds, as in S3
  res.status = 204;
  return Status::OK();
}

}  // namespace sediment::server::s3
