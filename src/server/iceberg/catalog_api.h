// The Iceberg REST catalog (apache/iceberg open-api/rest-catalog-open-api.yaml)
// at /iceberg on the API port: a dataset is a namespace, a table a table.
// Read-only: Sediment is its tables' only writer, so creating, committing,
// renaming and dropping are refused (403 ForbiddenException) and only the
// read routes are advertised. Errors use the protocol's ErrorModel.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "server/http/route.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace sediment::table {
class TableService;
}
namespace sediment::iceberg {
class IcebergCatalog;
}
namespace sediment::auth {
class AuthService;
}

namespace sediment::server {

using auth::AuthService;
class HttpServer;

struct IcebergApiOptions {
  Duration token_ttl = std::chrono::hours(24);
  std::map<std::string, std::string> table_config;  // LoadTableResult "config" (S3 endpoint, vended credentials)
};

// The Iceberg catalog's rows of the route table.
std::vector<Route> IcebergRoutes(iceberg::IcebergCatalog* catalog, table::TableService* tables, AuthService* auth,
                                 IcebergApiOptions options);

// OAuth2 client credentials (RFC 6749 4.4) with a lakeFS access key: in the
// form body (PyIceberg, Spark) or as HTTP Basic (DuckDB). Any scope. Before
// set-up: a token that opens nothing if `open_until_set_up`, else refused.
Status ServeOAuthToken(AuthService* auth, Duration ttl, bool open_until_set_up, const httplib::Request& req,
                       httplib::Response& res);

// A failed Status as the protocol's ErrorModel.
void ReplyIcebergError(httplib::Response& res, const Status& st);
// A request to an Iceberg catalog refused before routing (HttpLimits::refuse), as an ErrorModel.
void ReplyIcebergRefusal(httplib::Response& res, int status, const std::string& message);
// An Iceberg client's refused authentication, saying how to get a token.
Status IcebergRefusal(const Status& st);

}  // namespace sediment::server
