#include "server/lakefs_api.h"

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <fmt/format.h>
#include <openssl/evp.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "base/version.h"
#include "blob/blob.h"
#include "catalog/catalog.h"
#include "catalog/staging_compactor.h"
#include "server/auth.h"
#include "server/errors.h"
#include "server/http_server.h"

namespace sediment::server {
namespace {

using catalog::Catalog;
using nlohmann::json;

constexpr const char* kRepo = R"(/api/v1/repositories/([^/]+))";
constexpr int64_t kMaxDeletePaths = 1000;

// --- ARNs and JSON shapes (lakeFS OpenAPI) ----------------------------------

std::string RepoArn(const std::string& repo) { return "arn:lakefs:fs:::repository/" + repo; }
std::string BranchArn(const std::string& repo, const std::string& b) { return RepoArn(repo) + "/branch/" + b; }
std::string ObjectArn(const std::string& repo, const std::string& p) { return RepoArn(repo) + "/object/" + p; }
std::string TagArn(const std::string& repo, const std::string& t) { return RepoArn(repo) + "/tag/" + t; }
std::string UserArn(const std::string& u) { return "arn:lakefs:auth:::user/" + u; }
std::string PolicyArn(const std::string& p) { return "arn:lakefs:auth:::policy/" + p; }

json RepoJson(const catalog::Repository& r) {
  return {{"id", r.id},
          {"creation_date", r.creation_date},
          {"default_branch", r.default_branch},
          {"storage_namespace", r.storage_namespace},
          {"read_only", r.read_only}};
}

json CommitJson(const catalog::Commit& c) {
  return {{"id", c.id},
          {"parents", c.parents},
          {"committer", c.committer},
          {"message", c.message},
          {"creation_date", c.creation_date},
          {"meta_range_id", c.meta_range_id},
          {"metadata", c.metadata},
          {"generation", c.generation},
          {"version", 1}};
}

std::string PhysicalAddress(const catalog::Repository& repo, const std::string& address) {
  if (address.find("://") != std::string::npos) return address;
  std::string ns = repo.storage_namespace;
  if (ns.find("://") == std::string::npos) ns = "local://" + ns;
  return ns + "/" + address;
}

json ObjectJson(const catalog::Repository& repo, const std::string& path, const catalog::Entry& e) {
  return {
      {"path", path},           {"path_type", "object"},         {"physical_address", PhysicalAddress(repo, e.address)},
      {"checksum", e.checksum}, {"size_bytes", e.size},          {"mtime", e.mtime},
      {"metadata", e.metadata}, {"content_type", e.content_type}};
}

json Pagination(bool has_more, const std::string& next, size_t results, int64_t max_per_page) {
  return {{"has_more", has_more},
          {"next_offset", has_more ? next : ""},
          {"results", results},
          {"max_per_page", max_per_page}};
}

// Appends `s` as a JSON string. Fast path for the common case; strings with
// non-ASCII bytes go through nlohmann (which replaces invalid UTF-8).
void AppendJsonString(std::string* out, std::string_view s) {
  for (unsigned char c : s) {
    if (c >= 0x80) {
      *out += json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
      return;
    }
  }
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\r':
        *out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          *out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

// An ObjectStatsList written directly: listing pages of 1,000 entries are the
// hottest responses, and building a json tree for each entry tripled their cost.
std::string ObjectListBody(const catalog::Repository& repo, const catalog::Page<catalog::ListItem>& page,
                           int64_t amount) {
  std::string out;
  out.reserve(64 + page.items.size() * 320);
  std::string next = page.items.empty() ? "" : page.items.back().path;
  out +=
      R"({"pagination":)" +
      Pagination(page.has_more, next, page.items.size(), amount).dump(-1, ' ', false, json::error_handler_t::replace);
  out += R"(,"results":[)";
  bool first = true;
  for (const auto& item : page.items) {
    if (!first) out.push_back(',');
    first = false;
    out += R"({"path":)";
    AppendJsonString(&out, item.path);
    if (item.common_prefix) {
      out += R"(,"path_type":"common_prefix","physical_address":"","checksum":"","mtime":0})";
      continue;
    }
    const catalog::Entry& e = item.entry;
    out += R"(,"path_type":"object","physical_address":)";
    AppendJsonString(&out, PhysicalAddress(repo, e.address));
    out += R"(,"checksum":)";
    AppendJsonString(&out, e.checksum);
    out += fmt::format(R"(,"size_bytes":{},"mtime":{},"content_type":)", e.size, e.mtime);
    AppendJsonString(&out, e.content_type);
    out += R"(,"metadata":{)";
    bool first_meta = true;
    for (const auto& [k, v] : e.metadata) {
      if (!first_meta) out.push_back(',');
      first_meta = false;
      AppendJsonString(&out, k);
      out.push_back(':');
      AppendJsonString(&out, v);
    }
    out += "}}";
  }
  out += "]}";
  return out;
}

void ReplyJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

// A lakeFS list response: {"pagination": {...}, "results": [...]}.
void ReplyPage(httplib::Response& res, json results, bool has_more, const std::string& next, int64_t max_per_page) {
  size_t n = results.size();
  ReplyJson(res, 200, {{"pagination", Pagination(has_more, next, n, max_per_page)}, {"results", std::move(results)}});
}

json DiffJson(const catalog::DiffItem& d) {
  json item = {{"type", d.type}, {"path", d.path}, {"path_type", d.common_prefix ? "common_prefix" : "object"}};
  if (!d.common_prefix) item["size_bytes"] = d.size_bytes;
  return item;
}

std::string Param(const httplib::Request& req, const char* name, const std::string& def = "") {
  return req.has_param(name) ? req.get_param_value(name) : def;
}

Result<bool> BoolParam(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) return false;
  std::string v = req.get_param_value(name);
  if (v == "true" || v == "1" || v.empty()) return true;
  if (v == "false" || v == "0") return false;
  return InvalidArgument(fmt::format("query parameter {}=\"{}\" is not a boolean", name, v));
}

Result<int64_t> AmountParam(const httplib::Request& req) {
  if (!req.has_param("amount")) return 100;
  std::string v = req.get_param_value("amount");
  try {
    size_t used = 0;
    long long n = std::stoll(v, &used);
    if (used != v.size() || n < -1) throw std::invalid_argument("range");
    if (n > 1000) return 1000;
    return n <= 0 ? 100 : n;
  } catch (const std::exception&) {
    return InvalidArgument(fmt::format("query parameter amount=\"{}\" must be an integer from -1 to 1000", v));
  }
}

Result<catalog::ListOptions> ListParams(const httplib::Request& req) {
  catalog::ListOptions o;
  o.prefix = Param(req, "prefix");
  o.after = Param(req, "after");
  o.delimiter = Param(req, "delimiter");
  ARROW_ASSIGN_OR_RAISE(o.amount, AmountParam(req));
  return o;
}

Result<json> Body(const httplib::Request& req, bool optional = false) {
  if (req.body.empty()) {
    if (optional) return json::object();
    return InvalidArgument("request body is required (JSON)");
  }
  auto j = json::parse(req.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("request body is not a valid JSON object");
  return j;
}

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

std::string HttpDate(int64_t unix_seconds) {
  std::time_t t = unix_seconds;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

std::map<std::string, std::string> UserMetadata(const httplib::Request& req) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : req.headers) {
    std::string lower = k;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.rfind("x-lakefs-meta-", 0) == 0) out[lower.substr(14)] = v;
  }
  return out;
}

class Md5 {
 public:
  Md5() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_md5(), nullptr); }
  ~Md5() { EVP_MD_CTX_free(ctx_); }
  void Update(const char* d, size_t n) { EVP_DigestUpdate(ctx_, d, n); }
  std::string Hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_, md, &n);
    return fmt::format("{:02x}", fmt::join(md, md + n, ""));
  }

 private:
  EVP_MD_CTX* ctx_;
};

