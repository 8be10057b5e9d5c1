#include "base/codec.h"

#include <gtest/gtest.h>

namespace sediment {
namespace {

TEST(CodecTest, HexHasOneSpelling) {
  EXPECT_EQ(Hex(std::string("\x00\xff\x10", 3)), "00ff10");
  EXPECT_EQ(HexDecode("00ff10"), std::string("\x00\xff\x10", 3));
  EXPECT_EQ(HexDecode("00FF10"), std::nullopt);
  EXPECT_EQ(HexDecode("0"), std::nullopt);
  EXPECT_EQ(HexDecode("zz"), std::nullopt);
  EXPECT_EQ(HexDecode(""), std::string());
}

// Hex written by people and other systems (scan filters, EVM JSON-RPC) may be
// upper-case; tokens Sediment wrote itself have one spelling.
TEST(CodecTest, HexOfEitherCaseOnlyWhenAsked) {
  EXPECT_EQ(HexDecode("00FF10", HexCase::kAny), std::string("\x00\xff\x10", 3));
  EXPECT_EQ(HexDecode("00fF10", HexCase::kAny), std::string("\x00\xff\x10", 3));
  EXPECT_EQ(HexDecode("0", HexCase::kAny), std::nullopt);
  EXPECT_EQ(HexDecode("0x00", HexCase::kAny), std::nullopt);
  EXPECT_EQ(HexDecode("-1", HexCase::kAny), std::nullopt);
  EXPECT_EQ(HexDigitValue('0'), 0);
  EXPECT_EQ(HexDigitValue('a'), 10);
  EXPECT_EQ(HexDigitValue('F'), 15);
  for (char c : std::string("gG-+ x")) EXPECT_EQ(HexDigitValue(c), -1) << int(c);
}

TEST(CodecTest, Base64RoundTripsAndRefusesOtherSpellings) {
  for (std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    EXPECT_EQ(Base64Decode(Base64(s)), s) << s;
  }
  EXPECT_EQ(Base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64("fo"), "Zm8=");
  EXPECT_EQ(Base64Decode("Zm8"), "fo");                // padding may be left out
  EXPECT_EQ(Base64Decode("Zm9=").has_value(), false);  // non-zero leftover bits
  EXPECT_EQ(Base64Decode("Zm 8=").has_value(), false);
  EXPECT_EQ(Base64Decode("Zm8-").has_value(), false);
  EXPECT_EQ(Base64Decode("Z").has_value(), false);
  EXPECT_EQ(Base64Decode("Zm8==").has_value(), false);
}

TEST(CodecTest, PercentEncodeKeepsUnreservedAndSlashOnlyWhenAsked) {
  EXPECT_EQ(PercentEncode("a b/c~d_e.f-g+h*", PercentSet::kUnreservedAndSlash), "a%20b/c~d_e.f-g%2Bh%2A");
  EXPECT_EQ(PercentEncode("a b/c~d_e.f-g+h*", PercentSet::kUnreserved), "a%20b%2Fc~d_e.f-g%2Bh%2A");
  EXPECT_EQ(
      PercentEncode("-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", PercentSet::kUnreserved),
      "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
  EXPECT_EQ(PercentEncode("\xe1\x88\xb4", PercentSet::kUnreserved), "%E1%88%B4");  // upper-case hex, byte by byte
  EXPECT_EQ(PercentEncode(std::string("\0=&%", 4), PercentSet::kUnreserved), "%00%3D%26%25");
  EXPECT_EQ(PercentEncode("", PercentSet::kUnreserved), "");
}

TEST(CodecTest, PercentDecodeRoundTripsEveryByte) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  for (auto set : {PercentSet::kUnreserved, PercentSet::kUnreservedAndSlash}) {
    EXPECT_EQ(PercentDecode(PercentEncode(all, set)), all);
  }
}

// The decoders this one replaced disagreed: the S3 gateway's read "%-1" as
// 0xFF (std::from_chars takes a sign), the node URL's kept "%zz" as it was.
// RFC 3986 allows '%' only before two hex digits; anything else is refused.
TEST(CodecTest, PercentDecodeIsStrict) {
  EXPECT_EQ(PercentDecode("a%2Fb+c"), "a/b+c");  // '+' is a plus
  EXPECT_EQ(PercentDecode("%41%62%e9%E9"), "Ab\xe9\xe9");
  EXPECT_EQ(PercentDecode("%00"), std::string("\0", 1));
  EXPECT_EQ(PercentDecode("%2541"), "%41");  // decoded once
  EXPECT_EQ(PercentDecode(""), "");
  for (const char* bad : {"%-1", "%+1", "% 1", "%G0", "%0G", "%zz", "bad%2", "%4", "%", "a%", "%%41", "%x41"}) {
    EXPECT_EQ(PercentDecode(bad), std::nullopt) << bad;
  }
}

// One query parser for the S3 gateway's operations and its signature check
// (the two read '+' differently before: a space for the operation, a plus for
// the signature).
TEST(CodecTest, DecodeQuerySplitsAndDecodes) {
  using P = QueryParams;
  EXPECT_EQ(DecodeQuery(""), P{});
  EXPECT_EQ(DecodeQuery("b=2&a=1&b=1"), (P{{"b", "2"}, {"a", "1"}, {"b", "1"}}));  // order and repeats kept
  EXPECT_EQ(DecodeQuery("uploads"), (P{{"uploads", ""}}));
  EXPECT_EQ(DecodeQuery("a=&=v"), (P{{"a", ""}, {"", "v"}}));
  EXPECT_EQ(DecodeQuery("&&a=1&"), (P{{"a", "1"}}));
  EXPECT_EQ(DecodeQuery("k=a=b"), (P{{"k", "a=b"}}));
  EXPECT_EQ(DecodeQuery("prefix=a+b%2Bc%20d"), (P{{"prefix", "a+b+c d"}}));
  EXPECT_EQ(DecodeQuery("n%26m=x%3Dy%26z"), (P{{"n&m", "x=y&z"}}));
  EXPECT_EQ(DecodeQuery("a=%zz"), std::nullopt);
  EXPECT_EQ(DecodeQuery("%-1=v"), std::nullopt);
  EXPECT_EQ(DecodeQuery("ok=1&bad=%4"), std::nullopt);
}

TEST(CodecTest, Utf8IsCheckedStrictly) {
  EXPECT_TRUE(IsUtf8(""));
  EXPECT_TRUE(IsUtf8("plain/ascii.txt"));
  EXPECT_TRUE(IsUtf8("caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsUtf8("\xf0\x9f\x98"));  // a 4-byte sequence cut short
  EXPECT_FALSE(IsUtf8("ok\xc3\x28"));    // a bad continuation byte
  EXPECT_FALSE(IsUtf8("\xff\xfe"));
  EXPECT_FALSE(IsUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsUtf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(IsUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
}

}  // namespace
}  // namespace sediment
