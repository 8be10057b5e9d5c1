// lakeFS API handlers for the writes a client makes to the object store
// itself (lakectl's direct writes): GetPhysicalAddress issues an address for
// one branch and path (Catalog::IssueLinkAddress), LinkPhysicalAddress stages
// the object written there.
#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <fmt/format.h>

#include <ctime>

#include "base/crypto.h"
#include "blob/blob.h"
#include "server/http/errors.h"
#include "server/lakefs/api_internal.h"

namespace sediment::server::lakefs {
namespace {

using catalog::Catalog;

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

}  // namespace sediment::server::lakefs