// --- the API ----------------------------------------------------------------

class Api : public std::enable_shared_from_this<Api> {
 public:
  Api(HttpServer* http, Catalog* catalog, catalog::StagingCompactor* compactor, AuthService* auth,
      std::string blockstore_type)
      : http_(http), cat_(catalog), compactor_(compactor), auth_(auth), blockstore_type_(std::move(blockstore_type)) {}

  using Fn = std::function<Status(const httplib::Request&, httplib::Response&, const std::string& user)>;

  // An authenticated route: Fn runs with the caller's user id; errors map in one place.
  void Route(const std::string& method, const std::string& pattern, Fn fn) {
    http_->Handle(method, pattern, pattern,
                  [this, self = shared_from_this(), fn](const httplib::Request& req, httplib::Response& res) {
                    auto user = auth_->Authenticate(req.get_header_value("Authorization"));
                    Status st = user.ok() ? fn(req, res, *user) : user.status();
                    if (!st.ok()) {
                      if (IsUnauthorized(st)) res.set_header("WWW-Authenticate", "Basic realm=\"sediment\"");
                      ReplyError(res, st);
                    }
                  });
  }

  Status Allow(const std::string& user, const std::string& action, const std::string& resource) {
    return auth_->Authorize(user, action, resource);
  }

  void Register();

 private:
  void RegisterSetupAndAuth();
  void RegisterRepositories();
  void RegisterBranches();
  void RegisterObjects();
  void RegisterCommits();
  void RegisterTags();
  void Upload(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader);

  HttpServer* http_;
  Catalog* cat_;
  catalog::StagingCompactor* compactor_;
  AuthService* auth_;
  const std::string blockstore_type_;
};

void Api::Register() {
  RegisterSetupAndAuth();
  RegisterRepositories();
  RegisterBranches();
  RegisterObjects();
  RegisterCommits();
  RegisterTags();
}

