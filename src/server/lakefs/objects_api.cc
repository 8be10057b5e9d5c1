// lakeFS API handlers for objects whose data passes through the server: the
// streamed upload and the copy; and deletes (one or many). Reads are in
// objects_read_api.cc; writes the client makes to the object store itself in
// links_api.cc and presign_multipart_api.cc.
#include <arrow/io/interfaces.h>
#include <fmt/format.h>

#include <ctime>

#include "base/ascii.h"
#include "base/crypto.h"
#include "base/failpoint.h"
#include "blob/blob.h"
#include "server/http/errors.h"
#include "server/lakefs/api_internal.h"

namespace sediment::server::lakefs {
namespace {

using catalog::Catalog;

constexpr int64_t kMaxDeletePaths = 1000;

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
  ARROW_RETURN_NOT_OK(ctx.cat->PutUploadedEntry(repo, branch, path, e, if_none_match == "*", force));
  ReplyJson(res, 201, ObjectJson(repo, path, e));
  return Status::OK();
}

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
  ARROW_RETURN_NOT_OK(copied ? ctx.cat->PutUploadedEntry(repo, branch, dest, e, /*if_absent=*/false, force)
                             : ctx.cat->PutEntry(repo, branch, dest, e, /*if_absent=*/false, force));
  ReplyJson(res, 201, ObjectJson(repo, dest, e));
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
  // Who may delete none of the paths learns nothing about the repository or
  // branch, not even whether they exist.
  Status st = allowed.empty() ? Status::OK() : ctx.cat->DeleteEntries(repo, branch, allowed, force).status();
  if (IsForbidden(st)) {  // a protected branch or read-only repository: each path says so
    for (const auto& p : allowed) errors.push_back({{"status_code", 403}, {"message", st.message()}, {"path", p}});
  } else {
    ARROW_RETURN_NOT_OK(st);
  }
  ReplyJson(res, 200, {{"errors", errors}});
  return Status::OK();
}

}  // namespace sediment::server::lakefs
