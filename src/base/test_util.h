// Helpers for tests only (linked into test binaries, never into sediment):
// the one ASSERT_OK, the one wait, temporary directories.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>

// Fails the test unless `expr` (a Status or Result) is OK; evaluates it once.
#define ASSERT_OK(expr)                                        \
  do {                                                         \
    const auto& _sediment_st = (expr);                         \
    ASSERT_TRUE(_sediment_st.ok()) << _sediment_st.ToString(); \
  } while (0)
#define EXPECT_OK(expr)                                        \
  do {                                                         \
    const auto& _sediment_st = (expr);                         \
    EXPECT_TRUE(_sediment_st.ok()) << _sediment_st.ToString(); \
  } while (0)

#define SEDIMENT_CONCAT_INNER(a, b) a##b
#define SEDIMENT_CONCAT(a, b) SEDIMENT_CONCAT_INNER(a, b)
// `lhs = *rexpr` for a Result `rexpr` that must be OK (evaluated once):
// ASSERT_OK_AND_ASSIGN(auto repo, catalog->GetRepository("r"));
#define ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  ASSERT_OK_AND_ASSIGN_IMPL(SEDIMENT_CONCAT(_sediment_result_, __LINE__), lhs, rexpr)
#define ASSERT_OK_AND_ASSIGN_IMPL(result, lhs, rexpr)     \
  auto result = (rexpr);                                  \
  ASSERT_TRUE(result.ok()) << result.status().ToString(); \
  lhs = std::move(result).ValueOrDie()

namespace sediment::testing {

// Polls `condition` until it holds (true) or `timeout` passes (false). The
// one wait of the C++ tests: they wait for a condition, never for a duration.
bool Eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = std::chrono::seconds(20));

// A fresh, empty directory for one test, removed by the returned guard.
// Lives under $SEDIMENT_TEST_TMP (set by CTest to build/testtmp) or /tmp.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace sediment::testing
