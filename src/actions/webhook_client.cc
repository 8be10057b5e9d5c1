#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>
#include <regex>

#include "actions/action.h"
#include "actions/webhook_client_internal.h"
#include "base/ascii.h"

namespace sediment::actions {
namespace {

bool NameMatches(const std::string& pattern, const std::string& host) {
  if (pattern.starts_with("*.")) {
    std::string_view suffix = std::string_view(pattern).substr(1);  // ".x"
    return host.size() > suffix.size() && host.ends_with(suffix);
  }
  return pattern == host;
}

// A connection: a socket, and TLS over it when the URL says https. Every call
// waits at most until `deadline` (steady microseconds).
class Conn {
 public:
  Conn(int fd, int64_t deadline) : fd_(fd), deadline_(deadline) {}
  ~Conn() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
    ::close(fd_);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  Status StartTls(const std::string& host);
  Status WriteAll(std::string_view data);
  // Bytes read into `buf` (0 at the end of the stream).
  Result<size_t> Read(char* buf, size_t size);

 private:
  // Waits for `events` until the deadline: false when it passed.
  bool Wait(short events) const {
    int64_t left = (deadline_ - SteadyMicros()) / 1000;
    if (left <= 0) return false;
    pollfd p{fd_, events, 0};
    int rc;
    do {
      rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
    } while (rc < 0 && errno == EINTR);
    return rc > 0;
  }
  // What an SSL call that returned `rc` wants waited for; false = it failed.
  bool TlsWait(int rc) const {
    int err = SSL_get_error(ssl_, rc);
    if (err == SSL_ERROR_WANT_READ) return Wait(POLLIN);
    if (err == SSL_ERROR_WANT_WRITE) return Wait(POLLOUT);
    return false;
  }
  Status Late() const { return Status::IOError("no answer within the timeout"); }

  int fd_;
  int64_t deadline_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
};

Status Conn::StartTls(const std::string& host) {
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (ctx_ == nullptr || SSL_CTX_set_default_verify_paths(ctx_) != 1) return Status::IOError("TLS: no context");
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
  ssl_ = SSL_new(ctx_);
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) return Status::IOError("TLS: no session");
  // The certificate must name the host (SNI only for names, as RFC 6066 says).
  bool named = !ParseIp(host);
  if (named ? SSL_set_tlsext_host_name(ssl_, host.c_str()) != 1 || SSL_set1_host(ssl_, host.c_str()) != 1
            : X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), host.c_str()) != 1) {
    return Status::IOError(fmt::format("TLS: cannot verify the certificate for {}", host));
  }
  for (;;) {
    int rc = SSL_connect(ssl_);
    if (rc == 1) return Status::OK();
    if (SSL_get_error(ssl_, rc) == SSL_ERROR_SSL) {
      long verify = SSL_get_verify_result(ssl_);
      return Status::IOError(fmt::format("TLS handshake failed: {}", verify != X509_V_OK
                                                                         ? X509_verify_cert_error_string(verify)
                                                                         : ERR_reason_error_string(ERR_get_error())));
    }
    if (!TlsWait(rc)) return Status::IOError("TLS handshake failed or took longer than the timeout");
  }
}

Status Conn::WriteAll(std::string_view data) {
  while (!data.empty()) {
    ssize_t n;
    if (ssl_ != nullptr) {
      n = SSL_write(ssl_, data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 20)));
      if (n <= 0) {
        if (!TlsWait(static_cast<int>(n))) return Status::IOError("sending the request failed");
        continue;
      }
    } else {
      n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (!Wait(POLLOUT)) return Late();
        continue;
      }
      if (n < 0) return Status::IOError(fmt::format("sending the request: {}", std::strerror(errno)));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

