// Clock: the one source of "now" for policy decisions (cooldowns, grace
// periods, leases), injected so tests can move time without sleeping.
//
// Thread-safety: every Clock is safe to use from many threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace sediment {

using TimePoint = std::chrono::system_clock::time_point;
using Duration = std::chrono::system_clock::duration;

// Seconds as a double (the unit of every duration setting) to a Duration.
Duration SecondsToDuration(double seconds);
double ToSeconds(Duration d);
// Microseconds since the Unix epoch; the form times take in KV records.
int64_t ToUnixMicros(TimePoint t);
TimePoint FromUnixMicros(int64_t micros);
// RFC 3339 UTC, e.g. 2026-11-29T23:04:11.123456Z.
std::string FormatTime(TimePoint t);

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::system_clock::now(); }
  static std::shared_ptr<Clock> Default();
};

// A clock that only moves when told to.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start = TimePoint(std::chrono::seconds(1'700'000'000)))
      : micros_(ToUnixMicros(start)) {}
  TimePoint Now() const override { return FromUnixMicros(micros_.load()); }
  void Advance(Duration d) { micros_ += std::chrono::duration_cast<std::chrono::microseconds>(d).count(); }
  void AdvanceSeconds(double s) { Advance(SecondsToDuration(s)); }
  void Set(TimePoint t) { micros_ = ToUnixMicros(t); }

 private:
  std::atomic<int64_t> micros_;
};

}  // namespace sediment
