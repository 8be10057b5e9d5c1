// The route table's one authentication and authorization step (route.h).
#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>

#include "auth/auth.h"
#include "base/ascii.h"
#include "server/http/errors.h"
#include "server/http/http_server.h"
#include "server/http/principal.h"
#include "server/http/route.h"

namespace sediment::server {
namespace {

bool IsRegexSpecial(char c) { return std::string_view(R"(\^$.|?*+()[]{})").find(c) != std::string_view::npos; }

// A body of a JSON protocol's route is JSON, and says so: a cross-site form
// can send only text/plain, x-www-form-urlencoded or multipart bodies, so a
// browser cannot be made to send one of these writes (415 otherwise).
bool RefuseNonJsonBody(const httplib::Request& req, httplib::Response& res) {
  if (req.body.empty()) return false;
  std::string type = req.get_header_value("Content-Type");
  std::string media = type.substr(0, type.find(';'));
  media.erase(media.find_last_not_of(" \t") + 1);
  if (AsciiLower(media) == "application/json") return false;
  ReplyError(res, 415,
             fmt::format("the request body must be JSON sent as Content-Type: application/json (got \"{}\")", type));
  return true;
}

std::string BodyField(const httplib::Request& req, const std::string& name) {
  auto body = nlohmann::json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) return "";
  auto it = body.find(name);
  return it != body.end() && it->is_string() ? it->get<std::string>() : "";
}

const char* AccessName(Access a) {
  switch (a) {
    case Access::kPublic:
      return "public";
    case Access::kAuthenticated:
      return "authenticated";
    case Access::kAuthorized:
      return "authorized";
  }
  return "?";
}

}  // namespace

Result<CompiledPath> CompilePath(const std::string& path_template) {
  CompiledPath out;
  for (size_t i = 0; i < path_template.size();) {
    char c = path_template[i];
    if (c != '{') {
      if (c == '}') return InvalidArgument(fmt::format("path template {}: unmatched '}}'", path_template));
      if (IsRegexSpecial(c)) out.regex.push_back('\\');
      out.regex.push_back(c);
      ++i;
      continue;
    }
    // A parameter: {name} or {name:regex}; the regex may hold balanced braces.
    size_t depth = 1, end = i + 1;
    for (; end < path_template.size() && depth > 0; ++end) {
      if (path_template[end] == '{') ++depth;
      if (path_template[end] == '}') --depth;
    }
    if (depth != 0) return InvalidArgument(fmt::format("path template {}: unmatched '{{'", path_template));
    std::string inner = path_template.substr(i + 1, end - i - 2);
    size_t colon = inner.find(':');
    std::string name = inner.substr(0, colon);
    if (name.empty()) return InvalidArgument(fmt::format("path template {}: a parameter has no name", path_template));
    out.params.push_back(name);
    out.regex += "(" + (colon == std::string::npos ? std::string("[^/]+") : inner.substr(colon + 1)) + ")";
    i = end;
  }
  return out;
}

std::string ExpandResource(const std::string& resource, const CompiledPath& path, const httplib::Request& req) {
  std::string out;
  for (size_t i = 0; i < resource.size();) {
    size_t open = resource.find('{', i);
    size_t close = open == std::string::npos ? std::string::npos : resource.find('}', open);
    if (close == std::string::npos) {
      out += resource.substr(i);
      break;
    }
    out += resource.substr(i, open - i);
    std::string name = resource.substr(open + 1, close - open - 1);
    if (name.starts_with("@")) {
      out += "{" + name + "}";
    } else if (name.starts_with("?")) {
      out += req.get_param_value(name.substr(1));
    } else if (name.starts_with("body.")) {
      out += BodyField(req, name.substr(5));
    } else {
      for (size_t p = 0; p < path.params.size(); ++p) {
        if (path.params[p] == name && p + 1 < req.matches.size()) out += req.matches[p + 1].str();
      }
    }
    i = close + 1;
  }
  return out;
}

