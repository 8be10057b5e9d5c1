#include "base/clock.h"

#include <gtest/gtest.h>

namespace sediment {
namespace {

TEST(ClockTest, ManualClockMovesOnlyWhenTold) {
  ManualClock clock(FromUnixMicros(1'000'000));
  EXPECT_EQ(ToUnixMicros(clock.Now()), 1'000'000);
  EXPECT_EQ(ToUnixMicros(clock.Now()), 1'000'000);
  clock.AdvanceSeconds(1.5);
  EXPECT_EQ(ToUnixMicros(clock.Now()), 2'500'000);
  clock.Advance(std::chrono::milliseconds(3));
  EXPECT_EQ(ToUnixMicros(clock.Now()), 2'503'000);
}

TEST(ClockTest, SecondsConversions) {
  EXPECT_DOUBLE_EQ(ToSeconds(SecondsToDuration(1024.0)), 1024.0);
  EXPECT_DOUBLE_EQ(ToSeconds(SecondsToDuration(0.25)), 0.25);
}

TEST(ClockTest, FormatTimeIsRfc3339Utc) {
  EXPECT_EQ(FormatTime(FromUnixMicros(0)), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatTime(FromUnixMicros(1'700'000'000'123'456)), "2023-11-14T22:13:20.123456Z");
}

TEST(ClockTest, SystemClockAdvances) {
  auto clock = SystemClock::Default();
  auto a = clock->Now();
  auto b = clock->Now();
  EXPECT_LE(a, b);
  EXPECT_GT(ToUnixMicros(a), 1'700'000'000'000'000);
}

}  // namespace
}  // namespace sediment
