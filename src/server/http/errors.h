// The one place where a Status becomes an HTTP status code and JSON error
// body, and where a JSON reply is written.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "base/status.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace sediment::server {

// not found 404, conflict 409, precondition failed 412, busy 503,
// invalid argument 400, unauthorized 401, forbidden 403, unavailable 503,
// not implemented 501;
// anything else (an I/O error, a bug) 500.
int HttpStatusFor(const Status& st);

// Sets the status code and a {"message": ...} JSON body.
void ReplyError(httplib::Response& res, const Status& st);
void ReplyError(httplib::Response& res, int http_status, const std::string& message);
// Sets the status code and `body` (invalid UTF-8 in strings replaced, never thrown).
void ReplyJson(httplib::Response& res, int status, const nlohmann::json& body);

// An HTTP date (RFC 1123, GMT), as Last-Modified wants it.
std::string HttpDate(int64_t unix_seconds);

// Query parameter `name` as a non-negative integer: nullopt if absent,
// InvalidArgument naming it if malformed.
Result<std::optional<uint64_t>> U64QueryParam(const httplib::Request& req, const char* name);

}  // namespace sediment::server
