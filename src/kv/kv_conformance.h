// The KV conformance suite: every KvStore driver must pass it. A driver's
// test file instantiates it with a factory that returns a fresh, empty store:
//
//   INSTANTIATE_TEST_SUITE_P(Mem, KvConformanceTest,
//       ::testing::Values(KvDriver{"mem", [] { return NewMemoryStore(); }}));
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "kv/kv.h"

namespace sediment::kv {

struct KvDriver {
  std::string name;
  std::function<std::shared_ptr<KvStore>()> open_empty;
};

inline std::string PrintToString(const KvDriver& d) { return d.name; }
inline void PrintTo(const KvDriver& d, std::ostream* os) { *os << d.name; }

class KvConformanceTest : public ::testing::TestWithParam<KvDriver> {
 protected:
  void SetUp() override {
    store_ = GetParam().open_empty();
    if (store_ == nullptr && GetParam().name == "postgres") GTEST_SKIP() << "no PostgreSQL configured";
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override { store_.reset(); }
  std::shared_ptr<KvStore> store_;
};

}  // namespace sediment::kv
