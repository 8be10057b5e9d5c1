// S3 gateway: the service and bucket operations — ListBuckets, HeadBucket,
// GetBucketLocation/Versioning, ListObjects (V1 and V2) and DeleteObjects.
#include <fmt/format.h>

#include <charconv>
#include <functional>
#include <pugixml.hpp>

#include "server/lakefs/api_internal.h"
#include "server/s3/gateway_internal.h"

namespace sediment::server::s3 {
namespace {

constexpr int64_t kMaxKeys = 1000;
constexpr size_t kMaxDeleteKeys = 1000;

Result<int64_t> MaxKeys(const Target& t, const char* name) {
  if (!t.Has(name)) return kMaxKeys;
  std::string v = t.Get(name);
  int64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n < 0) {
    return S3Error(400, "InvalidArgument", fmt::format("{} \"{}\" must be a non-negative integer", name, v));
  }
  return std::min(n, kMaxKeys);
}

// Splits "<ref>/<path>" (a marker or token) and checks it is on `ref`.
Result<std::string> PathAfter(const std::string& marker, const std::string& ref, const char* what) {
  if (marker.empty()) return std::string();
  if (marker.rfind(ref + "/", 0) != 0) {
    // A marker before every key of the ref starts at the beginning; one after all of them ends the listing.
    if (marker < ref + "/") return std::string();
    return S3Error(400, "InvalidArgument",
                   fmt::format("{} \"{}\" is not a key on ref \"{}\" (keys are <ref>/<path>)", what, marker, ref));
  }
  return marker.substr(ref.size() + 1);
}

}  // namespace

Status ListBuckets(const Gateway& gw, const Target& t, const Req&, Res& res, const Caller& c) {
  std::string prefix = t.Get("prefix");
  std::string body = fmt::format(
      "<ListAllMyBucketsResult{}><Owner><ID>{}</ID><DisplayName>{}</DisplayName></Owner>"
      "<Buckets>",
      kXmlns, XmlEscape(c.user), XmlEscape(c.user));
  std::string after;
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto page, gw.cat->ListRepositories(prefix, after, 1000));
    for (const auto& r : page.items) {
      body += fmt::format("<Bucket><Name>{}</Name><CreationDate>{}</CreationDate></Bucket>", XmlEscape(r.id),
                          IsoTime(r.creation_date));
      after = r.id;
    }
    if (!page.has_more || page.items.empty()) break;
  }
  body += "</Buckets></ListAllMyBucketsResult>";
  ReplyXml(res, 200, body);
  return Status::OK();
}

Status HeadBucket(const Gateway& gw, const Target& t, const Req&, Res& res, const Caller& /*c*/) {
  ARROW_RETURN_NOT_OK(LoadBucket(gw, t.bucket).status());
  res.status = 200;
  res.set_header("x-amz-bucket-region", gw.options.region);
  return Status::OK();
}

Status GetBucketLocation(const Gateway& gw, const Target& t, const Req&, Res& res, const Caller& /*c*/) {
  ARROW_RETURN_NOT_OK(LoadBucket(gw, t.bucket).status());
  // us-east-1 is written as an empty constraint, as S3 does.
  std::string region = gw.options.region == "us-east-1" ? "" : XmlEscape(gw.options.region);
  ReplyXml(res, 200, fmt::format("<LocationConstraint{}>{}</LocationConstraint>", kXmlns, region));
  return Status::OK();
}

Status GetBucketVersioning(const Gateway& gw, const Target& t, const Req&, Res& res, const Caller& /*c*/) {
  ARROW_RETURN_NOT_OK(LoadBucket(gw, t.bucket).status());
  ReplyXml(res, 200, fmt::format("<VersioningConfiguration{}/>", kXmlns));
  return Status::OK();
}

