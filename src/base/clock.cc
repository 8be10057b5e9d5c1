#include "base/clock.h"

#include <fmt/format.h>

#include <ctime>

namespace sediment {

Duration SecondsToDuration(double seconds) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
}

double ToSeconds(Duration d) { return std::chrono::duration<double>(d).count(); }

int64_t ToUnixMicros(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

TimePoint FromUnixMicros(int64_t micros) {
  return TimePoint(std::chrono::duration_cast<Duration>(std::chrono::microseconds(micros)));
}

std::string FormatTime(TimePoint t) {
  int64_t us = ToUnixMicros(t);
  std::time_t secs = static_cast<std::time_t>(us / 1'000'000);
  int64_t frac = us % 1'000'000;
  if (frac < 0) {
    frac += 1'000'000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

std::shared_ptr<Clock> SystemClock::Default() {
  static std::shared_ptr<Clock> clock = std::make_shared<SystemClock>();
  return clock;
}

}  // namespace sediment
