// Turning a request into credentials for auth::AuthService: what the server
// keeps of authentication (the service itself, in src/auth, knows no HTTP).
#pragma once

#include <string>

namespace httplib {
struct Request;
}  // namespace httplib

namespace sediment::server {

// The cookie a login sets (lakeFS's name for it).
inline constexpr const char* kSessionCookie = "internal_auth_session";

// A request's credentials as an Authorization value for AuthService::Authenticate:
// its Authorization header, else its session cookie as "Bearer <token>" — for a
// method other than GET or HEAD only with X-Requested-With, a header no form
// or link of another site can send (the cookie is SameSite=Strict too, but a
// site on another port of the same host counts as the same site).
std::string AuthorizationOf(const httplib::Request& req);

// Why AuthorizationOf found no credentials in a request that has a session
// cookie ("" if it has credentials or no cookie): a write without X-Requested-With.
std::string CookieRefusedBecause(const httplib::Request& req);

}  // namespace sediment::server
