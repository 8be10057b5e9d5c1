// One HTTP byte range ("bytes=a-b", "bytes=a-", "bytes=-n") over an object of
// known size, for the handlers that serve ranges themselves (the S3 gateway's
// GetObject, the lakeFS API's GetObject): httplib's own range handling does
// not clamp a range to the body, so a range past the end would promise bytes
// that never come. And the range of a copy ("bytes=first-last" exactly, for
// S3's x-amz-copy-source-range and the lakeFS API's copy_source range), read
// by the same parser.
//
// Thread-safety: pure functions; StreamObject's provider reads one file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

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

// "bytes=first-last" with 0 <= first <= last < size, as a copy names the part
// of its source it copies: no suffix or open-ended form, nothing clamped.
// nullopt otherwise (the caller says which header or field was wrong).
std::optional<ByteRange> ParseCopyRange(std::string_view header, int64_t size);

// Streams bytes [first, first + length) of `file` as the response body, a
// megabyte at a time, with headers that keep stored bytes from ever running
// as a page of this origin (the console's): a sandbox CSP and nosniff. The
// caller has cleared httplib's own ranges (they would be applied again).
void StreamObject(httplib::Response& res, std::shared_ptr<arrow::io::RandomAccessFile> file, int64_t first,
                  int64_t length, const std::string& content_type);

}  // namespace sediment::server
