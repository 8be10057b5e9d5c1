// HttpServer: cpp-httplib with our conventions — routes registered with a
// label for metrics, exceptions caught at the top of every handler, JSON
// errors, request logging, and a clean stop.
//
// Thread-safety: register routes before Start(); Stop() may be called from
// any thread (e.g. a signal-watching thread) and returns after in-flight
// requests finish.
#pragma once

#include <httplib.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "base/metrics.h"
#include "base/status.h"

namespace sediment::server {

class HttpServer {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  using ReaderHandler = std::function<void(const httplib::Request&, httplib::Response&, const httplib::ContentReader&)>;

  explicit HttpServer(MetricsRegistry* metrics);
  ~HttpServer();

  // `pattern` is an httplib regex; `route` is the label for metrics and logs.
  void Handle(const std::string& method, const std::string& pattern, const std::string& route, Handler handler);
  // For request bodies read as a stream (uploads).
  void HandleStream(const std::string& method, const std::string& pattern, const std::string& route,
                    ReaderHandler handler);

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
  void Instrumented(const std::string& method, const std::string& route, const httplib::Request& req,
                    httplib::Response& res, const std::function<void()>& fn);
  void Observe(const std::string& method, const std::string& route, int status, double seconds);

  MetricsRegistry* metrics_;
  httplib::Server server_;
  int port_ = -1;
  std::thread thread_;
};

}  // namespace sediment::server
