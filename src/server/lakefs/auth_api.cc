// lakeFS API handlers for setup, server configuration, users, credentials and
// policies, over AuthService.
#include "auth/auth.h"
#include "base/version.h"
#include "server/http/principal.h"
#include "server/lakefs/api_internal.h"

namespace sediment::server::lakefs {

using auth::AuthIdPage;
using auth::Group;
using auth::Policy;
using auth::Statement;
using auth::User;
namespace {

json UserJson(const User& u) { return json{{"id", u.id}, {"creation_date", u.creation_date}}; }

json PolicyJson(const Policy& p) {
  json st = json::array();
  for (const auto& s : p.statements)
    st.push_back({{"effect", s.effect}, {"action", s.actions}, {"resource", s.resource}});
  return json{{"id", p.id}, {"creation_date", p.creation_date}, {"statement", st}};
}

// lakeFS's Group: `name` is the id (esti finds groups by name).
json GroupJson(const Group& g) {
  return json{{"id", g.id}, {"name", g.id}, {"description", g.description}, {"creation_date", g.creation_date}};
}

// A policy's statements from a request body.
Result<std::vector<Statement>> StatementsOf(const json& body) {
  ARROW_ASSIGN_OR_RAISE(auto statements, Field<json>(body, "statement"));
  if (!statements.is_array()) return InvalidArgument("field \"statement\" must be an array");
  std::vector<Statement> out;
  for (const auto& s : statements) {
    Statement st;
    ARROW_ASSIGN_OR_RAISE(st.effect, Field<std::string>(s, "effect"));
    ARROW_ASSIGN_OR_RAISE(st.actions, Field<std::vector<std::string>>(s, "action"));
    ARROW_ASSIGN_OR_RAISE(st.resource, Field<std::string>(s, "resource"));
    out.push_back(std::move(st));
  }
  return out;
}

// ?prefix=&after=&amount= as the lakeFS auth API pages its listings (amount 1..1000, default 100).
Result<AuthIdPage> PageOf(const Req& req, bool* has_more) {
  ARROW_ASSIGN_OR_RAISE(auto o, ListParams(req));
  return AuthIdPage{o.prefix, o.after, static_cast<size_t>(o.amount), has_more};
}

void ReplyPolicies(httplib::Response& res, const std::vector<Policy>& ps, bool has_more, int64_t amount) {
  json results = json::array();
  for (const auto& p : ps) results.push_back(PolicyJson(p));
  ReplyPage(res, std::move(results), has_more, ps.empty() ? "" : ps.back().id, amount);
}

}  // namespace

// --- setup (before anyone can log in) ----------------------------------------

Status GetSetupState(const Context& ctx, const Req&, Res& res) {
  ARROW_ASSIGN_OR_RAISE(bool done, ctx.auth->IsSetUp());
  // RBAC "internal": users, groups and policies kept by the server (as
  // lakeFS's own auth service); clients such as esti decide from it which
  // auth features to expect.
  ReplyJson(res, 200,
            {{"state", done ? "initialized" : "not_initialized"},
             {"comm_prefs_missing", false},
             {"login_config",
              {{"RBAC", "internal"},
               {"login_url", "/auth/login"},
               {"login_cookie_names", json::array({"internal_auth_session"})},
               {"logout_url", "/logout"}}}});
  return Status::OK();
}

Status SetupLakeFs(const Context& ctx, const Req& req, Res& res) {
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto username, Field<std::string>(body, "username"));
  std::string key_id, secret;
  if (body.contains("key") && body["key"].is_object()) {
    ARROW_ASSIGN_OR_RAISE(key_id, Field<std::string>(body["key"], "access_key_id"));
    ARROW_ASSIGN_OR_RAISE(secret, Field<std::string>(body["key"], "secret_access_key"));
  }
  ARROW_ASSIGN_OR_RAISE(auto c, ctx.auth->Setup(username, key_id, secret));
  ReplyJson(res, 200,
            {{"access_key_id", c.access_key_id},
             {"secret_access_key", c.secret_access_key},
             {"creation_date", c.creation_date}});
  return Status::OK();
}

// --- sessions (the console's log-in) ---------------------------------------------

namespace {

constexpr auto kSessionTtl = std::chrono::hours(12);

std::string SessionCookie(const std::string& value, int64_t max_age) {
  return fmt::format("{}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}", kSessionCookie, value, max_age);
}

}  // namespace

