#include "base/status.h"

#include <memory>

namespace sediment {
namespace {

constexpr const char kTypeId[] = "sediment::ErrorDetail";

class ErrorDetail : public arrow::StatusDetail {
 public:
  explicit ErrorDetail(ErrorCode code) : code_(code) {}
  const char* type_id() const override { return kTypeId; }
  std::string ToString() const override { return std::string(ErrorCodeName(code_)); }
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

arrow::StatusCode ArrowCodeFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNotFound:
      return arrow::StatusCode::KeyError;
    case ErrorCode::kConflict:
      return arrow::StatusCode::AlreadyExists;
    case ErrorCode::kInvalidArgument:
      return arrow::StatusCode::Invalid;
    case ErrorCode::kUnavailable:
      return arrow::StatusCode::IOError;
    default:
      return arrow::StatusCode::UnknownError;
  }
}

bool Has(const Status& st, ErrorCode want) {
  ErrorCode code;
  return GetErrorCode(st, &code) && code == want;
}

}  // namespace

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kConflict:
      return "conflict";
    case ErrorCode::kPreconditionFailed:
      return "precondition failed";
    case ErrorCode::kBusy:
      return "busy";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kUnauthorized:
      return "unauthorized";
    case ErrorCode::kForbidden:
      return "forbidden";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kNotImplemented:
      return "not implemented";
  }
  return "unknown";
}

Status MakeError(ErrorCode code, std::string message) {
  return Status(ArrowCodeFor(code), std::move(message), std::make_shared<ErrorDetail>(code));
}

bool GetErrorCode(const Status& st, ErrorCode* code) {
  if (st.ok() || st.detail() == nullptr || st.detail()->type_id() != std::string_view(kTypeId)) {
    return false;
  }
  *code = static_cast<const ErrorDetail&>(*st.detail()).code();
  return true;
}

bool IsNotFound(const Status& st) { return Has(st, ErrorCode::kNotFound); }
bool IsConflict(const Status& st) { return Has(st, ErrorCode::kConflict); }
bool IsPreconditionFailed(const Status& st) { return Has(st, ErrorCode::kPreconditionFailed); }
bool IsBusy(const Status& st) { return Has(st, ErrorCode::kBusy); }
bool IsInvalidArgument(const Status& st) { return Has(st, ErrorCode::kInvalidArgument); }
bool IsUnauthorized(const Status& st) { return Has(st, ErrorCode::kUnauthorized); }
bool IsForbidden(const Status& st) { return Has(st, ErrorCode::kForbidden); }
bool IsUnavailable(const Status& st) { return Has(st, ErrorCode::kUnavailable); }

Status WithContext(const Status& st, std::string_view context) {
  if (st.ok()) return st;
  return Status(st.code(), std::string(context) + ": " + st.message(), st.detail());
}

}  // namespace sediment
