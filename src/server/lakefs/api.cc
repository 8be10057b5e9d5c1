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

// The lakeFS protocol: JSON errors, and lakeFS's words for a caller who is
// not let in (its clients and esti compare them): 401 "error authenticating
// request" (and no Basic challenge: a browser must never be led to cache
// credentials for us), and 401, not 403, "insufficient permissions: ...".
Status LakeFsRefusal(const Status& st) {
  if (IsForbidden(st)) return Unauthorized("insufficient permissions: " + st.message());
  if (IsUnauthorized(st)) return Unauthorized("error authenticating request");
  return st;
}
const Protocol kLakeFs{"lakefs", ReplyError, LakeFsRefusal, /*open_until_set_up=*/false, /*json_bodies=*/true};

// ARN templates of the permissions (route.h: {param}, {?query}, {body.field}).
constexpr const char* kRepoArn = "arn:lakefs:fs:::repository/{repository}";
constexpr const char* kBranchArn = "arn:lakefs:fs:::repository/{repository}/branch/{branch}";
constexpr const char* kPathArn = "arn:lakefs:fs:::repository/{repository}/object/{?path}";
constexpr const char* kTagArn = "arn:lakefs:fs:::repository/{repository}/tag/{tag}";
constexpr const char* kUserArn = "arn:lakefs:auth:::user/{user}";
constexpr const char* kPolicyArn = "arn:lakefs:auth:::policy/{policy}";
constexpr const char* kGroupArn = "arn:lakefs:auth:::group/{group}";
constexpr const char* kGroupAclArn = "arn:lakefs:auth:::policy/ACL(_-_){group}";

using AuthedHandler = Status (*)(const Context&, const Req&, Res&, const std::string& me);
using PublicHandler = Status (*)(const Context&, const Req&, Res&);
using UploadHandler = Status (*)(const Context&, const Req&, Res&, const httplib::ContentReader&,
                                 const std::string& me);

// Rows of the table, built with the handlers' shared context.
class Rows {
 public:
  explicit Rows(std::shared_ptr<const Context> ctx) : ctx_(std::move(ctx)) {}

  // An authorized route: `needs` are checked before `fn` runs.
  void Add(const char* method, std::string path, const char* op, std::vector<Permission> needs, AuthedHandler fn) {
    Push(method, std::move(path), op, Access::kAuthorized, std::move(needs),
         [ctx = ctx_, fn](const Call& c) { return fn(*ctx, c.req, c.res, c.user); });
  }
  // Any authenticated user (the handler shows each only their own).
  void User(const char* method, std::string path, const char* op, AuthedHandler fn) {
    Push(method, std::move(path), op, Access::kAuthenticated, {},
         [ctx = ctx_, fn](const Call& c) { return fn(*ctx, c.req, c.res, c.user); });
  }
  // Before anyone can log in (set-up, log-in).
  void Public(const char* method, std::string path, const char* op, PublicHandler fn) {
    Push(method, std::move(path), op, Access::kPublic, {},
         [ctx = ctx_, fn](const Call& c) { return fn(*ctx, c.req, c.res); });
  }
  void Upload(const char* method, std::string path, const char* op, std::vector<Permission> needs, UploadHandler fn) {
    Push(method, std::move(path), op, Access::kAuthorized, std::move(needs),
         [ctx = ctx_, fn](const Call& c) { return fn(*ctx, c.req, c.res, *c.body, c.user); });
    rows_.back().streamed = true;
  }
  std::vector<Route> Take() { return std::move(rows_); }

 private:
  void Push(const char* method, std::string path, const char* op, Access access, std::vector<Permission> needs,
            RouteHandler handler) {
    rows_.push_back(Route{method, std::move(path), std::string("lakefs ") + op, access, std::move(needs),
                          std::move(handler), &kLakeFs});
  }
  std::shared_ptr<const Context> ctx_;
  std::vector<Route> rows_;
};

