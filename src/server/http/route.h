// The server's one route table: every API (lakeFS, tables, scan, jobs, the
// Iceberg catalog, the console, health and metrics; the S3 gateway's rows are
// its operations, s3/operations.cc) is a list of `Route` rows, and one
// `Router` authenticates and authorizes each request as its row declares
// before the row's handler runs.
//
// A row says, at a glance:
//   method, path template, operation (its label in metrics and logs),
//   who may call it (Access), the permissions it needs and on what resource,
//   and the handler.
// A path template is literal text with `{name}` parameters (one path segment)
// or `{name:regex}` (a parameter matching `regex`); parameters are also the
// request's `matches[1..]`, in order. A permission's resource is an ARN
// template whose `{name}` parts are filled from the path's parameters,
// `{?name}` from the query, `{body.name}` from a field of the JSON body, and
// `{@name}` from the row's `derive` (values a protocol computes from the
// request, such as the repository and namespace inside an Iceberg identifier;
// a name with several values needs the permission on each).
//
// To add a route: write its handler, add its row to its family's table, and
// the route walk (tests/security/test_route_table.py) checks it is
// authenticated and authorized as the row says.
//
// Thread-safety: build the table before the server starts; it is read-only after.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace httplib {
struct Request;
struct Response;
class ContentReader;
}  // namespace httplib

namespace sediment::auth {
class AuthService;
}

namespace sediment::server {

class HttpServer;

// Who may call a route.
enum class Access {
  kPublic,         // anyone (set-up, log-in, the token endpoint, health, the console's files)
  kAuthenticated,  // any authenticated user; the handler decides what each may see
  kAuthorized,     // a user holding every permission in `needs`
};

// An action on a resource (an ARN template, see above).
struct Permission {
  std::string action;
  std::string resource;
};

// What a protocol family shares: its error format, how it tells a caller who
// is not let in, and whether it is open until the catalog is set up.
struct Protocol {
  std::string name;  // "lakefs", "tables", "iceberg", ...: the first word of its operations' labels
  // Writes a failed Status in the protocol's error format.
  void (*reply_error)(httplib::Response&, const Status&) = nullptr;
  // Turns a failed authentication or authorization into the protocol's own
  // answer (lakeFS: 401 with its words); null keeps the Status.
  Status (*refusal)(const Status&) = nullptr;
  // Before the first admin exists (POST /api/v1/setup_lakefs) every route is
  // open: an embedded, tables-only deployment needs no set-up.
  bool open_until_set_up = false;
  // A request body, if any, must be JSON sent as application/json (a browser
  // cannot be made to send one from another site's form).
  bool json_bodies = false;
};

// What a handler is given.
struct Call {
  const httplib::Request& req;
  httplib::Response& res;
  const std::string& user;             // the authenticated user; "" on a public route (or before set-up)
  const httplib::ContentReader* body;  // a streamed route's body; null otherwise
};
using RouteHandler = std::function<Status(const Call&)>;
// The `{@name}` values of a request; an error (a malformed identifier) is the
// answer, after authentication and before any permission is checked.
using Derived = std::map<std::string, std::vector<std::string>>;
using DeriveFn = std::function<Result<Derived>(const httplib::Request&)>;

struct Route {
  std::string method;
  std::string path;       // template, see above
  std::string operation;  // "lakefs GetBranch": the label in metrics and logs
  Access access = Access::kAuthorized;
  std::vector<Permission> needs;
  RouteHandler handler;
  const Protocol* protocol = nullptr;
  bool streamed = false;      // reads its body as a stream (uploads): no body limit, no JSON check
  DeriveFn derive = nullptr;  // fills the resources' `{@name}` parts
};

// Row helpers, so a table reads as a table.
inline std::vector<Permission> Need(std::string action, std::string resource) {
  return {Permission{std::move(action), std::move(resource)}};
}

// The regex a path template matches, and its parameters' names in order.
// InvalidArgument for a malformed template (a bug in a table; checked at start).
struct CompiledPath {
  std::string regex;
  std::vector<std::string> params;
};
Result<CompiledPath> CompilePath(const std::string& path_template);

// A resource template filled from a request matched by `route`; a parameter
// that is absent is empty.
// `{@name}` parts are kept as they are (ExpandDerived fills them).
std::string ExpandResource(const std::string& resource_template, const CompiledPath& path, const httplib::Request& req);
// `resource` once for each combination of its `{@name}` parts' values.
// InvalidArgument if a part has no value (nothing is authorized for nothing).
Result<std::vector<std::string>> ExpandDerived(const std::string& resource, const Derived& derived);

// Authenticates and authorizes requests as their rows declare, then runs the
// handlers. One per server (the API port; a [gateway] port has only S3).
class Router {
 public:
  explicit Router(auth::AuthService* auth);
  ~Router();

  void Add(std::vector<Route> routes);
  const std::vector<Route>& routes() const { return routes_; }

  // Registers every row with `http`, in order (the first that matches wins).
  Status Register(HttpServer* http);

  // Who the caller of `route` is, if let in: "" for a public route, or on a
  // route open until set-up while it is. Otherwise the refusal, in the
  // protocol's terms.
  Result<std::string> Admit(const Route& route, const CompiledPath& path, const httplib::Request& req);
  // Admit() for the row labelled `operation`, for a transport that is not
  // HTTP (Flight SQL): `req` carries the call's Authorization header and body.
  // NotFound if no row has that label.
  Result<std::string> AdmitOperation(const std::string& operation, const httplib::Request& req);
  // Whether `user` holds `route`'s permissions (the protocol's refusal if not).
  Status Authorize(const Route& route, const CompiledPath& path, const httplib::Request& req, const std::string& user);

  // Runs the non-public route of `protocol` matching `req`'s method and path
  // as `user`, authorized as over HTTP (Lua hooks' in-process API calls).
  // NotFound when no row matches; a failed Status is the caller's to reply.
  Status Dispatch(const std::string& protocol, const std::string& user, httplib::Request& req, httplib::Response& res);

  // The table as JSON (method, path, operation, access, needs, protocol), for
  // `sediment routes` and the route walk test.
  nlohmann::json Describe() const;

 private:
  Result<bool> IsOpen(const Route& route);
  void Serve(const Route& route, const CompiledPath& path, const httplib::Request& req, httplib::Response& res,
             const httplib::ContentReader* body);

  auth::AuthService* auth_;
  std::vector<Route> routes_;
  std::vector<CompiledPath> compiled_;  // routes_[i]'s, filled by Register
  struct Matchers;                      // compiled_[i].regex as std::regex, for Dispatch (router.cc)
  std::unique_ptr<Matchers> matchers_;
  bool registered_ = false;          // Register ran: the table is fixed
  std::atomic<bool> set_up_{false};  // the catalog was set up (cannot be undone)
};

}  // namespace sediment::server
