// Private to the S3 gateway (s3/*.cc): the request as the gateway sees it
// (bucket = repository, key = <ref>/<path>), the authenticated caller, S3
// errors, XML, and the operation handlers.
//
// A handler returns a Status; the dispatcher turns a failure into an S3 XML
// error. A Status made by S3Error() carries its S3 code; others are mapped
// from their domain code (errors.h) with the fallback the handler names.
#pragma once

#include <httplib.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/xml.h"
#include "catalog/catalog.h"
#include "server/s3/gateway.h"
#include "server/s3/sig/signature.h"

namespace arrow::io {
class OutputStream;
}  // namespace arrow::io

namespace sediment::auth {
class AuthService;
}  // namespace sediment::auth

namespace sediment::server {
using auth::AuthService;
}  // namespace sediment::server

namespace sediment::server::s3 {

struct Gateway {
  catalog::Catalog* cat;
  AuthService* auth;
  GatewayOptions options;

  Status Allow(const std::string& user, const std::string& action, const std::string& resource) const;
};

// Who sent the request, and how it was signed (for aws-chunked bodies).
struct Caller {
  std::string user;
  Signature sig;
  std::string secret;
};

// What the request names.
struct Target {
  std::string bucket;  // "" for the service (ListBuckets)
  std::string key;     // "" for the bucket; else <ref>/<path> (path may be "")
  std::string ref, path;
  std::vector<std::pair<std::string, std::string>> query;  // decoded
  bool virtual_host = false;

  bool Has(const std::string& name) const;
  std::string Get(const std::string& name) const;
};

// --- errors -------------------------------------------------------------------

// The S3 XML namespace, as an attribute of a reply's root element.
inline constexpr const char* kXmlns = R"( xmlns="http://s3.amazonaws.com/doc/2006-03-01/")";

// A Status that replies `code` (an S3 error code) with `http`.
Status S3Error(int http, std::string code, std::string message);
// The S3 code and HTTP status for `st`.
std::pair<int, std::string> S3CodeFor(const Status& st);
void ReplyS3Error(httplib::Response& res, const Status& st, const std::string& resource);

inline Status NoSuchBucket(const std::string& b) {
  return S3Error(404, "NoSuchBucket", "The specified bucket does not exist: " + b);
}
inline Status NoSuchKey(const std::string& k) {
  return S3Error(404, "NoSuchKey", "The specified key does not exist: " + k);
}
// `st` with NotFound replaced by NoSuchKey for `key`.
Status KeyNotFound(const Status& st, const std::string& key);

// --- XML ---------------------------------------------------------------------

void ReplyXml(httplib::Response& res, int status, const std::string& body);
std::string IsoTime(int64_t unix_seconds);  // 2006-01-02T15:04:05.000Z

// --- shared by handlers -------------------------------------------------------

// The repository, or NoSuchBucket.
Result<catalog::Repository> LoadBucket(const Gateway& gw, const std::string& bucket);
// The repository and branch a write names: NoSuchBucket unless `t.ref` is a
// branch (writes to tags and commits), 403 on a read-only repository.
Result<catalog::Repository> WritableBranch(const Gateway& gw, const Target& t);
// x-amz-meta-* headers, keyed as lakeFS keys them (X-Amz-Meta-Name), values
// RFC 2047-decoded.
std::map<std::string, std::string> AmzMetadata(const httplib::Request& req);
// User metadata as x-amz-meta-* headers (non-ASCII values RFC 2047-encoded).
void MetadataHeaders(httplib::Response& res, const std::map<std::string, std::string>& metadata);
// "<repo>/<ref>/<path>" of x-amz-copy-source, decoded.
Result<Target> CopySource(const httplib::Request& req);

struct ReceivedBody {
  int64_t size = 0;
  std::string md5_hex;
};
// Streams the request body into `out`, decoding aws-chunked and checking the
// signed SHA-256, Content-MD5 and x-amz-checksum-* (header or trailer). On any
// failure `out` is aborted and nothing is published.
Result<ReceivedBody> ReceiveBody(const httplib::Request& req, const httplib::ContentReader& reader,
                                 const Caller& caller, arrow::io::OutputStream* out);
// A small request body (an XML document) of at most `max_bytes`, received and
// checked as ReceiveBody does; MalformedXML when larger.
Result<std::string> ReceiveSmallBody(const httplib::Request& req, const httplib::ContentReader& reader,
                                     const Caller& caller, size_t max_bytes);

// --- operations (s3/operations.cc) -----------------------------------------------

// Runs the operation the request names (the table in operations.cc) for an
// authenticated caller, and names it for metrics ("s3 <Operation>").
Status RunOperation(const Gateway& gw, const Target& t, const httplib::Request& req, httplib::Response& res,
                    const httplib::ContentReader* body, const Caller& c);

// --- handlers (s3/buckets.cc, s3/objects.cc, s3/multipart.cc) -------------------

using Req = httplib::Request;
using Res = httplib::Response;
using Reader = httplib::ContentReader;

Status ListBuckets(const Gateway& gw, const Target& t, const Req& req, Res& res, const Caller& c);
Status HeadBucket(const Gateway& gw, const Target& t, const Req& req, Res& res, const Caller& c);
Status ListObjects(const Gateway& gw, const Target& t, const Req& req, Res& res, const Caller& c);
Status GetBucketLocation(const Gateway& gw, const Target& t, const Req& req, Res& res, const Caller& c);
Status GetBucketVersioning(const Gateway& gw, const Target& t, const Req& req, Res& res, const Caller& c);
Status DeleteObjects(const Gateway& gw, const Target& t, const Req& req, Res& res, const Reader& body, const Caller& c);
Status CreateBucket(const Gateway& gw, const Target& t, const Req& req, Res& res, const Caller& c);

Status GetObject(const Gateway& gw, const Target& t, const Req& req, Res& res, const Caller& c);
Status PutObject(const Gateway& gw, const Target& t, const Req& req, Res& res, const Reader& body, const Caller& c);
Status CopyObject(const Gateway& gw, const Target& t, const Req& req, Res& res, const Caller& c);
Status DeleteObject(const Gateway& gw, const Target& t, const Req& req, Res& res, const Caller& c);

Status CreateMultipartUpload(const Gateway& gw, const Target& t, const Req& req, Res& res, const Caller& c);
Status UploadPart(const Gateway& gw, const Target& t, const Req& req, Res& res, const Reader& body, const Caller& c);
Status ListParts(const Gateway& gw, const Target& t, const Req& req, Res& res, const Caller& c);
Status CompleteMultipartUpload(const Gateway& gw, const Target& t, const Req& req, Res& res, const Reader& body,
                               const Caller& c);
Status AbortMultipartUpload(const Gateway& gw, const Target& t, const Req& req, Res& res, const Caller& c);
Status ListMultipartUploads(const Gateway& gw, const Target& t, const Req& req, Res& res, const Caller& c);

}  // namespace sediment::server::s3