void Api::RegisterSetupAndAuth() {
  http_->Handle("GET", "/api/v1/setup_lakefs", "/api/v1/setup_lakefs",
                [this](const httplib::Request&, httplib::Response& res) {
                  auto done = auth_->IsSetUp();
                  if (!done.ok()) return ReplyError(res, done.status());
                  ReplyJson(res, 200, {{"state", *done ? "initialized" : "not_initialized"}});
                });
  http_->Handle("POST", "/api/v1/setup_lakefs", "/api/v1/setup_lakefs",
                [this](const httplib::Request& req, httplib::Response& res) {
                  Status st = [&]() -> Status {
                    ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
                    ARROW_ASSIGN_OR_RAISE(auto username, Field<std::string>(body, "username"));
                    std::string key_id, secret;
                    if (body.contains("key") && body["key"].is_object()) {
                      ARROW_ASSIGN_OR_RAISE(key_id, Field<std::string>(body["key"], "access_key_id"));
                      ARROW_ASSIGN_OR_RAISE(secret, Field<std::string>(body["key"], "secret_access_key"));
                    }
                    ARROW_ASSIGN_OR_RAISE(auto c, auth_->Setup(username, key_id, secret));
                    ReplyJson(res, 200,
                              {{"access_key_id", c.access_key_id},
                               {"secret_access_key", c.secret_access_key},
                               {"creation_date", c.creation_date}});
                    return Status::OK();
                  }();
                  if (!st.ok()) ReplyError(res, st);
                });

  // Server configuration, as the high-level `lakefs` package reads it on first use. Sediment has no
  // pre-signed URLs or imports; namespaces may be on S3 or local disk whatever the default is.
  Route("GET", "/api/v1/config", [this](const httplib::Request&, httplib::Response& res, const std::string&) {
    bool s3 = blockstore_type_ == "s3";
    ReplyJson(res, 200,
              {{"version_config", {{"version", kVersion}}},
               {"storage_config",
                {{"blockstore_type", blockstore_type_},
                 {"blockstore_namespace_example", s3 ? "s3://example-bucket/prefix" : "local:///var/lib/sediment/repo"},
                 {"blockstore_namespace_ValidityRegex", "^(s3|local|file)://|^/"},
                 {"pre_sign_support", false},
                 {"pre_sign_support_ui", false},
                 {"import_support", false},
                 {"import_validity_regex", "^$"}}}});
    return Status::OK();
  });
  Route("GET", "/api/v1/user", [this](const httplib::Request&, httplib::Response& res, const std::string& user) {
    ARROW_ASSIGN_OR_RAISE(auto u, auth_->GetUser(user));
    ReplyJson(res, 200, {{"user", {{"id", u.id}, {"creation_date", u.creation_date}}}});
    return Status::OK();
  });

  auto user_json = [](const User& u) { return json{{"id", u.id}, {"creation_date", u.creation_date}}; };
  auto policy_json = [](const Policy& p) {
    json st = json::array();
    for (const auto& s : p.statements)
      st.push_back({{"effect", s.effect}, {"action", s.actions}, {"resource", s.resource}});
    return json{{"id", p.id}, {"creation_date", p.creation_date}, {"statement", st}};
  };

  Route("GET", "/api/v1/auth/users", [=, this](const httplib::Request&, httplib::Response& res, const std::string& me) {
    ARROW_RETURN_NOT_OK(Allow(me, "auth:ListUsers", "*"));
    ARROW_ASSIGN_OR_RAISE(auto users, auth_->ListUsers());
    json results = json::array();
    for (const auto& u : users) results.push_back(user_json(u));
    ReplyPage(res, std::move(results), false, "", 1000);
    return Status::OK();
  });
  Route("POST", "/api/v1/auth/users",
        [=, this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
          ARROW_ASSIGN_OR_RAISE(auto id, Field<std::string>(body, "id"));
          ARROW_RETURN_NOT_OK(Allow(me, "auth:CreateUser", UserArn(id)));
          ARROW_ASSIGN_OR_RAISE(auto u, auth_->CreateUser(id));
          ReplyJson(res, 201, user_json(u));
          return Status::OK();
        });
  Route("GET", "/api/v1/auth/users/([^/]+)",
        [=, this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          ARROW_RETURN_NOT_OK(Allow(me, "auth:ReadUser", UserArn(req.matches[1])));
          ARROW_ASSIGN_OR_RAISE(auto u, auth_->GetUser(req.matches[1]));
          ReplyJson(res, 200, user_json(u));
          return Status::OK();
        });
  Route("DELETE", "/api/v1/auth/users/([^/]+)",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          ARROW_RETURN_NOT_OK(Allow(me, "auth:DeleteUser", UserArn(req.matches[1])));
          ARROW_RETURN_NOT_OK(auth_->DeleteUser(req.matches[1]));
          res.status = 204;
          return Status::OK();
        });
  Route("POST", "/api/v1/auth/users/([^/]+)/credentials",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          ARROW_RETURN_NOT_OK(Allow(me, "auth:CreateCredentials", UserArn(req.matches[1])));
          ARROW_ASSIGN_OR_RAISE(auto c, auth_->CreateCredentials(req.matches[1]));
          ReplyJson(res, 201,
                    {{"access_key_id", c.access_key_id},
                     {"secret_access_key", c.secret_access_key},
                     {"creation_date", c.creation_date}});
          return Status::OK();
        });
  Route("GET", "/api/v1/auth/users/([^/]+)/credentials",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          ARROW_RETURN_NOT_OK(Allow(me, "auth:ListCredentials", UserArn(req.matches[1])));
          ARROW_ASSIGN_OR_RAISE(auto creds, auth_->ListCredentials(req.matches[1]));
          json results = json::array();
          for (const auto& c : creds) {
            results.push_back({{"access_key_id", c.access_key_id}, {"creation_date", c.creation_date}});
          }
          ReplyPage(res, std::move(results), false, "", 1000);
          return Status::OK();
        });
  Route("DELETE", "/api/v1/auth/users/([^/]+)/credentials/([^/]+)",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          ARROW_RETURN_NOT_OK(Allow(me, "auth:DeleteCredentials", UserArn(req.matches[1])));
          ARROW_RETURN_NOT_OK(auth_->DeleteCredentials(req.matches[1], req.matches[2]));
          res.status = 204;
          return Status::OK();
        });
  Route("POST", "/api/v1/auth/policies",
        [=, this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
          Policy p;
          ARROW_ASSIGN_OR_RAISE(p.id, Field<std::string>(body, "id"));
          ARROW_RETURN_NOT_OK(Allow(me, "auth:CreatePolicy", PolicyArn(p.id)));
          ARROW_ASSIGN_OR_RAISE(auto statements, Field<json>(body, "statement"));
          if (!statements.is_array()) return InvalidArgument("field \"statement\" must be an array");
          for (const auto& s : statements) {
            Statement st;
            ARROW_ASSIGN_OR_RAISE(st.effect, Field<std::string>(s, "effect"));
            ARROW_ASSIGN_OR_RAISE(st.actions, Field<std::vector<std::string>>(s, "action"));
            ARROW_ASSIGN_OR_RAISE(st.resource, Field<std::string>(s, "resource"));
            p.statements.push_back(std::move(st));
          }
          ARROW_ASSIGN_OR_RAISE(auto created, auth_->CreatePolicy(p));
          ReplyJson(res, 201, policy_json(created));
          return Status::OK();
        });
  Route("GET", "/api/v1/auth/policies",
        [=, this](const httplib::Request&, httplib::Response& res, const std::string& me) {
          ARROW_RETURN_NOT_OK(Allow(me, "auth:ListPolicies", "*"));
          ARROW_ASSIGN_OR_RAISE(auto ps, auth_->ListPolicies());
          json results = json::array();
          for (const auto& p : ps) results.push_back(policy_json(p));
          ReplyPage(res, std::move(results), false, "", 1000);
          return Status::OK();
        });
  Route("GET", "/api/v1/auth/policies/([^/]+)",
        [=, this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          ARROW_RETURN_NOT_OK(Allow(me, "auth:ReadPolicy", PolicyArn(req.matches[1])));
          ARROW_ASSIGN_OR_RAISE(auto p, auth_->GetPolicy(req.matches[1]));
          ReplyJson(res, 200, policy_json(p));
          return Status::OK();
        });
  Route("DELETE", "/api/v1/auth/policies/([^/]+)",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          ARROW_RETURN_NOT_OK(Allow(me, "auth:DeletePolicy", PolicyArn(req.matches[1])));
          ARROW_RETURN_NOT_OK(auth_->DeletePolicy(req.matches[1]));
          res.status = 204;
          return Status::OK();
        });
  Route("GET", "/api/v1/auth/users/([^/]+)/policies",
        [=, this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          ARROW_RETURN_NOT_OK(Allow(me, "auth:ReadUser", UserArn(req.matches[1])));
          ARROW_ASSIGN_OR_RAISE(auto ps, auth_->ListUserPolicies(req.matches[1]));
          json results = json::array();
          for (const auto& p : ps) results.push_back(policy_json(p));
          ReplyPage(res, std::move(results), false, "", 1000);
          return Status::OK();
        });
  Route("PUT", "/api/v1/auth/users/([^/]+)/policies/([^/]+)",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          ARROW_RETURN_NOT_OK(Allow(me, "auth:AttachPolicy", UserArn(req.matches[1])));
          ARROW_RETURN_NOT_OK(auth_->AttachPolicy(req.matches[1], req.matches[2]));
          res.status = 201;
          return Status::OK();
        });
  Route("DELETE", "/api/v1/auth/users/([^/]+)/policies/([^/]+)",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          ARROW_RETURN_NOT_OK(Allow(me, "auth:DetachPolicy", UserArn(req.matches[1])));
          ARROW_RETURN_NOT_OK(auth_->DetachPolicy(req.matches[1], req.matches[2]));
          res.status = 204;
          return Status::OK();
        });
}