namespace {

// One page of a listing, as XML fragments.
struct Listed {
  std::string contents, prefixes, next;
  int64_t count = 0;
  bool truncated = false;
};

using Encode = std::function<std::string(const std::string&)>;

// No ref in the prefix yet: the branches whose names start with it, as common prefixes.
Status ListBranchPrefixes(const Gateway& gw, const Target& t, const std::string& prefix, const std::string& marker,
                          int64_t max_keys, const Encode& enc, Listed* out) {
  std::string after = marker;
  if (auto s = after.find('/'); s != std::string::npos) after = after.substr(0, s);
  if (max_keys <= 0) return Status::OK();
  ARROW_ASSIGN_OR_RAISE(auto page, gw.cat->ListBranches(t.bucket, prefix, after, max_keys));
  for (const auto& b : page.items) {
    out->prefixes += fmt::format("<CommonPrefixes><Prefix>{}</Prefix></CommonPrefixes>", enc(b.id + "/"));
    ++out->count;
    out->next = b.id + "/";
  }
  out->truncated = page.has_more;
  return Status::OK();
}

// <ref>/<path prefix>: the ref's entries and common prefixes.
Status ListRefEntries(const Gateway& gw, const catalog::Repository& repo, const std::string& prefix,
                      const std::string& delimiter, const std::string& marker, bool v2, int64_t max_keys,
                      const Encode& enc, Listed* out) {
  size_t slash = prefix.find('/');
  std::string ref = prefix.substr(0, slash);
  catalog::ListOptions o;
  o.prefix = prefix.substr(slash + 1);
  o.delimiter = delimiter;
  o.amount = max_keys;
  ARROW_ASSIGN_OR_RAISE(o.after, PathAfter(marker, ref, v2 ? "continuation-token" : "marker"));
  if (max_keys <= 0) return Status::OK();
  auto page = gw.cat->ListEntries(repo, ref, o);
  if (IsNotFound(page.status())) page = catalog::Page<catalog::ListItem>{};  // an unknown ref holds nothing
  ARROW_RETURN_NOT_OK(page.status());
  for (const auto& item : page->items) {
    std::string key = ref + "/" + item.path;
    if (item.common_prefix) {
      out->prefixes += fmt::format("<CommonPrefixes><Prefix>{}</Prefix></CommonPrefixes>", enc(key));
    } else {
      const auto& e = item.entry;
      out->contents += fmt::format(
          "<Contents><Key>{}</Key><LastModified>{}</LastModified><ETag>&quot;{}&quot;</ETag><Size>{}</Size>"
          "<StorageClass>STANDARD</StorageClass></Contents>",
          enc(key), IsoTime(e.mtime), XmlEscape(e.checksum), e.size);
    }
    ++out->count;
    out->next = key;
  }
  out->truncated = page->has_more;
  return Status::OK();
}

}  // namespace

// V1 (marker) and V2 (list-type=2: continuation-token, start-after). Keys are
// <ref>/<path>; a prefix without '/' lists the branches as common prefixes.
Status ListObjects(const Gateway& gw, const Target& t, const Req&, Res& res, const Caller& /*c*/) {
  bool v2 = t.Get("list-type") == "2";
  if (t.Has("list-type") && !v2 && t.Get("list-type") != "1") {
    return S3Error(400, "InvalidArgument", fmt::format("list-type \"{}\" must be 1 or 2", t.Get("list-type")));
  }
  std::string prefix = t.Get("prefix"), delimiter = t.Get("delimiter");
  bool url_encode = t.Get("encoding-type") == "url";
  if (t.Has("encoding-type") && !url_encode) {
    return S3Error(400, "InvalidArgument", fmt::format("encoding-type \"{}\" must be url", t.Get("encoding-type")));
  }
  Encode enc = [&](const std::string& s) {
    return XmlEscape(url_encode ? PercentEncode(s, PercentSet::kUnreservedAndSlash) : s);
  };
  ARROW_ASSIGN_OR_RAISE(int64_t max_keys, MaxKeys(t, "max-keys"));
  std::string marker =
      v2 ? (t.Has("continuation-token") ? t.Get("continuation-token") : t.Get("start-after")) : t.Get("marker");
  ARROW_ASSIGN_OR_RAISE(auto repo, LoadBucket(gw, t.bucket));

  Listed listed;
  if (prefix.find('/') == std::string::npos) {
    ARROW_RETURN_NOT_OK(ListBranchPrefixes(gw, t, prefix, marker, max_keys, enc, &listed));
  } else {
    ARROW_RETURN_NOT_OK(ListRefEntries(gw, repo, prefix, delimiter, marker, v2, max_keys, enc, &listed));
  }
  const auto& [contents, prefixes, next, count, truncated] = listed;
  std::string body =
      fmt::format("<ListBucketResult{}><Name>{}</Name><Prefix>{}</Prefix>", kXmlns, XmlEscape(t.bucket), enc(prefix));
  if (v2) {
    body += fmt::format("<KeyCount>{}</KeyCount>", count);
    if (t.Has("continuation-token")) {
      body += fmt::format("<ContinuationToken>{}</ContinuationToken>", XmlEscape(t.Get("continuation-token")));
    }
    if (t.Has("start-after")) body += fmt::format("<StartAfter>{}</StartAfter>", enc(t.Get("start-after")));
    if (truncated) body += fmt::format("<NextContinuationToken>{}</NextContinuationToken>", XmlEscape(next));
  } else {
    body += fmt::format("<Marker>{}</Marker>", enc(marker));
    if (truncated) body += fmt::format("<NextMarker>{}</NextMarker>", enc(next));
  }
  body += fmt::format("<MaxKeys>{}</MaxKeys>", max_keys);
  if (!delimiter.empty()) body += fmt::format("<Delimiter>{}</Delimiter>", enc(delimiter));
  if (url_encode) body += "<EncodingType>url</EncodingType>";
  body += fmt::format("<IsTruncated>{}</IsTruncated>", truncated ? "true" : "false");
  body += contents + prefixes + "</ListBucketResult>";
  ReplyXml(res, 200, body);
  return Status::OK();
}

