// S3 gateway: multipart uploads. Each part is stored, streamed, as its own
// file under the namespace's _lakefs/multipart/<upload>/ (GC never takes it);
// the catalog records the upload and its parts (catalog_multipart.cc).
// Completing streams the chosen parts, in order, into one new data file and
// stages it; the parts are then deleted. The ETag is S3's: the MD5 of the
// parts' binary MD5s, then "-<parts>"; the entry's checksum keeps the hex
// part only, as lakeFS does.
#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <fmt/format.h>

#include <charconv>
#include <ctime>
#include <pugixml.hpp>

#include "base/clock.h"
#include "base/crypto.h"
#include "blob/blob.h"
#include "server/http/byte_range.h"
#include "server/lakefs/api_internal.h"
#include "server/s3/gateway_internal.h"

namespace sediment::server::s3 {
namespace {

constexpr int64_t kMinPartSize = 5 << 20;

std::string PartAddress(const std::string& upload, int number) {
  return fmt::format("_lakefs/multipart/{}/{:05d}-{}", upload, number, RandomHex(8));
}

Result<int> PartNumber(const Target& t) {
  std::string v = t.Get("partNumber");
  int n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n < 1 || n > 10000) {
    return S3Error(400, "InvalidArgument", fmt::format("partNumber \"{}\" must be an integer from 1 to 10000", v));
  }
  return n;
}

// The upload the request's ?uploadId names, on the object the request names.
Result<catalog::MultipartUpload> NamedUpload(const Gateway& gw, const Target& t) {
  auto u = gw.cat->GetMultipartUpload(t.bucket, t.Get("uploadId"));
  if (IsNotFound(u.status())) {
    return S3Error(404, "NoSuchUpload",
                   fmt::format("upload \"{}\" does not exist: it may have been completed or "
                               "aborted",
                               t.Get("uploadId")));
  }
  ARROW_RETURN_NOT_OK(u.status());
  if (u->branch != t.ref || u->path != t.path) {
    return S3Error(404, "NoSuchUpload",
                   fmt::format("upload \"{}\" is for \"{}/{}\", not \"{}\"", u->id, u->branch, u->path, t.key));
  }
  return u;
}

Result<std::optional<std::pair<int64_t, int64_t>>> CopyRange(const std::string& header, int64_t size) {
  if (header.empty()) return std::nullopt;
  const auto r = ParseCopyRange(header, size);
  if (!r) {
    return S3Error(400, "InvalidArgument",
                   fmt::format("x-amz-copy-source-range \"{}\" must be bytes=first-last within the {} bytes of the "
                               "source",
                               header, size));
  }
  return std::make_pair(r->first, r->length);
}

}  // namespace

Status CreateMultipartUpload(const Gateway& gw, const Target& t, const Req& req, Res& res, const Caller& c) {
  ARROW_RETURN_NOT_OK(catalog::Catalog::ValidatePath(t.path));
  ARROW_ASSIGN_OR_RAISE(auto repo, WritableBranch(gw, t));
  catalog::MultipartUpload u;
  u.branch = t.ref;
  u.path = t.path;
  u.content_type = req.get_header_value("Content-Type");
  if (u.content_type.empty()) u.content_type = "application/octet-stream";
  u.metadata = AmzMetadata(req);
  u.initiator = c.user;
  ARROW_ASSIGN_OR_RAISE(u, gw.cat->CreateMultipartUpload(repo, u));
  ReplyXml(res, 200,
           fmt::format("<InitiateMultipartUploadResult{}><Bucket>{}</Bucket><Key>{}</Key><UploadId>{}</UploadId>"
                       "</InitiateMultipartUploadResult>",
                       kXmlns, XmlEscape(t.bucket), XmlEscape(t.key), u.id));
  return Status::OK();
}