void Api::RegisterRepositories() {
  Route("GET", "/api/v1/repositories",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          ARROW_RETURN_NOT_OK(Allow(me, "fs:ListRepositories", "*"));
          ARROW_ASSIGN_OR_RAISE(auto o, ListParams(req));
          ARROW_ASSIGN_OR_RAISE(auto page, cat_->ListRepositories(o.prefix, o.after, o.amount));
          json results = json::array();
          for (const auto& r : page.items) results.push_back(RepoJson(r));
          std::string next = page.items.empty() ? "" : page.items.back().id;
          ReplyJson(
              res, 200,
              {{"pagination", Pagination(page.has_more, next, page.items.size(), o.amount)}, {"results", results}});
          return Status::OK();
        });
  Route("POST", "/api/v1/repositories",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
          ARROW_ASSIGN_OR_RAISE(auto name, Field<std::string>(body, "name"));
          ARROW_ASSIGN_OR_RAISE(auto ns, Field<std::string>(body, "storage_namespace"));
          ARROW_ASSIGN_OR_RAISE(auto def, Field<std::string>(body, "default_branch", std::string("main")));
          ARROW_ASSIGN_OR_RAISE(auto ro, Field<bool>(body, "read_only", false));
          ARROW_RETURN_NOT_OK(Catalog::ValidateRepositoryName(name));
          ARROW_RETURN_NOT_OK(Allow(me, "fs:CreateRepository", RepoArn(name)));
          ARROW_ASSIGN_OR_RAISE(auto repo, cat_->CreateRepository(name, ns, def, ro));
          ReplyJson(res, 201, RepoJson(repo));
          return Status::OK();
        });
  Route("GET", kRepo, [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    ARROW_RETURN_NOT_OK(Allow(me, "fs:ReadRepository", RepoArn(req.matches[1])));
    ARROW_ASSIGN_OR_RAISE(auto repo, cat_->GetRepository(req.matches[1]));
    ReplyJson(res, 200, RepoJson(repo));
    return Status::OK();
  });
  Route("DELETE", kRepo, [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    ARROW_RETURN_NOT_OK(Allow(me, "fs:DeleteRepository", RepoArn(req.matches[1])));
    ARROW_RETURN_NOT_OK(cat_->DeleteRepository(req.matches[1]));
    res.status = 204;
    return Status::OK();
  });
}

