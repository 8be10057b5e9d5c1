// The repositories' Iceberg catalog: its rows, the shared request parsing,
// configuration, tokens and namespaces (tables: repo_catalog_tables.cc).
#include "server/iceberg/repo_catalog_api.h"

#include <fmt/format.h>
#include <httplib.h>

#include "auth/auth.h"
#include "catalog/catalog.h"
#include "server/http/errors.h"
#include "server/iceberg/catalog_api.h"
#include "server/iceberg/repo_catalog_internal.h"

namespace sediment::server {
namespace repo_catalog {

using json = nlohmann::json;
using Req = httplib::Request;
using Res = httplib::Response;
using repo_tables::NamespacePath;
using repo_tables::TablePath;

std::string Match(const Api& api, const Req& req, int i) {
  size_t at = static_cast<size_t>(i + (api.scoped ? 1 : 0));
  return at < req.matches.size() ? req.matches[at].str() : "";
}

Result<std::vector<std::string>> Scope(const Api& api, const Req& req) {
  if (!api.scoped) return std::vector<std::string>{};
  return repo_tables::SplitScope(req.matches[1].str());
}

Result<NamespacePath> PathNamespace(const Api& api, const Req& req, bool need_namespace) {
  ARROW_ASSIGN_OR_RAISE(auto scope, Scope(api, req));
  ARROW_ASSIGN_OR_RAISE(auto parts, repo_tables::SplitNamespace(scope, Match(api, req, 2)));
  return repo_tables::ToNamespacePath(parts, need_namespace);
}

Result<TablePath> PathTable(const Api& api, const Req& req) {
  ARROW_ASSIGN_OR_RAISE(auto ns, PathNamespace(api, req, /*need_namespace=*/true));
  TablePath t{std::move(ns), Match(api, req, 3)};
  ARROW_RETURN_NOT_OK(repo_tables::ValidateTableName(t.name));
  return t;
}

Result<json> BodyObject(const Req& req) {
  json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) return InvalidArgument("the request body must be a JSON object");
  return body;
}

Result<TablePath> BodyTable(const Api& api, const Req& req, const json& id, const char* where) {
  if (!id.is_object() || !id.contains("namespace") || !id["namespace"].is_array() ||
      !id.value("name", json()).is_string()) {
    return InvalidArgument(
        fmt::format("{}: a table identifier {{\"namespace\": [...], \"name\": ...}} is required", where));
  }
  ARROW_ASSIGN_OR_RAISE(auto parts, Scope(api, req));
  for (const auto& p : id["namespace"]) {
    if (!p.is_string()) return InvalidArgument(fmt::format("{}: namespace parts are strings", where));
    parts.push_back(p.get<std::string>());
  }
  ARROW_ASSIGN_OR_RAISE(auto joined, repo_tables::SplitNamespace({}, [&] {
                          std::string s;
                          for (size_t i = 0; i < parts.size(); ++i) s += (i ? "\x1f" : "") + parts[i];
                          return s;
                        }()));
  ARROW_ASSIGN_OR_RAISE(auto ns, repo_tables::ToNamespacePath(joined, /*need_namespace=*/true));
  TablePath t{std::move(ns), id["name"].get<std::string>()};
  ARROW_RETURN_NOT_OK(repo_tables::ValidateTableName(t.name));
  return t;
}

json ClientNamespace(const Api& api, const Req& req, const std::vector<std::string>& parts) {
  auto scope = Scope(api, req);
  size_t skip = scope.ok() ? scope->size() : 0;
  return json(
      std::vector<std::string>(parts.begin() + static_cast<std::ptrdiff_t>(std::min(skip, parts.size())), parts.end()));
}

void ReplyModel(Res& res, int code, const std::string& type, const std::string& message) {
  ReplyJson(res, code, {{"error", {{"message", message}, {"type", type}, {"code", code}}}});
}

Status Reply(Res& res, const Status& st, ErrorTypes types) {
  if (st.ok()) return st;
  if (IsNotFound(st)) {
    bool ns = st.message().starts_with("namespace") || st.message().starts_with("branch") ||
              st.message().find("repository") == 0;
    ReplyModel(res, 404, ns ? "NoSuchNamespaceException" : types.not_found, st.message());
    return Status::OK();
  }
  if (IsConflict(st)) {
    ReplyModel(res, 409, types.conflict, st.message());
    return Status::OK();
  }
  return st;  // the protocol's mapping (400, 403, 5xx)
}

namespace {

const std::vector<std::string> kEndpoints = {
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
};

Status GetConfig(const Api&, const Call& call) {
  Res& res = call.res;
  ReplyJson(res, 200, {{"defaults", json::object()}, {"overrides", {{"prefix", "lakefs"}}}, {"endpoints", kEndpoints}});
  return Status::OK();
}

Status Allowed(const Api& api, const std::string& user, const std::string& action, const std::string& resource) {
  return api.auth->Authorize(user, action, resource);
}

Status ListNamespaces(const Api& api, const Call& call) {
  const Req& req = call.req;
  Res& res = call.res;
  const std::string& user = call.user;
  ARROW_ASSIGN_OR_RAISE(auto scope, Scope(api, req));
  ARROW_ASSIGN_OR_RAISE(auto parent, repo_tables::SplitNamespace(scope, req.get_param_value("parent")));
  std::vector<std::vector<std::string>> found;
  if (parent.empty()) {  // repositories the user may read
    ARROW_ASSIGN_OR_RAISE(auto repos, api.tables->ListRepositories());
    for (const auto& r : repos) {
      if (Allowed(api, user, "fs:ReadRepository", "arn:lakefs:fs:::repository/" + r).ok()) found.push_back({r});
    }
  } else if (parent.size() == 1) {  // its branches and tags (none for a user who may not list them)
    std::vector<std::string> refs;
    if (Allowed(api, user, "fs:ListBranches", "arn:lakefs:fs:::repository/" + parent[0]).ok()) {
      ARROW_ASSIGN_OR_RAISE(refs, api.tables->ListRefs(parent[0]));
    }
    for (const auto& ref : refs) found.push_back({parent[0], ref});
  } else {  // namespaces, each as the user may see it (lakeFS Enterprise filters the list)
    ARROW_ASSIGN_OR_RAISE(auto ns, repo_tables::ToNamespacePath(parent, /*need_namespace=*/false));
    if (!Allowed(api, user, "fs:ListObjects", "arn:lakefs:fs:::repository/" + ns.repo).ok()) {
      ReplyJson(res, 200, {{"namespaces", json::array()}});  // nothing the user may see
      return Status::OK();
    }
    auto children = api.tables->ListNamespaces(ns);
    ARROW_RETURN_NOT_OK(Reply(res, children.status(), {"NoSuchNamespaceException", "AlreadyExistsException"}));
    if (!children.ok()) return Status::OK();
    for (const auto& child : *children) {
      NamespacePath c{ns.repo, ns.ref, child};
      if (!Allowed(api, user, "catalog:ListNamespaces", repo_tables::NamespaceArn(ns.repo, c.Dotted())).ok()) continue;
      std::vector<std::string> parts = {ns.repo, ns.ref};
      parts.insert(parts.end(), child.begin(), child.end());
      found.push_back(std::move(parts));
    }
  }
  json out = json::array();
  for (const auto& parts : found) out.push_back(ClientNamespace(api, req, parts));
  ReplyJson(res, 200, {{"namespaces", out}});  // everything at once: no next-page-token
  return Status::OK();
}

Status Token(const Api& api, const Call& call) {
  return ServeOAuthToken(api.auth, api.options.token_ttl, /*open_until_set_up=*/false, call.req, call.res);
}

constexpr ErrorTypes kNamespaceErrors{"NoSuchNamespaceException", "AlreadyExistsException"};

Status LoadNamespace(const Api& api, const Req& req, Res& res) {
  ARROW_ASSIGN_OR_RAISE(auto ns, PathNamespace(api, req, /*need_namespace=*/true));
  auto properties = api.tables->LoadNamespace(ns);
  if (!properties.ok()) return Reply(res, properties.status(), kNamespaceErrors);
  std::vector<std::string> parts = {ns.repo, ns.ref};
  parts.insert(parts.end(), ns.ns.begin(), ns.ns.end());
  ReplyJson(res, 200, {{"namespace", ClientNamespace(api, req, parts)}, {"properties", *properties}});
  return Status::OK();
}

// HEAD is answered from the GET row (httplib), without the body.
Status GetNamespace(const Api& api, const Call& c) { return LoadNamespace(api, c.req, c.res); }

Result<std::map<std::string, std::string>> StringMap(const json& body, const char* field) {
  std::map<std::string, std::string> out;
  if (!body.contains(field) || body[field].is_null()) return out;
  if (!body[field].is_object()) return InvalidArgument(fmt::format("\"{}\" must be an object of strings", field));
  for (const auto& [k, v] : body[field].items()) {
    if (!v.is_string()) return InvalidArgument(fmt::format("\"{}\": the value of \"{}\" is not a string", field, k));
    out[k] = v.get<std::string>();
  }
  return out;
}

// The namespace a CreateNamespaceRequest names, in the scope.
Result<NamespacePath> BodyNamespace(const Api& api, const Req& req, const json& body) {
  if (!body.contains("namespace") || !body["namespace"].is_array() || body["namespace"].empty()) {
    return InvalidArgument("CreateNamespaceRequest: \"namespace\" (an array of strings) is required");
  }
  std::string joined;
  for (const auto& p : body["namespace"]) {
    if (!p.is_string()) return InvalidArgument("CreateNamespaceRequest: namespace parts are strings");
    joined += (joined.empty() ? "" : "\x1f") + p.get<std::string>();
  }
  ARROW_ASSIGN_OR_RAISE(auto scope, Scope(api, req));
  ARROW_ASSIGN_OR_RAISE(auto parts, repo_tables::SplitNamespace(scope, joined));
  return repo_tables::ToNamespacePath(parts, /*need_namespace=*/true);
}

Status CreateNamespace(const Api& api, const Call& call) {
  const Req& req = call.req;
  Res& res = call.res;
  ARROW_ASSIGN_OR_RAISE(auto body, BodyObject(req));
  ARROW_ASSIGN_OR_RAISE(auto ns, BodyNamespace(api, req, body));
  ARROW_ASSIGN_OR_RAISE(auto properties, StringMap(body, "properties"));
  Status st = api.tables->CreateNamespace(ns, properties);
  if (!st.ok()) return Reply(res, st, kNamespaceErrors);
  ReplyJson(res, 200, {{"namespace", body["namespace"]}, {"properties", properties}});
  return Status::OK();
}

Status DropNamespace(const Api& api, const Call& call) {
  const Req& req = call.req;
  Res& res = call.res;
  ARROW_ASSIGN_OR_RAISE(auto ns, PathNamespace(api, req, /*need_namespace=*/true));
  Status st = api.tables->DropNamespace(ns);
  if (!st.ok()) return Reply(res, st, {"NoSuchNamespaceException", "NamespaceNotEmptyException"});
  res.status = 204;
  return Status::OK();
}

Status UpdateProperties(const Api& api, const Call& call) {
  const Req& req = call.req;
  Res& res = call.res;
  ARROW_ASSIGN_OR_RAISE(auto ns, PathNamespace(api, req, /*need_namespace=*/true));
  ARROW_ASSIGN_OR_RAISE(auto body, BodyObject(req));
  ARROW_ASSIGN_OR_RAISE(auto updates, StringMap(body, "updates"));
  std::vector<std::string> removals;
  if (body.contains("removals") && !body["removals"].is_null()) {
    if (!body["removals"].is_array()) return InvalidArgument("\"removals\" must be an array of strings");
    for (const auto& k : body["removals"]) {
      if (!k.is_string()) return InvalidArgument("\"removals\" must be an array of strings");
      removals.push_back(k.get<std::string>());
    }
  }
  auto change = api.tables->UpdateNamespace(ns, updates, removals);
  if (IsInvalidArgument(change.status()) &&
      change.status().message().find("both set and removed") != std::string::npos) {
    ReplyModel(res, 422, "UnprocessableEntityException", change.status().message());
    return Status::OK();
  }
  if (!change.ok()) return Reply(res, change.status(), kNamespaceErrors);
  ReplyJson(res, 200, {{"updated", change->updated}, {"removed", change->removed}, {"missing", change->missing}});
  return Status::OK();
}

}  // namespace
}  // namespace repo_catalog
}  // namespace sediment::server

