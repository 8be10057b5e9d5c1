#include "base/test_util.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <random>

namespace sediment::testing {

TempDir::TempDir() {
  const char* root = std::getenv("SEDIMENT_TEST_TMP");
  std::filesystem::path base = root != nullptr ? root : std::filesystem::temp_directory_path().string();
  static std::atomic<int> counter{0};
  std::random_device rd;
  path_ = (base /
           ("t" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + std::to_string(rd() % 100000)))
              .string();
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace sediment::testing
