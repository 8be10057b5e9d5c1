#include "base/wildcard.h"

#include <gtest/gtest.h>

namespace sediment {
namespace {

TEST(WildcardTest, StarQuestionMarkAndWholeText) {
  EXPECT_TRUE(WildcardMatch("main", "main"));
  EXPECT_FALSE(WildcardMatch("main", "mainline"));
  EXPECT_TRUE(WildcardMatch("*", ""));
  EXPECT_TRUE(WildcardMatch("release-*", "release-1.2"));
  EXPECT_FALSE(WildcardMatch("release-*", "pre-release-1"));
  EXPECT_TRUE(WildcardMatch("v?", "v1"));
  EXPECT_FALSE(WildcardMatch("v?", "v"));
  EXPECT_TRUE(WildcardMatch("arn:lakefs:fs:::repository/*/object/a*b", "arn:lakefs:fs:::repository/r/object/axxb"));
  EXPECT_TRUE(WildcardMatch("*a*b*", "xxaxxbxx"));
  EXPECT_FALSE(WildcardMatch("*a*b", "xxbxxa"));
}

}  // namespace
}  // namespace sediment
