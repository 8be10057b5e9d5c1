#include "server/http/errors.h"

#include <httplib.h>

#include <charconv>
#include <ctime>
#include <nlohmann/json.hpp>

namespace sediment::server {

int HttpStatusFor(const Status& st) {
  if (st.ok()) return 200;
  ErrorCode code;
  if (!GetErrorCode(st, &code)) return 500;
  switch (code) {
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kConflict:
      return 409;
    case ErrorCode::kPreconditionFailed:
      return 412;
    case ErrorCode::kBusy:
      return 503;
    case ErrorCode::kInvalidArgument:
      return 400;
    case ErrorCode::kUnauthorized:
      return 401;
    case ErrorCode::kForbidden:
      return 403;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kNotImplemented:
      return 501;
  }
  return 500;
}

void ReplyError(httplib::Response& res, int http_status, const std::string& message) {
  res.status = http_status;
  nlohmann::json body = {{"message", message}};
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

void ReplyJson(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

std::string HttpDate(int64_t unix_seconds) {
  std::time_t t = unix_seconds;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

Result<std::optional<uint64_t>> U64QueryParam(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) return std::optional<uint64_t>();
  std::string v = req.get_param_value(name);
  uint64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) {
    return InvalidArgument("query parameter " + std::string(name) + "=\"" + v + "\" is not a non-negative integer");
  }
  return std::optional<uint64_t>(out);
}

void ReplyError(httplib::Response& res, const Status& st) {
  int code = HttpStatusFor(st);
  if (code == 503) res.set_header("Retry-After", "1");
  ReplyError(res, code, code == 500 ? "internal error: " + st.ToString() : st.message());
}

}  // namespace sediment::server