void AuthRoutes(Rows& r) {
  const std::string users = "/api/v1/auth/users", user = users + "/{user}";
  const std::string policies = "/api/v1/auth/policies", policy = policies + "/{policy}";
  const std::string groups = "/api/v1/auth/groups", group = groups + "/{group}";
  // clang-format off
  r.Public("GET",    "/api/v1/setup_lakefs",         "GetSetupState",         GetSetupState);
  r.Public("POST",   "/api/v1/setup_lakefs",         "Setup",                 SetupLakeFs);
  r.Public("POST",   "/api/v1/auth/login",           "Login",                 Login);
  r.Public("POST",   "/api/v1/auth/logout",          "Logout",                Logout);
  r.User("GET",      "/api/v1/config",               "GetConfig",             GetConfig);
  r.User("GET",      "/api/v1/config/storage",       "GetStorageConfig",      GetStorageConfig);
  r.User("GET",      "/api/v1/usage-report/summary", "GetUsageReportSummary", GetUsageReportSummary);
  r.User("GET",      "/api/v1/user",                 "GetCurrentUser",        GetCurrentUser);
  r.Add("GET",    users,                           "ListUsers",         Need("auth:ListUsers", "*"),            ListUsers);
  r.Add("POST",   users,                           "CreateUser",  Need("auth:CreateUser", "arn:lakefs:auth:::user/{body.id}"), CreateUser);
  r.Add("GET",    user,                            "GetUser",           Need("auth:ReadUser", kUserArn),        GetUser);
  r.Add("DELETE", user,                            "DeleteUser",        Need("auth:DeleteUser", kUserArn),      DeleteUser);
  r.Add("POST",   user + "/credentials",           "CreateCredentials", Need("auth:CreateCredentials", kUserArn), CreateCredentials);
  r.Add("GET",    user + "/credentials",           "ListUserCredentials", Need("auth:ListCredentials", kUserArn), ListCredentials);
  r.Add("DELETE", user + "/credentials/{key}",     "DeleteCredentials", Need("auth:DeleteCredentials", kUserArn), DeleteCredentials);
  r.Add("POST",   policies,                        "CreatePolicy", Need("auth:CreatePolicy", "arn:lakefs:auth:::policy/{body.id}"), CreatePolicy);
  r.Add("GET",    policies,                        "ListPolicies",      Need("auth:ListPolicies", "*"),         ListPolicies);
  r.Add("GET",    policy,                          "GetPolicy",         Need("auth:ReadPolicy", kPolicyArn),    GetPolicy);
  r.Add("DELETE", policy,                          "DeletePolicy",      Need("auth:DeletePolicy", kPolicyArn),  DeletePolicy);
  r.Add("PUT",    policy,                          "UpdatePolicy",      Need("auth:UpdatePolicy", kPolicyArn),  UpdatePolicy);
  r.Add("GET",    user + "/policies",              "ListUserPolicies",  Need("auth:ReadUser", kUserArn),        ListUserPolicies);
  r.Add("PUT",    user + "/policies/{policy}",     "AttachPolicyToUser", Need("auth:AttachPolicy", kUserArn),   AttachPolicy);
  r.Add("DELETE", user + "/policies/{policy}",     "DetachPolicyFromUser", Need("auth:DetachPolicy", kUserArn), DetachPolicy);
  r.Add("GET",    user + "/groups",                "ListUserGroups",    Need("auth:ReadUser", kUserArn),        ListUserGroups);
  r.Add("GET",    groups,                          "ListGroups",        Need("auth:ListGroups", "*"),           ListGroups);
  r.Add("POST",   groups,                          "CreateGroup",  Need("auth:CreateGroup", "arn:lakefs:auth:::group/{body.id}"), CreateGroup);
  r.Add("GET",    group,                           "GetGroup",          Need("auth:ReadGroup", kGroupArn),      GetGroup);
  r.Add("DELETE", group,                           "DeleteGroup",       Need("auth:DeleteGroup", kGroupArn),    DeleteGroup);
  r.Add("GET",    group + "/members",              "ListGroupMembers",  Need("auth:ReadGroup", kGroupArn),      ListGroupMembers);
  r.Add("PUT",    group + "/members/{member}",     "AddGroupMembership", Need("auth:AddGroupMember", kGroupArn), AddGroupMember);
  r.Add("DELETE", group + "/members/{member}",     "DeleteGroupMembership", Need("auth:RemoveGroupMember", kGroupArn), RemoveGroupMember);
  r.Add("GET",    group + "/policies",             "ListGroupPolicies", Need("auth:ReadGroup", kGroupArn),      ListGroupPolicies);
  r.Add("PUT",    group + "/policies/{policy}",    "AttachPolicyToGroup", Need("auth:AttachPolicy", kGroupArn), AttachGroupPolicy);
  r.Add("DELETE", group + "/policies/{policy}",    "DetachPolicyFromGroup", Need("auth:DetachPolicy", kGroupArn), DetachGroupPolicy);
  r.Add("GET",    group + "/acl",                  "GetGroupACL",
        {{"auth:ReadGroup", kGroupArn}, {"auth:ReadPolicy", kGroupAclArn}},                                  GetGroupAcl);
  r.Add("POST",   group + "/acl",                  "SetGroupACL",
        {{"auth:ReadGroup", kGroupArn}, {"auth:AttachPolicy", kGroupAclArn}, {"auth:UpdatePolicy", kGroupAclArn}}, SetGroupAcl);
  // clang-format on
}

