#include "server/iceberg/catalog_api.h"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "auth/auth.h"
#include "base/ascii.h"
#include "base/crypto.h"
#include "iceberg_tables/catalog.h"
#include "server/http/errors.h"
#include "server/http/http_server.h"
#include "server/http/principal.h"
#include "server/http/routes.h"
#include "table/names.h"
#include "table/table_service.h"

namespace sediment::server {
namespace {

using nlohmann::json;
using Req = httplib::Request;
using Res = httplib::Response;

}  // namespace

struct IcebergApi {
  iceberg::IcebergCatalog* catalog;
  table::TableService* tables;
  AuthService* auth;
  IcebergApiOptions options;
};

namespace {

void ReplyModel(Res& res, int code, const std::string& type, const std::string& message) {
  ReplyJson(res, code, {{"error", {{"message", message}, {"type", type}, {"code", code}}}});
}

// The datasets (namespaces) that have tables, in name order.
Result<std::set<std::string>> Datasets(IcebergApi* api) {
  ARROW_ASSIGN_OR_RAISE(auto all, api->tables->ListTables());
  std::set<std::string> out;
  for (const auto& t : all) out.insert(t.id.dataset);
  return out;
}

Status GetConfig(IcebergApi*, const Req&, Res& res) {
  // Only the read routes: Java and PyIceberg then refuse writes before sending them.
  ReplyJson(res, 200,
            {{"defaults", json::object()},
             {"overrides", json::object()},
             {"endpoints",
              {"GET /v1/{prefix}/namespaces", "GET /v1/{prefix}/namespaces/{namespace}",
               "HEAD /v1/{prefix}/namespaces/{namespace}", "GET /v1/{prefix}/namespaces/{namespace}/tables",
               "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
               "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}"}}});
  return Status::OK();
}

Status PostToken(IcebergApi* api, const Req& req, Res& res) {
  return ServeOAuthToken(api->auth, api->options.token_ttl, /*open_until_set_up=*/true, req, res);
}

Status ListNamespaces(IcebergApi* api, const Req& req, Res& res) {
  ARROW_ASSIGN_OR_RAISE(auto datasets, Datasets(api));
  std::string parent = req.get_param_value("parent");
  json out = json::array();
  if (!parent.empty()) {  // datasets have no children
    if (!datasets.count(parent)) {
      ReplyModel(res, 404, "NoSuchNamespaceException", fmt::format("namespace {} does not exist", parent));
      return Status::OK();
    }
  } else {
    for (const auto& d : datasets) out.push_back(json::array({d}));
  }
  ReplyJson(res, 200, {{"namespaces", out}});  // everything at once: no next-page-token
  return Status::OK();
}

Status GetNamespace(IcebergApi* api, const Req& req, Res& res) {
  ARROW_ASSIGN_OR_RAISE(auto datasets, Datasets(api));
  std::string ns = req.matches[1];
  if (!datasets.count(ns)) {
    ReplyModel(res, 404, "NoSuchNamespaceException", fmt::format("namespace {} does not exist", ns));
    return Status::OK();
  }
  ReplyJson(res, 200, {{"namespace", json::array({ns})}, {"properties", json::object()}});
  return Status::OK();
}

Status ListTables(IcebergApi* api, const Req& req, Res& res) {
  std::string ns = req.matches[1];
  json ids = json::array();
  std::string after;
  for (bool more = true; more;) {
    ARROW_ASSIGN_OR_RAISE(auto page, api->tables->ListTables(after, ns, 1000, &more));
    for (const auto& t : page) ids.push_back({{"namespace", json::array({ns})}, {"name", t.id.table}});
    if (!page.empty()) after = page.back().id.ToString();
  }
  if (ids.empty()) {
    ReplyModel(res, 404, "NoSuchNamespaceException", fmt::format("namespace {} does not exist", ns));
    return Status::OK();
  }
  ReplyJson(res, 200, {{"identifiers", ids}});
  return Status::OK();
}

// Whether the caller may read every table (anyone may before set-up).
Result<bool> MayReadEveryTable(IcebergApi* api, const Req& req) {
  ARROW_ASSIGN_OR_RAISE(bool set_up, api->auth->IsSetUp());
  if (!set_up) return true;
  auto user = api->auth->Authenticate(AuthorizationOf(req));
  return user.ok() && api->auth->Authorize(*user, "tables:ReadTable", "arn:sediment:tables:::*/*").ok();
}

Status LoadTable(IcebergApi* api, const Req& req, Res& res) {
  table::TableId id{req.matches[1], req.matches[2]};
  // A name no table can have is no table: Spark asks for db.tbl.snapshots as table "snapshots" of "db.tbl".
  bool named = table::ValidateName("dataset", id.dataset).ok() && table::ValidateName("table", id.table).ok();
  auto loaded = named ? api->catalog->Load(id) : Result<iceberg::LoadedTable>(NotFound("no such table"));
  if (!loaded.ok() && IsNotFound(loaded.status())) {
    ReplyModel(res, 404, "NoSuchTableException", fmt::format("table {}.{} does not exist", id.dataset, id.table));
    return Status::OK();
  }
  ARROW_RETURN_NOT_OK(loaded.status());
  json config = json::object();
  ARROW_ASSIGN_OR_RAISE(bool vend, MayReadEveryTable(api, req));
  for (const auto& [k, v] : api->options.table_config) {
    // The storage credentials reach every table (and whatever else the bucket holds): only for
    // those who may read every table; the others bring their own.
    bool credential = k == "s3.access-key-id" || k == "s3.secret-access-key";
    if (!credential || vend) config[k] = v;
  }
  // The metadata is the catalog's own JSON text: spliced in as it is, not parsed and printed again
  // on every load (the keys in the order a JSON object of them would print).
  auto text = [](const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); };
  res.status = 200;
  res.set_content("{\"config\":" + text(config) + ",\"metadata\":" + loaded->metadata +
                      ",\"metadata-location\":" + text(loaded->metadata_location) + "}",
                  "application/json");
  return Status::OK();
}

Status RefuseWrite(IcebergApi*, const Req&, Res& res) {
  ReplyModel(res, 403, "ForbiddenException",
             "Sediment writes its tables itself; engines read them through this catalog (it refuses creating, "
             "committing, renaming and dropping tables and namespaces)");
  return Status::OK();
}

void ReplyOAuthError(Res& res, int code, const std::string& error, const std::string& description) {
  ReplyJson(res, code, {{"error", error}, {"error_description", description}});
}

}  // namespace

