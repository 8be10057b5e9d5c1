#include "server/http_server.h"

#include <fmt/format.h>
#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>

#include "server/errors.h"

namespace sediment::server {
namespace {

// The listener's socket options, for the probe and the real listener alike.
// SO_REUSEADDR lets a restarted server bind at once while the connections of
// its killed predecessor sit in TIME_WAIT; SO_REUSEPORT (httplib's default on
// Linux) is left off, so a second live server cannot share the port.
void ListenerSocketOptions(int fd) {
  int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

// Tries to bind HOST:PORT ourselves to learn why it fails (httplib only says no).
Status ProbeBind(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* result = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &result);
  if (rc != 0) {
    return InvalidArgument(fmt::format("cannot listen on {}:{}: {}", host, port, ::gai_strerror(rc)));
  }
  int err = 0;
  for (addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    ListenerSocketOptions(fd);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      ::close(fd);
      ::freeaddrinfo(result);
      return Status::OK();
    }
    err = errno;
    ::close(fd);
  }
  ::freeaddrinfo(result);
  return Unavailable(fmt::format("cannot listen on {}:{}: {}", host, port, std::strerror(err)));
}

}  // namespace

HttpServer::HttpServer(MetricsRegistry* metrics) : metrics_(metrics) {
  server_.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (res.body.empty()) {
      std::string what = res.status == 404 ? fmt::format("no route for {} {}", req.method, req.path)
                                           : fmt::format("HTTP {}", res.status);
      // JSON only where an API lives; elsewhere plain text, which lakeFS
      // clients take as "this is not the API endpoint".
      if (req.path.rfind("/api/v1/", 0) == 0 || req.path.rfind("/api/v1", 0) == 0 && req.path.size() == 7) {
        ReplyError(res, res.status, what);
      } else {
        res.set_content(what + "\n", "text/plain");
      }
    }
    Observe(req.method, "unmatched", res.status, 0);
  });
  server_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    ReplyError(res, 500, "internal error: " + what);
  });
  server_.set_keep_alive_timeout(5);
  // Streamed responses are many small writes: without this, Nagle and delayed
  // ACKs add ~40 ms to every scan.
  server_.set_tcp_nodelay(true);
  server_.set_read_timeout(60);
  server_.set_write_timeout(60);
  server_.set_payload_max_length(std::numeric_limits<size_t>::max());
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Observe(const std::string& method, const std::string& route, int status, double seconds) {
  metrics_
      ->Counter("http_requests_total", "HTTP requests served, by method, route and status code.",
                {"method", "route", "code"})
      .With({method, route, std::to_string(status)})
      .Add();
  if (route != "unmatched") {
    metrics_
        ->Histogram("http_request_duration_seconds", "HTTP request duration, by method and route.", {"method", "route"})
        .With({method, route})
        .Observe(seconds);
  }
}

namespace {

void LogRequest(const httplib::Request& req, const httplib::Response& res, double seconds) {
  auto level = (req.method == "GET" && res.status < 400) ? spdlog::level::debug : spdlog::level::info;
  spdlog::log(level, "{} {} {} {:.1f}ms {}", req.method, req.path, res.status, seconds * 1000, req.remote_addr);
}

}  // namespace

void HttpServer::Instrumented(const std::string& method, const std::string& route, const httplib::Request& req,
                              httplib::Response& res, const std::function<void()>& fn) {
  auto start = std::chrono::steady_clock::now();
  try {
    fn();
  } catch (const std::exception& e) {
    ReplyError(res, 500, std::string("internal error: ") + e.what());
    spdlog::error("{} {}: uncaught exception: {}", req.method, req.path, e.what());
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Observe(method, route, res.status, secs);
  LogRequest(req, res, secs);
}

void HttpServer::Handle(const std::string& method, const std::string& pattern, const std::string& route,
                        Handler handler) {
  auto wrapped = [this, method, route, handler = std::move(handler)](const httplib::Request& req,
                                                                     httplib::Response& res) {
    Instrumented(method, route, req, res, [&] { handler(req, res); });
  };
  if (method == "GET") {
    server_.Get(pattern, wrapped);
  } else if (method == "POST") {
    server_.Post(pattern, wrapped);
  } else if (method == "PUT") {
    server_.Put(pattern, wrapped);
  } else if (method == "DELETE") {
    server_.Delete(pattern, wrapped);
  } else if (method == "PATCH") {
    server_.Patch(pattern, wrapped);
  } else if (method == "HEAD") {
    // httplib answers HEAD from GET routes.
  }
}

void HttpServer::SetGuard(std::function<bool(const httplib::Request&, httplib::Response&)> guard) {
  server_.set_pre_routing_handler(
      [this, guard = std::move(guard)](const httplib::Request& req, httplib::Response& res) {
        bool pass = true;
        try {
          pass = guard(req, res);
        } catch (const std::exception& e) {
          ReplyError(res, 500, std::string("internal error: ") + e.what());
          pass = false;
        }
        if (pass) return httplib::Server::HandlerResponse::Unhandled;
        Observe(req.method, "guard", res.status, 0);
        LogRequest(req, res, 0);
        res.set_header("Connection", "close");  // a body we did not read must not be parsed as a request
        return httplib::Server::HandlerResponse::Handled;
      });
}

void HttpServer::HandleStream(const std::string& method, const std::string& pattern, const std::string& route,
                              ReaderHandler handler) {
  auto wrapped = [this, method, route, handler = std::move(handler)](
                     const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    bool body_read = false;
    httplib::ContentReader tracked(
        [&](httplib::ContentReceiver receiver) {
          body_read = true;
          return reader(std::move(receiver));
        },
        [&](httplib::MultipartContentHeader header, httplib::ContentReceiver receiver) {
          body_read = true;
          return reader(std::move(header), std::move(receiver));
        });
    Instrumented(method, route, req, res, [&] { handler(req, res, tracked); });
    // A handler that answered without reading the body (e.g. 404 before an
    // upload) leaves it on the socket: close the connection rather than
    // parse it as the next request.
    if (!body_read) res.set_header("Connection", "close");
  };
  if (method == "POST") {
    server_.Post(pattern, wrapped);
  } else if (method == "PUT") {
    server_.Put(pattern, wrapped);
  } else if (method == "PATCH") {
    server_.Patch(pattern, wrapped);
  }
}

Status HttpServer::Bind(const std::string& host, int port) {
  server_.set_socket_options([](socket_t fd) { ListenerSocketOptions(fd); });
  ARROW_RETURN_NOT_OK(ProbeBind(host, port));
  if (port == 0) {
    int p = server_.bind_to_any_port(host);
    if (p <= 0) return Unavailable(fmt::format("cannot listen on {}:0", host));
    port_ = p;
  } else {
    if (!server_.bind_to_port(host, port)) {
      return Unavailable(fmt::format("cannot listen on {}:{} (address in use or not permitted)", host, port));
    }
    port_ = port;
  }
  return Status::OK();
}

void HttpServer::Start() {
  auto done = std::make_shared<std::atomic<bool>>(false);
  thread_ = std::thread([this, done] {
    if (!server_.listen_after_bind()) spdlog::debug("http server stopped listening");
    *done = true;
  });
  // Stop() is only reliable once the accept loop runs.
  while (!server_.is_running() && !*done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void HttpServer::Stop() {
  if (server_.is_running() || thread_.joinable()) server_.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace sediment::server