void Api::RegisterBranches() {
  const std::string branches = std::string(kRepo) + "/branches";
  const std::string branch = branches + "/([^/]+)";
  Route("GET", branches, [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    std::string repo = req.matches[1];
    ARROW_RETURN_NOT_OK(Allow(me, "fs:ListBranches", RepoArn(repo)));
    ARROW_ASSIGN_OR_RAISE(auto o, ListParams(req));
    ARROW_ASSIGN_OR_RAISE(auto page, cat_->ListBranches(repo, o.prefix, o.after, o.amount));
    json results = json::array();
    for (const auto& b : page.items) results.push_back({{"id", b.id}, {"commit_id", b.commit_id}});
    std::string next = page.items.empty() ? "" : page.items.back().id;
    ReplyPage(res, std::move(results), page.has_more, next, o.amount);
    return Status::OK();
  });
  Route("POST", branches, [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    std::string repo = req.matches[1];
    ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
    ARROW_ASSIGN_OR_RAISE(auto name, Field<std::string>(body, "name"));
    ARROW_ASSIGN_OR_RAISE(auto source, Field<std::string>(body, "source"));
    ARROW_RETURN_NOT_OK(Allow(me, "fs:CreateBranch", BranchArn(repo, name)));
    ARROW_ASSIGN_OR_RAISE(auto b, cat_->CreateBranch(repo, name, source));
    res.status = 201;
    res.set_content(b.commit_id, "text/html");
    return Status::OK();
  });
  Route("GET", branch, [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    std::string repo = req.matches[1], name = req.matches[2];
    ARROW_RETURN_NOT_OK(Allow(me, "fs:ReadBranch", BranchArn(repo, name)));
    ARROW_ASSIGN_OR_RAISE(auto b, cat_->GetBranch(repo, name));
    ReplyJson(res, 200, {{"id", b.id}, {"commit_id", b.commit_id}});
    return Status::OK();
  });
  Route("DELETE", branch, [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    std::string repo = req.matches[1], name = req.matches[2];
    ARROW_RETURN_NOT_OK(Allow(me, "fs:DeleteBranch", BranchArn(repo, name)));
    ARROW_RETURN_NOT_OK(cat_->DeleteBranch(repo, name));
    res.status = 204;
    return Status::OK();
  });
  // Reset: all uncommitted changes, one object, or a common prefix.
  Route("PUT", branch, [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    std::string repo = req.matches[1], name = req.matches[2];
    ARROW_RETURN_NOT_OK(Allow(me, "fs:RevertBranch", BranchArn(repo, name)));
    ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
    ARROW_ASSIGN_OR_RAISE(auto type, Field<std::string>(body, "type"));
    ARROW_ASSIGN_OR_RAISE(auto path, Field<std::string>(body, "path", std::string()));
    if (type == "reset") {
      ARROW_RETURN_NOT_OK(cat_->ResetBranch(repo, name));
    } else if (type == "object") {
      ARROW_RETURN_NOT_OK(cat_->ResetPath(repo, name, path, false));
    } else if (type == "common_prefix") {
      ARROW_RETURN_NOT_OK(cat_->ResetPath(repo, name, path, true));
    } else {
      return InvalidArgument(fmt::format("reset type \"{}\" must be reset, object or common_prefix", type));
    }
    res.status = 204;
    return Status::OK();
  });
  Route("PUT", branch + "/hard_reset",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          std::string repo = req.matches[1], name = req.matches[2];
          ARROW_RETURN_NOT_OK(Allow(me, "fs:RevertBranch", BranchArn(repo, name)));
          if (!req.has_param("ref")) return InvalidArgument("missing query parameter ref");
          ARROW_RETURN_NOT_OK(cat_->HardReset(repo, name, req.get_param_value("ref")));
          res.status = 204;
          return Status::OK();
        });
  Route("POST", branch + "/revert", [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    std::string repo = req.matches[1], name = req.matches[2];
    ARROW_RETURN_NOT_OK(Allow(me, "fs:RevertBranch", BranchArn(repo, name)));
    ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
    ARROW_ASSIGN_OR_RAISE(auto ref, Field<std::string>(body, "ref"));
    ARROW_ASSIGN_OR_RAISE(auto pn, Field<int>(body, "parent_number", 0));
    catalog::CommitParams p;
    p.committer = me;
    ARROW_ASSIGN_OR_RAISE(p.force, Field<bool>(body, "force", false));
    ARROW_ASSIGN_OR_RAISE(p.allow_empty, Field<bool>(body, "allow_empty", false));
    if (body.contains("commit_overrides") && body["commit_overrides"].is_object()) {
      const auto& o = body["commit_overrides"];
      ARROW_ASSIGN_OR_RAISE(p.message, Field<std::string>(o, "message", std::string()));
      ARROW_ASSIGN_OR_RAISE(
          p.metadata, (Field<std::map<std::string, std::string>>(o, "metadata", std::map<std::string, std::string>{})));
    }
    ARROW_RETURN_NOT_OK(cat_->Revert(repo, name, ref, pn, p).status());
    res.status = 204;
    return Status::OK();
  });
  Route("POST", branch + "/cherry-pick",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          std::string repo = req.matches[1], name = req.matches[2];
          ARROW_RETURN_NOT_OK(Allow(me, "fs:CreateCommit", BranchArn(repo, name)));
          ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
          ARROW_ASSIGN_OR_RAISE(auto ref, Field<std::string>(body, "ref"));
          ARROW_ASSIGN_OR_RAISE(auto pn, Field<int>(body, "parent_number", 0));
          ARROW_ASSIGN_OR_RAISE(auto c, cat_->CherryPick(repo, name, ref, pn, me));
          ReplyJson(res, 201, CommitJson(c));
          return Status::OK();
        });
  // Staging compaction (spec staging-compaction.md): 202 and run in the background, or 503.
  Route("POST", branch + "/compact",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          std::string repo = req.matches[1], name = req.matches[2];
          ARROW_RETURN_NOT_OK(Allow(me, "branches:CompactBranch", BranchArn(repo, name)));
          ARROW_RETURN_NOT_OK(compactor_->Submit(repo, name));
          res.status = 202;
          return Status::OK();
        });
  // What the branch holds now (and, beyond lakeFS's shape, how its last compaction went).
  Route("GET", branch + "/compact", [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    std::string repo = req.matches[1], name = req.matches[2];
    ARROW_RETURN_NOT_OK(Allow(me, "branches:CompactBranch", BranchArn(repo, name)));
    ARROW_ASSIGN_OR_RAISE(auto b, cat_->GetBranch(repo, name));
    ARROW_ASSIGN_OR_RAISE(auto last, compactor_->LastStatus(repo, name));
    ARROW_ASSIGN_OR_RAISE(auto staged, compactor_->StagedMutations(repo, name));
    ReplyJson(res, 200,
              {{"compacted", !b.compacted_meta_range_id.empty()},
               {"meta_range_id", b.compacted_meta_range_id},
               {"staged_mutations", staged},
               {"last_compaction",
                {{"state", last.state},
                 {"started_us", last.started_us},
                 {"finished_us", last.finished_us},
                 {"message", last.message}}}});
    return Status::OK();
  });
  Route("GET", branch + "/diff", [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    std::string repo = req.matches[1], name = req.matches[2];
    ARROW_RETURN_NOT_OK(Allow(me, "fs:ListObjects", RepoArn(repo)));
    ARROW_ASSIGN_OR_RAISE(auto o, ListParams(req));
    ARROW_ASSIGN_OR_RAISE(auto page, cat_->DiffUncommitted(repo, name, o));
    json results = json::array();
    for (const auto& d : page.items) results.push_back(DiffJson(d));
    std::string next = page.items.empty() ? "" : page.items.back().path;
    ReplyPage(res, std::move(results), page.has_more, next, o.amount);
    return Status::OK();
  });
}

