#include "base/crypto.h"

#include <gtest/gtest.h>

#include <set>

namespace sediment {
namespace {

TEST(CryptoTest, RandomBytesDifferEveryCall) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(RandomHex(16));
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(RandomHex(8).size(), 16u);
  EXPECT_EQ(RandomBytes(0), "");
}

TEST(CryptoTest, RandomStringUsesOnlyItsAlphabet) {
  std::string s = RandomString(4000, "ABC");
  int counts[3] = {0, 0, 0};
  for (char c : s) {
    ASSERT_TRUE(c >= 'A' && c <= 'C') << c;
    counts[c - 'A']++;
  }
  for (int c : counts) EXPECT_GT(c, 1000);  // ~1333 each; far from any bias
}

TEST(CryptoTest, RandomUniformStaysInRange) {
  for (int i = 0; i < 1000; ++i) {
    double d = RandomUniform(0.5, 1.0);
    EXPECT_GE(d, 0.5);
    EXPECT_LT(d, 1.0);
  }
}

TEST(CryptoTest, DigestsMatchPublishedVectors) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hex(Md5("")), "d41d8cd98f00b204e9800998ecf8427e");
  Digest d(DigestKind::kSha1);
  d.Update("a");
  d.Update("bc");
  EXPECT_EQ(d.FinalHex(), "a9993e364706816aba3e25717850c26c9cd0d89d");
  // RFC 4231 test case 2.
  EXPECT_EQ(Hex(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // RFC 5869 test case 1.
  std::string ikm(22, '\x0b');
  std::string salt = *HexDecode("000102030405060708090a0b0c");
  std::string info = *HexDecode("f0f1f2f3f4f5f6f7f8f9");
  EXPECT_EQ(Hex(HkdfSha256(ikm, salt, info, 42)),
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865");
}

TEST(CryptoTest, Crc32cMatchesKnownValue) {
  EXPECT_EQ(Crc32c(0, "123456789", 9), 0xE3069283u);
  uint32_t c = Crc32c(0, "1234", 4);
  EXPECT_EQ(Crc32c(c, "56789", 5), 0xE3069283u);
}

TEST(CryptoTest, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

}  // namespace
}  // namespace sediment