void RepositoryRoutes(Rows& r) {
  const std::string repo = "/api/v1/repositories/{repository}", branch = repo + "/branches/{branch}";
  const auto read = Need("fs:ReadRepository", kRepoArn), update = Need("fs:UpdateRepository", kRepoArn);
  const auto get_gc = Need("retention:GetGarbageCollectionRules", kRepoArn);
  const auto set_gc = Need("retention:SetGarbageCollectionRules", kRepoArn);
  const auto get_bp = Need("branches:GetBranchProtectionRules", kRepoArn);
  const auto set_bp = Need("branches:SetBranchProtectionRules", kRepoArn);
  // clang-format off
  r.Add("GET",    "/api/v1/repositories",         "ListRepositories",  Need("fs:ListRepositories", "*"),      ListRepositories);
  r.Add("POST",   "/api/v1/repositories",         "CreateRepository",
        Need("fs:CreateRepository", "arn:lakefs:fs:::repository/{body.name}"),                                CreateRepository);
  r.Add("GET",    repo,                           "GetRepository",     read,                                  GetRepository);
  r.Add("DELETE", repo,                           "DeleteRepository",  Need("fs:DeleteRepository", kRepoArn), DeleteRepository);
  r.Add("POST",   repo + "/gc",                   "RunGarbageCollection", Need("retention:RunGarbageCollection", kRepoArn), CollectGarbage);
  r.Add("GET",    repo + "/settings/gc_rules",    "GetGCRules",        get_gc,                                GetGcRules);
  r.Add("PUT",    repo + "/settings/gc_rules",    "SetGCRules",        set_gc,                                SetGcRules);
  r.Add("DELETE", repo + "/settings/gc_rules",    "DeleteGCRules",     set_gc,                                DeleteGcRules);
  r.Add("GET",    repo + "/gc/rules",             "GetGCRulesLegacy",  get_gc,                                GetGcRules);
  r.Add("POST",   repo + "/gc/rules",             "SetGCRulesLegacy",  set_gc,                                SetGcRules);
  r.Add("DELETE", repo + "/gc/rules",             "DeleteGCRulesLegacy", set_gc,                              DeleteGcRules);
  r.Add("GET",    repo + "/gc/rules/set_allowed", "SetGCRulesPreflight", set_gc,                              GcRulesSetAllowed);
  r.Add("GET",    repo + "/settings/branch_protection", "GetBranchProtectionRules", get_bp,                   GetBranchProtection);
  r.Add("PUT",    repo + "/settings/branch_protection", "SetBranchProtectionRules", set_bp,                   SetBranchProtection);
  r.Add("GET",    repo + "/metadata",             "GetRepositoryMetadata", read,                              GetRepositoryMetadata);
  r.Add("GET",    repo + "/metadata/object/{type}/{object}", "GetMetadataObject",
        {{"fs:ListObjects", kRepoArn}, {"fs:ReadRepository", kRepoArn}},                                      GetMetadataObject);
  r.Add("POST",   repo + "/metadata",             "SetRepositoryMetadata", update,                            SetRepositoryMetadata);
  r.Add("DELETE", repo + "/metadata",             "DeleteRepositoryMetadata", update,                         DeleteRepositoryMetadata);
  r.Add("GET",    repo + "/branch_protection",    "InternalGetBranchProtectionRules", get_bp,                 ListBranchProtectionRules);
  r.Add("POST",   repo + "/branch_protection",    "CreateBranchProtectionRulePreflight", set_bp,              ChangeBranchProtectionRule);
  r.Add("DELETE", repo + "/branch_protection",    "DeleteBranchProtectionRule", set_bp,                       ChangeBranchProtectionRule);
  r.Add("GET",    repo + "/branch_protection/set_allowed", "CreateBranchProtectionRulePreflight2", set_bp,    BranchProtectionSetAllowed);
  r.Add("POST",   branch + "/import",             "ImportStart",
        {{"fs:WriteObject", kBranchArn}, {"fs:CreateCommit", kBranchArn}},                                    ImportStart);
  r.Add("GET",    branch + "/import",             "ImportStatus",      Need("fs:ReadBranch", kBranchArn),     ImportStatus);
  r.Add("DELETE", branch + "/import",             "ImportCancel",      Need("fs:ImportCancel", kBranchArn),   ImportCancel);
  r.Add("GET",    repo + "/actions/runs",         "ListRepositoryRuns", Need("ci:ReadAction", kRepoArn),      ListRepositoryRuns);
  r.Add("GET",    repo + "/actions/runs/{run}",   "GetRun",            Need("ci:ReadAction", kRepoArn),       GetRun);
  r.Add("GET",    repo + "/actions/runs/{run}/hooks", "ListRunHooks",  Need("ci:ReadAction", kRepoArn),       ListRunHooks);
  r.Add("GET",    repo + "/actions/runs/{run}/hooks/{hook}/output", "GetRunHookOutput",
        Need("ci:ReadAction", kRepoArn),                                                                      GetRunHookOutput);
  // clang-format on
}

