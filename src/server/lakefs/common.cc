// Helpers shared by the lakeFS API handlers (see lakefs/api_internal.h).
#include <fmt/format.h>

#include "auth/auth.h"
#include "server/lakefs/api_internal.h"

namespace sediment::server::lakefs {

// lakeFS answers a request its caller may not make with 401 "insufficient
// permissions: ..." (its clients and esti expect exactly that), not 403.
Status Context::Allow(const std::string& user, const std::string& action, const std::string& resource) const {
  Status st = auth->Authorize(user, action, resource);
  if (IsForbidden(st)) return Unauthorized("insufficient permissions: " + st.message());
  return st;
}

// --- ARNs -------------------------------------------------------------------

std::string RepoArn(const std::string& repo) { return "arn:lakefs:fs:::repository/" + repo; }
std::string BranchArn(const std::string& repo, const std::string& b) { return RepoArn(repo) + "/branch/" + b; }
std::string ObjectArn(const std::string& repo, const std::string& p) { return RepoArn(repo) + "/object/" + p; }
std::string TagArn(const std::string& repo, const std::string& t) { return RepoArn(repo) + "/tag/" + t; }
std::string UserArn(const std::string& u) { return "arn:lakefs:auth:::user/" + u; }
std::string PolicyArn(const std::string& p) { return "arn:lakefs:auth:::policy/" + p; }

// --- JSON shapes (lakeFS OpenAPI) and replies --------------------------------

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

json DiffJson(const catalog::DiffItem& d) {
  json item = {{"type", d.type}, {"path", d.path}, {"path_type", d.common_prefix ? "common_prefix" : "object"}};
  if (!d.common_prefix) item["size_bytes"] = d.size_bytes;
  return item;
}

json Pagination(bool has_more, const std::string& next, size_t results, int64_t max_per_page) {
  return {{"has_more", has_more},
          {"next_offset", has_more ? next : ""},
          {"results", results},
          {"max_per_page", max_per_page}};
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

void ReplyPage(httplib::Response& res, json results, bool has_more, const std::string& next, int64_t max_per_page) {
  size_t n = results.size();
  ReplyJson(res, 200, {{"pagination", Pagination(has_more, next, n, max_per_page)}, {"results", std::move(results)}});
}

// --- request parsing --------------------------------------------------------

std::string Param(const httplib::Request& req, const char* name, const std::string& def) {
  return req.has_param(name) ? req.get_param_value(name) : def;
}

Result<bool> BoolParam(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) return false;
  std::string v = req.get_param_value(name);
  // As lakeFS (Go's strconv.ParseBool) reads them; the Python SDK sends "True".
  if (v.empty() || v == "true" || v == "True" || v == "TRUE" || v == "t" || v == "T" || v == "1") return true;
  if (v == "false" || v == "False" || v == "FALSE" || v == "f" || v == "F" || v == "0") return false;
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

Result<json> Body(const httplib::Request& req, bool optional) {
  if (req.body.empty()) {
    if (optional) return json::object();
    return InvalidArgument("request body is required (JSON)");
  }
  auto j = json::parse(req.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("request body is not a valid JSON object");
  return j;
}

}  // namespace sediment::server::lakefs