Result<std::vector<std::string>> ExpandDerived(const std::string& resource, const Derived& derived) {
  size_t open = resource.find("{@");
  if (open == std::string::npos) return std::vector<std::string>{resource};
  size_t close = resource.find('}', open);
  if (close == std::string::npos) return InvalidArgument("resource " + resource + ": an unclosed '{'");
  std::string name = resource.substr(open + 2, close - open - 2);
  auto values = derived.find(name);
  if (values == derived.end() || values->second.empty()) {
    return InvalidArgument(fmt::format("the request names no {} to authorize", name));
  }
  std::vector<std::string> out;
  for (const auto& v : values->second) {
    ARROW_ASSIGN_OR_RAISE(auto rest, ExpandDerived(resource.substr(0, open) + v + resource.substr(close + 1), derived));
    for (auto& r : rest) out.push_back(std::move(r));
  }
  return out;
}

struct Router::Matchers {
  std::vector<std::regex> regexes;
};

Router::Router(auth::AuthService* auth) : auth_(auth), matchers_(std::make_unique<Matchers>()) {}
Router::~Router() = default;

void Router::Add(std::vector<Route> routes) {
  // Handlers hold pointers into routes_: nothing is added once they are registered.
  if (registered_) {
    std::fprintf(stderr, "sediment: Router::Add after Register\n");
    std::abort();
  }
  for (Route& r : routes) routes_.push_back(std::move(r));
}

Result<bool> Router::IsOpen(const Route& route) {
  if (route.access == Access::kPublic) return true;
  if (!route.protocol->open_until_set_up || set_up_.load()) return false;
  ARROW_ASSIGN_OR_RAISE(bool set_up, auth_->IsSetUp());
  if (set_up) set_up_ = true;
  return !set_up;
}

Result<std::string> Router::Admit(const Route& route, const CompiledPath& path, const httplib::Request& req) {
  ARROW_ASSIGN_OR_RAISE(bool open, IsOpen(route));
  if (open) return std::string();
  auto user = auth_->Authenticate(AuthorizationOf(req));
  if (!user.ok()) {
    Status st = route.protocol->refusal ? route.protocol->refusal(user.status()) : user.status();
    std::string cookie = CookieRefusedBecause(req);
    return cookie.empty() || !IsUnauthorized(st) ? st : Unauthorized(st.message() + ": " + cookie);
  }
  ARROW_RETURN_NOT_OK(Authorize(route, path, req, *user));
  return *user;
}

Result<std::string> Router::AdmitOperation(const std::string& operation, const httplib::Request& req) {
  for (const Route& route : routes_) {
    if (route.operation != operation) continue;
    ARROW_ASSIGN_OR_RAISE(auto path, CompilePath(route.path));
    return Admit(route, path, req);
  }
  return NotFound(fmt::format("no route is labelled \"{}\"", operation));
}

Status Router::Authorize(const Route& route, const CompiledPath& path, const httplib::Request& req,
                         const std::string& user) {
  if (route.access != Access::kAuthorized) return Status::OK();
  Derived derived;
  if (route.derive) {
    ARROW_ASSIGN_OR_RAISE(derived, route.derive(req));
  }
  for (const Permission& p : route.needs) {
    ARROW_ASSIGN_OR_RAISE(auto resources, ExpandDerived(ExpandResource(p.resource, path, req), derived));
    for (const auto& resource : resources) {
      Status st = auth_->Authorize(user, p.action, resource);
      if (!st.ok()) return route.protocol->refusal ? route.protocol->refusal(st) : st;
    }
  }
  return Status::OK();
}

void Router::Serve(const Route& route, const CompiledPath& path, const httplib::Request& req, httplib::Response& res,
                   const httplib::ContentReader* body) {
  auto user = Admit(route, path, req);
  if (!user.ok()) return route.protocol->reply_error(res, user.status());
  if (route.protocol->json_bodies && !route.streamed && RefuseNonJsonBody(req, res)) return;
  Status st = route.handler(Call{req, res, *user, body});
  if (!st.ok()) route.protocol->reply_error(res, st);
}

