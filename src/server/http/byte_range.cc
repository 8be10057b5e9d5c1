#include "server/http/byte_range.h"

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <string_view>

namespace sediment::server {

namespace {

// The two sides of "bytes=A-B" as written (either may be empty); nullopt
// unless the header is that: one range, no list.
std::optional<std::pair<std::string_view, std::string_view>> RangeSides(std::string_view header) {
  if (!header.starts_with("bytes=") || header.find(',') != std::string_view::npos) return std::nullopt;
  const std::string_view spec = header.substr(6);
  const size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  return std::make_pair(spec.substr(0, dash), spec.substr(dash + 1));
}

// A byte position: a whole decimal number, not negative.
bool RangeNumber(std::string_view s, int64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && *out >= 0;
}

}  // namespace

std::optional<ByteRange> ParseByteRange(const std::string& header, int64_t size, bool* unsatisfiable) {
  *unsatisfiable = false;
  const auto sides = RangeSides(header);
  if (!sides) return std::nullopt;
  const auto [a, b] = *sides;
  int64_t first = 0, last = 0;
  if (a.empty()) {  // the last n bytes
    if (!RangeNumber(b, &last) || last == 0) {
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
  if (!RangeNumber(a, &first)) return std::nullopt;
  if (b.empty()) {
    last = size - 1;
  } else if (!RangeNumber(b, &last) || last < first) {
    return std::nullopt;
  }
  if (first >= size) {
    *unsatisfiable = true;
    return std::nullopt;
  }
  last = std::min(last, size - 1);
  return ByteRange{first, last - first + 1};
}

std::optional<ByteRange> ParseCopyRange(std::string_view header, int64_t size) {
  const auto sides = RangeSides(header);
  int64_t first = 0, last = 0;
  if (!sides || !RangeNumber(sides->first, &first) || !RangeNumber(sides->second, &last) || last < first ||
      last >= size) {
    return std::nullopt;
  }
  return ByteRange{first, last - first + 1};
}

void StreamObject(httplib::Response& res, std::shared_ptr<arrow::io::RandomAccessFile> file, int64_t first,
                  int64_t length, const std::string& content_type) {
  res.set_header("Content-Security-Policy", "sandbox");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content_provider(static_cast<size_t>(length), content_type,
                           [file = std::move(file), first](size_t offset, size_t n, httplib::DataSink& sink) {
                             size_t take = std::min<size_t>(n, 1 << 20);
                             auto buf = file->ReadAt(first + static_cast<int64_t>(offset), static_cast<int64_t>(take));
                             if (!buf.ok() || (*buf)->size() == 0) return false;  // never loop on a short file
                             return sink.write(reinterpret_cast<const char*>((*buf)->data()),
                                               static_cast<size_t>((*buf)->size()));
                           });
}

}  // namespace sediment::server
