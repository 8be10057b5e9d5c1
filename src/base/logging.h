// Logging: spdlog, configured once at start-up, as text or as JSON lines.
// Use spdlog's free functions (spdlog::info(...)) everywhere after Setup.
//
// Thread-safety: Setup must run before other threads log; logging is safe
// from any thread.
#pragma once

#include <string>

#include "base/status.h"

namespace sediment {

// level: trace|debug|info|warn|error|off; format: text|json. Logs go to stderr.
Status SetupLogging(const std::string& level, const std::string& format);

// `s` as the inside of a JSON string literal.
std::string JsonEscape(const std::string& s);

}  // namespace sediment
