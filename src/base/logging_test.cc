#include "base/logging.h"

#include <gtest/gtest.h>

namespace sediment {
namespace {

TEST(LoggingTest, JsonEscape) {
  EXPECT_EQ(JsonEscape("plain"), "plain");
  EXPECT_EQ(JsonEscape("a\"b\\c\nd\te"), "a\\\"b\\\\c\\nd\\te");
  EXPECT_EQ(JsonEscape(std::string("\x01", 1)), "\\u0001");
}

TEST(LoggingTest, SetupRejectsUnknownLevelAndFormat) {
  EXPECT_TRUE(SetupLogging("info", "text").ok());
  EXPECT_TRUE(SetupLogging("debug", "json").ok());
  EXPECT_TRUE(SetupLogging("off", "text").ok());
  EXPECT_TRUE(IsInvalidArgument(SetupLogging("loud", "text")));
  EXPECT_TRUE(IsInvalidArgument(SetupLogging("info", "xml")));
}

}  // namespace
}  // namespace sediment