// UploadPart, and UploadPartCopy when x-amz-copy-source is present.
Status UploadPart(const Gateway& gw, const Target& t, const Req& req, Res& res, const Reader& body, const Caller& c) {
  ARROW_ASSIGN_OR_RAISE(int number, PartNumber(t));
  ARROW_ASSIGN_OR_RAISE(auto repo, WritableBranch(gw, t));
  ARROW_ASSIGN_OR_RAISE(auto u, NamedUpload(gw, t));
  ARROW_ASSIGN_OR_RAISE(auto ns, gw.cat->RepositoryNamespace(repo));
  catalog::UploadedPart part;
  part.number = number;
  part.address = PartAddress(u.id, number);
  ARROW_ASSIGN_OR_RAISE(auto out, ns->OpenWriter(part.address));
  bool copy = req.has_header("x-amz-copy-source");
  if (copy) {
    ARROW_ASSIGN_OR_RAISE(Target src, CopySource(req));
    ARROW_RETURN_NOT_OK(gw.Allow(c.user, "fs:ReadObject", lakefs::ObjectArn(src.bucket, src.path)));
    ARROW_ASSIGN_OR_RAISE(auto src_repo, LoadBucket(gw, src.bucket));
    auto e = gw.cat->GetEntry(src.bucket, src.ref, src.path);
    if (!e.ok()) return KeyNotFound(e.status(), src.key);
    ARROW_ASSIGN_OR_RAISE(auto range, CopyRange(req.get_header_value("x-amz-copy-source-range"), e->size));
    int64_t first = range ? range->first : 0, length = range ? range->second : e->size;
    auto in = gw.cat->OpenEntry(src_repo, *e);  // an imported object is read where it is
    if (!in.ok()) {
      (void)out->Abort();
      if (IsNotFound(in.status())) return S3Error(400, "InvalidRequest", "the copy source's data is gone");
      return in.status();
    }
    Digest md5(DigestKind::kMd5);
    Status st = blob::CopyBytes(in->get(), first, length, out.get(),
                                [&](const arrow::Buffer& b) { md5.Update(b.data(), static_cast<size_t>(b.size())); });
    if (!st.ok()) {
      (void)out->Abort();
      return st;
    }
    part.size = length;
    part.etag = md5.FinalHex();
  } else {
    ARROW_ASSIGN_OR_RAISE(auto got, ReceiveBody(req, body, c, out.get()));
    part.size = got.size;
    part.etag = got.md5_hex;
  }
  ARROW_RETURN_NOT_OK(out->Close());
  part.mtime = std::time(nullptr);
  auto replaced = gw.cat->PutUploadPart(t.bucket, u.id, part);
  if (!replaced.ok()) {
    (void)ns->Delete(part.address);
    if (IsNotFound(replaced.status())) return S3Error(404, "NoSuchUpload", replaced.status().message());
    return replaced.status();
  }
  if (*replaced) (void)ns->Delete(**replaced);
  if (copy) {
    ReplyXml(
        res, 200,
        fmt::format("<CopyPartResult{}><LastModified>{}</LastModified><ETag>&quot;{}&quot;</ETag></CopyPartResult>",
                    kXmlns, IsoTime(part.mtime), part.etag));
  } else {
    res.status = 200;
    res.set_header("ETag", "\"" + part.etag + "\"");
  }
  return Status::OK();
}

