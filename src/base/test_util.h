// Helpers for tests only (linked into test binaries, never into sediment).
#pragma once

#include <string>

namespace sediment::testing {

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
