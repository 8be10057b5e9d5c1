// One HTTP byte range ("bytes=a-b", "bytes=a-", "bytes=-n") over an object of
// known size, for the handlers that serve ranges themselves (the S3 gateway's
// GetObject, the lakeFS API's GetObject): httplib's own range handling does
// not clamp a range to the body, so a range past the end would promise bytes
// that never come.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sediment::server {

struct ByteRange {
  int64_t first = 0, length = 0;
};

// nullopt when the header is absent or not one well-formed range (the whole
// object is served then, as S3 and lakeFS do); `*unsatisfiable` is set when
// it is one but no byte of it exists (416).
std::optional<ByteRange> ParseByteRange(const std::string& header, int64_t size, bool* unsatisfiable);

}  // namespace sediment::server
