// The lakeFS API's route table and how each kind of route is served. The
// handlers live in lakefs/*_api.cc, one file per resource family.
#include "server/lakefs/api.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <regex>
#include <variant>
#include <vector>

#include "auth/auth.h"
#include "base/ascii.h"
#include "server/http/errors.h"
#include "server/http/http_server.h"
#include "server/http/principal.h"
#include "server/lakefs/api_internal.h"

namespace sediment::server {
namespace {

using namespace lakefs;  // NOLINT(build/namespaces): the handlers named in the table

// Runs with the caller's user id; an unauthenticated request gets 401 (and no
// Basic challenge: a browser must never be led to cache credentials for us).
using AuthedHandler = Status (*)(const Context&, const Req&, Res&, const std::string& me);
// Runs before anyone can log in (setup).
using PublicHandler = Status (*)(const Context&, const Req&, Res&);
// Authenticated, reads its request body as a stream.
using UploadHandler = Status (*)(const Context&, const Req&, Res&, const httplib::ContentReader&,
                                 const std::string& me);

struct Route {
  const char* method;
  std::string pattern;  // an httplib regex; also the route's label in metrics and logs
  std::variant<AuthedHandler, PublicHandler, UploadHandler> handler;
};

// Every lakeFS route. Paths follow lakeFS's OpenAPI spec.
std::vector<Route> LakeFsRoutes() {
  const std::string repo = kRepo;
  const std::string branches = repo + "/branches", branch = branches + "/([^/]+)";
  const std::string ref = repo + "/refs/([^/]+)";
  const std::string pmpu = "/api/v1/repositories/([^/]*)/branches/([^/]*)/staging/pmpu";
  const std::string tags = repo + "/tags", tag = tags + "/([^/]+)";
  const std::string users = "/api/v1/auth/users", user = users + "/([^/]+)";
  const std::string policies = "/api/v1/auth/policies";
  const std::string groups = "/api/v1/auth/groups", group = groups + "/([^/]+)";
  // clang-format off
  return {
      // Setup, configuration, users, credentials, policies, groups (lakefs/auth_api.cc)
      {"GET",    "/api/v1/setup_lakefs",          GetSetupState},
      {"POST",   "/api/v1/setup_lakefs",          SetupLakeFs},
      {"POST",   "/api/v1/auth/login",            Login},
      {"POST",   "/api/v1/auth/logout",           Logout},
      {"GET",    "/api/v1/config",                GetConfig},
      {"GET",    "/api/v1/config/storage",        GetStorageConfig},
      {"GET",    "/api/v1/usage-report/summary",  GetUsageReportSummary},
      {"GET",    "/api/v1/user",                  GetCurrentUser},
      {"GET",    users,                           ListUsers},
      {"POST",   users,                           CreateUser},
      {"GET",    user,                            GetUser},
      {"DELETE", user,                            DeleteUser},
      {"POST",   user + "/credentials",           CreateCredentials},
      {"GET",    user + "/credentials",           ListCredentials},
      {"DELETE", user + "/credentials/([^/]+)",   DeleteCredentials},
      {"POST",   policies,                        CreatePolicy},
      {"GET",    policies,                        ListPolicies},
      {"GET",    policies + "/([^/]+)",           GetPolicy},
      {"DELETE", policies + "/([^/]+)",           DeletePolicy},
      {"GET",    user + "/policies",              ListUserPolicies},
      {"PUT",    user + "/policies/([^/]+)",      AttachPolicy},
      {"DELETE", user + "/policies/([^/]+)",      DetachPolicy},
      {"PUT",    policies + "/([^/]+)",           UpdatePolicy},
      {"GET",    user + "/groups",                ListUserGroups},
      {"GET",    groups,                          ListGroups},
      {"POST",   groups,                          CreateGroup},
      {"GET",    group,                           GetGroup},
      {"DELETE", group,                           DeleteGroup},
      {"GET",    group + "/members",              ListGroupMembers},
      {"PUT",    group + "/members/([^/]+)",      AddGroupMember},
      {"DELETE", group + "/members/([^/]+)",      RemoveGroupMember},
      {"GET",    group + "/policies",             ListGroupPolicies},
      {"PUT",    group + "/policies/([^/]+)",     AttachGroupPolicy},
      {"DELETE", group + "/policies/([^/]+)",     DetachGroupPolicy},
      {"GET",    group + "/acl",                  GetGroupAcl},
      {"POST",   group + "/acl",                  SetGroupAcl},
      // Repositories (lakefs/repositories_api.cc)
      {"GET",    "/api/v1/repositories",          ListRepositories},
      {"POST",   "/api/v1/repositories",          CreateRepository},
      {"GET",    repo,                            GetRepository},
      {"DELETE", repo,                            DeleteRepository},
      {"POST",   repo + "/gc",                    CollectGarbage},
      {"GET",    repo + "/settings/gc_rules",     GetGcRules},
      {"PUT",    repo + "/settings/gc_rules",     SetGcRules},
      {"DELETE", repo + "/settings/gc_rules",     DeleteGcRules},
      {"GET",    repo + "/gc/rules",              GetGcRules},
      {"POST",   repo + "/gc/rules",              SetGcRules},
      {"DELETE", repo + "/gc/rules",              DeleteGcRules},
      {"GET",    repo + "/gc/rules/set_allowed",  GcRulesSetAllowed},
      {"GET",    repo + "/settings/branch_protection", GetBranchProtection},
      {"PUT",    repo + "/settings/branch_protection", SetBranchProtection},
      {"GET",    repo + "/metadata",              GetRepositoryMetadata},
      {"GET",    repo + "/metadata/object/([^/]+)/([^/]+)", GetMetadataObject},
      {"POST",   branch + "/import",              ImportStart},
      {"GET",    branch + "/import",              ImportStatus},
      {"DELETE", branch + "/import",              ImportCancel},
      {"POST",   repo + "/metadata",              SetRepositoryMetadata},
      {"DELETE", repo + "/metadata",              DeleteRepositoryMetadata},
      {"GET",    repo + "/branch_protection",     ListBranchProtectionRules},
      {"POST",   repo + "/branch_protection",     ChangeBranchProtectionRule},
      {"DELETE", repo + "/branch_protection",     ChangeBranchProtectionRule},
      {"GET",    repo + "/branch_protection/set_allowed", BranchProtectionSetAllowed},
      // Branches (lakefs/branches_api.cc; revert and cherry-pick in lakefs/commits_api.cc)
      {"GET",    branches,                        ListBranches},
      {"POST",   branches,                        CreateBranch},
      {"GET",    branch,                          GetBranch},
      {"DELETE", branch,                          DeleteBranch},
      {"PUT",    branch,                          ResetBranch},
      {"PUT",    branch + "/hard_reset",          HardResetBranch},
      {"POST",   branch + "/revert",              RevertBranch},
      {"POST",   branch + "/cherry-pick",         CherryPick},
      {"POST",   branch + "/compact",             CompactBranch},
      {"GET",    branch + "/compact",             GetCompaction},
      {"GET",    branch + "/diff",                DiffBranch},
      // Objects (lakefs/objects_api.cc)
      {"POST",   branch + "/objects",             UploadObject},
      {"DELETE", branch + "/objects",             DeleteObject},
      {"POST",   branch + "/objects/delete",      DeleteObjects},
      {"POST",   branch + "/objects/copy",        CopyObject},
      {"GET",    branch + "/staging/backing",     GetPhysicalAddress},
      {"PUT",    branch + "/staging/backing",     LinkPhysicalAddress},
      // An empty repository or branch reaches these handlers (400), as in lakeFS's router.
      {"POST",   pmpu,                            CreatePresignMultipartUpload},
      {"PUT",    pmpu + "/([^/]+)",               CompletePresignMultipartUpload},
      {"DELETE", pmpu + "/([^/]+)",               AbortPresignMultipartUpload},
      {"PUT",    pmpu + "/([^/]+)/parts/([^/]+)", UploadPart},
      {"PUT",    pmpu + "/([^/]+)/parts/([^/]+)/copy", UploadPartCopy},
      {"GET",    ref + "/objects",                GetObject},
      {"GET",    ref + "/objects/stat",           StatObject},
      {"GET",    ref + "/objects/ls",             ListObjects},
      // Commits, log, diff, merge (lakefs/commits_api.cc)
      {"POST",   branch + "/commits",             Commit},
      {"GET",    repo + "/commits/([^/]+)",       GetCommit},
      {"GET",    ref + "/commits",                LogCommits},
      {"GET",    ref + "/diff/([^/]+)",           DiffRefs},
      {"POST",   ref + "/merge/([^/]+)",          Merge},
      // Actions' runs (lakefs/actions_api.cc)
      {"GET",    repo + "/actions/runs",          ListRepositoryRuns},
      {"GET",    repo + "/actions/runs/([^/]+)",  GetRun},
      {"GET",    repo + "/actions/runs/([^/]+)/hooks", ListRunHooks},
      {"GET",    repo + "/actions/runs/([^/]+)/hooks/([^/]+)/output", GetRunHookOutput},
      // Tags (lakefs/tags_api.cc)
      {"GET",    tags,                            ListTags},
      {"POST",   tags,                            CreateTag},
      {"GET",    tag,                             GetTag},
      {"DELETE", tag,                             DeleteTag},
  };
  // clang-format on
}

// A body of these routes is JSON, and says so: a cross-site form can send
// only text/plain, x-www-form-urlencoded or multipart bodies, so a browser
// cannot be made to send one of these writes (415 otherwise).
bool RefuseNonJsonBody(const Req& req, Res& res) {
  if (req.body.empty()) return false;
  std::string type = req.get_header_value("Content-Type");
  std::string media = type.substr(0, type.find(';'));
  media.erase(media.find_last_not_of(" \t") + 1);
  media = AsciiLower(media);
  if (media == "application/json") return false;
  ReplyError(res, 415,
             fmt::format("the request body must be JSON sent as Content-Type: application/json (got \"{}\")", type));
  return true;
}

// Serves `route` with its handler; a failed Status becomes the error reply.
// Every registered callback holds `ctx`, so it lives as long as the routes.
void Register(HttpServer* http, const std::shared_ptr<const Context>& ctx, const Route& route) {
  const std::string& pattern = route.pattern;
  if (auto* fn = std::get_if<AuthedHandler>(&route.handler)) {
    http->Handle(route.method, pattern, pattern, [ctx, fn = *fn](const Req& req, Res& res) {
      auto user = ctx->auth->Authenticate(AuthorizationOf(req));
      // lakeFS's words for any failed authentication (lakectl doctor reads them).
      if (!user.ok()) {
        ReplyError(res, IsUnauthorized(user.status()) ? Unauthorized("error authenticating request") : user.status());
        return;
      }
      if (RefuseNonJsonBody(req, res)) return;
      Status st = fn(*ctx, req, res, *user);
      if (!st.ok()) ReplyError(res, st);
    });
  } else if (auto* fn = std::get_if<PublicHandler>(&route.handler)) {
    http->Handle(route.method, pattern, pattern, [ctx, fn = *fn](const Req& req, Res& res) {
      if (RefuseNonJsonBody(req, res)) return;
      Status st = fn(*ctx, req, res);
      if (!st.ok()) ReplyError(res, st);
    });
  } else if (auto* fn = std::get_if<UploadHandler>(&route.handler)) {
    http->HandleStream(route.method, pattern, pattern,
                       [ctx, fn = *fn](const Req& req, Res& res, const httplib::ContentReader& reader) {
                         auto user = ctx->auth->Authenticate(AuthorizationOf(req));
                         Status st = user.ok() ? fn(*ctx, req, res, reader, *user) : user.status();
                         if (!st.ok()) ReplyError(res, st);
                       });
  }
}

thread_local bool in_hook_call = false;

// The lakeFS API called in-process as a user (Lua hooks' `lakefs` module):
// the same route table and handlers, so a call is authorized exactly as the
// HTTP request would be. A body is read up to kMaxBody.
class InProcessApi final : public actions::ApiClient {
 public:
  explicit InProcessApi(std::shared_ptr<const Context> ctx) : ctx_(std::move(ctx)) {
    for (const Route& r : LakeFsRoutes()) {
      if (auto* fn = std::get_if<AuthedHandler>(&r.handler)) routes_.push_back({r.method, std::regex(r.pattern), *fn});
    }
  }

