// The repositories' Iceberg catalog: the table routes (rows in
// repo_catalog_api.cc), over repo_tables::RepoTables.
#include <fmt/format.h>
#include <httplib.h>

#include "auth/auth.h"
#include "repo_tables/metadata_cache.h"
#include "server/http/errors.h"
#include "server/iceberg/repo_catalog_internal.h"

namespace sediment::server::repo_catalog {
namespace {

using json = nlohmann::json;
using repo_tables::LoadedTable;
using repo_tables::TablePath;

constexpr ErrorTypes kTableErrors{"NoSuchTableException", "AlreadyExistsException"};
constexpr ErrorTypes kCommitErrors{"NoSuchTableException", "CommitFailedException"};

json FullNamespace(const repo_tables::NamespacePath& ns) {
  std::vector<std::string> parts = {ns.repo, ns.ref};
  parts.insert(parts.end(), ns.ns.begin(), ns.ns.end());
  return parts;
}

// Whether `user` may write table `t` (its catalog action and the object on the branch).
bool MayWrite(const Api& api, const std::string& user, const TablePath& t) {
  return api.auth->Authorize(user, "catalog:UpdateTable", repo_tables::TableArn(t.where.repo, t.where.Dotted(), t.name))
             .ok() &&
         api.auth
             ->Authorize(user, "fs:WriteObject",
                         "arn:lakefs:fs:::repository/" + t.where.repo + "/object/" +
                             repo_tables::TablePointer(t.where.ns, t.name))
             .ok();
}

// What an engine needs to reach the table's files: read-only credentials
// unless the ref is a branch and the user may write the table.
Result<json> StorageCredentials(const Api& api, const std::string& user, const TablePath& t,
                                const LoadedTable& loaded) {
  json creds = json::array();
  if (!api.options.storage_config || loaded.location.empty()) return creds;
  bool write = loaded.writable && MayWrite(api, user, t);
  ARROW_ASSIGN_OR_RAISE(auto config, api.options.storage_config(t.where.repo, loaded.location, write));
  if (config.empty()) return creds;
  creds.push_back({{"prefix", loaded.location}, {"config", config}});
  return creds;
}

Status ReplyLoaded(const Api& api, const Call& call, const TablePath& t, const LoadedTable& loaded) {
  ARROW_ASSIGN_OR_RAISE(json creds, StorageCredentials(api, call.user, t, loaded));
  json config = creds.empty() ? json::object() : creds[0]["config"];
  json result = {
      {"metadata-location", loaded.metadata_location.empty() ? json(nullptr) : json(loaded.metadata_location)},
      {"config", config},
      {"storage-credentials", creds}};
  if (!loaded.file) {
    result["metadata"] = loaded.metadata;
    ReplyJson(call.res, 200, result);
    return Status::OK();
  }
  // The metadata file's text as stored (checked JSON when it was read): not parsed and printed again.
  std::string body = result.dump();
  body.pop_back();
  body += ",\"metadata\":" + loaded.file->text + "}";
  call.res.status = 200;
  call.res.set_content(body, "application/json");
  return Status::OK();
}

// A commit that says assert-create creates the table: catalog:CreateTable too.
Status MayCreate(const Api& api, const std::string& user, const repo_tables::TableChange& change) {
  if (!repo_tables::HasAssertCreate(change.requirements)) return Status::OK();
  const TablePath& t = change.table;
  return api.auth->Authorize(user, "catalog:CreateTable",
                             repo_tables::TableArn(t.where.repo, t.where.Dotted(), t.name));
}

Result<TablePath> NamedInBody(const Api& api, const Call& call, const json& body) {
  ARROW_ASSIGN_OR_RAISE(auto ns, PathNamespace(api, call.req, /*need_namespace=*/true));
  if (!body.value("name", json()).is_string()) return InvalidArgument("\"name\" (a string) is required");
  TablePath t{std::move(ns), body["name"].get<std::string>()};
  ARROW_RETURN_NOT_OK(repo_tables::ValidateTableName(t.name));
  return t;
}

Result<repo_tables::TableChange> ChangeOf(const TablePath& t, const json& body, const std::string& where) {
  repo_tables::TableChange change{t};
  for (const char* field : {"requirements", "updates"}) {
    const json& v = body.value(field, json());
    if (!v.is_array()) return InvalidArgument(fmt::format("{}\"{}\" (an array) is required", where, field));
    (std::string(field) == "requirements" ? change.requirements : change.updates) = v;
  }
  return change;
}

}  // namespace

Status ListTables(const Api& api, const Call& call) {
  ARROW_ASSIGN_OR_RAISE(auto ns, PathNamespace(api, call.req, /*need_namespace=*/true));
  auto names = api.tables->ListTables(ns);
  if (!names.ok()) return Reply(call.res, names.status(), {"NoSuchNamespaceException", "AlreadyExistsException"});
  json ids = json::array();
  json client_ns = ClientNamespace(api, call.req, FullNamespace(ns));
  for (const auto& n : *names) ids.push_back({{"namespace", client_ns}, {"name", n}});
  ReplyJson(call.res, 200, {{"identifiers", ids}});
  return Status::OK();
}

Status CreateTable(const Api& api, const Call& call) {
  ARROW_ASSIGN_OR_RAISE(auto body, BodyObject(call.req));
  ARROW_ASSIGN_OR_RAISE(auto t, NamedInBody(api, call, body));
  auto loaded = api.tables->CreateTable(t, body);
  if (!loaded.ok()) return Reply(call.res, loaded.status(), {"NoSuchNamespaceException", "AlreadyExistsException"});
  return ReplyLoaded(api, call, t, *loaded);
}

Status LoadTable(const Api& api, const Call& call) {
  ARROW_ASSIGN_OR_RAISE(auto t, PathTable(api, call.req));
  auto loaded = api.tables->LoadTable(t);
  if (IsNotFound(loaded.status())) {
    // Whatever is missing, a table: Spark falls back to a metadata table (db.t.snapshots) only on this type.
    ReplyModel(call.res, 404, "NoSuchTableException", loaded.status().message());
    return Status::OK();
  }
  if (!loaded.ok()) return Reply(call.res, loaded.status(), kTableErrors);
  return ReplyLoaded(api, call, t, *loaded);
}

Status UpdateTable(const Api& api, const Call& call) {
  ARROW_ASSIGN_OR_RAISE(auto t, PathTable(api, call.req));
  ARROW_ASSIGN_OR_RAISE(auto body, BodyObject(call.req));
  ARROW_ASSIGN_OR_RAISE(auto change, ChangeOf(t, body, ""));
  ARROW_RETURN_NOT_OK(MayCreate(api, call.user, change));
  auto loaded = api.tables->CommitTable(change);
  if (!loaded.ok()) return Reply(call.res, loaded.status(), kCommitErrors);
  ReplyJson(call.res, 200, {{"metadata-location", loaded->metadata_location}, {"metadata", loaded->Metadata()}});
  return Status::OK();
}

Status DropTable(const Api& api, const Call& call) {
  ARROW_ASSIGN_OR_RAISE(auto t, PathTable(api, call.req));
  // With or without purgeRequested: the files stay while a commit or another
  // branch names them; catalog GC deletes them after (docs/iceberg-repositories.md).
  Status st = api.tables->DropTable(t);
  if (!st.ok()) return Reply(call.res, st, kCommitErrors);
  call.res.status = 204;
  return Status::OK();
}

Status LoadCredentials(const Api& api, const Call& call) {
  ARROW_ASSIGN_OR_RAISE(auto t, PathTable(api, call.req));
  auto loaded = api.tables->LoadTable(t);
  if (!loaded.ok()) return Reply(call.res, loaded.status(), kTableErrors);
  ARROW_ASSIGN_OR_RAISE(json creds, StorageCredentials(api, call.user, t, *loaded));
  ReplyJson(call.res, 200, {{"storage-credentials", creds}});
  return Status::OK();
}

Status ReportMetrics(const Api& api, const Call& call) {
  ARROW_RETURN_NOT_OK(PathTable(api, call.req).status());
  ARROW_RETURN_NOT_OK(BodyObject(call.req).status());
  call.res.status = 204;  // accepted; Sediment keeps its own metrics
  return Status::OK();
}

Status RegisterTable(const Api& api, const Call& call) {
  ARROW_ASSIGN_OR_RAISE(auto body, BodyObject(call.req));
  ARROW_ASSIGN_OR_RAISE(auto t, NamedInBody(api, call, body));
  if (!body.value("metadata-location", json()).is_string()) {
    return InvalidArgument("RegisterTableRequest: \"metadata-location\" (a string) is required");
  }
  const json& flag = body.contains("overwrite") ? body["overwrite"] : json(false);
  if (!flag.is_boolean()) return InvalidArgument("RegisterTableRequest: \"overwrite\" must be a boolean");
  bool overwrite = flag.get<bool>();
  if (overwrite) {  // replacing a table is a write of it, beyond creating one
    ARROW_RETURN_NOT_OK(api.auth->Authorize(call.user, "catalog:UpdateTable",
                                            repo_tables::TableArn(t.where.repo, t.where.Dotted(), t.name)));
  }
  auto loaded = api.tables->RegisterTable(t, body["metadata-location"].get<std::string>(), overwrite);
  if (!loaded.ok()) return Reply(call.res, loaded.status(), {"NoSuchNamespaceException", "AlreadyExistsException"});
  return ReplyLoaded(api, call, t, *loaded);
}

Status RenameTable(const Api& api, const Call& call) {
  ARROW_ASSIGN_OR_RAISE(auto body, BodyObject(call.req));
  ARROW_ASSIGN_OR_RAISE(auto from, BodyTable(api, call.req, body.value("source", json()), "source"));
  ARROW_ASSIGN_OR_RAISE(auto to, BodyTable(api, call.req, body.value("destination", json()), "destination"));
  Status st = api.tables->RenameTable(from, to);
  if (!st.ok()) return Reply(call.res, st, kTableErrors);
  call.res.status = 204;
  return Status::OK();
}

Status CommitTransaction(const Api& api, const Call& call) {
  ARROW_ASSIGN_OR_RAISE(auto body, BodyObject(call.req));
  const json& changes = body.value("table-changes", json());
  if (!changes.is_array() || changes.empty())
    return InvalidArgument("\"table-changes\" (a non-empty array) is required");
  std::vector<repo_tables::TableChange> all;
  for (size_t i = 0; i < changes.size(); ++i) {
    std::string where = fmt::format("table-changes[{}].", i);
    if (!changes[i].is_object()) return InvalidArgument(where + ": not an object");
    ARROW_ASSIGN_OR_RAISE(
        auto t, BodyTable(api, call.req, changes[i].value("identifier", json()), (where + "identifier").c_str()));
    ARROW_ASSIGN_OR_RAISE(auto change, ChangeOf(t, changes[i], where));
    ARROW_RETURN_NOT_OK(MayCreate(api, call.user, change));
    all.push_back(std::move(change));
  }
  Status st = api.tables->CommitTransaction(all);
  if (!st.ok()) return Reply(call.res, st, kCommitErrors);
  call.res.status = 204;
  return Status::OK();
}

}  // namespace sediment::server::repo_catalog
