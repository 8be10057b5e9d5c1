#include "server/byte_range.h"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace sediment::server {

std::optional<ByteRange> ParseByteRange(const std::string& header, int64_t size, bool* unsatisfiable) {
  *unsatisfiable = false;
  if (header.rfind("bytes=", 0) != 0 || header.find(',') != std::string::npos) return std::nullopt;
  std::string_view spec = std::string_view(header).substr(6);
  size_t dash = spec.find('-');
  if (dash == std::string::npos) return std::nullopt;
  auto num = [](std::string_view s, int64_t* out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && p == s.data() + s.size() && *out >= 0;
  };
  std::string_view a = spec.substr(0, dash), b = spec.substr(dash + 1);
  int64_t first = 0, last = 0;
  if (a.empty()) {  // the last n bytes
    if (!num(b, &last) || last == 0) {
      *unsatisfiable = !b.empty();
      return std::nullopt;
    }
    int64_t n = std::min(last, size);
    if (n == 0) {
      *unsatisfiable = true;
      return std::nullopt;
    }
    return ByteRange{size - n, n};
  }
  if (!num(a, &first)) return std::nullopt;
  if (b.empty()) {
    last = size - 1;
  } else if (!num(b, &last) || last < first) {
    return std::nullopt;
  }
  if (first >= size) {
    *unsatisfiable = true;
    return std::nullopt;
  }
  last = std::min(last, size - 1);
  return ByteRange{first, last - first + 1};
}

}  // namespace sediment::server
