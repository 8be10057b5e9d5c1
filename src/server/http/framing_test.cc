#include "server/http/framing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sediment::server {
namespace {

std::string Head(const std::string& lines) { return "POST /x HTTP/1.1\r\nHost: h\r\n" + lines + "\r\n"; }

TEST(CheckRequestHeadTest, OneReadingOrRefused) {
  struct Case {
    std::string head;
    std::string wrong;  // "" = well framed; else a part of the reason
  };
  const std::vector<Case> cases = {
      {Head("Content-Length: 5\r\n"), ""},
      {Head("Transfer-Encoding: chunked\r\n"), ""},
      {Head("Transfer-Encoding: Chunked \r\n"), ""},
      {"\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", ""},  // an empty line before the request line
      {"GET / HTTP/1.0\r\n\r\n", ""},
      {"GET / HTTP/1.1\r\n\r\n", "no Host"},
      {Head("Content-Length: 5\t\r\n"), "not a number"},
      {Head("Transfer-Encoding:\r\n chunked\r\nContent-Length: 3\r\n"), "obs-fold"},
      {Head("Transfer-Encoding:\r\n\tchunked\r\n"), "obs-fold"},
      {Head("X: a\r\n b\r\n"), "obs-fold"},
      {Head("Content-Length: 5\nX: y\r\n"), "bare LF"},
      {Head("X: a\rb\r\n"), "bare CR"},
      {Head("Content-Length : 5\r\n"), "not a token"},
      {Head("X: a\x01"
            "b\r\n"),
       "control byte"},
      {Head("Content-Length: 5\r\nContent-Length: 5\r\n"), "more than one Content-Length"},
      {Head("Content-Length: +5\r\n"), "not a number"},
      {Head("Content-Length: 5, 5\r\n"), "not a number"},
      {Head("Content-Length: 0x5\r\n"), "not a number"},
      {Head("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"), "both"},
      {Head("Transfer-Encoding: gzip, chunked\r\n"), "only chunked"},
      {Head("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"), "more than one Transfer-Encoding"},
      {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.0"},
      {Head("Host: other\r\n"), "more than one Host"},
      {"GET  / HTTP/1.1\r\nHost: h\r\n\r\n", "request line"},
      {"GET / HTTP/2.0\r\nHost: h\r\n\r\n", "version"},
      {"GET /a\x7f HTTP/1.1\r\nHost: h\r\n\r\n", "control byte"},
  };
  for (const auto& c : cases) {
    std::string wrong = CheckRequestHead(c.head);
    if (c.wrong.empty()) {
      EXPECT_EQ(wrong, "") << c.head;
    } else {
      EXPECT_NE(wrong.find(c.wrong), std::string::npos) << c.head << " -> " << wrong;
    }
  }
}

TEST(ChunkedFramingTest, SizesAreBareHexAndDataEndsInCrlf) {
  struct Case {
    std::string body;
    bool ok;
  };
  const std::vector<Case> cases = {
      {"2\r\nab\r\n0\r\n\r\n", true},
      {"A;name=v\r\n0123456789\r\n0\r\n\r\n", true},
      {"0\r\n\r\n", true},
      {"0x2\r\nab\r\n0\r\n\r\n", false},
      {"+2\r\nab\r\n0\r\n\r\n", false},
      {" 2\r\nab\r\n0\r\n\r\n", false},
      {"2 \r\nab\r\n0\r\n\r\n", false},
      {"-0\r\n\r\n", false},
      {"2\r\nabX\r\n0\r\n\r\n", false},  // data not followed by CRLF: httplib would end the body here
      {"2\nab\r\n0\r\n\r\n", false},
      {"0\r\nX: trailer\r\n\r\n", false},
      {"1000000000000000\r\n", false},
  };
  for (const auto& c : cases) {
    ChunkedFraming f;
    // Byte by byte, as httplib reads lines.
    bool ok = true;
    for (char ch : c.body) ok = ok && f.Feed(std::string_view(&ch, 1));
    EXPECT_EQ(ok && f.done(), c.ok) << c.body << " " << f.error();
    ChunkedFraming whole;
    EXPECT_EQ(whole.Feed(c.body) && whole.done(), c.ok) << c.body;
  }
  ChunkedFraming done;
  ASSERT_TRUE(done.Feed("0\r\n\r\n"));
  EXPECT_FALSE(done.Feed("G")) << "nothing after the body is the body's";
}

}  // namespace
}  // namespace sediment::server
