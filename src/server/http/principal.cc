#include "server/http/principal.h"

#include <httplib.h>

#include <string_view>

namespace sediment::server {

std::string AuthorizationOf(const httplib::Request& req) {
  std::string header = req.get_header_value("Authorization");
  if (!header.empty()) return header;
  if (req.method != "GET" && req.method != "HEAD" && !req.has_header("X-Requested-With")) return "";
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

}  // namespace sediment::server