void BranchRoutes(Rows& r) {
  const std::string repo = "/api/v1/repositories/{repository}", branches = repo + "/branches";
  const std::string branch = branches + "/{branch}";
  const auto revert = Need("fs:RevertBranch", kBranchArn), compact = Need("branches:CompactBranch", kBranchArn);
  const auto commit = Need("fs:CreateCommit", kBranchArn);
  // clang-format off
  r.Add("GET",    branches,                   "ListBranches",   Need("fs:ListBranches", kRepoArn),          ListBranches);
  r.Add("POST",   branches,                   "CreateBranch",
        Need("fs:CreateBranch", "arn:lakefs:fs:::repository/{repository}/branch/{body.name}"),           CreateBranch);
  r.Add("GET",    branch,                     "GetBranch",      Need("fs:ReadBranch", kBranchArn),          GetBranch);
  r.Add("DELETE", branch,                     "DeleteBranch",   Need("fs:DeleteBranch", kBranchArn),        DeleteBranch);
  r.Add("PUT",    branch,                     "ResetBranch",    revert,                                     ResetBranch);
  r.Add("PUT",    branch + "/hard_reset",     "HardResetBranch", revert,                                    HardResetBranch);
  r.Add("POST",   branch + "/revert",         "RevertBranch",   revert,                                     RevertBranch);
  r.Add("POST",   branch + "/cherry-pick",    "CherryPick",     commit,                                     CherryPick);
  r.Add("POST",   branch + "/compact",        "CompactBranch",  compact,                                    CompactBranch);
  r.Add("GET",    branch + "/compact",        "GetCompaction",  compact,                                    GetCompaction);
  r.Add("GET",    branch + "/diff",           "DiffBranch",     Need("fs:ListObjects", kRepoArn),           DiffBranch);
  r.Add("POST",   branch + "/commits",        "Commit",         commit,                                     Commit);
  r.Add("GET",    repo + "/commits/{commit}", "GetCommit",      Need("fs:ReadCommit", kRepoArn),            GetCommit);
  r.Add("GET",    repo + "/refs/{ref}/commits", "LogCommits",   Need("fs:ReadCommit", kRepoArn),            LogCommits);
  r.Add("GET",    repo + "/refs/{ref}/diff/{right}", "DiffRefs", Need("fs:ListObjects", kRepoArn),          DiffRefs);
  r.Add("POST",   repo + "/refs/{ref}/merge/{branch}", "MergeIntoBranch", commit,                           Merge);
  r.Add("GET",    repo + "/tags",             "ListTags",       Need("fs:ListTags", kRepoArn),              ListTags);
  r.Add("POST",   repo + "/tags",             "CreateTag",
        Need("fs:CreateTag", "arn:lakefs:fs:::repository/{repository}/tag/{body.id}"),                    CreateTag);
  r.Add("GET",    repo + "/tags/{tag}",       "GetTag",         Need("fs:ReadTag", kTagArn),                GetTag);
  r.Add("DELETE", repo + "/tags/{tag}",       "DeleteTag",      Need("fs:DeleteTag", kTagArn),              DeleteTag);
  // clang-format on
}

