// Errors for all of Sediment: arrow::Status / arrow::Result<T> carrying one of
// our domain codes as a StatusDetail. Modules return these; only the HTTP layer
// turns them into status codes (server/errors.cc), in one place.
//
// Thread-safety: all functions are pure.
#pragma once

#include <arrow/result.h>
#include <arrow/status.h>

#include <string>
#include <string_view>

namespace sediment {

using arrow::Result;
using arrow::Status;

enum class ErrorCode {
  kNotFound,
  kConflict,            // state changed under us / already exists differently
  kPreconditionFailed,  // a caller-stated precondition does not hold
  kBusy,                // try again later (no worker free, lease held, ...)
  kInvalidArgument,     // the caller's input is malformed
  kUnauthorized,        // no or bad credentials
  kForbidden,           // credentials lack a permission, or read-only target
  kUnavailable,         // a dependency (database, object store) is down
  kNotImplemented,      // a request this server knows of but does not serve
};

std::string_view ErrorCodeName(ErrorCode code);

// Builds a Status with `code` attached. The arrow StatusCode is chosen to read
// sensibly when the detail is lost (e.g. KeyError for NotFound).
Status MakeError(ErrorCode code, std::string message);

inline Status NotFound(std::string m) { return MakeError(ErrorCode::kNotFound, std::move(m)); }
inline Status Conflict(std::string m) { return MakeError(ErrorCode::kConflict, std::move(m)); }
inline Status PreconditionFailed(std::string m) { return MakeError(ErrorCode::kPreconditionFailed, std::move(m)); }
inline Status Busy(std::string m) { return MakeError(ErrorCode::kBusy, std::move(m)); }
inline Status InvalidArgument(std::string m) { return MakeError(ErrorCode::kInvalidArgument, std::move(m)); }
inline Status Unauthorized(std::string m) { return MakeError(ErrorCode::kUnauthorized, std::move(m)); }
inline Status Forbidden(std::string m) { return MakeError(ErrorCode::kForbidden, std::move(m)); }
inline Status Unavailable(std::string m) { return MakeError(ErrorCode::kUnavailable, std::move(m)); }
inline Status NotImplemented(std::string m) { return MakeError(ErrorCode::kNotImplemented, std::move(m)); }

// The domain code of `st`, if it has one.
bool GetErrorCode(const Status& st, ErrorCode* code);

bool IsNotFound(const Status& st);
bool IsConflict(const Status& st);
bool IsPreconditionFailed(const Status& st);
bool IsBusy(const Status& st);
bool IsInvalidArgument(const Status& st);
bool IsUnauthorized(const Status& st);
bool IsForbidden(const Status& st);
bool IsUnavailable(const Status& st);

// Same code and detail, message prefixed with `context: `.
Status WithContext(const Status& st, std::string_view context);

}  // namespace sediment