// POST /bucket?delete: keys may name several branches; each key is deleted on
// its own branch, and a failure is reported for that key alone.
Status DeleteObjects(const Gateway& gw, const Target& t, const Req& req, Res& res, const Reader& reader,
                     const Caller& c) {
  // Checked against the signed payload hash and Content-MD5 like any body.
  ARROW_ASSIGN_OR_RAISE(std::string xml, ReceiveSmallBody(req, reader, c, 2 << 20));
  pugi::xml_document doc;
  auto parsed = doc.load_buffer(xml.data(), xml.size());
  if (!parsed) {
    return S3Error(
        400, "MalformedXML",
        fmt::format("the Delete request body is not XML: {} at offset {}", parsed.description(), parsed.offset));
  }
  pugi::xml_node root = doc.child("Delete");
  if (!root) return S3Error(400, "MalformedXML", "the request body's root element must be <Delete>");
  bool quiet = std::string(root.child_value("Quiet")) == "true";
  std::vector<std::string> keys;
  for (auto obj : root.children("Object")) keys.push_back(obj.child_value("Key"));
  if (keys.empty() || keys.size() > kMaxDeleteKeys) {
    return S3Error(400, "MalformedXML",
                   fmt::format("a Delete request names 1 to {} objects, this one {}", kMaxDeleteKeys, keys.size()));
  }
  std::string deleted, errors;
  auto error = [&](const std::string& key, const Status& st) {
    auto [http, code] = S3CodeFor(st);
    errors += fmt::format("<Error><Key>{}</Key><Code>{}</Code><Message>{}</Message></Error>", XmlEscape(key), code,
                          XmlEscape(st.message()));
  };
  // Group by branch, keeping the caller's order within each.
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> by_ref;  // ref -> (key, path)
  for (const auto& key : keys) {
    size_t slash = key.find('/');
    if (slash == std::string::npos || slash + 1 == key.size()) {
      error(key, S3Error(400, "InvalidArgument", fmt::format("key \"{}\" is not <ref>/<path>", key)));
      continue;
    }
    std::string path = key.substr(slash + 1);
    Status st = catalog::Catalog::ValidatePath(path);
    if (st.ok()) st = gw.Allow(c.user, "fs:DeleteObject", lakefs::ObjectArn(t.bucket, path));
    if (!st.ok()) {
      error(key, st);
      continue;
    }
    by_ref[key.substr(0, slash)].emplace_back(key, path);
  }
  // Each key's permission comes first: who may delete none of them learns
  // nothing about the bucket, not even whether it exists.
  if (!by_ref.empty()) {
    ARROW_ASSIGN_OR_RAISE(auto repo, LoadBucket(gw, t.bucket));
    if (repo.read_only) {
      return S3Error(403, "ReadOnlyRepository", fmt::format("repository \"{}\" is read-only", t.bucket));
    }
  }
  for (const auto& [ref, items] : by_ref) {
    Target bt = t;
    bt.ref = ref;
    Status st = WritableBranch(gw, bt).status();
    if (st.ok()) {
      std::vector<std::string> paths;
      for (const auto& [key, path] : items) paths.push_back(path);
      st = gw.cat->DeleteEntries(t.bucket, ref, paths).status();
    }
    for (const auto& [key, path] : items) {
      if (!st.ok()) {
        error(key, st);
      } else if (!quiet) {
        deleted += fmt::format("<Deleted><Key>{}</Key></Deleted>", XmlEscape(key));
      }
    }
  }
  ReplyXml(res, 200, fmt::format("<DeleteResult{}>{}{}</DeleteResult>", kXmlns, deleted, errors));
  return Status::OK();
}

// PUT /bucket: buckets are repositories, created through the API. Authorized
// first, so the answer does not tell a stranger whether the repository exists.
Status CreateBucket(const Gateway& gw, const Target& t, const Req&, Res&, const Caller& /*c*/) {
  if (!LoadBucket(gw, t.bucket).ok()) {
    return S3Error(501, "NotImplemented",
                   "buckets are repositories: create them through the API (POST /api/v1/repositories)");
  }
  return S3Error(409, "BucketAlreadyExists",
                 "buckets are repositories: create them through the API (POST /api/v1/repositories)");
}

}  // namespace sediment::server::s3
