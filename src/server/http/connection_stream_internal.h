// Private to server/http: a connection's socket as httplib reads and writes
// it (HttpServer::Server::ServeOne makes one per request).
//
// Thread-safety: one request, one thread.
#pragma once

#include <httplib.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "server/http/connection_gate.h"
#include "server/http/framing.h"

namespace sediment::server {

// A connection's socket as httplib reads and writes it: the bytes the gate
// buffered first, then the socket, with poll()ed timeouts. A body budget,
// once set, cuts reads off past it.
class ConnectionStream : public httplib::Stream {
 public:
  ConnectionStream(Connection& c, std::chrono::seconds read_timeout, std::chrono::seconds write_timeout)
      : c_(c), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

  bool is_readable() const override { return c_.Unread() > 0 || Poll(POLLIN, ReadWait()); }
  bool is_writable() const override { return Poll(POLLOUT, write_timeout_); }

  ssize_t read(char* ptr, size_t size) override {
    if (no_body_) return 0;  // the body ends here (see NoBody)
    if (limited_) {
      size_t used = consumed_ - body_start_;
      if (used >= budget_) {
        over_budget_ = true;
        return -1;
      }
      size = std::min(size, budget_ - used);
    }
    if (c_.Unread() == 0) {
      c_.buffer.clear();
      c_.consumed = 0;
      if (!Poll(POLLIN, ReadWait())) return -1;
      if (size >= kChunk) {  // large reads straight into the caller's buffer
        ssize_t got = ::recv(c_.fd, ptr, size, 0);
        if (got > 0) consumed_ += static_cast<size_t>(got);
        return got > 0 ? Checked(ptr, got) : got;
      }
      char chunk[kChunk];
      ssize_t got = ::recv(c_.fd, chunk, sizeof(chunk), 0);
      if (got <= 0) return got;
      c_.buffer.append(chunk, static_cast<size_t>(got));
    }
    size_t n = std::min(size, c_.Unread());
    std::memcpy(ptr, c_.buffer.data() + c_.consumed, n);
    c_.consumed += n;
    consumed_ += n;
    return Checked(ptr, static_cast<ssize_t>(n));
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    return ::send(c_.fd, ptr, size, MSG_NOSIGNAL);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { Name(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { Name(::getsockname, ip, port); }
  socket_t socket() const override { return c_.fd; }

  // From now on the request's body may hold `bytes` more bytes (as framed on
  // the wire) and must arrive by `deadline`.
  void LimitBody(size_t bytes, std::chrono::steady_clock::time_point deadline) {
    limited_ = true;
    body_start_ = consumed_;
    budget_ = bytes;
    deadline_ = deadline;
  }
  bool over_budget() const { return over_budget_; }
  // From now on the bytes read are a chunked body, checked as they are read.
  void CheckChunked() { chunked_.emplace(); }
  // A request with neither Content-Length nor Transfer-Encoding has no body
  // (RFC 9112 6.3); httplib would read one until the connection closes.
  void NoBody() { no_body_ = true; }
  // Why the chunked body's framing is broken ("" while it is not).
  std::string framing_error() const { return chunked_ ? chunked_->error() : std::string(); }

 private:
  static constexpr size_t kChunk = 16 << 10;

  // The bytes httplib is given pass the chunked framing check first: httplib
  // is lenient (it reads "0x2" as 2, and a chunk's data without its CRLF as
  // the body's end), so what it reads must have only one reading.
  ssize_t Checked(const char* data, ssize_t n) {
    if (chunked_ && !chunked_->Feed(std::string_view(data, static_cast<size_t>(n)))) return -1;
    return n;
  }

  std::chrono::milliseconds ReadWait() const {
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(read_timeout_);
    if (limited_) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
      wait = std::max(std::chrono::milliseconds(0), std::min(wait, left));
    }
    return wait;
  }

  bool Poll(short events, std::chrono::milliseconds wait) const {
    pollfd p{c_.fd, events, 0};
    int rc;
    do {
      rc = ::poll(&p, 1, static_cast<int>(wait.count()));
    } while (rc < 0 && errno == EINTR);
    return rc > 0 && (p.revents & (events | POLLHUP)) != 0;
  }

  template <typename Fn>
  void Name(Fn fn, std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (fn(c_.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), serv, sizeof(serv),
                      NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
      ip = host;
      port = std::atoi(serv);
    }
  }

  Connection& c_;
  const std::chrono::seconds read_timeout_, write_timeout_;
  size_t consumed_ = 0;  // bytes of this request read so far
  bool limited_ = false, over_budget_ = false, no_body_ = false;
  size_t body_start_ = 0, budget_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  std::optional<ChunkedFraming> chunked_;
};

}  // namespace sediment::server
