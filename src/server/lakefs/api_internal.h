// Private to the lakeFS API (lakefs_*.cc): the context every handler runs
// with, the handlers themselves (one per route, listed in the route table in
// lakefs/api.cc), and the helpers they share: ARNs, JSON shapes of the lakeFS
// OpenAPI spec, query and body parsing, replies.
//
// A handler returns a Status; the route wrapper turns a failure into the
// error reply (errors.h), so handlers only write successful responses.
#pragma once

#include <fmt/format.h>
#include <httplib.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "actions/actions.h"
#include "base/status.h"
#include "catalog/catalog.h"
#include "server/http/errors.h"

namespace sediment::catalog {
class StagingCompactor;
}  // namespace sediment::catalog

namespace sediment::auth {
class AuthService;
}  // namespace sediment::auth

namespace sediment::server {
using auth::AuthService;
}  // namespace sediment::server

namespace sediment::server::lakefs {

using nlohmann::json;

// What handlers share. Lives as long as the server's routes.
}  // namespace sediment::server::lakefs
namespace sediment::catalog {
class CatalogCollector;
class Importer;
}  // namespace sediment::catalog
namespace sediment::server::lakefs {

struct Context {
  catalog::Catalog* cat;
  catalog::StagingCompactor* compactor;
  catalog::CatalogCollector* collector;
  catalog::Importer* importer;
  AuthService* auth;
  std::string blockstore_type;       // "s3" or "local", as GET /config reports it
  actions::ActionsService* actions;  // null = no hooks run

  // Unauthorized ("insufficient permissions: ...", as lakeFS) unless `user` may do `action` on `resource`.
  Status Allow(const std::string& user, const std::string& action, const std::string& resource) const;
};

// --- patterns, ARNs ----------------------------------------------------------

inline constexpr const char* kRepo = R"(/api/v1/repositories/([^/]+))";

std::string RepoArn(const std::string& repo);
std::string BranchArn(const std::string& repo, const std::string& branch);
std::string ObjectArn(const std::string& repo, const std::string& path);
std::string TagArn(const std::string& repo, const std::string& tag);
std::string UserArn(const std::string& user);
std::string PolicyArn(const std::string& policy);

// --- JSON shapes and replies ------------------------------------------------

json RepoJson(const catalog::Repository& r);
json CommitJson(const catalog::Commit& c);
json DiffJson(const catalog::DiffItem& d);
json Pagination(bool has_more, const std::string& next, size_t results, int64_t max_per_page);
// Where an entry's data is, as lakeFS answers it: an imported object's address
// as it is, the repository's own data under its storage namespace (local://
// when the namespace names no scheme).
std::string PhysicalAddress(const catalog::Repository& repo, const std::string& address);
// An object's ObjectStats.
json ObjectJson(const catalog::Repository& repo, const std::string& path, const catalog::Entry& e);

// How long a presigned URL this server hands out lasts (lakeFS's default).
inline constexpr int64_t kPresignSeconds = 15 * 60;

// A lakeFS list response: {"pagination": {...}, "results": [...]}.
void ReplyPage(httplib::Response& res, json results, bool has_more, const std::string& next, int64_t max_per_page);

// --- request parsing --------------------------------------------------------

std::string Param(const httplib::Request& req, const char* name, const std::string& def = "");
Result<bool> BoolParam(const httplib::Request& req, const char* name);
// ?amount=: 100 when absent or <= 0, at most 1000.
Result<int64_t> AmountParam(const httplib::Request& req);
// ?prefix=&after=&delimiter=&amount=
Result<catalog::ListOptions> ListParams(const httplib::Request& req);
// The JSON object in the body; an empty body is {} when `optional`.
Result<json> Body(const httplib::Request& req, bool optional = false);

// A typed field of a JSON body, with a message naming it when it is wrong.
template <typename T>
Result<T> Field(const json& j, const char* name, std::optional<T> def = std::nullopt) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) {
    if (def) return *def;
    return InvalidArgument(fmt::format("missing required field \"{}\"", name));
  }
  try {
    return it->get<T>();
  } catch (const std::exception&) {
    return InvalidArgument(fmt::format("field \"{}\" has the wrong type", name));
  }
}

