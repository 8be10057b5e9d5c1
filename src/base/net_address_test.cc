#include "base/net_address.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sediment {
namespace {

TEST(NetAddressTest, InternalAddressesAreNamedOnePerRow) {
  struct Case {
    const char* ip;
    bool internal;
  };
  const std::vector<Case> cases = {
      {"127.0.0.1", true},       {"127.255.0.9", true},     {"0.0.0.0", true},       {"10.1.2.3", true},
      {"172.16.0.1", true},      {"172.31.255.255", true},  {"172.32.0.1", false},   {"192.168.1.1", true},
      {"169.254.169.254", true}, {"100.64.0.1", true},      {"224.0.0.1", true},     {"255.255.255.255", true},
      {"8.8.8.8", false},        {"93.184.216.34", false},  {"::1", true},           {"::", true},
      {"fe80::1", true},         {"fd00::1", true},         {"ff02::1", true},       {"::ffff:127.0.0.1", true},
      {"::ffff:8.8.8.8", false}, {"64:ff9b::7f00:1", true}, {"2002:7f00:1::", true}, {"2606:4700::1", false},
      {"::127.0.0.1", true},
  };
  for (const auto& c : cases) {
    auto ip = ParseIp(c.ip);
    ASSERT_TRUE(ip) << c.ip;
    EXPECT_EQ(IsInternalAddress(*ip), c.internal) << c.ip;
  }
}

TEST(NetAddressTest, OnlyStrictNumericFormsAreAddresses) {
  for (const char* not_ip : {"2130706433", "0x7f000001", "127.1", "localhost", "", "1.2.3.4.5", "[::1"}) {
    EXPECT_FALSE(ParseIp(not_ip)) << not_ip;
  }
  EXPECT_TRUE(ParseIp("[::1]"));
}

TEST(NetAddressTest, CidrBlocks) {
  auto b = ParseCidr("10.0.0.0/8");
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->Contains(*ParseIp("10.9.9.9")));
  EXPECT_FALSE(b->Contains(*ParseIp("11.0.0.0")));
  auto one = ParseCidr("127.0.0.1");
  ASSERT_TRUE(one);
  EXPECT_TRUE(one->Contains(*ParseIp("127.0.0.1")));
  EXPECT_FALSE(one->Contains(*ParseIp("127.0.0.2")));
  auto v6 = ParseCidr("fd00::/8");
  ASSERT_TRUE(v6);
  EXPECT_TRUE(v6->Contains(*ParseIp("fd12::1")));
  EXPECT_TRUE(ParseCidr("0.0.0.0/0")->Contains(*ParseIp("8.8.8.8")));
  for (const char* bad : {"10.1.0.0/8", "10.0.0.0/33", "10.0.0.0/", "host/8", "::/129", "10.0.0.0/-1"}) {
    EXPECT_FALSE(ParseCidr(bad)) << bad;
  }
  EXPECT_EQ(FormatIp(*ParseIp("127.0.0.1")), "127.0.0.1");
  EXPECT_EQ(FormatIp(*ParseIp("::1")), "::1");
}

}  // namespace
}  // namespace sediment