namespace {

// A row that would authorize less than it says is a bug in a table: refused
// at start, before anything is served.
Status CheckRow(const Route& r, const CompiledPath& path) {
  auto bad = [&](const std::string& why) {
    return Status::Invalid(fmt::format("route {} {} ({}): {}", r.method, r.path, r.operation, why));
  };
  if (r.protocol == nullptr || !r.handler) return bad("no protocol or handler");
  if (r.access == Access::kAuthorized && r.needs.empty()) return bad("authorized, but needs no permission");
  if (r.access != Access::kAuthorized && !r.needs.empty()) return bad("needs permissions it would never check");
  for (const Permission& p : r.needs) {
    if (p.action.empty()) return bad("a permission without an action");
    for (size_t open = p.resource.find('{'); open != std::string::npos; open = p.resource.find('{', open + 1)) {
      size_t close = p.resource.find('}', open);
      if (close == std::string::npos) return bad("an unclosed '{' in resource " + p.resource);
      std::string name = p.resource.substr(open + 1, close - open - 1);
      if (name.starts_with("body.") && r.streamed) return bad("a streamed body is not read before the check");
      if (name.starts_with("@") && !r.derive)
        return bad("resource " + p.resource + " names {" + name + "}, but the row derives nothing");
      if (name.starts_with("?") || name.starts_with("body.") || name.starts_with("@")) continue;
      if (std::find(path.params.begin(), path.params.end(), name) == path.params.end()) {
        return bad("resource " + p.resource + " names {" + name + "}, which is no parameter of the path");
      }
    }
  }
  return Status::OK();
}

}  // namespace

Status Router::Register(HttpServer* http) {
  if (registered_) return Status::Invalid("the route table is registered once");
  compiled_.clear();
  matchers_->regexes.clear();
  for (const Route& r : routes_) {
    ARROW_ASSIGN_OR_RAISE(auto compiled, CompilePath(r.path));
    ARROW_RETURN_NOT_OK(CheckRow(r, compiled));
    matchers_->regexes.emplace_back(compiled.regex);
    compiled_.push_back(std::move(compiled));
  }
  for (size_t i = 0; i < routes_.size(); ++i) {
    const Route* route = &routes_[i];
    const CompiledPath* path = &compiled_[i];
    if (route->streamed) {
      http->HandleStream(
          route->method, path->regex, route->operation,
          [this, route, path](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& body) {
            Serve(*route, *path, req, res, &body);
          });
    } else {
      http->Handle(route->method, path->regex, route->operation,
                   [this, route, path](const httplib::Request& req, httplib::Response& res) {
                     Serve(*route, *path, req, res, nullptr);
                   });
    }
  }
  registered_ = true;
  return Status::OK();
}

Status Router::Dispatch(const std::string& protocol, const std::string& user, httplib::Request& req,
                        httplib::Response& res) {
  for (size_t i = 0; i < compiled_.size(); ++i) {
    const Route& route = routes_[i];
    if (route.protocol->name != protocol || route.access == Access::kPublic || route.streamed ||
        route.method != req.method) {
      continue;
    }
    if (!std::regex_match(req.path, req.matches, matchers_->regexes[i])) continue;
    ARROW_RETURN_NOT_OK(Authorize(route, compiled_[i], req, user));
    return route.handler(Call{req, res, user, nullptr});
  }
  return NotFound("no such API operation");
}

nlohmann::json Router::Describe() const {
  nlohmann::json out = nlohmann::json::array();
  for (const Route& r : routes_) {
    nlohmann::json needs = nlohmann::json::array();
    for (const Permission& p : r.needs) needs.push_back({{"action", p.action}, {"resource", p.resource}});
    out.push_back({{"method", r.method},
                   {"path", r.path},
                   {"operation", r.operation},
                   {"access", AccessName(r.access)},
                   {"needs", needs},
                   {"protocol", r.protocol ? r.protocol->name : ""},
                   {"open_until_set_up", r.protocol && r.protocol->open_until_set_up},
                   {"streamed", r.streamed},
                   {"derives", static_cast<bool>(r.derive)}});
  }
  return out;
}

}  // namespace sediment::server
