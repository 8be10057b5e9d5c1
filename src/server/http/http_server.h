// HttpServer: cpp-httplib with our conventions — routes registered with a
// label for metrics, exceptions caught at the top of every handler, JSON
// errors, request logging, and a clean stop — and with limits no request can
// get past (docs/security.md):
//  - connections wait for their request head in a ConnectionGate, not in a
//    worker thread, and are cut off when it does not arrive in time;
//  - a body that is not a streamed upload's (HandleStream) may hold at most
//    `max_body_bytes`: a larger Content-Length gets 413 before anything is
//    read, a chunked body is cut off with 413 once it passes the limit;
//  - the Host header must name this server (HostAllowed), so a web page
//    cannot reach a loopback server through DNS rebinding.
//
// Thread-safety: register routes before Start(); Stop() may be called from
// any thread (e.g. a signal-watching thread) and returns after in-flight
// requests finish.
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "base/metrics.h"
#include "base/status.h"

namespace sediment::server {

class ConnectionGate;
struct Connection;

struct HttpLimits {
  size_t max_body_bytes = 1 << 20;
  std::chrono::milliseconds header_timeout{10'000};
  // Whether a request's Host (without port) names this server; null = any.
  std::function<bool(std::string_view host)> host_allowed;
  // How a request refused before routing (421, 413, a bad body framing) is
  // answered, in the format of the API it was for; null = JSON (ReplyError).
  // Not a head too malformed to parse (JSON 400) or the gate's canned 408/431/503.
  std::function<void(const httplib::Request&, httplib::Response&, int status, const std::string& message)> refuse;
};

// The Host rule of a server listening on `listen_host`: loopback names and
// addresses, the listen host itself, `domains` and their subdomains (S3
// virtual hosts) and `allowed` ('*' wildcards). With nothing allowed on a
// non-loopback listen address, any Host (null: no check).
std::function<bool(std::string_view)> HostRule(const std::string& listen_host, const std::vector<std::string>& domains,
                                               const std::vector<std::string>& allowed);

// How many threads serve requests (at least 16; four per core).
size_t HttpWorkers();

class HttpServer {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  using ReaderHandler = std::function<void(const httplib::Request&, httplib::Response&, const httplib::ContentReader&)>;

  explicit HttpServer(MetricsRegistry* metrics, HttpLimits limits = {});
  ~HttpServer();

  // `pattern` is an httplib regex; `route` is the label for metrics and logs.
  void Handle(const std::string& method, const std::string& pattern, const std::string& route, Handler handler);
  // For request bodies read as a stream (uploads).
  void HandleStream(const std::string& method, const std::string& pattern, const std::string& route,
                    ReaderHandler handler);

  // Names the request being served for metrics and logs, in place of its
  // route's label (the S3 gateway names the operation it chose). Call from
  // the handler's thread.
  static void NameRoute(std::string label);

  // Runs before routing; returning false means `guard` answered the request
  // itself (e.g. 401) and no handler runs.
  void SetGuard(std::function<bool(const httplib::Request&, httplib::Response&)> guard);

  // Binds HOST:PORT (port 0 picks a free one). Fails with a clear message if
  // the address is in use or not allowed.
  Status Bind(const std::string& host, int port);
  int port() const { return port_; }
  // Serves on a background thread until Stop().
  void Start();
  void Stop();

 private:
  // Runs `fn` as the body of a handler: catches exceptions, records metrics, logs.
  void Instrumented(const std::string& route, const httplib::Request& req, httplib::Response& res,
                    const std::function<void()>& fn);
  void Observe(const std::string& method, const std::string& route, int status, double seconds);
  // The limits every request passes before the guard: false = answered here.
  bool CheckLimits(const httplib::Request& req, httplib::Response& res);
  void Refuse(const httplib::Request& req, httplib::Response& res, int status, const std::string& message) const;
  bool IsStreamRoute(const httplib::Request& req) const;

  class Server;  // httplib::Server whose connections go through the gate
  MetricsRegistry* metrics_;
  const HttpLimits limits_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<ConnectionGate> gate_;
  std::function<bool(const httplib::Request&, httplib::Response&)> guard_;
  std::vector<std::pair<std::string, std::regex>> stream_routes_;  // method, pattern
  int port_ = -1;
  int listener_fd_ = -1;  // the listening socket httplib made (Bind)
  std::thread thread_;
};

}  // namespace sediment::server