Status ListParts(const Gateway& gw, const Target& t, const Req&, Res& res, const Caller& /*c*/) {
  ARROW_RETURN_NOT_OK(LoadBucket(gw, t.bucket).status());
  ARROW_ASSIGN_OR_RAISE(auto u, NamedUpload(gw, t));
  int marker = 0;
  int64_t max_parts = 1000;
  auto num = [&](const char* name, auto* out) -> Status {
    if (!t.Has(name)) return Status::OK();
    std::string v = t.Get(name);
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
    if (ec != std::errc() || p != v.data() + v.size() || *out < 0) {
      return S3Error(400, "InvalidArgument", fmt::format("{} \"{}\" must be a non-negative integer", name, v));
    }
    return Status::OK();
  };
  ARROW_RETURN_NOT_OK(num("part-number-marker", &marker));
  ARROW_RETURN_NOT_OK(num("max-parts", &max_parts));
  max_parts = std::clamp<int64_t>(max_parts, 1, 1000);
  ARROW_ASSIGN_OR_RAISE(auto page, gw.cat->ListUploadParts(t.bucket, u.id, marker, max_parts));
  std::string parts;
  int next = marker;
  for (const auto& p : page.items) {
    parts += fmt::format(
        "<Part><PartNumber>{}</PartNumber><LastModified>{}</LastModified><ETag>&quot;{}&quot;</ETag>"
        "<Size>{}</Size></Part>",
        p.number, IsoTime(p.mtime), p.etag, p.size);
    next = p.number;
  }
  ReplyXml(res, 200,
           fmt::format("<ListPartsResult{}><Bucket>{}</Bucket><Key>{}</Key><UploadId>{}</UploadId>"
                       "<Initiator><ID>{}</ID><DisplayName>{}</DisplayName></Initiator>"
                       "<Owner><ID>{}</ID><DisplayName>{}</DisplayName></Owner><StorageClass>STANDARD</StorageClass>"
                       "<PartNumberMarker>{}</PartNumberMarker><NextPartNumberMarker>{}</NextPartNumberMarker>"
                       "<MaxParts>{}</MaxParts><IsTruncated>{}</IsTruncated>{}</ListPartsResult>",
                       kXmlns, XmlEscape(t.bucket), XmlEscape(t.key), u.id, XmlEscape(u.initiator),
                       XmlEscape(u.initiator), XmlEscape(u.initiator), XmlEscape(u.initiator), marker, next, max_parts,
                       page.has_more ? "true" : "false", parts));
  return Status::OK();
}

namespace {

// The parts a CompleteMultipartUpload document lists: number and ETag
// (unquoted), in ascending order of number, at least one.
Result<std::vector<std::pair<int, std::string>>> ListedParts(const std::string& xml) {
  pugi::xml_document doc;
  auto parsed = doc.load_buffer(xml.data(), xml.size());
  pugi::xml_node root = doc.child("CompleteMultipartUpload");
  if (!parsed || !root) {
    return S3Error(400, "MalformedXML", "the body must be a <CompleteMultipartUpload> document listing the parts");
  }
  std::vector<std::pair<int, std::string>> wanted;
  for (auto p : root.children("Part")) {
    std::string num = p.child_value("PartNumber"), etag = p.child_value("ETag");
    int n = 0;
    auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
    if (ec != std::errc() || ptr != num.data() + num.size()) {
      return S3Error(400, "MalformedXML", fmt::format("PartNumber \"{}\" is not a number", num));
    }
    if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
    if (!wanted.empty() && n <= wanted.back().first) {
      return S3Error(400, "InvalidPartOrder", "the parts must be listed in ascending order of part number");
    }
    wanted.emplace_back(n, etag);
  }
  if (wanted.empty()) return S3Error(400, "MalformedXML", "the request lists no parts");
  return wanted;
}

// The stored part each listed one names (by number and ETag), in the listed
// order; every part but the last must be at least kMinPartSize.
Result<std::vector<const catalog::UploadedPart*>> ChosenParts(const std::vector<std::pair<int, std::string>>& wanted,
                                                              const std::map<int, catalog::UploadedPart>& by_number) {
  std::vector<const catalog::UploadedPart*> chosen;
  for (size_t i = 0; i < wanted.size(); ++i) {
    auto it = by_number.find(wanted[i].first);
    if (it == by_number.end() || it->second.etag != wanted[i].second) {
      return S3Error(400, "InvalidPart",
                     fmt::format("part {} with ETag \"{}\" was not uploaded", wanted[i].first, wanted[i].second));
    }
    if (i + 1 < wanted.size() && it->second.size < kMinPartSize) {
      return S3Error(400, "EntityTooSmall",
                     fmt::format("part {} is {} bytes; every part but the last must be at least 5 MiB", wanted[i].first,
                                 it->second.size));
    }
    chosen.push_back(&it->second);
  }
  return chosen;
}

// Streams the chosen parts, in order, into one new data file of the
// namespace: the entry to stage, with the upload's content type and metadata.
Result<catalog::Entry> AssembleParts(const catalog::Namespace& ns, const catalog::MultipartUpload& u,
                                     const std::vector<const catalog::UploadedPart*>& chosen) {
  catalog::Entry e;
  e.address = catalog::NewDataAddress(std::time(nullptr));
  e.content_type = u.content_type;
  e.metadata = u.metadata;
  ARROW_ASSIGN_OR_RAISE(auto out, ns->OpenWriter(e.address));
  std::string md5s;
  Status st;
  for (const auto* p : chosen) {
    auto in = ns->OpenReader(p->address);
    st = in.ok() ? blob::CopyBytes(in->get(), 0, p->size, out.get()) : in.status();
    if (!st.ok()) break;
    e.size += p->size;
    md5s += HexDecode(p->etag).value_or("");
  }
  if (!st.ok()) {
    (void)out->Abort();
    return st;
  }
  ARROW_RETURN_NOT_OK(out->Close());
  e.checksum = Hex(Md5(md5s));
  // The object's time as its store keeps it, as lakeFS reports it: clients
  // compare the two (lakeFS's TestMultipartUpload), and a reading of our own
  // clock can fall in another second than the store's.
  auto stored = ns->Stat(e.address);
  if (!stored.ok()) {
    (void)ns->Delete(e.address);
    return stored.status();
  }
  e.mtime = ToUnixMicros(stored->mtime) / 1000000;
  return e;
}

}  // namespace