void ObjectRoutes(Rows& r) {
  const std::string repo = "/api/v1/repositories/{repository}", branch = repo + "/branches/{branch}";
  const std::string ref = repo + "/refs/{ref}";
  // An empty repository or branch reaches these handlers (400), as in lakeFS's router.
  const std::string pmpu = "/api/v1/repositories/{repository:[^/]*}/branches/{branch:[^/]*}/staging/pmpu";
  const auto write = Need("fs:WriteObject", kPathArn), read = Need("fs:ReadObject", kPathArn);
  // clang-format off
  r.Upload("POST", branch + "/objects",        "UploadObject",   write,                                      UploadObject);
  r.Add("DELETE", branch + "/objects",         "DeleteObject",   Need("fs:DeleteObject", kPathArn),          DeleteObject);
  // Each path is authorized by the handler (fs:DeleteObject on it), as lakeFS does.
  r.User("POST",  branch + "/objects/delete",  "DeleteObjects",                                              DeleteObjects);
  r.Add("POST",   branch + "/objects/copy",    "CopyObject",
        {{"fs:ReadObject", "arn:lakefs:fs:::repository/{repository}/object/{body.src_path}"},
         {"fs:WriteObject", "arn:lakefs:fs:::repository/{repository}/object/{?dest_path}"}},                CopyObject);
  r.Add("GET",    branch + "/staging/backing", "GetPhysicalAddress", write,                                  GetPhysicalAddress);
  r.Add("PUT",    branch + "/staging/backing", "LinkPhysicalAddress", write,                                 LinkPhysicalAddress);
  r.Add("POST",   pmpu,                        "CreatePresignMultipartUpload", write,                        CreatePresignMultipartUpload);
  r.Add("PUT",    pmpu + "/{upload}",          "CompletePresignMultipartUpload", write,                      CompletePresignMultipartUpload);
  r.Add("DELETE", pmpu + "/{upload}",          "AbortPresignMultipartUpload", write,                         AbortPresignMultipartUpload);
  r.Add("PUT",    pmpu + "/{upload}/parts/{part}", "UploadPart", write,                                      UploadPart);
  // The copy's source is authorized by the handler (fs:ReadObject), as it names another repository.
  r.Add("PUT",    pmpu + "/{upload}/parts/{part}/copy", "UploadPartCopy", write,                             UploadPartCopy);
  r.Add("GET",    ref + "/objects",            "GetObject",      read,                                       GetObject);
  r.Add("GET",    ref + "/objects/stat",       "StatObject",     read,                                       StatObject);
  // fs:ListObjects shows every key, as in lakeFS; with presign=true the handler
  // also needs fs:ReadObject on each object listed (a URL reads it unchecked).
  r.Add("GET",    ref + "/objects/ls",         "ListObjects",    Need("fs:ListObjects", kRepoArn),           ListObjects);
  // clang-format on
}

// The lakeFS API called in-process as a user (Lua hooks' `lakefs` module):
// the same route table and handlers, so a call is authorized exactly as the
// HTTP request would be. A body is read up to kMaxBody.
class InProcessApi final : public actions::ApiClient {
 public:
  explicit InProcessApi(Router* router) : router_(router) {}

  Reply Call(const std::string& user, const std::string& method, const std::string& path,
             const std::multimap<std::string, std::string>& query, const std::string& body) override {
    Req req;
    req.method = method;
    req.path = path;
    for (const auto& [k, v] : query) req.params.emplace(k, v);
    req.body = body;
    if (!body.empty()) req.headers.emplace("Content-Type", "application/json");
    Res res;
    Status st;
    {
      catalog::NoHooksOnThisThread scope;  // a hook's own calls fire no hooks
      st = router_->Dispatch(kLakeFs.name, user, req, res);
    }
    if (!st.ok()) ReplyError(res, st);  // a refusal is already in lakeFS's words (Router::Authorize)
    if (res.content_provider_) return Drain(res);
    return {res.status, res.body};
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

  Router* router_;
};

}  // namespace

std::vector<Route> LakeFsRoutes(const LakeFsServices& s) {
  auto ctx = std::make_shared<const Context>(
      Context{s.catalog, s.compactor, s.collector, s.importer, s.auth, s.blockstore_type, s.actions});
  Rows rows(ctx);
  AuthRoutes(rows);
  RepositoryRoutes(rows);
  BranchRoutes(rows);
  ObjectRoutes(rows);
  return rows.Take();
}

void ConnectHooksToApi(actions::ActionsService* actions, Router* router) {
  if (actions != nullptr) actions->SetApiClient(std::make_shared<InProcessApi>(router));
}

}  // namespace sediment::server