Result<size_t> Conn::Read(char* buf, size_t size) {
  for (;;) {
    if (ssl_ != nullptr) {
      int n = SSL_read(ssl_, buf, static_cast<int>(size));
      if (n > 0) return static_cast<size_t>(n);
      int err = SSL_get_error(ssl_, n);
      if (err == SSL_ERROR_ZERO_RETURN) return size_t{0};
      if (!TlsWait(n)) {
        if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) return size_t{0};  // closed without close_notify
        return (deadline_ - SteadyMicros()) <= 0 ? Late() : Status::IOError("reading the answer failed");
      }
      continue;
    }
    ssize_t n = ::recv(fd_, buf, size, MSG_DONTWAIT);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno != EAGAIN && errno != EINTR) {
      return Status::IOError(fmt::format("reading the answer: {}", std::strerror(errno)));
    }
    if (!Wait(POLLIN)) return Late();
  }
}

// Connects to the first address of `to` the policy allows, by the deadline.
Result<std::unique_ptr<Conn>> Connect(const WebhookTarget& to, int64_t deadline, const AddressPolicy& policy) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  std::string port = std::to_string(to.port);
  if (int rc = ::getaddrinfo(to.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return Status::IOError(fmt::format("dial tcp: lookup {}: {}", to.host, ::gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> owner(found, ::freeaddrinfo);
  bool any_allowed = false;
  std::string last_error;
  const std::string host = AsciiLower(to.host);
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    auto ip = IpOf(ai->ai_addr);
    if (!ip || !policy.Allows(host, *ip)) continue;
    any_allowed = true;
    int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    auto conn = std::make_unique<Conn>(fd, deadline);
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      int64_t left = std::max<int64_t>((deadline - SteadyMicros()) / 1000, 0);
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof(err);
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) {
        last_error = "no connection within the timeout";
        continue;
      }
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc != 0) {
      last_error = std::strerror(errno);
      continue;
    }
    if (to.tls) ARROW_RETURN_NOT_OK(conn->StartTls(to.host));
    return conn;
  }
  if (!any_allowed) {
    return Status::IOError(fmt::format(
        "refused by policy: {} is not a public address ([actions] webhook_allowed_hosts opens others)", to.host));
  }
  return Status::IOError(fmt::format("dial tcp {}: {}", to.authority, last_error));
}

// The answer's status line and fields, from a head that ends in CRLF CRLF.
Status ParseHead(std::string_view head, WebhookAnswer* out) {
  size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  if (!line.starts_with("HTTP/1.") || line.size() < 12 || line[8] != ' ') {
    return Status::IOError("the answer is not HTTP/1.x");
  }
  int status = 0;
  auto [end, ec] = std::from_chars(line.data() + 9, line.data() + 12, status);
  if (ec != std::errc() || end != line.data() + 12 || status < 100) return Status::IOError("the answer has no status");
  out->status = status;
  out->reason = std::string(line.size() > 13 ? line.substr(13) : "");
  out->headers.clear();
  for (size_t at = eol + 2; at < head.size();) {
    size_t next = head.find("\r\n", at);
    std::string_view field = head.substr(at, next - at);
    at = next + 2;
    if (field.empty()) break;
    size_t colon = field.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = field.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    out->headers.emplace_back(std::string(field.substr(0, colon)), std::string(value));
  }
  return Status::OK();
}

// Reads the head (skipping 1xx answers), then keeps up to kKeptAnswerBody of the body.
Result<WebhookAnswer> ReadAnswer(Conn* conn) {
  WebhookAnswer answer;
  std::string buffer;
  char chunk[4096];
  for (;;) {
    size_t end = buffer.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (buffer.size() > kMaxAnswerHead) {
        return Status::IOError(fmt::format("the answer's head is larger than {} bytes", kMaxAnswerHead));
      }
      ARROW_ASSIGN_OR_RAISE(size_t n, conn->Read(chunk, sizeof(chunk)));
      if (n == 0) return Status::IOError("the connection closed before an answer");
      buffer.append(chunk, n);
      continue;
    }
    ARROW_RETURN_NOT_OK(ParseHead(std::string_view(buffer).substr(0, end + 4), &answer));
    buffer.erase(0, end + 4);
    if (answer.status >= 200) break;
  }
  int64_t length = -1;
  for (const auto& [k, v] : answer.headers) {
    if (AsciiLower(k) == "content-length") std::from_chars(v.data(), v.data() + v.size(), length);
  }
  answer.body = std::move(buffer);
  for (;;) {
    if (length >= 0 && static_cast<int64_t>(answer.body.size()) >= length) break;
    if (answer.body.size() >= kKeptAnswerBody) {
      answer.cut = true;
      break;
    }
    ARROW_ASSIGN_OR_RAISE(size_t n, conn->Read(chunk, sizeof(chunk)));
    if (n == 0) break;
    answer.body.append(chunk, n);
  }
  if (answer.body.size() > kKeptAnswerBody) {
    answer.body.resize(kKeptAnswerBody);
    answer.cut = true;
  }
  if (length >= 0 && static_cast<int64_t>(answer.body.size()) > length) answer.body.resize(static_cast<size_t>(length));
  return answer;
}

}  // namespace