void Api::Upload(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
  Status st = [&]() -> Status {
    ARROW_ASSIGN_OR_RAISE(auto user, auth_->Authenticate(req.get_header_value("Authorization")));
    std::string repo_id = req.matches[1], branch = req.matches[2];
    if (!req.has_param("path")) return InvalidArgument("missing query parameter path");
    std::string path = req.get_param_value("path");
    ARROW_RETURN_NOT_OK(Catalog::ValidatePath(path));
    ARROW_RETURN_NOT_OK(Allow(user, "fs:WriteObject", ObjectArn(repo_id, path)));
    std::string if_none_match = req.get_header_value("If-None-Match");
    if (!if_none_match.empty() && if_none_match != "*") {
      return InvalidArgument("If-None-Match supports only \"*\"");
    }
    ARROW_ASSIGN_OR_RAISE(auto repo, cat_->GetRepository(repo_id));
    if (repo.read_only) return Forbidden(fmt::format("repository \"{}\" is read-only", repo_id));
    ARROW_RETURN_NOT_OK(cat_->GetBranch(repo_id, branch).status());
    ARROW_ASSIGN_OR_RAISE(auto ns, cat_->RepositoryNamespace(repo));

    catalog::Entry e;
    e.address = "data/" + catalog::RandomHex(16);
    e.content_type = "application/octet-stream";
    ARROW_ASSIGN_OR_RAISE(auto out, ns->OpenWriter(e.address));
    Md5 md5;
    Status write_st;
    auto receive = [&](const char* data, size_t n) {
      write_st = out->Write(data, static_cast<int64_t>(n));
      md5.Update(data, n);
      e.size += static_cast<int64_t>(n);
      return write_st.ok();
    };
    bool complete;
    if (req.is_multipart_form_data()) {
      bool in_content = false, seen = false;
      complete = reader(
          [&](const httplib::MultipartFormData& part) {
            in_content = part.name == "content" && !seen;
            if (in_content) {
              seen = true;
              if (!part.content_type.empty()) e.content_type = part.content_type;
            }
            return true;
          },
          [&](const char* data, size_t n) { return in_content ? receive(data, n) : true; });
      if (complete && !seen) {
        (void)out->Abort();
        return InvalidArgument("multipart upload has no part named \"content\"");
      }
    } else {
      std::string ct = req.get_header_value("Content-Type");
      if (!ct.empty()) e.content_type = ct;
      complete = reader(receive);
    }
    ARROW_RETURN_NOT_OK(write_st);
    if (!complete) {
      (void)out->Abort();  // nothing is published; no entry is written
      return InvalidArgument("upload body ended early; nothing was stored");
    }
    ARROW_RETURN_NOT_OK(out->Close());
    e.checksum = md5.Hex();
    e.mtime = std::time(nullptr);
    e.metadata = UserMetadata(req);
    Status put = cat_->PutEntry(repo, branch, path, e, if_none_match == "*");
    if (!put.ok()) {
      (void)ns->Delete(e.address);
      return put;
    }
    ReplyJson(res, 201, ObjectJson(repo, path, e));
    return Status::OK();
  }();
  if (!st.ok()) ReplyError(res, st);
}

