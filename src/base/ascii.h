// ASCII case folding for protocol tokens (header names, host names, media
// types, hex digits, config words): independent of the locale, and bytes
// outside ASCII are left as they are.
#pragma once

#include <string>
#include <string_view>

namespace sediment {

inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace sediment