namespace sediment::server {
namespace {

using json = nlohmann::json;
using repo_catalog::Api;
using repo_tables::NamespacePath;
using repo_tables::TablePath;

// The `{@name}` values of the rows' resources (route.h): the repository, the
// dotted namespace, the table and the object a request names.
Derived NamespaceValues(const NamespacePath& ns) {
  return {{"repo", {ns.repo}}, {"ns", {ns.Dotted()}}, {"object", {repo_tables::NamespaceMarker(ns.ns)}}};
}

Derived TableValues(const TablePath& t) {
  Derived d = NamespaceValues(t.where);
  d["table"] = {t.name};
  d["object"] = {repo_tables::TablePointer(t.where.ns, t.name)};
  return d;
}

using Deriver = Result<Derived> (*)(const Api&, const httplib::Request&);

Result<Derived> PathNamespaceValues(const Api& api, const httplib::Request& req) {
  ARROW_ASSIGN_OR_RAISE(auto ns, repo_catalog::PathNamespace(api, req, /*need_namespace=*/true));
  return NamespaceValues(ns);
}

Result<Derived> PathTableValues(const Api& api, const httplib::Request& req) {
  ARROW_ASSIGN_OR_RAISE(auto t, repo_catalog::PathTable(api, req));
  return TableValues(t);
}

// createTable and registerTable: the namespace of the path, the name of the body.
Result<Derived> NamedTableValues(const Api& api, const httplib::Request& req) {
  ARROW_ASSIGN_OR_RAISE(auto ns, repo_catalog::PathNamespace(api, req, /*need_namespace=*/true));
  ARROW_ASSIGN_OR_RAISE(auto body, repo_catalog::BodyObject(req));
  if (!body.value("name", json()).is_string()) return InvalidArgument("\"name\" (a string) is required");
  TablePath t{ns, body["name"].get<std::string>()};
  ARROW_RETURN_NOT_OK(repo_tables::ValidateTableName(t.name));
  return TableValues(t);
}

Result<Derived> BodyNamespaceValues(const Api& api, const httplib::Request& req) {
  ARROW_ASSIGN_OR_RAISE(auto body, repo_catalog::BodyObject(req));
  ARROW_ASSIGN_OR_RAISE(auto ns, repo_catalog::BodyNamespace(api, req, body));
  return NamespaceValues(ns);
}

std::string TableKey(const TablePath& t) { return t.where.Dotted() + "/" + t.name; }

Result<Derived> RenameValues(const Api& api, const httplib::Request& req) {
  ARROW_ASSIGN_OR_RAISE(auto body, repo_catalog::BodyObject(req));
  ARROW_ASSIGN_OR_RAISE(auto from, repo_catalog::BodyTable(api, req, body.value("source", json()), "source"));
  ARROW_ASSIGN_OR_RAISE(auto to, repo_catalog::BodyTable(api, req, body.value("destination", json()), "destination"));
  if (from.where.repo != to.where.repo) return InvalidArgument("a table is renamed within its repository");
  return Derived{{"repo", {from.where.repo}},
                 {"source", {TableKey(from)}},
                 {"destination", {TableKey(to)}},
                 {"source_object", {repo_tables::TablePointer(from.where.ns, from.name)}},
                 {"destination_object", {repo_tables::TablePointer(to.where.ns, to.name)}}};
}

Result<Derived> TransactionValues(const Api& api, const httplib::Request& req) {
  ARROW_ASSIGN_OR_RAISE(auto body, repo_catalog::BodyObject(req));
  const json changes = body.value("table-changes", json());
  if (!changes.is_array() || changes.empty())
    return InvalidArgument("\"table-changes\" (a non-empty array) is required");
  Derived d;
  for (size_t i = 0; i < changes.size(); ++i) {
    std::string where = fmt::format("table-changes[{}].identifier", i);
    ARROW_ASSIGN_OR_RAISE(auto t,
                          repo_catalog::BodyTable(api, req, changes[i].value("identifier", json()), where.c_str()));
    if (d.count("repo") && d["repo"].front() != t.where.repo) {
      return InvalidArgument("a transaction changes tables of one repository");
    }
    d["repo"] = {t.where.repo};
    d["tables"].push_back(TableKey(t));
    d["objects"].push_back(repo_tables::TablePointer(t.where.ns, t.name));
  }
  return d;
}

// A body field of an unexpected type is the client's error (400), never a 500
// (for a commit, Spark reads any 5xx as "commit state unknown").
RouteHandler Guarded(std::shared_ptr<Api> api, Status (*fn)(const Api&, const Call&)) {
  return [api, fn](const Call& c) -> Status {
    try {
      return fn(*api, c);
    } catch (const nlohmann::json::exception& e) {
      return InvalidArgument(std::string("malformed request: ") + e.what());
    }
  };
}

DeriveFn GuardedDerive(std::shared_ptr<Api> api, Deriver derive) {
  return [api, derive](const httplib::Request& req) -> Result<Derived> {
    try {
      return derive(*api, req);
    } catch (const nlohmann::json::exception& e) {
      return InvalidArgument(std::string("malformed request: ") + e.what());
    }
  };
}

}  // namespace

std::vector<Route> RepoCatalogRoutes(repo_tables::RepoTables* tables, auth::AuthService* auth,
                                     RepoCatalogOptions options) {
  static const Protocol kProtocol{"lakefs-iceberg", ReplyIcebergError, IcebergRefusal, /*open_until_set_up=*/false};
  using A = Access;
  using Handler = Status (*)(const Api&, const Call&);
  constexpr const char* kObject = "arn:lakefs:fs:::repository/{@repo}/object/{@object}";
  constexpr const char* kRepo = "arn:lakefs:fs:::repository/{@repo}";
  constexpr const char* kNs = "arn:lakefs:catalog:::namespace/{@repo}/{@ns}";
  constexpr const char* kTable = "arn:lakefs:catalog:::table/{@repo}/{@ns}/{@table}";
  std::vector<Route> rows;
  for (bool scoped : {false, true}) {
    auto api = std::make_shared<Api>(Api{tables, auth, options, scoped});
    const std::string base = scoped ? "/iceberg/relative_to/{scope}/api" : "/iceberg/api";
    const std::string p = base + "/v1{prefix:(?:/lakefs)?}", nss = p + "/namespaces", ns = nss + "/{ns}";
    const std::string tbls = ns + "/tables", tbl = tbls + "/{tbl}";
    auto row = [&](const char* method, std::string path, const char* op, Access access, std::vector<Permission> needs,
                   Handler fn, Deriver derive) {
      Route r{method,           std::move(path), std::string("lakefs-iceberg ") + op, access, std::move(needs),
              Guarded(api, fn), &kProtocol};
      if (derive) r.derive = GuardedDerive(api, derive);
      rows.push_back(std::move(r));
    };
    auto needs = [](std::initializer_list<std::pair<const char*, const char*>> list) {
      std::vector<Permission> out;
      for (const auto& [action, resource] : list) out.push_back({action, resource});
      return out;
    };
    using namespace repo_catalog;  // NOLINT(build/namespaces): the handlers
    // clang-format off
    row("GET",    base + "/v1/config",       "GetConfig",      A::kAuthenticated, {}, GetConfig, nullptr);
    row("POST",   base + "/v1/oauth/tokens", "GetToken",       A::kPublic,        {}, Token,     nullptr);
    row("GET",    nss, "ListNamespaces", A::kAuthenticated, {}, ListNamespaces, nullptr);
    row("POST",   nss, "CreateNamespace", A::kAuthorized,
        needs({{"catalog:CreateNamespace", kNs}, {"fs:WriteObject", kObject}}), CreateNamespace, BodyNamespaceValues);
    row("GET",    ns, "LoadNamespace", A::kAuthorized,
        needs({{"catalog:GetNamespace", kNs}, {"fs:ReadObject", kObject}}), GetNamespace, PathNamespaceValues);
    row("DELETE", ns, "DropNamespace", A::kAuthorized,
        needs({{"catalog:DeleteNamespace", kNs}, {"fs:DeleteObject", kObject}}), DropNamespace, PathNamespaceValues);
    row("POST",   ns + "/properties", "UpdateNamespaceProperties", A::kAuthorized,
        needs({{"catalog:UpdateNamespace", kNs}, {"fs:WriteObject", kObject}}), UpdateProperties, PathNamespaceValues);
    row("GET",    tbls, "ListTables", A::kAuthorized,
        needs({{"catalog:ListTables", kNs}, {"fs:ListObjects", kRepo}}), ListTables, PathNamespaceValues);
    row("POST",   tbls, "CreateTable", A::kAuthorized,
        needs({{"catalog:CreateTable", kTable}, {"fs:WriteObject", kObject}}), CreateTable, NamedTableValues);
    row("POST",   ns + "/register", "RegisterTable", A::kAuthorized,
        needs({{"catalog:CreateTable", kTable}, {"fs:WriteObject", kObject}}), RegisterTable, NamedTableValues);
    row("GET",    tbl, "LoadTable", A::kAuthorized,
        needs({{"catalog:ReadTable", kTable}, {"fs:ReadObject", kObject}}), LoadTable, PathTableValues);
    row("POST",   tbl, "UpdateTable", A::kAuthorized,
        needs({{"catalog:UpdateTable", kTable}, {"fs:WriteObject", kObject}}), UpdateTable, PathTableValues);
    row("DELETE", tbl, "DropTable", A::kAuthorized,
        needs({{"catalog:DeleteTable", kTable}, {"fs:DeleteObject", kObject}}), DropTable, PathTableValues);
    row("GET",    tbl + "/credentials", "LoadCredentials", A::kAuthorized,
        needs({{"catalog:ReadTable", kTable}, {"fs:ReadObject", kObject}}), LoadCredentials, PathTableValues);
    row("POST",   tbl + "/metrics", "ReportMetrics", A::kAuthorized,
        needs({{"catalog:ReadTable", kTable}}), ReportMetrics, PathTableValues);
    row("POST",   p + "/tables/rename", "RenameTable", A::kAuthorized,
        needs({{"catalog:UpdateTable", "arn:lakefs:catalog:::table/{@repo}/{@source}"},
               {"catalog:CreateTable", "arn:lakefs:catalog:::table/{@repo}/{@destination}"},
               {"fs:DeleteObject", "arn:lakefs:fs:::repository/{@repo}/object/{@source_object}"},
               {"fs:WriteObject", "arn:lakefs:fs:::repository/{@repo}/object/{@destination_object}"}}),
        RenameTable, RenameValues);
    row("POST",   p + "/transactions/commit", "CommitTransaction", A::kAuthorized,
        needs({{"catalog:UpdateTable", "arn:lakefs:catalog:::table/{@repo}/{@tables}"},
               {"fs:WriteObject", "arn:lakefs:fs:::repository/{@repo}/object/{@objects}"}}),
        CommitTransaction, TransactionValues);
    // clang-format on
  }
  return rows;
}

}  // namespace sediment::server