Status CompleteMultipartUpload(const Gateway& gw, const Target& t, const Req& req, Res& res, const Reader& body,
                               const Caller& c) {
  if (req.has_header("If-Match")) return S3Error(501, "NotImplemented", "If-Match on a write is not supported");
  std::string inm = req.get_header_value("If-None-Match");
  if (!inm.empty() && inm != "*") return S3Error(501, "NotImplemented", "If-None-Match supports only \"*\"");
  const bool if_absent = inm == "*";
  ARROW_ASSIGN_OR_RAISE(auto repo, WritableBranch(gw, t));
  ARROW_ASSIGN_OR_RAISE(auto u, NamedUpload(gw, t));
  ARROW_ASSIGN_OR_RAISE(std::string xml, ReceiveSmallBody(req, body, c, 4 << 20));
  ARROW_ASSIGN_OR_RAISE(auto wanted, ListedParts(xml));
  ARROW_ASSIGN_OR_RAISE(auto stored, gw.cat->ListUploadParts(t.bucket, u.id));
  std::map<int, catalog::UploadedPart> by_number;
  for (auto& p : stored.items) by_number[p.number] = std::move(p);
  ARROW_ASSIGN_OR_RAISE(auto chosen, ChosenParts(wanted, by_number));
  if (if_absent && gw.cat->GetEntry(t.bucket, t.ref, t.path).ok()) {
    return S3Error(412, "PreconditionFailed", fmt::format("\"{}\" exists (If-None-Match: *)", t.key));
  }
  ARROW_ASSIGN_OR_RAISE(auto ns, gw.cat->RepositoryNamespace(repo));
  ARROW_ASSIGN_OR_RAISE(catalog::Entry e, AssembleParts(ns, u, chosen));
  // Only one completion may publish: the one that removes the upload's records.
  Status claimed = gw.cat->DeleteMultipartUpload(t.bucket, u.id);
  if (!claimed.ok()) {
    (void)ns->Delete(e.address);
    if (IsNotFound(claimed)) return S3Error(404, "NoSuchUpload", claimed.message());
    return claimed;
  }
  Status put = gw.cat->PutUploadedEntry(repo, t.ref, t.path, e, if_absent);
  // The upload is claimed either way, so its parts are nobody's now (a put
  // that staged nothing deletes the assembled object: PutUploadedEntry).
  for (const auto& [num, p] : by_number) (void)ns->Delete(p.address);
  if (IsPreconditionFailed(put)) return S3Error(412, "PreconditionFailed", fmt::format("\"{}\" exists", t.key));
  ARROW_RETURN_NOT_OK(put);
  std::string etag = fmt::format("{}-{}", e.checksum, chosen.size());
  ReplyXml(res, 200,
           fmt::format("<CompleteMultipartUploadResult{}><Location>/{}/{}</Location><Bucket>{}</Bucket><Key>{}</Key>"
                       "<ETag>&quot;{}&quot;</ETag></CompleteMultipartUploadResult>",
                       kXmlns, XmlEscape(t.bucket), XmlEscape(t.key), XmlEscape(t.bucket), XmlEscape(t.key), etag));
  return Status::OK();
}

