#include "base/failpoint.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <map>
#include <mutex>

namespace sediment::failpoint {
namespace {

struct Armed {
  Action action = Action::kError;
  int64_t nth = 1;
  int64_t times = 1;
  int64_t hits = 0;
};

std::atomic<bool> g_any{false};

std::mutex& Mu() {
  static std::mutex mu;
  return mu;
}

std::map<std::string, Armed, std::less<>>& Table() {
  static std::map<std::string, Armed, std::less<>> table;  // GUARDED_BY(Mu())
  return table;
}

bool Known(std::string_view name) { return std::find(kAll.begin(), kAll.end(), name) != kAll.end(); }

Result<int64_t> Number(std::string_view entry, std::string_view digits) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size() || v < 0) {
    return InvalidArgument(fmt::format("SEDIMENT_FAILPOINTS: \"{}\": \"{}\" is not a count", entry, digits));
  }
  return v;
}

}  // namespace

Status Hit(std::string_view name) {
  if (!g_any.load(std::memory_order_relaxed)) return Status::OK();
  Action action;
  {
    std::lock_guard<std::mutex> lock(Mu());
    auto it = Table().find(name);
    if (it == Table().end()) return Status::OK();
    Armed& a = it->second;
    a.hits++;
    if (a.hits < a.nth || (a.times > 0 && a.hits >= a.nth + a.times)) return Status::OK();
    action = a.action;
  }
  if (action == Action::kCrash) {
    ::kill(::getpid(), SIGKILL);
    ::_exit(137);  // not reached
  }
  return Status::IOError(fmt::format("failpoint {} injected an error", name));
}

Status Arm(std::string_view name, Action action, int64_t nth, int64_t times) {
  if (!Known(name)) return InvalidArgument(fmt::format("unknown failpoint \"{}\"", name));
  if (nth < 1) return InvalidArgument(fmt::format("failpoint {}: @{} must be at least 1", name, nth));
  std::lock_guard<std::mutex> lock(Mu());
  Table()[std::string(name)] = Armed{action, nth, times, 0};
  g_any = true;
  return Status::OK();
}

Status ArmFromSpec(std::string_view spec) {
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view entry = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (entry.empty()) continue;
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument(fmt::format("SEDIMENT_FAILPOINTS: \"{}\" is not name=crash|error[@N][*N]", entry));
    }
    std::string_view name = entry.substr(0, eq), rest = entry.substr(eq + 1);
    int64_t nth = 1, times = 1;
    if (size_t star = rest.find('*'); star != std::string_view::npos) {
      ARROW_ASSIGN_OR_RAISE(times, Number(entry, rest.substr(star + 1)));
      rest = rest.substr(0, star);
    }
    if (size_t at = rest.find('@'); at != std::string_view::npos) {
      ARROW_ASSIGN_OR_RAISE(nth, Number(entry, rest.substr(at + 1)));
      rest = rest.substr(0, at);
    }
    Action action;
    if (rest == "crash") {
      action = Action::kCrash;
    } else if (rest == "error") {
      action = Action::kError;
    } else {
      return InvalidArgument(fmt::format("SEDIMENT_FAILPOINTS: \"{}\": the action must be crash or error", entry));
    }
    ARROW_RETURN_NOT_OK(Arm(name, action, nth, times));
  }
  return Status::OK();
}

Status ArmFromEnv() {
  const char* spec = std::getenv("SEDIMENT_FAILPOINTS");
  if (spec == nullptr || *spec == '\0') return Status::OK();
  return ArmFromSpec(spec);
}

void DisarmAll() {
  std::lock_guard<std::mutex> lock(Mu());
  Table().clear();
  g_any = false;
}

int64_t Hits(std::string_view name) {
  std::lock_guard<std::mutex> lock(Mu());
  auto it = Table().find(name);
  return it == Table().end() ? 0 : it->second.hits;
}

}  // namespace sediment::failpoint