// lakeFS's login: a session token for an access key, also set as an HttpOnly
// cookie, which the API then accepts (AuthorizationOf).
Status Login(const Context& ctx, const Req& req, Res& res) {
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto key_id, Field<std::string>(body, "access_key_id"));
  ARROW_ASSIGN_OR_RAISE(auto secret, Field<std::string>(body, "secret_access_key"));
  ARROW_ASSIGN_OR_RAISE(auto t, ctx.auth->Login(key_id, secret, kSessionTtl));
  res.set_header("Set-Cookie", SessionCookie(t.token, std::chrono::seconds(kSessionTtl).count()));
  res.set_header("Cache-Control", "no-store");
  ReplyJson(res, 200, {{"token", t.token}, {"token_expiration", t.expires_unix}});
  return Status::OK();
}

// Ends the session of the request's cookie (or Bearer token) on every server, and clears the cookie.
Status Logout(const Context& ctx, const Req& req, Res& res) {
  std::string auth = AuthorizationOf(req);
  if (auth.rfind("Bearer ", 0) == 0) ARROW_RETURN_NOT_OK(ctx.auth->Revoke(auth.substr(7)));
  res.set_header("Set-Cookie", SessionCookie("", 0));
  res.status = 204;
  return Status::OK();
}

// --- configuration and the caller ---------------------------------------------

// Server configuration, as the high-level `lakefs` package reads it on first use. Sediment has no
// pre-signed URLs; imports read local:// and s3:// sources inside the namespace rules; namespaces
// may be on S3 or local disk whatever the default is.
namespace {

json StorageConfigJson(const Context& ctx) {
  bool s3 = ctx.blockstore_type == "s3";
  // An example the server would accept: under the first allowed prefix or root.
  const auto& rules = ctx.cat->namespace_rules();
  std::string example = s3 ? "s3://example-bucket/prefix" : "local:///var/lib/sediment/repo";
  auto under = [](std::string dir) {
    while (!dir.empty() && dir.back() == '/') dir.pop_back();
    return dir + "/repo";
  };
  if (s3 && !rules.s3_prefixes.empty()) example = under(rules.s3_prefixes.front());
  if (!s3 && !rules.local_roots.empty()) example = "local://" + under(rules.local_roots.front());
  return {{"blockstore_type", ctx.blockstore_type},
          {"blockstore_namespace_example", example},
          {"blockstore_namespace_ValidityRegex", "^(s3|local|file)://|^/"},
          // S3 storage: stat, get, listings and staging/backing answer
          // presign=true with URLs of the object store.
          {"pre_sign_support", s3},
          // .../staging/pmpu: where the namespace's store can (S3 with a static key).
          {"pre_sign_multipart_upload", s3},
          {"pre_sign_support_ui", false},
          {"import_support", true},
          {"import_validity_regex", "^(local|s3)://"}};
}

}  // namespace

Status GetConfig(const Context& ctx, const Req&, Res& res, const std::string&) {
  ReplyJson(res, 200, {{"version_config", {{"version", kVersion}}}, {"storage_config", StorageConfigJson(ctx)}});
  return Status::OK();
}

Status GetStorageConfig(const Context& ctx, const Req&, Res& res, const std::string&) {
  ReplyJson(res, 200, StorageConfigJson(ctx));
  return Status::OK();
}

// No usage is metered: the report has the installation's id and no months.
Status GetUsageReportSummary(const Context& ctx, const Req&, Res& res, const std::string&) {
  ARROW_ASSIGN_OR_RAISE(auto id, ctx.auth->InstallationId());
  ReplyJson(res, 200, {{"installation_id", id}, {"reports", json::array()}});
  return Status::OK();
}

Status GetCurrentUser(const Context& ctx, const Req&, Res& res, const std::string& me) {
  ARROW_ASSIGN_OR_RAISE(auto u, ctx.auth->GetUser(me));
  ReplyJson(res, 200, {{"user", {{"id", u.id}, {"creation_date", u.creation_date}}}});
  return Status::OK();
}

// --- users and credentials -----------------------------------------------------

Status ListUsers(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  bool more = false;
  ARROW_ASSIGN_OR_RAISE(auto page, PageOf(req, &more));
  ARROW_ASSIGN_OR_RAISE(auto users, ctx.auth->ListUsers(page));
  json results = json::array();
  for (const auto& u : users) results.push_back(UserJson(u));
  ReplyPage(res, std::move(results), more, users.empty() ? "" : users.back().id, static_cast<int64_t>(page.amount));
  return Status::OK();
}

