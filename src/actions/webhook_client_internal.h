// Private to actions/: the webhook's HTTP client. It reaches only what the
// operator allows and holds only a bounded answer:
//  - the host is resolved and every address is checked (AddressPolicy) before
//    a connection is tried, so a name that resolves to 127.0.0.1 is refused
//    like 127.0.0.1; the address connected is the address checked;
//  - redirects are not followed (a 3xx is the answer);
//  - the answer's head may hold kMaxAnswerHead bytes; of its body the first
//    kKeptAnswerBody are kept for the run output and the rest is not read;
//  - the whole exchange (DNS excepted), connect to last byte, ends at the deadline.
// https:// is TLS with the system's trust store, the host name verified.
//
// Thread-safety: AddressPolicy is immutable; PostJson may run on many threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/net_address.h"
#include "base/status.h"

namespace sediment::actions {

constexpr size_t kMaxAnswerHead = 16 << 10;
constexpr size_t kKeptAnswerBody = 4 << 10;

// [actions] webhook_allowed_hosts: public addresses always; an internal one
// (IsInternalAddress) only when its block is listed or the URL's host name is.
class AddressPolicy {
 public:
  // InvalidArgument naming an entry that is neither a host name nor a CIDR block.
  static Result<AddressPolicy> Parse(const std::vector<std::string>& entries);
  bool Allows(std::string_view host, const Ip6& address) const;

 private:
  std::vector<std::string> names_;  // lower case; "*.x" matches every name under x
  std::vector<CidrBlock> blocks_;
};

struct WebhookTarget {
  bool tls = false;
  std::string host;  // as written, without brackets
  int port = 80;
  std::string authority;  // what the Host header says
  std::string target;     // path and query, "/" at least
};

// http(s)://host[:port][/path][?query]; InvalidArgument otherwise.
Result<WebhookTarget> ParseWebhookUrl(const std::string& url);

struct WebhookAnswer {
  int status = 0;
  std::string reason;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // at most kKeptAnswerBody bytes
  bool cut = false;  // more body followed
};

// POSTs `body` as application/json with `headers`. IOError saying what
// failed; "refused by policy" (and nothing about the address) when no address
// of the host may be reached.
Result<WebhookAnswer> PostJson(const WebhookTarget& to, const std::vector<std::pair<std::string, std::string>>& headers,
                               const std::string& body, int64_t deadline_micros, const AddressPolicy& policy);

}  // namespace sediment::actions
