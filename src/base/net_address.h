// IP addresses as a policy sees them: CIDR blocks, and whether an address is
// one a server-side request must not reach unless the operator says so
// (loopback, private, link-local, shared/CGNAT, unspecified, multicast,
// reserved; IPv4 inside IPv6 as the IPv4 address it carries).
//
// Thread-safety: values and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct sockaddr;

namespace sediment {

// An address in IPv6 form (IPv4 as ::ffff:a.b.c.d).
using Ip6 = std::array<uint8_t, 16>;

// The address a socket address holds (AF_INET or AF_INET6); nullopt otherwise.
std::optional<Ip6> IpOf(const sockaddr* addr);
// A numeric address ("127.0.0.1", "::1", "[::1]"), strictly inet_pton's forms.
std::optional<Ip6> ParseIp(std::string_view text);

struct CidrBlock {
  Ip6 base{};
  int bits = 0;  // of the 128; an IPv4 block /n is 96 + n
  bool Contains(const Ip6& ip) const;
};

// "10.0.0.0/8", "fd00::/8", or one address ("127.0.0.1" = /32). nullopt for
// anything else (a host name, a bad length, bits set past the length).
std::optional<CidrBlock> ParseCidr(std::string_view text);

// Whether `ip` is loopback, private, link-local, CGNAT, unspecified,
// multicast, broadcast or otherwise not a public unicast address.
bool IsInternalAddress(const Ip6& ip);

// "127.0.0.1" or "::1".
std::string FormatIp(const Ip6& ip);

}  // namespace sediment