Status AbortMultipartUpload(const Gateway& gw, const Target& t, const Req&, Res& res, const Caller& /*c*/) {
  ARROW_ASSIGN_OR_RAISE(auto repo, LoadBucket(gw, t.bucket));
  ARROW_ASSIGN_OR_RAISE(auto u, NamedUpload(gw, t));
  ARROW_ASSIGN_OR_RAISE(auto parts, gw.cat->ListUploadParts(t.bucket, u.id));
  Status st = gw.cat->DeleteMultipartUpload(t.bucket, u.id);
  if (IsNotFound(st)) return S3Error(404, "NoSuchUpload", st.message());
  ARROW_RETURN_NOT_OK(st);
  ARROW_ASSIGN_OR_RAISE(auto ns, gw.cat->RepositoryNamespace(repo));
  for (const auto& p : parts.items) (void)ns->Delete(p.address);
  res.status = 204;
  return Status::OK();
}

Status ListMultipartUploads(const Gateway& gw, const Target& t, const Req&, Res& res, const Caller& /*c*/) {
  ARROW_RETURN_NOT_OK(LoadBucket(gw, t.bucket).status());
  for (const char* unsupported : {"delimiter", "prefix", "encoding-type", "key-marker"}) {
    if (t.Has(unsupported)) {
      return S3Error(501, "NotImplemented", fmt::format("ListMultipartUploads with {} is not supported", unsupported));
    }
  }
  int64_t max = 1000;
  if (t.Has("max-uploads")) {
    std::string v = t.Get("max-uploads");
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), max);
    if (ec != std::errc() || p != v.data() + v.size() || max < 1) {
      return S3Error(400, "InvalidArgument", fmt::format("max-uploads \"{}\" must be a positive integer", v));
    }
  }
  ARROW_ASSIGN_OR_RAISE(auto page, gw.cat->ListMultipartUploads(t.bucket, t.Get("upload-id-marker"), max));
  std::string uploads, next;
  for (const auto& u : page.items) {
    uploads += fmt::format(
        "<Upload><Key>{}</Key><UploadId>{}</UploadId><Initiator><ID>{}</ID></Initiator>"
        "<StorageClass>STANDARD</StorageClass><Initiated>{}</Initiated></Upload>",
        XmlEscape(u.branch + "/" + u.path), u.id, XmlEscape(u.initiator), IsoTime(u.created));
    next = u.id;
  }
  ReplyXml(res, 200,
           fmt::format("<ListMultipartUploadsResult{}><Bucket>{}</Bucket><UploadIdMarker>{}</UploadIdMarker>"
                       "<NextUploadIdMarker>{}</NextUploadIdMarker><MaxUploads>{}</MaxUploads>"
                       "<IsTruncated>{}</IsTruncated>{}</ListMultipartUploadsResult>",
                       kXmlns, XmlEscape(t.bucket), XmlEscape(t.Get("upload-id-marker")), next, max,
                       page.has_more ? "true" : "false", uploads));
  return Status::OK();
}

}  // namespace sediment::server::s3