Status ServeOAuthToken(AuthService* auth, Duration ttl, bool open_until_set_up, const Req& req, Res& res) {
  std::string type = req.get_header_value("Content-Type");
  // Exactly as httplib reads form parameters (case and all): a body it would not parse is refused here.
  if (!req.body.empty() && type.rfind("application/x-www-form-urlencoded", 0) != 0) {
    ReplyOAuthError(res, 400, "invalid_request",
                    fmt::format("the token request's body must be a form (Content-Type: "
                                "application/x-www-form-urlencoded), as OAuth2 sends it: "
                                "grant_type=client_credentials&client_id=<access key id>&client_secret=<secret>; "
                                "it came as \"{}\"",
                                type.empty() ? "no Content-Type" : type));
    return Status::OK();
  }
  std::string grant = req.get_param_value("grant_type");
  if (grant != "client_credentials") {
    ReplyOAuthError(res, 400, "unsupported_grant_type",
                    fmt::format("grant_type must be client_credentials (got \"{}\")", grant));
    return Status::OK();
  }
  std::string id = req.get_param_value("client_id"), secret = req.get_param_value("client_secret");
  std::string authorization = req.get_header_value("Authorization");
  if (id.empty() && authorization.rfind("Basic ", 0) == 0) {
    auto decoded = Base64Decode(authorization.substr(6));
    size_t colon = decoded ? decoded->find(':') : std::string::npos;
    if (colon != std::string::npos) {
      id = decoded->substr(0, colon);
      secret = decoded->substr(colon + 1);
    }
  }
  ARROW_ASSIGN_OR_RAISE(bool set_up, auth->IsSetUp());
  if (!set_up && !open_until_set_up) {
    ReplyOAuthError(res, 401, "invalid_client", "the server is not set up yet: set it up (sediment setup) first");
    return Status::OK();
  }
  std::string token = "not-set-up";  // before set-up the chain tables (and their catalog) are open to all
  if (set_up) {
    if (id.empty() || secret.empty()) {
      ReplyOAuthError(res, 401, "invalid_client",
                      "client_id and client_secret (an access key and its secret) are required");
      return Status::OK();
    }
    auto session = auth->Login(id, secret, ttl);
    if (!session.ok()) {
      if (!IsUnauthorized(session.status()) && !IsNotFound(session.status())) return session.status();
      ReplyOAuthError(res, 401, "invalid_client", "the access key or its secret is wrong");
      return Status::OK();
    }
    token = session->token;
  }
  // No expires_in: Spark would then refresh by token exchange; PyIceberg asks again on a 401.
  ReplyJson(res, 200,
            {{"access_token", token},
             {"token_type", "bearer"},
             {"issued_token_type", "urn:ietf:params:oauth:token-type:access_token"}});
  return Status::OK();
}

void ReplyIcebergRefusal(Res& res, int status, const std::string& message) {
  ReplyModel(res, status,
             status == 413   ? "BadRequestException"
             : status == 421 ? "ForbiddenException"
                             : "BadRequestException",
             message);
}

Status IcebergRefusal(const Status& st) {
  if (!IsUnauthorized(st) || st.message().rfind("authentication required", 0) != 0) return st;
  return Unauthorized(
      "authentication required: get a token from the catalog's POST .../v1/oauth/tokens (a form: "
      "grant_type=client_credentials, client_id and client_secret = an access key and its secret) and send it as "
      "Authorization: Bearer <token>, or send the access key as HTTP basic auth (docs/iceberg.md)");
}

