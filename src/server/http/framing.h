// Request framing as RFC 9112 writes it, and nothing looser: where a request
// ends must be beyond doubt, or a proxy in front and this server could
// disagree and the rest run as a request the proxy never saw (smuggling).
//
// cpp-httplib parses the head and reads the body; these checks run on the
// same bytes first, so what httplib is given is only ever framing that has one
// reading:
//  - CheckRequestHead: the whole head (request line, field lines, the empty
//    line), before httplib sees it. No obs-fold, no bare CR or LF, no control
//    bytes in values, field names are tokens with no space before the colon,
//    HTTP/1.0 or 1.1 only, at most one Host, one Content-Length of digits,
//    Transfer-Encoding exactly "chunked" (1.1 only) and never beside a
//    Content-Length.
//  - ChunkedFraming: a chunked body byte by byte as httplib reads it. Chunk
//    sizes are bare hex digits (no "0x", sign or space), optionally followed
//    by extensions after ';'; data is followed by CRLF; the last chunk by an
//    empty line (trailers are refused: httplib would not read them).
// A request that fails either is answered 400 and its connection closed.
//
// Thread-safety: pure functions; a ChunkedFraming belongs to one request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sediment::server {

// "" when `head` (through its final CRLF CRLF, leading empty lines allowed) is
// well framed; else what is wrong, for the 400's message.
std::string CheckRequestHead(std::string_view head);

class ChunkedFraming {
 public:
  // Checks the next bytes of the body. False once the framing is broken
  // (error() says how); bytes after the end of the body are not the body's.
  bool Feed(std::string_view bytes);
  bool done() const { return state_ == State::kDone; }
  const std::string& error() const { return error_; }

 private:
  enum class State { kSize, kExtension, kSizeLf, kData, kDataCr, kDataLf, kLastCr, kLastLf, kDone, kBroken };
  bool Fail(std::string why);

  State state_ = State::kSize;
  static constexpr int kMaxExtension = 256;
  int digits_ = 0;
  int extension_ = 0;  // bytes of the current size line's extensions
  char after_ = 0;     // what the extension's last byte was: ';', '=' or 't' (a token byte)
  uint64_t size_ = 0;
  uint64_t left_ = 0;
  std::string error_;
};

}  // namespace sediment::server
