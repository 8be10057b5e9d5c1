// The one byte-range parser, rule by rule: Range headers (RFC 9110 §14.1.2:
// one range, a suffix or an open end, clamped to the object; a malformed
// header is ignored, a range of no byte is 416) and copy ranges (S3's
// x-amz-copy-source-range: "bytes=first-last" exactly, within the source).
#include "server/http/byte_range.h"

#include <gtest/gtest.h>

namespace sediment::server {
namespace {

struct ServeCase {
  const char* header;
  int64_t size;
  std::optional<std::pair<int64_t, int64_t>> range;  // first, length
  bool unsatisfiable;
};

TEST(ByteRangeTest, RangeHeaders) {
  const ServeCase cases[] = {
      {"bytes=0-9", 100, {{0, 10}}, false},
      {"bytes=10-10", 100, {{10, 1}}, false},
      {"bytes=90-200", 100, {{90, 10}}, false},  // clamped to the object
      {"bytes=95-", 100, {{95, 5}}, false},      // open end
      {"bytes=-10", 100, {{90, 10}}, false},     // the last 10 bytes
      {"bytes=-500", 100, {{0, 100}}, false},    // a suffix longer than the object is all of it
      {"bytes=100-", 100, std::nullopt, true},   // starts past the end: 416
      {"bytes=100-200", 100, std::nullopt, true},
      {"bytes=-0", 100, std::nullopt, true},        // a suffix of no byte
      {"bytes=-5", 0, std::nullopt, true},          // no byte of an empty object
      {"", 100, std::nullopt, false},               // no header: the whole object
      {"bytes=5-1", 100, std::nullopt, false},      // malformed: ignored, as S3 and lakeFS do
      {"bytes=0-1,5-6", 100, std::nullopt, false},  // several ranges: the whole object
      {"bytes=a-1", 100, std::nullopt, false},
      {"bytes=1", 100, std::nullopt, false},
      {"items=0-1", 100, std::nullopt, false},
      {"bytes= 0-1", 100, std::nullopt, false},
  };
  for (const auto& c : cases) {
    bool unsatisfiable = true;
    auto r = ParseByteRange(c.header, c.size, &unsatisfiable);
    EXPECT_EQ(unsatisfiable, c.unsatisfiable) << c.header;
    ASSERT_EQ(r.has_value(), c.range.has_value()) << c.header;
    if (r) {
      EXPECT_EQ(r->first, c.range->first) << c.header;
      EXPECT_EQ(r->length, c.range->second) << c.header;
    }
  }
}

TEST(ByteRangeTest, CopyRangesAreExact) {
  auto r = ParseCopyRange("bytes=0-9", 100);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->first, 0);
  EXPECT_EQ(r->length, 10);
  r = ParseCopyRange("bytes=99-99", 100);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->first, 99);
  EXPECT_EQ(r->length, 1);
  for (const char* bad : {"bytes=0-100", "bytes=100-100", "bytes=5-1", "bytes=-10", "bytes=10-", "bytes=0-1,2-3",
                          "bytes=a-1", "0-9", "bytes=0-9 ", "", "bytes=--1"}) {
    EXPECT_FALSE(ParseCopyRange(bad, 100).has_value()) << bad;
  }
}

}  // namespace
}  // namespace sediment::server