void Api::RegisterObjects() {
  const std::string ref = std::string(kRepo) + "/refs/([^/]+)";
  const std::string branch_objects = std::string(kRepo) + "/branches/([^/]+)/objects";
  http_->HandleStream(
      "POST", branch_objects, branch_objects,
      [this, self = shared_from_this()](const httplib::Request& req, httplib::Response& res,
                                        const httplib::ContentReader& reader) { Upload(req, res, reader); });

  Route("DELETE", branch_objects, [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    std::string repo = req.matches[1], branch = req.matches[2];
    if (!req.has_param("path")) return InvalidArgument("missing query parameter path");
    std::string path = req.get_param_value("path");
    ARROW_RETURN_NOT_OK(Allow(me, "fs:DeleteObject", ObjectArn(repo, path)));
    ARROW_RETURN_NOT_OK(cat_->DeleteEntry(repo, branch, path));
    res.status = 204;
    return Status::OK();
  });
  Route("POST", branch_objects + "/delete",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          std::string repo = req.matches[1], branch = req.matches[2];
          ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
          ARROW_ASSIGN_OR_RAISE(auto paths, Field<std::vector<std::string>>(body, "paths"));
          if (static_cast<int64_t>(paths.size()) > kMaxDeletePaths) {
            return InvalidArgument(fmt::format("at most {} paths per request, got {}", kMaxDeletePaths, paths.size()));
          }
          json errors = json::array();
          std::vector<std::string> allowed;
          for (const auto& p : paths) {
            Status st = Catalog::ValidatePath(p);
            if (st.ok()) st = Allow(me, "fs:DeleteObject", ObjectArn(repo, p));
            if (st.ok()) {
              allowed.push_back(p);
            } else {
              errors.push_back({{"status_code", HttpStatusFor(st)}, {"message", st.message()}, {"path", p}});
            }
          }
          ARROW_RETURN_NOT_OK(cat_->DeleteEntries(repo, branch, allowed).status());
          ReplyJson(res, 200, {{"errors", errors}});
          return Status::OK();
        });

  Route("GET", ref + "/objects", [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    std::string repo_id = req.matches[1], refname = req.matches[2];
    if (!req.has_param("path")) return InvalidArgument("missing query parameter path");
    std::string path = req.get_param_value("path");
    ARROW_RETURN_NOT_OK(Allow(me, "fs:ReadObject", ObjectArn(repo_id, path)));
    ARROW_ASSIGN_OR_RAISE(auto repo, cat_->GetRepository(repo_id));
    ARROW_ASSIGN_OR_RAISE(auto e, cat_->GetEntry(repo_id, refname, path));
    std::string etag = "\"" + e.checksum + "\"";
    if (req.get_header_value("If-None-Match") == etag) {
      res.status = 304;
      return Status::OK();
    }
    ARROW_ASSIGN_OR_RAISE(auto ns, cat_->RepositoryNamespace(repo));
    ARROW_ASSIGN_OR_RAISE(auto file, ns->OpenReader(e.address));
    res.set_header("ETag", etag);
    res.set_header("Last-Modified", HttpDate(e.mtime));
    res.set_header("Accept-Ranges", "bytes");
    // httplib serves a Range request from the provider itself (206 + Content-Range).
    res.set_content_provider(
        static_cast<size_t>(e.size), e.content_type, [file](size_t offset, size_t length, httplib::DataSink& sink) {
          size_t n = std::min<size_t>(length, 1 << 20);
          auto buf = file->ReadAt(static_cast<int64_t>(offset), static_cast<int64_t>(n));
          if (!buf.ok()) return false;
          return sink.write(reinterpret_cast<const char*>((*buf)->data()), static_cast<size_t>((*buf)->size()));
        });
    return Status::OK();
  });
  Route("GET", ref + "/objects/stat",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          std::string repo_id = req.matches[1], refname = req.matches[2];
          if (!req.has_param("path")) return InvalidArgument("missing query parameter path");
          std::string path = req.get_param_value("path");
          ARROW_RETURN_NOT_OK(Allow(me, "fs:ReadObject", ObjectArn(repo_id, path)));
          ARROW_ASSIGN_OR_RAISE(auto repo, cat_->GetRepository(repo_id));
          ARROW_ASSIGN_OR_RAISE(auto e, cat_->GetEntry(repo_id, refname, path));
          ReplyJson(res, 200, ObjectJson(repo, path, e));
          return Status::OK();
        });
  Route("GET", ref + "/objects/ls", [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    std::string repo_id = req.matches[1], refname = req.matches[2];
    ARROW_RETURN_NOT_OK(Allow(me, "fs:ListObjects", RepoArn(repo_id)));
    ARROW_ASSIGN_OR_RAISE(auto o, ListParams(req));
    ARROW_ASSIGN_OR_RAISE(auto repo, cat_->GetRepository(repo_id));
    ARROW_ASSIGN_OR_RAISE(auto page, cat_->ListEntries(repo, refname, o));
    res.status = 200;
    res.set_content(ObjectListBody(repo, page, o.amount), "application/json");
    return Status::OK();
  });
}

