#include "base/test_util.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

namespace sediment::testing {

bool Eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);  // the one sleep: between looks at a condition
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

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