Status CreateUser(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto id, Field<std::string>(body, "id"));
  ARROW_ASSIGN_OR_RAISE(auto u, ctx.auth->CreateUser(id));
  ReplyJson(res, 201, UserJson(u));
  return Status::OK();
}

Status GetUser(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_ASSIGN_OR_RAISE(auto u, ctx.auth->GetUser(req.matches[1]));
  ReplyJson(res, 200, UserJson(u));
  return Status::OK();
}

Status DeleteUser(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_RETURN_NOT_OK(ctx.auth->DeleteUser(req.matches[1]));
  res.status = 204;
  return Status::OK();
}

Status CreateCredentials(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_ASSIGN_OR_RAISE(auto c, ctx.auth->CreateCredentials(req.matches[1]));
  ReplyJson(res, 201,
            {{"access_key_id", c.access_key_id},
             {"secret_access_key", c.secret_access_key},
             {"creation_date", c.creation_date}});
  return Status::OK();
}

Status ListCredentials(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  bool more = false;
  ARROW_ASSIGN_OR_RAISE(auto page, PageOf(req, &more));
  ARROW_ASSIGN_OR_RAISE(auto creds, ctx.auth->ListCredentials(req.matches[1], page));
  json results = json::array();
  for (const auto& c : creds) {
    results.push_back({{"access_key_id", c.access_key_id}, {"creation_date", c.creation_date}});
  }
  ReplyPage(res, std::move(results), more, creds.empty() ? "" : creds.back().access_key_id,
            static_cast<int64_t>(page.amount));
  return Status::OK();
}

Status DeleteCredentials(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_RETURN_NOT_OK(ctx.auth->DeleteCredentials(req.matches[1], req.matches[2]));
  res.status = 204;
  return Status::OK();
}

// --- policies ----------------------------------------------------------------

Status CreatePolicy(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  Policy p;
  ARROW_ASSIGN_OR_RAISE(p.id, Field<std::string>(body, "id"));
  ARROW_ASSIGN_OR_RAISE(p.statements, StatementsOf(body));
  ARROW_ASSIGN_OR_RAISE(auto created, ctx.auth->CreatePolicy(p));
  ReplyJson(res, 201, PolicyJson(created));
  return Status::OK();
}

Status ListPolicies(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  bool more = false;
  ARROW_ASSIGN_OR_RAISE(auto page, PageOf(req, &more));
  ARROW_ASSIGN_OR_RAISE(auto ps, ctx.auth->ListPolicies(page));
  ReplyPolicies(res, ps, more, static_cast<int64_t>(page.amount));
  return Status::OK();
}

Status GetPolicy(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_ASSIGN_OR_RAISE(auto p, ctx.auth->GetPolicy(req.matches[1]));
  ReplyJson(res, 200, PolicyJson(p));
  return Status::OK();
}

Status DeletePolicy(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_RETURN_NOT_OK(ctx.auth->DeletePolicy(req.matches[1]));
  res.status = 204;
  return Status::OK();
}

Status ListUserPolicies(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  bool more = false;
  ARROW_ASSIGN_OR_RAISE(auto page, PageOf(req, &more));
  ARROW_ASSIGN_OR_RAISE(auto ps, ctx.auth->ListUserPolicies(req.matches[1], page));
  ReplyPolicies(res, ps, more, static_cast<int64_t>(page.amount));
  return Status::OK();
}

Status AttachPolicy(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_RETURN_NOT_OK(ctx.auth->AttachPolicy(req.matches[1], req.matches[2]));
  res.status = 201;
  return Status::OK();
}

Status DetachPolicy(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_RETURN_NOT_OK(ctx.auth->DetachPolicy(req.matches[1], req.matches[2]));
  res.status = 204;
  return Status::OK();
}

Status UpdatePolicy(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  const std::string id = req.matches[1];
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto body_id, Field<std::string>(body, "id"));
  if (body_id != id) {
    return InvalidArgument(
        fmt::format("the body names policy \"{}\" and the path \"{}\": a policy's id cannot change", body_id, id));
  }
  Policy p{id};
  ARROW_ASSIGN_OR_RAISE(p.statements, StatementsOf(body));
  ARROW_ASSIGN_OR_RAISE(auto updated, ctx.auth->UpdatePolicy(p));
  ReplyJson(res, 200, PolicyJson(updated));
  return Status::OK();
}

// --- groups ----------------------------------------------------------------------