void ReplyIcebergError(Res& res, const Status& st) {
  int code = HttpStatusFor(st);
  // A path no route serves is no table (RouteTable's "iceberg NotFound" rows).
  bool no_route = code == 404 && st.message().rfind("no route for ", 0) == 0;
  std::string type = no_route      ? "NotFoundException"
                     : code == 400 ? "BadRequestException"
                     : code == 401 ? "NotAuthorizedException"
                     : code == 403 ? "ForbiddenException"
                     : code == 404 ? "NoSuchTableException"
                     : code == 503 ? "ServiceUnavailableException"
                     : code == 501 ? "UnsupportedOperationException"
                                   : "ServiceFailureException";
  if (code >= 500) spdlog::warn("iceberg: {}", st.ToString());
  ReplyModel(res, code, type, code >= 500 && code != 503 ? "internal error (the server log has it)" : st.message());
}

std::vector<Route> IcebergRoutes(iceberg::IcebergCatalog* catalog, table::TableService* tables, AuthService* auth,
                                 IcebergApiOptions options) {
  // The routes share it; each holds it, so it lives as long as they do.
  auto api = std::make_shared<IcebergApi>(IcebergApi{catalog, tables, auth, std::move(options)});
  static const Protocol kIceberg{"iceberg", ReplyIcebergError, IcebergRefusal, /*open_until_set_up=*/true};
  const std::string v1 = "/iceberg/v1", nss = v1 + "/namespaces", ns = nss + "/{namespace}";
  const std::string tables_path = ns + "/tables", table = tables_path + "/{table}";
  constexpr const char* kTableArn = "arn:sediment:tables:::{namespace}/{table}";
  constexpr const char* kNamespaceArn = "arn:sediment:tables:::{namespace}/*";
  const auto read_all = Need("tables:ReadTable", "arn:sediment:tables:::*/*");
  const auto write_all = Need("tables:WriteTable", "arn:sediment:tables:::*/*");
  const auto read_ns = Need("tables:ReadTable", kNamespaceArn), write_ns = Need("tables:WriteTable", kNamespaceArn);
  const auto write_table = Need("tables:WriteTable", kTableArn);
  using A = Access;
  auto bind = [api](Status (*fn)(IcebergApi*, const Req&, Res&)) -> RouteHandler {
    return [api, fn](const Call& c) { return fn(api.get(), c.req, c.res); };
  };
  // clang-format off
  std::vector<Route> rows = {
      // Every client reads the configuration first: a user who may read one table must get past it.
      {"GET",    v1 + "/config",       "iceberg GetConfig",      A::kAuthenticated, {},       bind(GetConfig)},
      // The token endpoint checks the credentials it is given.
      {"POST",   v1 + "/oauth/tokens", "iceberg GetToken",       A::kPublic,        {},       bind(PostToken)},
      {"GET",    nss,                  "iceberg ListNamespaces", A::kAuthorized,    read_all, bind(ListNamespaces)},
      {"GET",    ns,                   "iceberg LoadNamespace",  A::kAuthorized,    read_ns,  bind(GetNamespace)},
      {"GET",    tables_path,          "iceberg ListTables",     A::kAuthorized,    read_ns,  bind(ListTables)},
      {"GET",    table,                "iceberg LoadTable",      A::kAuthorized,
       Need("tables:ReadTable", kTableArn),                                                   bind(LoadTable)},
      // Writes: refused (Sediment is its tables' only writer).
      {"POST",   nss,                  "iceberg CreateNamespace", A::kAuthorized,   write_all,   bind(RefuseWrite)},
      {"POST",   ns + "/properties",   "iceberg UpdateNamespaceProperties", A::kAuthorized, write_ns, bind(RefuseWrite)},
      {"DELETE", ns,                   "iceberg DropNamespace",  A::kAuthorized,    write_ns,    bind(RefuseWrite)},
      {"POST",   tables_path,          "iceberg CreateTable",    A::kAuthorized,    write_ns,    bind(RefuseWrite)},
      {"POST",   table,                "iceberg UpdateTable",    A::kAuthorized,    write_table, bind(RefuseWrite)},
      {"DELETE", table,                "iceberg DropTable",      A::kAuthorized,    write_table, bind(RefuseWrite)},
      {"POST",   table + "/metrics",   "iceberg ReportMetrics",  A::kAuthorized,    write_table, bind(RefuseWrite)},
      {"POST",   ns + "/register",     "iceberg RegisterTable",  A::kAuthorized,    write_ns,    bind(RefuseWrite)},
      {"POST",   v1 + "/tables/rename", "iceberg RenameTable",   A::kAuthorized,    write_all,   bind(RefuseWrite)},
      {"POST",   v1 + "/transactions/commit", "iceberg CommitTransaction", A::kAuthorized, write_all, bind(RefuseWrite)},
  };
  // clang-format on
  for (Route& r : rows) r.protocol = &kIceberg;
  return rows;
}

}  // namespace sediment::server
