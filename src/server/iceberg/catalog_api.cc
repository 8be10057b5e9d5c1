#include "server/iceberg/catalog_api.h"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "auth/auth.h"
#include "base/crypto.h"
#include "iceberg/catalog.h"
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

const char* kNamespaces = "/iceberg/v1/namespaces";
const char* kNamespace = R"(/iceberg/v1/namespaces/([^/]+))";
const char* kTables = R"(/iceberg/v1/namespaces/([^/]+)/tables)";
const char* kTable = R"(/iceberg/v1/namespaces/([^/]+)/tables/([^/]+))";

void ReplyModel(Res& res, int code, const std::string& type, const std::string& message) {
  res.status = code;
  res.set_content(json{{"error", {{"message", message}, {"type", type}, {"code", code}}}}.dump(), "application/json");
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

void ReplyOAuthError(Res& res, int code, const std::string& error, const std::string& description) {
  res.status = code;
  res.set_content(json{{"error", error}, {"error_description", description}}.dump(), "application/json");
}

// OAuth2 client credentials (RFC 6749 4.4) with a lakeFS access key: in the
// form body (PyIceberg, Spark) or as HTTP Basic (DuckDB). Any scope.
Status PostToken(IcebergApi* api, const Req& req, Res& res) {
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
  ARROW_ASSIGN_OR_RAISE(bool set_up, api->auth->IsSetUp());
  std::string token = "not-set-up";  // before set-up the tables (and this catalog) are open to all
  if (set_up) {
    if (id.empty() || secret.empty()) {
      ReplyOAuthError(res, 401, "invalid_client",
                      "client_id and client_secret (an access key and its secret) are required");
      return Status::OK();
    }
    auto session = api->auth->Login(id, secret, api->options.token_ttl);
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
  ReplyJson(res, 200,
            {{"metadata-location", loaded->metadata_location},
             {"metadata", json::parse(loaded->metadata)},
             {"config", config}});
  return Status::OK();
}

Status RefuseWrite(IcebergApi*, const Req&, Res& res) {
  ReplyModel(res, 403, "ForbiddenException",
             "Sediment writes its tables itself; engines read them through this catalog (it refuses creating, "
             "committing, renaming and dropping tables and namespaces)");
  return Status::OK();
}

std::vector<ApiRoute<IcebergApi>> IcebergRoutes() {
  const std::string table = kTable, table_label = "/iceberg/v1/namespaces/{namespace}/tables/{table}";
  const std::string tables = kTables, tables_label = "/iceberg/v1/namespaces/{namespace}/tables";
  const std::string ns = kNamespace, ns_label = "/iceberg/v1/namespaces/{namespace}";
  // clang-format off
  return {
      {"GET",    "/iceberg/v1/config",        "/iceberg/v1/config",        GetConfig},
      {"POST",   "/iceberg/v1/oauth/tokens",  "/iceberg/v1/oauth/tokens",  PostToken},
      {"GET",    kNamespaces,                 kNamespaces,                 ListNamespaces},
      {"GET",    ns,                          ns_label,                    GetNamespace},
      {"GET",    tables,                      tables_label,                ListTables},
      {"GET",    table,                       table_label,                 LoadTable},
      // Writes: refused.
      {"POST",   kNamespaces,                 kNamespaces,                 RefuseWrite},
      {"POST",   ns + "/properties",          ns_label + "/properties",    RefuseWrite},
      {"DELETE", ns,                          ns_label,                    RefuseWrite},
      {"POST",   tables,                      tables_label,                RefuseWrite},
      {"POST",   table,                       table_label,                 RefuseWrite},
      {"DELETE", table,                       table_label,                 RefuseWrite},
      {"POST",   table + "/metrics",          table_label + "/metrics",    RefuseWrite},
      {"POST",   ns + "/register",            ns_label + "/register",      RefuseWrite},
      {"POST",   "/iceberg/v1/tables/rename", "/iceberg/v1/tables/rename", RefuseWrite},
      {"POST",   "/iceberg/v1/transactions/commit", "/iceberg/v1/transactions/commit", RefuseWrite},
  };
  // clang-format on
}

}  // namespace

void ReplyIcebergError(Res& res, const Status& st) {
  int code = HttpStatusFor(st);
  std::string type = code == 400   ? "BadRequestException"
                     : code == 401 ? "NotAuthorizedException"
                     : code == 403 ? "ForbiddenException"
                     : code == 404 ? "NoSuchTableException"
                     : code == 503 ? "ServiceUnavailableException"
                     : code == 501 ? "UnsupportedOperationException"
                                   : "ServiceFailureException";
  if (code >= 500) spdlog::warn("iceberg: {}", st.ToString());
  ReplyModel(res, code, type, code >= 500 && code != 503 ? "internal error (the server log has it)" : st.message());
}

std::optional<IcebergAccess> IcebergAccessFor(const Req& req) {
  if (req.path == "/iceberg/v1/oauth/tokens") return std::nullopt;
  // Every client reads the configuration first: a user who may read one table must get past it.
  if (req.path == "/iceberg/v1/config" && (req.method == "GET" || req.method == "HEAD")) return IcebergAccess{};
  static const std::regex scoped(R"(^/iceberg/v1/namespaces/([^/]+)(?:/tables/([^/]+))?(/.*)?$)");
  bool read = req.method == "GET" || req.method == "HEAD";
  IcebergAccess a{read ? "tables:ReadTable" : "tables:WriteTable", "arn:sediment:tables:::*/*"};
  std::smatch m;
  if (std::regex_match(req.path, m, scoped)) {
    a.resource = fmt::format("arn:sediment:tables:::{}/{}", m[1].str(), m[2].matched ? m[2].str() : "*");
  }
  return a;
}

std::shared_ptr<IcebergApi> RegisterIcebergApi(HttpServer* http, iceberg::IcebergCatalog* catalog,
                                               table::TableService* tables, AuthService* auth,
                                               IcebergApiOptions options) {
  auto api = std::make_shared<IcebergApi>(IcebergApi{catalog, tables, auth, std::move(options)});
  RegisterRoutes(http, api.get(), IcebergRoutes(), ReplyIcebergError);
  return api;
}

}  // namespace sediment::server