// --- handlers ---------------------------------------------------------------
//
// An authenticated handler runs with the caller's user id `me`; a public one
// (setup) runs before anyone can log in; the upload reads its body as a stream.

using Req = httplib::Request;
using Res = httplib::Response;

// lakefs/auth_api.cc: setup, config, users, credentials, policies.
Status GetSetupState(const Context& ctx, const Req& req, Res& res);
Status SetupLakeFs(const Context& ctx, const Req& req, Res& res);
Status Login(const Context& ctx, const Req& req, Res& res);
Status Logout(const Context& ctx, const Req& req, Res& res);
Status GetConfig(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetStorageConfig(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetUsageReportSummary(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetCurrentUser(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status ListUsers(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status CreateUser(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetUser(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status DeleteUser(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status CreateCredentials(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status ListCredentials(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status DeleteCredentials(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status CreatePolicy(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status ListPolicies(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetPolicy(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status DeletePolicy(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status ListUserPolicies(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status AttachPolicy(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status DetachPolicy(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status ImportStart(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status ImportStatus(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status ImportCancel(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetRepositoryMetadata(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetMetadataObject(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status SetRepositoryMetadata(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status DeleteRepositoryMetadata(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status ListBranchProtectionRules(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status BranchProtectionSetAllowed(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status ChangeBranchProtectionRule(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status UpdatePolicy(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status ListGroups(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status CreateGroup(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetGroup(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status DeleteGroup(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status ListGroupMembers(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status AddGroupMember(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status RemoveGroupMember(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status ListGroupPolicies(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status AttachGroupPolicy(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status DetachGroupPolicy(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetGroupAcl(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status SetGroupAcl(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status ListUserGroups(const Context& ctx, const Req& req, Res& res, const std::string& me);

// lakefs/repositories_api.cc
Status ListRepositories(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status CreateRepository(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetRepository(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status DeleteRepository(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetBranchProtection(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status SetBranchProtection(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status CollectGarbage(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetGcRules(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status SetGcRules(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status DeleteGcRules(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GcRulesSetAllowed(const Context& ctx, const Req& req, Res& res, const std::string& me);

// lakefs/branches_api.cc
Status ListBranches(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status CreateBranch(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetBranch(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status DeleteBranch(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status ResetBranch(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status HardResetBranch(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status CompactBranch(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetCompaction(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status DiffBranch(const Context& ctx, const Req& req, Res& res, const std::string& me);

// lakefs/objects_api.cc: objects whose data passes through the server (upload, copy) and deletes.
Status UploadObject(const Context& ctx, const Req& req, Res& res, const httplib::ContentReader& reader,
                    const std::string& me);
Status CopyObject(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status DeleteObject(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status DeleteObjects(const Context& ctx, const Req& req, Res& res, const std::string& me);

// lakefs/objects_read_api.cc: download, stat, listing.
Status GetObject(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status StatObject(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status ListObjects(const Context& ctx, const Req& req, Res& res, const std::string& me);

// lakefs/links_api.cc: an address the client writes to itself, then links (.../staging/backing).
Status GetPhysicalAddress(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status LinkPhysicalAddress(const Context& ctx, const Req& req, Res& res, const std::string& me);

// lakefs/presign_multipart_api.cc: presigned multipart uploads (.../staging/pmpu).
Status CreatePresignMultipartUpload(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status UploadPart(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status UploadPartCopy(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status CompletePresignMultipartUpload(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status AbortPresignMultipartUpload(const Context& ctx, const Req& req, Res& res, const std::string& me);

// lakefs/commits_api.cc: commits, log, diff, merge, revert, cherry-pick.
Status RevertBranch(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status CherryPick(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status Commit(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetCommit(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status LogCommits(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status DiffRefs(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status Merge(const Context& ctx, const Req& req, Res& res, const std::string& me);

// lakefs/actions_api.cc: the runs of actions, and the hooks around operations.
Status ListRepositoryRuns(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetRun(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status ListRunHooks(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetRunHookOutput(const Context& ctx, const Req& req, Res& res, const std::string& me);

// lakefs/tags_api.cc
Status ListTags(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status CreateTag(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status GetTag(const Context& ctx, const Req& req, Res& res, const std::string& me);
Status DeleteTag(const Context& ctx, const Req& req, Res& res, const std::string& me);

}  // namespace sediment::server::lakefs
