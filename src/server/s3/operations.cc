// The S3 operations the gateway serves, as one table: what a request names
// (service, bucket, ref or object), its method, and the sub-resource or header
// that selects the operation, to the handler and the name metrics and logs use.
// The first row that matches wins, so a more specific row comes first.
//
// To add an operation: write its handler (buckets.cc, objects.cc or
// multipart.cc, declared in gateway_internal.h) and add its row here.
#include <fmt/format.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "server/http/http_server.h"
#include "server/http/route.h"
#include "server/s3/gateway_internal.h"

namespace sediment::server::s3 {
namespace {

// What the request's path names.
enum class Level { kService, kBucket, kObject };

using Handler = Status (*)(const Gateway&, const Target&, const Req&, Res&, const Caller&);
using BodyHandler = Status (*)(const Gateway&, const Target&, const Req&, Res&, const Reader&, const Caller&);

// A row of the route table (http/route.h) in S3's terms: the request's
// level, method and selecting sub-resource or header stand for its path, and
// the permission is checked here, before the handler, as the Router does for
// the other APIs (a copy's source and each key of a multi-object delete are
// checked by their handlers).
struct Operation {
  const char* name;  // the S3 operation: its metric label is "s3 <name>"
  const char* method;
  Level level;
  const char* query = "";   // a sub-resource the request must have ("" none)
  const char* header = "";  // a header the request must have ("" none)
  Permission need;          // resource: an ARN template of {bucket} and {path} (the key within its ref)
  std::variant<Handler, BodyHandler> handler;
};

constexpr const char* kBucketArn = "arn:lakefs:fs:::repository/{bucket}";
constexpr const char* kObjectArn = "arn:lakefs:fs:::repository/{bucket}/object/{path}";

// The template filled in one pass, so a bucket or key that spells a
// placeholder is never expanded again.
std::string ResourceOf(const std::string& resource, const Target& t) {
  std::string out;
  for (size_t i = 0; i < resource.size();) {
    if (resource.compare(i, 8, "{bucket}") == 0) {
      out += t.bucket;
      i += 8;
    } else if (resource.compare(i, 6, "{path}") == 0) {
      out += t.path;
      i += 6;
    } else {
      out += resource[i++];
    }
  }
  return out;
}

const std::vector<Operation>& Operations() {
  using L = Level;
  // clang-format off
  const Permission list_repos{"fs:ListRepositories", "*"}, read_repo{"fs:ReadRepository", kBucketArn};
  const Permission list{"fs:ListObjects", kBucketArn}, create_repo{"fs:CreateRepository", kBucketArn};
  const Permission read{"fs:ReadObject", kObjectArn}, write{"fs:WriteObject", kObjectArn};
  const Permission del{"fs:DeleteObject", kObjectArn};
  // Each key of a multi-object delete is authorized by its handler (fs:DeleteObject).
  const Permission per_key{"", ""};
  static const std::vector<Operation> table = {
      {"ListBuckets",             "GET",    L::kService, "",           "", list_repos,  ListBuckets},
      {"ListBuckets",             "HEAD",   L::kService, "",           "", list_repos,  ListBuckets},
      {"HeadBucket",              "HEAD",   L::kBucket,  "",           "", read_repo,   HeadBucket},
      {"GetBucketLocation",       "GET",    L::kBucket,  "location",   "", list,        GetBucketLocation},
      {"GetBucketVersioning",     "GET",    L::kBucket,  "versioning", "", list,        GetBucketVersioning},
      {"ListMultipartUploads",    "GET",    L::kBucket,  "uploads",    "", list,        ListMultipartUploads},
      {"ListObjects",             "GET",    L::kBucket,  "",           "", list,        ListObjects},
      {"DeleteObjects",           "POST",   L::kBucket,  "delete",     "", per_key,     DeleteObjects},
      {"CreateBucket",            "PUT",    L::kBucket,  "",           "", create_repo, CreateBucket},
      {"ListParts",               "GET",    L::kObject,  "uploadId",   "", read,        ListParts},
      {"ListParts",               "HEAD",   L::kObject,  "uploadId",   "", read,        ListParts},
      {"GetObject",               "GET",    L::kObject,  "",           "", read,        GetObject},
      {"HeadObject",              "HEAD",   L::kObject,  "",           "", read,        GetObject},
      {"UploadPart",              "PUT",    L::kObject,  "uploadId",   "", write,       UploadPart},
      {"UploadPart",              "PUT",    L::kObject,  "partNumber", "", write,       UploadPart},
      {"CopyObject",              "PUT",    L::kObject,  "",           "x-amz-copy-source", write, CopyObject},
      {"PutObject",               "PUT",    L::kObject,  "",           "", write,       PutObject},
      {"CreateMultipartUpload",   "POST",   L::kObject,  "uploads",    "", write,       CreateMultipartUpload},
      {"CompleteMultipartUpload", "POST",   L::kObject,  "uploadId",   "", write,       CompleteMultipartUpload},
      {"AbortMultipartUpload",    "DELETE", L::kObject,  "uploadId",   "", del,         AbortMultipartUpload},
      {"DeleteObject",            "DELETE", L::kObject,  "",           "", del,         DeleteObject},
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
    if (!op.need.action.empty()) ARROW_RETURN_NOT_OK(gw.Allow(c.user, op.need.action, ResourceOf(op.need.resource, t)));
    if (auto* fn = std::get_if<Handler>(&op.handler)) return (*fn)(gw, t, req, res, c);
    if (!body) return InvalidArgument(fmt::format("{} needs a request body", op.name));
    return std::get<BodyHandler>(op.handler)(gw, t, req, res, *body, c);
  }
  static const char* kWhat[] = {"the service", "a bucket", "an object"};
  return S3Error(501, "NotImplemented",
                 fmt::format("{} on {} is not supported by this gateway", m, kWhat[static_cast<int>(level)]));
}

}  // namespace sediment::server::s3

namespace sediment::server {

nlohmann::json DescribeS3Operations() {
  static const char* kLevel[] = {"service", "bucket", "object"};
  nlohmann::json out = nlohmann::json::array();
  for (const s3::Operation& op : s3::Operations()) {
    nlohmann::json need = nullptr;
    if (!op.need.action.empty()) need = {{"action", op.need.action}, {"resource", op.need.resource}};
    out.push_back({{"operation", std::string("s3 ") + op.name},
                   {"method", op.method},
                   {"level", kLevel[static_cast<int>(op.level)]},
                   {"query", op.query},
                   {"header", op.header},
                   {"need", need}});
  }
  return out;
}

}  // namespace sediment::server