void Api::RegisterCommits() {
  const std::string ref = std::string(kRepo) + "/refs/([^/]+)";
  Route("POST", std::string(kRepo) + "/branches/([^/]+)/commits",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          std::string repo = req.matches[1], branch = req.matches[2];
          ARROW_RETURN_NOT_OK(Allow(me, "fs:CreateCommit", BranchArn(repo, branch)));
          ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
          catalog::CommitParams p;
          p.committer = me;
          ARROW_ASSIGN_OR_RAISE(p.message, Field<std::string>(body, "message"));
          ARROW_ASSIGN_OR_RAISE(p.metadata, (Field<std::map<std::string, std::string>>(
                                                body, "metadata", std::map<std::string, std::string>{})));
          if (body.contains("date") && !body["date"].is_null()) {
            ARROW_ASSIGN_OR_RAISE(auto d, Field<int64_t>(body, "date"));
            p.date = d;
          }
          ARROW_ASSIGN_OR_RAISE(p.allow_empty, Field<bool>(body, "allow_empty", false));
          ARROW_ASSIGN_OR_RAISE(p.force, Field<bool>(body, "force", false));
          ARROW_ASSIGN_OR_RAISE(auto c, cat_->CommitBranch(repo, branch, p));
          ReplyJson(res, 201, CommitJson(c));
          return Status::OK();
        });
  Route("GET", std::string(kRepo) + "/commits/([^/]+)",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          std::string repo = req.matches[1];
          ARROW_RETURN_NOT_OK(Allow(me, "fs:ReadCommit", RepoArn(repo)));
          ARROW_RETURN_NOT_OK(cat_->GetRepository(repo).status());
          ARROW_ASSIGN_OR_RAISE(auto r, cat_->ResolveRef(repo, req.matches[2]));
          ARROW_ASSIGN_OR_RAISE(auto c, cat_->GetCommit(repo, r.commit_id));
          ReplyJson(res, 200, CommitJson(c));
          return Status::OK();
        });
  Route("GET", ref + "/commits", [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    std::string repo = req.matches[1];
    ARROW_RETURN_NOT_OK(Allow(me, "fs:ReadCommit", RepoArn(repo)));
    ARROW_ASSIGN_OR_RAISE(auto amount, AmountParam(req));
    ARROW_ASSIGN_OR_RAISE(bool first_parent, BoolParam(req, "first_parent"));
    ARROW_ASSIGN_OR_RAISE(auto page, cat_->Log(repo, req.matches[2], Param(req, "after"), amount, first_parent));
    json results = json::array();
    for (const auto& c : page.items) results.push_back(CommitJson(c));
    std::string next = page.items.empty() ? "" : page.items.back().id;
    ReplyPage(res, std::move(results), page.has_more, next, amount);
    return Status::OK();
  });
  Route(
      "GET", ref + "/diff/([^/]+)", [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
        std::string repo = req.matches[1];
        ARROW_RETURN_NOT_OK(Allow(me, "fs:ListObjects", RepoArn(repo)));
        ARROW_ASSIGN_OR_RAISE(auto o, ListParams(req));
        std::string type = Param(req, "type", "three_dot");
        if (type != "two_dot" && type != "three_dot") {
          return InvalidArgument(fmt::format("diff type \"{}\" must be two_dot or three_dot", type));
        }
        ARROW_ASSIGN_OR_RAISE(auto page, cat_->DiffRefs(repo, req.matches[2], req.matches[3], type == "three_dot", o));
        json results = json::array();
        for (const auto& d : page.items) results.push_back(DiffJson(d));
        std::string next = page.items.empty() ? "" : page.items.back().path;
        ReplyPage(res, std::move(results), page.has_more, next, o.amount);
        return Status::OK();
      });
  Route(
      "POST", ref + "/merge/([^/]+)",
      [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
        std::string repo = req.matches[1], source = req.matches[2], dest = req.matches[3];
        ARROW_RETURN_NOT_OK(Allow(me, "fs:CreateCommit", BranchArn(repo, dest)));
        ARROW_ASSIGN_OR_RAISE(auto body, Body(req, /*optional=*/true));
        catalog::CommitParams p;
        p.committer = me;
        ARROW_ASSIGN_OR_RAISE(p.message, Field<std::string>(body, "message", std::string()));
        ARROW_ASSIGN_OR_RAISE(p.metadata, (Field<std::map<std::string, std::string>>(
                                              body, "metadata", std::map<std::string, std::string>{})));
        ARROW_ASSIGN_OR_RAISE(p.allow_empty, Field<bool>(body, "allow_empty", false));
        ARROW_ASSIGN_OR_RAISE(p.force, Field<bool>(body, "force", false));
        ARROW_ASSIGN_OR_RAISE(auto strategy_name, Field<std::string>(body, "strategy", std::string()));
        catalog::MergeStrategy strategy = catalog::MergeStrategy::kNone;
        if (strategy_name == "source-wins") {
          strategy = catalog::MergeStrategy::kSourceWins;
        } else if (strategy_name == "dest-wins") {
          strategy = catalog::MergeStrategy::kDestWins;
        } else if (!strategy_name.empty()) {
          return InvalidArgument(fmt::format("merge strategy \"{}\" must be source-wins or dest-wins", strategy_name));
        }
        ARROW_ASSIGN_OR_RAISE(auto c, cat_->Merge(repo, source, dest, p, strategy));
        ReplyJson(res, 200, {{"reference", c.id}});
        return Status::OK();
      });
}

void Api::RegisterTags() {
  const std::string tags = std::string(kRepo) + "/tags";
  Route("GET", tags, [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    std::string repo = req.matches[1];
    ARROW_RETURN_NOT_OK(Allow(me, "fs:ListTags", RepoArn(repo)));
    ARROW_ASSIGN_OR_RAISE(auto o, ListParams(req));
    ARROW_ASSIGN_OR_RAISE(auto page, cat_->ListTags(repo, o.prefix, o.after, o.amount));
    json results = json::array();
    for (const auto& t : page.items) results.push_back({{"id", t.id}, {"commit_id", t.commit_id}});
    std::string next = page.items.empty() ? "" : page.items.back().id;
    ReplyPage(res, std::move(results), page.has_more, next, o.amount);
    return Status::OK();
  });
  Route("POST", tags, [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    std::string repo = req.matches[1];
    ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
    ARROW_ASSIGN_OR_RAISE(auto id, Field<std::string>(body, "id"));
    ARROW_ASSIGN_OR_RAISE(auto ref, Field<std::string>(body, "ref"));
    ARROW_ASSIGN_OR_RAISE(auto force, Field<bool>(body, "force", false));
    ARROW_RETURN_NOT_OK(Allow(me, "fs:CreateTag", TagArn(repo, id)));
    ARROW_ASSIGN_OR_RAISE(auto t, cat_->CreateTag(repo, id, ref, force));
    ReplyJson(res, 201, {{"id", t.id}, {"commit_id", t.commit_id}});
    return Status::OK();
  });
  Route("GET", tags + "/([^/]+)", [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
    std::string repo = req.matches[1], id = req.matches[2];
    ARROW_RETURN_NOT_OK(Allow(me, "fs:ReadTag", TagArn(repo, id)));
    ARROW_ASSIGN_OR_RAISE(auto t, cat_->GetTag(repo, id));
    ReplyJson(res, 200, {{"id", t.id}, {"commit_id", t.commit_id}});
    return Status::OK();
  });
  Route("DELETE", tags + "/([^/]+)",
        [this](const httplib::Request& req, httplib::Response& res, const std::string& me) {
          std::string repo = req.matches[1], id = req.matches[2];
          ARROW_RETURN_NOT_OK(Allow(me, "fs:DeleteTag", TagArn(repo, id)));
          ARROW_RETURN_NOT_OK(cat_->DeleteTag(repo, id));
          res.status = 204;
          return Status::OK();
        });
}

}  // namespace

void RegisterLakeFsApi(HttpServer* http, Catalog* catalog, catalog::StagingCompactor* compactor, AuthService* auth,
                       const std::string& blockstore_type) {
  // Every route holds a reference to the Api, so it lives as long as the server's routes.
  std::make_shared<Api>(http, catalog, compactor, auth, blockstore_type)->Register();
}

}  // namespace sediment::server
