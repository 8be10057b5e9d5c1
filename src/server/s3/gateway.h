// The S3 gateway: lakeFS's S3-compatible protocol over the catalog. A bucket
// is a repository and a key is <ref>/<path>, so `s3://repo/main/a/b.parquet`
// is a/b.parquet on branch main. Requests are signed with the access keys of
// the lakeFS API (AWS Signature V4 or V2) and authorized by the same policies.
// docs/s3-gateway.md lists the operations and how they map.
//
// On the API's port the gateway serves every request that is not for the API
// (/api/...) or /metrics, path-style, and virtual-host requests whose Host is
// <bucket>.<domain_name>. [gateway] listen gives it a port of its own too.
#pragma once

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace sediment::catalog {
class Catalog;
}  // namespace sediment::catalog

namespace sediment::auth {
class AuthService;
}  // namespace sediment::auth

namespace sediment::server {
using auth::AuthService;
class HttpServer;

struct GatewayOptions {
  // Host names under which buckets are addressed virtual-host style
  // (<bucket>.<name>); a request to <name> itself is path-style.
  std::vector<std::string> domain_names = {"s3.local.lakefs.io"};
  std::string region = "us-east-1";
  // Set: a browser's GET of the service (/ on a non-bucket host, no query, no
  // credentials, Accept: text/html) gets this instead of ListBuckets (the console).
  std::function<void(const httplib::Request&, httplib::Response&)> browser_page;
};

// True if `req` carries an AWS signature (header or query).
bool IsAwsSigned(const httplib::Request& req);
// The S3 error for a signed request sent to an API path (/api/...): a client
// configured with the API's URL as its S3 endpoint.
void ReplyApiPathToS3Client(const httplib::Request& req, httplib::Response& res);

// Whether a request on the API port is one for the gateway: signed for S3,
// or on a path no other API serves (not /, /api/..., the Iceberg catalogs', /_console/..., /metrics).
bool IsGatewayRequest(const httplib::Request& req);
// A request refused before routing (HttpLimits::refuse), as an S3 error:
// 400 InvalidRequest, 413 EntityTooLarge, 421 MisdirectedRequest.
void ReplyS3Refusal(const httplib::Request& req, httplib::Response& res, int status, const std::string& message);

// Registers the gateway's routes on `http`: after every other route, since
// they catch all paths but /api/... and /metrics.
void RegisterS3Gateway(HttpServer* http, catalog::Catalog* catalog, AuthService* auth, const GatewayOptions& options);

// The gateway's operation table (s3/operations.cc) as rows: operation,
// method, level ("service", "bucket", "object"), the selecting sub-resource
// and header, and the permission it needs ({"action", "resource"} or null).
nlohmann::json DescribeS3Operations();

}  // namespace sediment::server
