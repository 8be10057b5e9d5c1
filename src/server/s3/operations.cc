// The S3 operations the gateway serves, as one table: what a request names
// (service, bucket, ref or object), its method, and the sub-resource or header
// that selects the operation, to the handler and the name metrics and logs use.
// The first row that matches wins, so a more specific row comes first.
//
// To add an operation: write its handler (buckets.cc, objects.cc or
// multipart.cc, declared in gateway_internal.h) and add its row here.
#include <fmt/format.h>

#include <string>
#include <variant>
#include <vector>

#include "server/http/http_server.h"
#include "server/s3/gateway_internal.h"

namespace sediment::server::s3 {
namespace {

// What the request's path names.
enum class Level { kService, kBucket, kObject };

using Handler = Status (*)(const Gateway&, const Target&, const Req&, Res&, const Caller&);
using BodyHandler = Status (*)(const Gateway&, const Target&, const Req&, Res&, const Reader&, const Caller&);

struct Operation {
  const char* name;  // the S3 operation: its metric label is "s3 <name>"
  const char* method;
  Level level;
  const char* query = "";   // a sub-resource the request must have ("" none)
  const char* header = "";  // a header the request must have ("" none)
  std::variant<Handler, BodyHandler> handler;
};

const std::vector<Operation>& Operations() {
  using L = Level;
  // clang-format off
  static const std::vector<Operation> table = {
      {"ListBuckets",             "GET",    L::kService, "",           "", ListBuckets},
      {"ListBuckets",             "HEAD",   L::kService, "",           "", ListBuckets},
      {"HeadBucket",              "HEAD",   L::kBucket,  "",           "", HeadBucket},
      {"GetBucketLocation",       "GET",    L::kBucket,  "location",   "", GetBucketLocation},
      {"GetBucketVersioning",     "GET",    L::kBucket,  "versioning", "", GetBucketVersioning},
      {"ListMultipartUploads",    "GET",    L::kBucket,  "uploads",    "", ListMultipartUploads},
      {"ListObjects",             "GET",    L::kBucket,  "",           "", ListObjects},
      {"DeleteObjects",           "POST",   L::kBucket,  "delete",     "", DeleteObjects},
      {"CreateBucket",            "PUT",    L::kBucket,  "",           "", CreateBucket},
      {"ListParts",               "GET",    L::kObject,  "uploadId",   "", ListParts},
      {"ListParts",               "HEAD",   L::kObject,  "uploadId",   "", ListParts},
      {"GetObject",               "GET",    L::kObject,  "",           "", GetObject},
      {"HeadObject",              "HEAD",   L::kObject,  "",           "", GetObject},
      {"UploadPart",              "PUT",    L::kObject,  "uploadId",   "", UploadPart},
      {"UploadPart",              "PUT",    L::kObject,  "partNumber", "", UploadPart},
      {"CopyObject",              "PUT",    L::kObject,  "",           "x-amz-copy-source", CopyObject},
      {"PutObject",               "PUT",    L::kObject,  "",           "", PutObject},
      {"CreateMultipartUpload",   "POST",   L::kObject,  "uploads",    "", CreateMultipartUpload},
      {"CompleteMultipartUpload", "POST",   L::kObject,  "uploadId",   "", CompleteMultipartUpload},
      {"AbortMultipartUpload",    "DELETE", L::kObject,  "uploadId",   "", AbortMultipartUpload},
      {"DeleteObject",            "DELETE", L::kObject,  "",           "", DeleteObject},
  };
  // clang-format on
  return table;
}

// Sub-resources no operation here serves: refused (lakeFS's answer) rather than ignored.
const char* const kUnsupported[] = {"acl",
                                    "cors",
                                    "policy",
                                    "lifecycle",
                                    "tagging",
                                    "torrent",
                                    "website",
                                    "logging",
                                    "replication",
                                    "encryption",
                                    "select",
                                    "restore",
                                    "retention",
                                    "legal-hold",
                                    "object-lock",
                                    "notification",
                                    "inventory",
                                    "metrics",
                                    "analytics",
                                    "accelerate",
                                    "requestPayment",
                                    "ownershipControls",
                                    "publicAccessBlock",
                                    "intelligent-tiering",
                                    "attributes",
                                    "versions"};

}  // namespace

Status RunOperation(const Gateway& gw, const Target& t, const Req& req, Res& res, const Reader* body, const Caller& c) {
  const std::string& m = req.method;
  for (const char* sub : kUnsupported) {
    if (!t.Has(sub)) continue;
    if (std::string(sub) == "tagging" && m == "GET" && !t.path.empty()) {  // clients read tags after uploads
      HttpServer::NameRoute("s3 GetObjectTagging");
      ReplyXml(res, 200, R"(<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet></TagSet></Tagging>)");
      return Status::OK();
    }
    // lakeFS's exact words (its clients compare them); Resource names the request.
    return S3Error(405, "ERRLakeFSNotSupported", "This operation is not supported in LakeFS");
  }
  Level level = t.bucket.empty() ? Level::kService : t.key.empty() ? Level::kBucket : Level::kObject;
  if (level == Level::kObject && t.path.empty()) {
    // s3://repo/ref or s3://repo/ref/: no object, and no listing without ?list-type.
    if (m == "GET" || m == "HEAD") return NoSuchKey(t.key);
    return S3Error(400, "InvalidRequest", fmt::format("\"{}\" names a ref, not an object", t.key));
  }
  for (const Operation& op : Operations()) {
    if (op.level != level || m != op.method || (*op.query && !t.Has(op.query)) ||
        (*op.header && !req.has_header(op.header))) {
      continue;
    }
    HttpServer::NameRoute(std::string("s3 ") + op.name);
    if (auto* fn = std::get_if<Handler>(&op.handler)) return (*fn)(gw, t, req, res, c);
    if (!body) return InvalidArgument(fmt::format("{} needs a request body", op.name));
    return std::get<BodyHandler>(op.handler)(gw, t, req, res, *body, c);
  }
  static const char* kWhat[] = {"the service", "a bucket", "an object"};
  return S3Error(501, "NotImplemented",
                 fmt::format("{} on {} is not supported by this gateway", m, kWhat[static_cast<int>(level)]));
}

}  // namespace sediment::server::s3