  Reply Call(const std::string& user, const std::string& method, const std::string& path,
             const std::multimap<std::string, std::string>& query, const std::string& body) override {
    for (const auto& r : routes_) {
      if (method != r.method) continue;
      Req req;
      req.method = method;
      req.path = path;
      if (!std::regex_match(req.path, req.matches, r.pattern)) continue;
      for (const auto& [k, v] : query) req.params.emplace(k, v);
      req.body = body;
      if (!body.empty()) req.headers.emplace("Content-Type", "application/json");
      Res res;
      in_hook_call = true;
      Status st = r.fn(*ctx_, req, res, user);
      in_hook_call = false;
      if (!st.ok()) ReplyError(res, st);
      if (res.content_provider_) return Drain(res);
      return {res.status, res.body};
    }
    return {404, R"({"message":"no such API operation"})"};
  }

 private:
  static constexpr size_t kMaxBody = 64 << 20;

  // A streamed answer (objects), read into memory up to kMaxBody.
  static Reply Drain(Res& res) {
    std::string out;
    bool done = false, over = false;
    httplib::DataSink sink;
    sink.write = [&](const char* d, size_t n) {
      if (out.size() + n > kMaxBody) {
        over = true;
        return false;
      }
      out.append(d, n);
      return true;
    };
    sink.done = [&] { done = true; };
    sink.is_writable = [] { return true; };
    const size_t length = res.content_length_;
    if (!res.is_chunked_content_provider_ && length > kMaxBody) {
      return {413, fmt::format(R"({{"message":"the object is larger than the {} bytes a hook may read"}})", kMaxBody)};
    }
    while (!done && !over && (res.is_chunked_content_provider_ || out.size() < length)) {
      size_t before = out.size();
      if (!res.content_provider_(out.size(), length - std::min(length, out.size()), sink)) break;
      if (out.size() == before && !done) break;
    }
    if (over)
      return {413, fmt::format(R"({{"message":"the object is larger than the {} bytes a hook may read"}})", kMaxBody)};
    if (!res.is_chunked_content_provider_ && out.size() < length) {
      return {500, R"({"message":"the object could not be read to its end"})"};
    }
    return {res.status, std::move(out)};
  }

  struct Compiled {
    std::string method;
    std::regex pattern;
    AuthedHandler fn;
  };
  std::shared_ptr<const Context> ctx_;
  std::vector<Compiled> routes_;
};

}  // namespace

namespace lakefs {
bool InHookCall() { return in_hook_call; }
}  // namespace lakefs

void RegisterLakeFsApi(HttpServer* http, catalog::Catalog* catalog, catalog::StagingCompactor* compactor,
                       catalog::CatalogCollector* collector, catalog::Importer* importer, AuthService* auth,
                       const std::string& blockstore_type, actions::ActionsService* actions) {
  auto ctx =
      std::make_shared<const Context>(Context{catalog, compactor, collector, importer, auth, blockstore_type, actions});
  for (const Route& route : LakeFsRoutes()) Register(http, ctx, route);
  if (actions != nullptr) actions->SetApiClient(std::make_shared<InProcessApi>(ctx));
}

}  // namespace sediment::server
