#include "base/net_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <vector>

namespace sediment {
namespace {

Ip6 FromV4(const uint8_t* v4) {
  Ip6 ip{};
  ip[10] = ip[11] = 0xff;
  std::memcpy(ip.data() + 12, v4, 4);
  return ip;
}

bool IsV4(const Ip6& ip) {
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(ip.data(), kMapped, 12) == 0;
}

// Not public unicast: RFC 6890's special-purpose registries, and multicast.
const std::vector<CidrBlock>& InternalBlocks() {
  static const std::vector<CidrBlock> kBlocks = [] {
    std::vector<CidrBlock> out;
    for (const char* c :
         {"0.0.0.0/8",      "10.0.0.0/8",   "100.64.0.0/10",  "127.0.0.0/8",    "169.254.0.0/16", "172.16.0.0/12",
          "192.0.0.0/24",   "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",  "198.51.100.0/24",
          "203.0.113.0/24", "224.0.0.0/4",  "240.0.0.0/4",    "::/96",          "::1/128",        "64:ff9b::/96",
          "64:ff9b:1::/48", "100::/64",     "2001::/23",      "2001:db8::/32",  "2002::/16",      "fc00::/7",
          "fe80::/10",      "fec0::/10",    "ff00::/8"}) {
      out.push_back(*ParseCidr(c));
    }
    return out;
  }();
  return kBlocks;
}

}  // namespace

std::optional<Ip6> IpOf(const sockaddr* addr) {
  if (addr == nullptr) return std::nullopt;
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    return FromV4(reinterpret_cast<const uint8_t*>(&in->sin_addr));
  }
  if (addr->sa_family == AF_INET6) {
    Ip6 ip{};
    std::memcpy(ip.data(), &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr, 16);
    return ip;
  }
  return std::nullopt;
}

std::optional<Ip6> ParseIp(std::string_view text) {
  if (text.size() > 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  std::string s(text);
  uint8_t buf[16];
  if (::inet_pton(AF_INET, s.c_str(), buf) == 1) return FromV4(buf);
  Ip6 ip{};
  if (::inet_pton(AF_INET6, s.c_str(), ip.data()) == 1) return ip;
  return std::nullopt;
}

bool CidrBlock::Contains(const Ip6& ip) const {
  int full = bits / 8, rest = bits % 8;
  if (std::memcmp(ip.data(), base.data(), static_cast<size_t>(full)) != 0) return false;
  if (rest == 0) return true;
  auto mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (ip[full] & mask) == (base[full] & mask);
}

std::optional<CidrBlock> ParseCidr(std::string_view text) {
  size_t slash = text.find('/');
  auto ip = ParseIp(text.substr(0, slash));
  if (!ip) return std::nullopt;
  const bool v4 = IsV4(*ip) && text.substr(0, slash).find(':') == std::string_view::npos;
  int max = v4 ? 32 : 128, bits = max;
  if (slash != std::string_view::npos) {
    std::string_view n = text.substr(slash + 1);
    auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), bits);
    if (n.empty() || ec != std::errc() || end != n.data() + n.size() || bits < 0 || bits > max) return std::nullopt;
  }
  CidrBlock block{*ip, v4 ? 96 + bits : bits};
  // Bits past the length must be zero: "10.1.0.0/8" is more likely a typo than a block.
  Ip6 masked{};
  for (int i = 0; i < 16; ++i) {
    int keep = std::clamp(block.bits - i * 8, 0, 8);
    masked[i] = keep == 0 ? 0 : static_cast<uint8_t>((*ip)[i] & (0xff << (8 - keep)));
  }
  if (masked != *ip) return std::nullopt;
  return block;
}

bool IsInternalAddress(const Ip6& ip) {
  for (const auto& b : InternalBlocks()) {
    if (b.Contains(ip)) return true;
  }
  return false;
}

std::string FormatIp(const Ip6& ip) {
  char buf[INET6_ADDRSTRLEN];
  if (IsV4(ip)) return ::inet_ntop(AF_INET, ip.data() + 12, buf, sizeof(buf));
  return ::inet_ntop(AF_INET6, ip.data(), buf, sizeof(buf));
}

}  // namespace sediment
