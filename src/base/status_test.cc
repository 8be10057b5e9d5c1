#include "base/status.h"

#include <gtest/gtest.h>

namespace sediment {
namespace {

TEST(StatusTest, DomainCodesRoundTrip) {
  struct Case {
    Status st;
    ErrorCode code;
    bool (*pred)(const Status&);
  };
  std::vector<Case> cases = {
      {NotFound("x"), ErrorCode::kNotFound, IsNotFound},
      {Conflict("x"), ErrorCode::kConflict, IsConflict},
      {PreconditionFailed("x"), ErrorCode::kPreconditionFailed, IsPreconditionFailed},
      {Busy("x"), ErrorCode::kBusy, IsBusy},
      {InvalidArgument("x"), ErrorCode::kInvalidArgument, IsInvalidArgument},
      {Unauthorized("x"), ErrorCode::kUnauthorized, IsUnauthorized},
      {Forbidden("x"), ErrorCode::kForbidden, IsForbidden},
      {Unavailable("x"), ErrorCode::kUnavailable, IsUnavailable},
  };
  for (const auto& c : cases) {
    ErrorCode got;
    ASSERT_TRUE(GetErrorCode(c.st, &got)) << c.st.ToString();
    EXPECT_EQ(got, c.code);
    EXPECT_TRUE(c.pred(c.st));
    EXPECT_EQ(c.st.message(), "x");
    // Exactly one predicate holds.
    int holds = 0;
    for (const auto& other : cases) holds += other.pred(c.st) ? 1 : 0;
    EXPECT_EQ(holds, 1) << ErrorCodeName(c.code);
  }
}

TEST(StatusTest, PlainArrowStatusHasNoDomainCode) {
  ErrorCode code;
  EXPECT_FALSE(GetErrorCode(Status::IOError("disk"), &code));
  EXPECT_FALSE(GetErrorCode(Status::OK(), &code));
  EXPECT_FALSE(IsNotFound(Status::KeyError("k")));
}

TEST(StatusTest, WithContextKeepsCode) {
  Status st = WithContext(NotFound("no such key"), "reading table eth.logs");
  EXPECT_TRUE(IsNotFound(st));
  EXPECT_EQ(st.message(), "reading table eth.logs: no such key");
  EXPECT_TRUE(WithContext(Status::OK(), "ctx").ok());
}

TEST(StatusTest, ResultPropagates) {
  auto f = [](bool fail) -> Result<int> {
    if (fail) return Busy("later");
    return 7;
  };
  auto g = [&](bool fail) -> Result<int> {
    ARROW_ASSIGN_OR_RAISE(int v, f(fail));
    return v + 1;
  };
  EXPECT_EQ(*g(false), 8);
  EXPECT_TRUE(IsBusy(g(true).status()));
}

}  // namespace
}  // namespace sediment