Status ListGroups(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  bool more = false;
  ARROW_ASSIGN_OR_RAISE(auto page, PageOf(req, &more));
  ARROW_ASSIGN_OR_RAISE(auto groups, ctx.auth->ListGroups(page));
  json results = json::array();
  for (const auto& g : groups) results.push_back(GroupJson(g));
  ReplyPage(res, std::move(results), more, groups.empty() ? "" : groups.back().id, static_cast<int64_t>(page.amount));
  return Status::OK();
}

Status CreateGroup(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto id, Field<std::string>(body, "id"));
  std::string description;
  if (body.contains("description") && !body["description"].is_null()) {
    ARROW_ASSIGN_OR_RAISE(description, Field<std::string>(body, "description"));
  }
  ARROW_ASSIGN_OR_RAISE(auto g, ctx.auth->CreateGroup(id, description));
  ReplyJson(res, 201, GroupJson(g));
  return Status::OK();
}

Status GetGroup(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_ASSIGN_OR_RAISE(auto g, ctx.auth->GetGroup(req.matches[1]));
  ReplyJson(res, 200, GroupJson(g));
  return Status::OK();
}

Status DeleteGroup(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_RETURN_NOT_OK(ctx.auth->DeleteGroup(req.matches[1]));
  res.status = 204;
  return Status::OK();
}

Status ListGroupMembers(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  bool more = false;
  ARROW_ASSIGN_OR_RAISE(auto page, PageOf(req, &more));
  ARROW_ASSIGN_OR_RAISE(auto users, ctx.auth->ListGroupMembers(req.matches[1], page));
  json results = json::array();
  for (const auto& u : users) results.push_back(UserJson(u));
  ReplyPage(res, std::move(results), more, users.empty() ? "" : users.back().id, static_cast<int64_t>(page.amount));
  return Status::OK();
}

Status AddGroupMember(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_RETURN_NOT_OK(ctx.auth->AddGroupMember(req.matches[1], req.matches[2]));
  res.status = 201;
  return Status::OK();
}

Status RemoveGroupMember(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_RETURN_NOT_OK(ctx.auth->RemoveGroupMember(req.matches[1], req.matches[2]));
  res.status = 204;
  return Status::OK();
}

Status ListGroupPolicies(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  bool more = false;
  ARROW_ASSIGN_OR_RAISE(auto page, PageOf(req, &more));
  ARROW_ASSIGN_OR_RAISE(auto ps, ctx.auth->ListGroupPolicies(req.matches[1], page));
  ReplyPolicies(res, ps, more, static_cast<int64_t>(page.amount));
  return Status::OK();
}

Status AttachGroupPolicy(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_RETURN_NOT_OK(ctx.auth->AttachGroupPolicy(req.matches[1], req.matches[2]));
  res.status = 201;
  return Status::OK();
}

Status DetachGroupPolicy(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_RETURN_NOT_OK(ctx.auth->DetachGroupPolicy(req.matches[1], req.matches[2]));
  res.status = 204;
  return Status::OK();
}

// An ACL is a policy named after the group: reading or setting one needs the
// group and that policy (as lakeFS checks).
Status GetGroupAcl(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  const std::string group = req.matches[1];
  auto acl = ctx.auth->GetGroupAcl(group);
  if (IsNotFound(acl.status()) && ctx.auth->GetGroup(group).ok()) {
    ReplyJson(res, 404, {{"message", acl.status().message()}, {"no_acl", true}});
    return Status::OK();
  }
  ARROW_RETURN_NOT_OK(acl.status());
  ReplyJson(res, 200, {{"permission", *acl}});
  return Status::OK();
}

Status SetGroupAcl(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  const std::string group = req.matches[1];
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto permission, Field<std::string>(body, "permission"));
  ARROW_RETURN_NOT_OK(ctx.auth->SetGroupAcl(group, permission));
  res.status = 201;
  return Status::OK();
}

Status ListUserGroups(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  bool more = false;
  ARROW_ASSIGN_OR_RAISE(auto page, PageOf(req, &more));
  ARROW_ASSIGN_OR_RAISE(auto groups, ctx.auth->ListUserGroups(req.matches[1], page));
  json results = json::array();
  for (const auto& g : groups) results.push_back(GroupJson(g));
  ReplyPage(res, std::move(results), more, groups.empty() ? "" : groups.back().id, static_cast<int64_t>(page.amount));
  return Status::OK();
}

}  // namespace sediment::server::lakefs
