#include "server/http/framing.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <vector>

#include "base/ascii.h"
#include "base/codec.h"

namespace sediment::server {
namespace {

bool IsTokenChar(unsigned char c) {
  static constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         kSpecials.find(static_cast<char>(c)) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return IsTokenChar(c); });
}

// field-vchar / SP / HTAB (obs-text allowed): no control bytes.
bool IsFieldValue(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) {
    auto c = static_cast<unsigned char>(ch);
    return c == '\t' || (c >= 0x20 && c != 0x7f);
  });
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The head's lines without their CRLF; "" when a CR or LF stands alone.
std::string SplitLines(std::string_view head, std::vector<std::string_view>* lines) {
  size_t at = 0;
  while (at < head.size()) {
    size_t lf = head.find('\n', at);
    if (lf == std::string_view::npos) return "the head does not end in CRLF CRLF";
    if (lf == at || head[lf - 1] != '\r') return "a line ends in a bare LF (lines end in CRLF)";
    std::string_view line = head.substr(at, lf - 1 - at);
    if (line.find('\r') != std::string_view::npos) return "a bare CR inside a line";
    lines->push_back(line);
    at = lf + 1;
  }
  return "";
}

std::string CheckRequestLine(std::string_view line, bool* http10) {
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return "the request line is not METHOD SP TARGET SP VERSION";
  }
  std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) return "the method is not a token";
  if (target.empty()) return "the request target is empty";
  // origin-form ("/path?query"), absolute-form ("http://host/path"), or "*" (OPTIONS).
  if (target.front() != '/' && !target.starts_with("http://") && !target.starts_with("https://") &&
      !(target == "*" && method == "OPTIONS")) {
    return "the request target is neither /path nor http(s)://host/path";
  }
  for (char ch : target) {
    auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f || c == '"') {
      return "the request target holds a control byte, space, '\"' or a byte outside ASCII";
    }
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0")
    return fmt::format("version \"{}\" is not HTTP/1.0 or HTTP/1.1", version);
  *http10 = version == "HTTP/1.0";
  return "";
}

}  // namespace

std::string CheckRequestHead(std::string_view head) {
  while (head.starts_with("\r\n")) head.remove_prefix(2);  // RFC 9112 2.2: empty lines before the request line
  std::vector<std::string_view> lines;
  if (std::string wrong = SplitLines(head, &lines); !wrong.empty()) return wrong;
  if (lines.size() < 2 || !lines.back().empty()) return "the head does not end in an empty line";
  lines.pop_back();
  bool http10 = false;
  if (std::string wrong = CheckRequestLine(lines[0], &http10); !wrong.empty()) return wrong;
  int hosts = 0, lengths = 0, codings = 0;
  std::string_view length, coding;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (line.empty()) return "an empty line inside the head";
    if (line.front() == ' ' || line.front() == '\t') return "a folded header line (obs-fold)";
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return fmt::format("header line {} has no colon", i);
    std::string_view name = line.substr(0, colon), value = TrimOws(line.substr(colon + 1));
    if (!IsToken(name)) return fmt::format("header name \"{}\" is not a token", name);
    if (!IsFieldValue(value)) return fmt::format("the value of header \"{}\" holds a control byte", name);
    std::string lower = AsciiLower(name);
    if (lower == "host") ++hosts;
    if (lower == "content-length") {
      ++lengths;
      length = line.substr(colon + 1);  // digits between spaces only: no tab, no list
      while (length.starts_with(' ')) length.remove_prefix(1);
      while (length.ends_with(' ')) length.remove_suffix(1);
    }
    if (lower == "transfer-encoding") {
      ++codings;
      coding = line.substr(colon + 1);  // "chunked" between spaces only
      while (coding.starts_with(' ')) coding.remove_prefix(1);
      while (coding.ends_with(' ')) coding.remove_suffix(1);
    }
  }
  if (hosts > 1) return "more than one Host";
  if (hosts == 0 && !http10) return "no Host (HTTP/1.1 requires one)";
  if (lengths > 1) return "more than one Content-Length";
  if (codings > 1) return "more than one Transfer-Encoding";
  if (lengths == 1) {
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(length.data(), length.data() + length.size(), n);
    if (length.empty() || length.size() > 19 || ec != std::errc() || end != length.data() + length.size() ||
        !std::all_of(length.begin(), length.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return fmt::format("Content-Length \"{}\" is not a number of bytes", length);
    }
  }
  if (codings == 1) {
    if (AsciiLower(coding) != "chunked") {
      return fmt::format("Transfer-Encoding \"{}\" (only chunked is understood)", coding);
    }
    if (http10) return "Transfer-Encoding in an HTTP/1.0 request";
    if (lengths == 1) return "both Content-Length and Transfer-Encoding";
  }
  return "";
}

bool ChunkedFraming::Fail(std::string why) {
  state_ = State::kBroken;
  error_ = std::move(why);
  return false;
}

bool ChunkedFraming::Feed(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    switch (state_) {
      case State::kSize:
        if (const int digit = HexDigitValue(c); digit >= 0) {
          if (++digits_ > 15) return Fail("a chunk size of more than 15 hex digits");
          size_ = size_ * 16 + static_cast<uint64_t>(digit);
        } else if (digits_ == 0) {
          return Fail("a chunk size must start with a hex digit (no 0x, sign or space)");
        } else if (c == '\r') {
          state_ = State::kSizeLf;
        } else if (c == ';') {
          state_ = State::kExtension;
          after_ = ';';
          extension_ = 0;
        } else {
          return Fail(fmt::format("byte 0x{:02x} after a chunk size", static_cast<unsigned char>(c)));
        }
        break;
      case State::kExtension:
        // ";name[=value]" repeated, names and values tokens (quoted values
        // are not accepted), at most kMaxExtension bytes.
        if (++extension_ > kMaxExtension) return Fail("a chunk extension longer than 256 bytes");
        if (c == '\r' && after_ != ';' && after_ != '=') {
          state_ = State::kSizeLf;
        } else if (c == ';' || c == '=') {
          if (after_ == ';' || after_ == '=') return Fail("an empty chunk extension name or value");
          after_ = c;
        } else if (IsTokenChar(static_cast<unsigned char>(c))) {
          after_ = 't';
        } else {
          return Fail(fmt::format("byte 0x{:02x} in a chunk extension", static_cast<unsigned char>(c)));
        }
        break;
      case State::kSizeLf:
        if (c != '\n') return Fail("a chunk size line ends in a bare CR");
        digits_ = 0;
        if (size_ == 0) {
          state_ = State::kLastCr;
        } else {
          left_ = size_;
          size_ = 0;
          state_ = State::kData;
        }
        break;
      case State::kData: {
        uint64_t take = std::min<uint64_t>(left_, bytes.size() - i);
        left_ -= take;
        i += take - 1;
        if (left_ == 0) state_ = State::kDataCr;
        break;
      }
      case State::kDataCr:
        if (c != '\r') return Fail("a chunk's data is not followed by CRLF");
        state_ = State::kDataLf;
        break;
      case State::kDataLf:
        if (c != '\n') return Fail("a chunk's data is not followed by CRLF");
        state_ = State::kSize;
        break;
      case State::kLastCr:
        if (c != '\r') return Fail("trailer fields after the last chunk are not accepted");
        state_ = State::kLastLf;
        break;
      case State::kLastLf:
        if (c != '\n') return Fail("the last chunk is not followed by CRLF");
        state_ = State::kDone;
        break;
      case State::kDone:
        return Fail("bytes past the end of the chunked body were read as the body's");
      case State::kBroken:
        return false;
    }
  }
  return true;
}

}  // namespace sediment::server
