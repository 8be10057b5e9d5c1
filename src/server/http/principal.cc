#include "server/http/principal.h"

#include <httplib.h>

#include <string_view>

namespace sediment::server {

namespace {

bool CookieNeedsHeader(const httplib::Request& req) {
  return req.method != "GET" && req.method != "HEAD" && !req.has_header("X-Requested-With");
}

// The session cookie's token as "Bearer <token>", "" if there is none.
std::string SessionCookie(const httplib::Request& req) {
  const std::string header_value = req.get_header_value("Cookie");  // get_header_value returns a copy
  std::string_view cookies = header_value;
  std::string_view name = kSessionCookie;
  while (!cookies.empty()) {
    size_t end = cookies.find(';');
    std::string_view c = cookies.substr(0, end);
    while (!c.empty() && c.front() == ' ') c.remove_prefix(1);
    if (c.size() > name.size() && c.substr(0, name.size()) == name && c[name.size()] == '=') {
      return "Bearer " + std::string(c.substr(name.size() + 1));
    }
    if (end == std::string_view::npos) break;
    cookies.remove_prefix(end + 1);
  }
  return "";
}

}  // namespace

std::string AuthorizationOf(const httplib::Request& req) {
  std::string header = req.get_header_value("Authorization");
  if (!header.empty()) return header;
  if (CookieNeedsHeader(req)) return "";
  return SessionCookie(req);
}

std::string CookieRefusedBecause(const httplib::Request& req) {
  if (req.has_header("Authorization") || !CookieNeedsHeader(req) || SessionCookie(req).empty()) return "";
  return "a write with the session cookie needs an X-Requested-With header (the console sends it; a page of "
         "another site cannot, so it cannot write with your cookie)";
}

}  // namespace sediment::server
