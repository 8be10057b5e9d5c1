// One HTTP byte range ("bytes=a-b", "bytes=a-", "bytes=-n") over an object of
// known size, for the handlers that serve ranges themselves (the S3 gateway's
// GetObject, the lakeFS API's GetObject): httplib's own range handling does
// not clamp a range to the body, so a range past the end would promise bytes
// that never come.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace arrow::io {
class RandomAccessFile;
}  // namespace arrow::io

namespace httplib {
struct Response;
}  // namespace httplib

namespace sediment::server {

struct ByteRange {
  int64_t first = 0, length = 0;
};

// nullopt when the header is absent or not one well-formed range (the whole
// object is served then, as S3 and lakeFS do); `*unsatisfiable` is set when
// it is one but no byte of it exists (416).
std::optional<ByteRange> ParseByteRange(const std::string& header, int64_t size, bool* unsatisfiable);

// Streams bytes [first, first + length) of `file` as the response body, a
// megabyte at a time, with headers that keep stored bytes from ever running
// as a page of this origin (the console's): a sandbox CSP and nosniff. The
// caller has cleared httplib's own ranges (they would be applied again).
void StreamObject(httplib::Response& res, std::shared_ptr<arrow::io::RandomAccessFile> file, int64_t first,
                  int64_t length, const std::string& content_type);

}  // namespace sediment::server
