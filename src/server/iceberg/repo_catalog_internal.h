// What repo_catalog_api.cc (rows, configuration, namespaces) and
// repo_catalog_tables.cc (tables) share.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "repo_tables/repo_tables.h"
#include "server/http/route.h"
#include "server/iceberg/repo_catalog_api.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace sediment::server::repo_catalog {

struct Api {
  repo_tables::RepoTables* tables;
  auth::AuthService* auth;
  RepoCatalogOptions options;
  bool scoped;  // a /iceberg/relative_to/<scope>/api row: matches[1] is the scope
};

// req.matches[i] counted after the scope (1: the prefix, 2: the namespace, 3: the table).
std::string Match(const Api& api, const httplib::Request& req, int i);
// The scope's parts ({} unscoped).
Result<std::vector<std::string>> Scope(const Api& api, const httplib::Request& req);
// The namespace of the path (`need_namespace`: one inside the ref).
Result<repo_tables::NamespacePath> PathNamespace(const Api& api, const httplib::Request& req, bool need_namespace);
Result<repo_tables::TablePath> PathTable(const Api& api, const httplib::Request& req);
// A TableIdentifier ({"namespace": [...], "name": ...}) of a body, in the scope.
Result<repo_tables::TablePath> BodyTable(const Api& api, const httplib::Request& req, const nlohmann::json& id,
                                         const char* where);
// The JSON object of the body; InvalidArgument naming what is wrong.
Result<nlohmann::json> BodyObject(const httplib::Request& req);
// A namespace's parts as the client sees them (the scope's parts left out).
nlohmann::json ClientNamespace(const Api& api, const httplib::Request& req, const std::vector<std::string>& parts);

// Errors as the ErrorModel: NotFound and Conflict take the route's types.
struct ErrorTypes {
  const char* not_found = "NoSuchTableException";
  const char* conflict = "AlreadyExistsException";
};
void ReplyModel(httplib::Response& res, int code, const std::string& type, const std::string& message);
Status Reply(httplib::Response& res, const Status& st, ErrorTypes types);

// Table handlers (repo_catalog_tables.cc).
Status ListTables(const Api& api, const Call& call);
Status CreateTable(const Api& api, const Call& call);
Status LoadTable(const Api& api, const Call& call);
Status UpdateTable(const Api& api, const Call& call);
Status DropTable(const Api& api, const Call& call);
Status LoadCredentials(const Api& api, const Call& call);
Status ReportMetrics(const Api& api, const Call& call);
Status RegisterTable(const Api& api, const Call& call);
Status RenameTable(const Api& api, const Call& call);
Status CommitTransaction(const Api& api, const Call& call);

}  // namespace sediment::server::repo_catalog