Result<AddressPolicy> AddressPolicy::Parse(const std::vector<std::string>& entries) {
  AddressPolicy p;
  for (const auto& e : entries) {
    if (e.find('/') != std::string::npos || ParseIp(e)) {
      auto block = ParseCidr(e);
      if (!block) return InvalidArgument(fmt::format("[actions] webhook_allowed_hosts: \"{}\" is not a CIDR block", e));
      p.blocks_.push_back(*block);
    } else if (!e.empty() && e.find_first_of(" \t:@") == std::string::npos) {
      p.names_.push_back(AsciiLower(e));
    } else {
      return InvalidArgument(fmt::format("[actions] webhook_allowed_hosts: \"{}\" is not a host name", e));
    }
  }
  return p;
}

bool AddressPolicy::Allows(std::string_view host, const Ip6& address) const {
  if (!IsInternalAddress(address)) return true;
  for (const auto& b : blocks_) {
    if (b.Contains(address)) return true;
  }
  std::string h = AsciiLower(host);
  for (const auto& n : names_) {
    if (NameMatches(n, h)) return true;
  }
  return false;
}

Result<WebhookTarget> ParseWebhookUrl(const std::string& url) {
  if (url.size() > 8192) return InvalidArgument("webhook url is longer than 8192 bytes");
  static const std::regex kUrl(R"(^(https?)://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?([/?][^#]*)?$)");
  std::smatch m;
  if (!std::regex_match(url, m, kUrl)) {
    return InvalidArgument(fmt::format("webhook url \"{}\" must be an http:// or https:// URL", url));
  }
  WebhookTarget t;
  t.tls = m[1].str() == "https";
  t.host = m[2].str();
  t.authority = t.host + m[3].str();
  if (t.host.front() == '[') t.host = t.host.substr(1, t.host.size() - 2);
  t.port = t.tls ? 443 : 80;
  if (m[3].matched) t.port = std::stoi(m[3].str().substr(1));
  if (t.port <= 0 || t.port > 65535) return InvalidArgument(fmt::format("webhook url \"{}\": a bad port", url));
  t.target = m[4].matched ? m[4].str() : "/";
  if (t.target.front() == '?') t.target = "/" + t.target;
  for (char c : t.target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return InvalidArgument(fmt::format("webhook url \"{}\" holds a space or control byte", url));
    }
  }
  return t;
}

Result<WebhookAnswer> PostJson(const WebhookTarget& to, const std::vector<std::pair<std::string, std::string>>& headers,
                               const std::string& body, int64_t deadline_micros, const AddressPolicy& policy) {
  ARROW_ASSIGN_OR_RAISE(auto conn, Connect(to, deadline_micros, policy));
  std::string request =
      fmt::format("POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: sediment-webhook\r\n", to.target, to.authority);
  for (const auto& [k, v] : headers) request += k + ": " + v + "\r\n";
  request +=
      fmt::format("Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.size());
  request += body;
  ARROW_RETURN_NOT_OK(conn->WriteAll(request));
  return ReadAnswer(conn.get());
}

}  // namespace sediment::actions
