#include "server/http/http_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstring>
#include <optional>

#include "base/ascii.h"
#include "base/config.h"
#include "base/wildcard.h"
#include "server/http/connection_gate.h"
#include "server/http/connection_stream_internal.h"
#include "server/http/errors.h"
#include "server/http/framing.h"

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

void LogRequest(const httplib::Request& req, const httplib::Response& res, double seconds) {
  auto level = (req.method == "GET" && res.status < 400) ? spdlog::level::debug : spdlog::level::info;
  spdlog::log(level, "{} {} {} {:.1f}ms {}", req.method, req.path, res.status, seconds * 1000, req.remote_addr);
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

// A handler's name for the request it serves (NameRoute), for metrics.
thread_local std::string tl_route_name;

// The request a worker is serving, for the hooks httplib calls without it.
thread_local ConnectionStream* tl_stream = nullptr;
// Set when the answer must end the connection (a body left unread).
thread_local bool tl_close = false;
// Set when the request got as far as routing: one that did not (a bad
// request line, an unknown method) may have left a body on the connection.
thread_local bool tl_routed = false;

constexpr auto kReadTimeout = std::chrono::seconds(60);
constexpr auto kWriteTimeout = std::chrono::seconds(60);
// A buffered body (at most max_body_bytes) must arrive within this.
constexpr auto kBodyTimeout = std::chrono::seconds(60);
constexpr int kMaxRequestsPerConnection = 1000;

}  // namespace

class HttpServer::Server : public httplib::Server {
 public:
  void set_gate(ConnectionGate* gate) { gate_ = gate; }

  // One request of `c`, whose head the gate has buffered.
  bool ServeOne(Connection& c) {
    ConnectionStream stream(c, kReadTimeout, kWriteTimeout);
    tl_stream = &stream;
    tl_close = false;
    tl_routed = false;
    if (std::string wrong = CheckRequestHead(HeadOf(c)); !wrong.empty()) {
      RefuseHead(c, wrong);
      tl_stream = nullptr;
      return false;
    }
    bool last = gate_->stopping() || c.requests + 1 >= kMaxRequestsPerConnection;
    bool closed = false;
    bool ok = process_request(stream, last, closed, nullptr);
    tl_stream = nullptr;
    // A request httplib refused before routing (a bad request line, an
    // unknown method) may have a body we cannot frame: nothing after it on
    // this connection can be trusted to be a request of its own.
    return ok && !closed && !last && !tl_close && tl_routed;
  }

 private:
  // Called for every accepted socket (on the accept thread, see InlineQueue):
  // the gate takes it from here.
  bool process_and_close_socket(socket_t sock) override {
    gate_->Add(sock);
    return true;
  }

  // The unread bytes through the head's end (the gate saw the whole head).
  static std::string_view HeadOf(const Connection& c) {
    std::string_view unread(c.buffer.data() + c.consumed, c.Unread());
    size_t lead = 0;
    while (unread.substr(lead, 2) == "\r\n") lead += 2;
    size_t end = unread.find("\r\n\r\n", lead);
    return end == std::string_view::npos ? unread : unread.substr(0, end + 4);
  }

  // A head that is not well framed: 400, and the connection ends (nothing
  // after it can be trusted to be a request of its own).
  static void RefuseHead(const Connection& c, const std::string& wrong) {
    httplib::Response res;
    ReplyError(res, 400, "the request's framing is not RFC 9112's: " + wrong);
    const std::string& body = res.body;
    std::string reply = fmt::format(
        "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: "
        "{}\r\n\r\n{}",
        body.size(), body);
    (void)!::send(c.fd, reply.data(), reply.size(), MSG_NOSIGNAL);
    spdlog::info("refused a request of {} bytes of head: {}", HeadOf(c).size(), wrong);
  }

  ConnectionGate* gate_ = nullptr;
};

namespace {

// httplib hands each accepted socket to a task queue; ours passes it on to the
// gate at once, on the accept thread, so no worker waits for a slow client.
class InlineQueue : public httplib::TaskQueue {
 public:
  explicit InlineQueue(ConnectionGate* gate) : gate_(gate) {}
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override { gate_->Shutdown(); }

 private:
  ConnectionGate* gate_;
};

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  if (host.size() > 10 && host.substr(host.size() - 10) == ".localhost") return true;
  in_addr a{};
  std::string h(host);
  return ::inet_pton(AF_INET, h.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

// The host of a Host header value: "name", "name:port", "[v6]:port".
std::string_view HostOf(std::string_view value) {
  if (!value.empty() && value.front() == '[') {
    auto close = value.find(']');
    return close == std::string_view::npos ? value : value.substr(0, close + 1);
  }
  auto colon = value.rfind(':');
  return colon == std::string_view::npos ? value : value.substr(0, colon);
}

// How many connections the gate may hold: the file-descriptor limit (raised
// to the hard limit) less room for the stores' own files, at most 4,096. At
// the limit new connections get 503 at once, rather than accept() failing
// with EMFILE while slow clients hold every descriptor.
size_t ConnectionBudget() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 512;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  if (rl.rlim_cur == RLIM_INFINITY) return 4096;
  size_t fds = static_cast<size_t>(rl.rlim_cur);
  return std::clamp<size_t>(fds > 512 ? fds - 512 : fds / 2, 16, 4096);
}

}  // namespace

std::function<bool(std::string_view)> HostRule(const std::string& listen_host, const std::vector<std::string>& domains,
                                               const std::vector<std::string>& allowed) {
  std::string listen = AsciiLower(listen_host);
  bool wildcard_listen = listen.empty() || listen == "0.0.0.0" || listen == "::" || listen == "[::]";
  if (allowed.empty() && !wildcard_listen && !IsLoopbackHost(listen)) {
    // A named non-loopback address: that name, loopback and the domains.
  } else if (allowed.empty() && wildcard_listen) {
    return nullptr;  // reachable under any name; [server] allowed_hosts closes it
  }
  std::vector<std::string> domain_list, allowed_list;
  for (const auto& d : domains) domain_list.push_back(AsciiLower(d));
  for (const auto& a : allowed) allowed_list.push_back(AsciiLower(a));
  return [listen, domain_list, allowed_list](std::string_view host_in) {
    std::string host = AsciiLower(host_in);
    if (host.size() > 1 && host.back() == '.') host.pop_back();  // "localhost." names the same host
    if (IsLoopbackHost(host) || host == listen || "[" + listen + "]" == host) return true;
    for (const auto& d : domain_list) {
      if (host == d || (host.size() > d.size() + 1 && host.ends_with("." + d))) return true;
    }
    for (const auto& a : allowed_list) {
      if (a == "*" || WildcardMatch(a, host)) return true;
    }
    return false;
  };
}

size_t HttpWorkers() { return HttpWorkerCount(); }

HttpServer::HttpServer(MetricsRegistry* metrics, HttpLimits limits)
    : metrics_(metrics), limits_(std::move(limits)), server_(std::make_unique<Server>()) {
  httplib::Server& server = *server_;

  server.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (tl_stream && !tl_stream->framing_error().empty()) {
      tl_close = true;
      res.body.clear();
      res.set_header("Connection", "close");
      Refuse(req, res, 400, "the request's chunked framing is not RFC 9112's: " + tl_stream->framing_error());
    }
    if (tl_stream && tl_stream->over_budget()) {
      tl_close = true;
      res.status = 413;
      res.body.clear();
      res.set_header("Connection", "close");
      Refuse(req, res, 413,
             fmt::format("the request body is larger than the limit of {} bytes ([server] max_body_bytes)",
                         limits_.max_body_bytes));
    }
    if (res.body.empty()) {
      std::string what = res.status == 404 ? fmt::format("no route for {} {}", req.method, req.path)
                                           : fmt::format("HTTP {}", res.status);
      // JSON only where an API lives; elsewhere plain text, which lakeFS
      // clients take as "this is not the API endpoint".
      if (req.path.rfind("/api/v1/", 0) == 0 || (req.path.rfind("/api/v1", 0) == 0 && req.path.size() == 7)) {
        ReplyError(res, res.status, what);
      } else {
        res.set_content(what + "\n", "text/plain");
      }
    }
    Observe(req.method, "unmatched", res.status, 0);
  });
  server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    ReplyError(res, 500, "internal error: " + what);
  });
  // Streamed responses are many small writes: without this, Nagle and delayed
  // ACKs add ~40 ms to every scan (the gate sets it on each connection too).
  server.set_tcp_nodelay(true);
  // Body limits are ours (CheckLimits and the stream's budget): uploads stream any size.
  server.set_payload_max_length(std::numeric_limits<size_t>::max());
  // Answers that must end their connection (a body left unread on the socket).
  server.set_post_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    // HTTP/1.0 connections are not kept alive, and the answer says so.
    if (req.version == "HTTP/1.0") res.set_header("Connection", "close");
    if (res.get_header_value("Connection") == "close") tl_close = true;
  });
  server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    tl_routed = true;
    bool pass = true;
    try {
      pass = CheckLimits(req, res) && (!guard_ || guard_(req, res));
    } catch (const std::exception& e) {
      ReplyError(res, 500, std::string("internal error: ") + e.what());
      pass = false;
    }
    if (pass) return httplib::Server::HandlerResponse::Unhandled;
    Observe(req.method, "guard", res.status, 0);
    LogRequest(req, res, 0);
    res.set_header("Connection", "close");  // a body we did not read must not be parsed as a request
    tl_close = true;
    return httplib::Server::HandlerResponse::Handled;
  });
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

void HttpServer::NameRoute(std::string label) { tl_route_name = std::move(label); }

void HttpServer::Instrumented(const std::string& route_label, const httplib::Request& req, httplib::Response& res,
                              const std::function<void()>& fn) {
  auto start = std::chrono::steady_clock::now();
  tl_route_name.clear();
  try {
    fn();
  } catch (const std::exception& e) {
    ReplyError(res, 500, std::string("internal error: ") + e.what());
    spdlog::error("{} {}: uncaught exception: {}", req.method, req.path, e.what());
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string& route = tl_route_name.empty() ? route_label : tl_route_name;
  Observe(req.method, route, res.status, secs);  // HEAD is served by GET routes
  LogRequest(req, res, secs);
}

void HttpServer::Handle(const std::string& method, const std::string& pattern, const std::string& route,
                        Handler handler) {
  auto wrapped = [this, method, route, handler = std::move(handler)](const httplib::Request& req,
                                                                     httplib::Response& res) {
    Instrumented(route, req, res, [&] { handler(req, res); });
  };
  if (method == "GET") {
    server_->Get(pattern, wrapped);
  } else if (method == "POST") {
    server_->Post(pattern, wrapped);
  } else if (method == "PUT") {
    server_->Put(pattern, wrapped);
  } else if (method == "DELETE") {
    server_->Delete(pattern, wrapped);
  } else if (method == "PATCH") {
    server_->Patch(pattern, wrapped);
  } else if (method == "HEAD") {
    // httplib answers HEAD from GET routes.
  }
}

void HttpServer::SetGuard(std::function<bool(const httplib::Request&, httplib::Response&)> guard) {
  guard_ = std::move(guard);
}

bool HttpServer::IsStreamRoute(const httplib::Request& req) const {
  for (const auto& [method, pattern] : stream_routes_) {
    if (method == req.method && std::regex_match(req.path, pattern)) return true;
  }
  return false;
}

void HttpServer::Refuse(const httplib::Request& req, httplib::Response& res, int status,
                        const std::string& message) const {
  if (limits_.refuse) {
    limits_.refuse(req, res, status, message);
  } else {
    ReplyError(res, status, message);
  }
}

bool HttpServer::CheckLimits(const httplib::Request& req, httplib::Response& res) {
  if (limits_.host_allowed && req.has_header("Host")) {
    std::string host = req.get_header_value("Host");
    if (!limits_.host_allowed(HostOf(host))) {
      Refuse(req, res, 421,
             fmt::format("this server does not answer for host \"{}\": add it to [server] allowed_hosts", host));
      return false;
    }
  }
  // "close" in any Connection field (httplib reads only the first) ends the connection.
  for (auto [it, end] = req.headers.equal_range("Connection"); it != end; ++it) {
    for (std::string_view rest = it->second; !rest.empty();) {
      size_t comma = rest.find(',');
      std::string token = AsciiLower(rest.substr(0, comma));
      token.erase(0, token.find_first_not_of(" \t"));
      token.erase(token.find_last_not_of(" \t") + 1);
      if (token == "close") tl_close = true;
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  if (tl_close) res.set_header("Connection", "close");
  // The head passed CheckRequestHead: Transfer-Encoding, if any, is chunked alone.
  bool chunked = req.has_header("Transfer-Encoding");
  if (chunked && tl_stream) tl_stream->CheckChunked();
  if (!chunked && !req.has_header("Content-Length") && tl_stream) tl_stream->NoBody();
  uint64_t length = 0;
  if (req.has_header("Content-Length")) {
    std::string v = req.get_header_value("Content-Length");
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), length);
    if (ec != std::errc() || end != v.data() + v.size() || v.empty()) {
      Refuse(req, res, 400, fmt::format("Content-Length \"{}\" is not a number of bytes", v));
      return false;
    }
  }
  if (!chunked && length == 0) return true;
  if (chunked && req.method == "DELETE") {
    // httplib reads a DELETE's body only by its Content-Length.
    Refuse(req, res, 400, "a DELETE request's body must have a Content-Length");
    return false;
  }
  if (req.method != "POST" && req.method != "PUT" && req.method != "PATCH" && req.method != "DELETE") {
    // httplib does not read a GET's body: one reading of the stream is to refuse it.
    Refuse(req, res, 400, fmt::format("a {} request has no body here", req.method));
    return false;  // and the connection is closed
  }
  if (IsStreamRoute(req)) return true;  // uploads stream, whatever their size
  if (length > limits_.max_body_bytes) {
    Refuse(req, res, 413,
           fmt::format("the request body ({} bytes) is larger than the limit of {} bytes ([server] max_body_bytes)",
                       length, limits_.max_body_bytes));
    return false;
  }
  // A chunked body's size shows only as it arrives: cut it off past the limit
  // (plus room for its chunk framing).
  if (tl_stream) {
    size_t budget = chunked ? limits_.max_body_bytes + limits_.max_body_bytes / 8 + 4096 : length;
    tl_stream->LimitBody(budget, std::chrono::steady_clock::now() + kBodyTimeout);
  }
  return true;
}

void HttpServer::HandleStream(const std::string& method, const std::string& pattern, const std::string& route,
                              ReaderHandler handler) {
  stream_routes_.emplace_back(method, std::regex(pattern));
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
    Instrumented(route, req, res, [&] { handler(req, res, tracked); });
    // A handler that answered without reading the body (e.g. 404 before an
    // upload) leaves it on the socket: close the connection rather than
    // parse it as the next request.
    if (!body_read) {
      res.set_header("Connection", "close");
      tl_close = true;
    }
  };
  if (method == "POST") {
    server_->Post(pattern, wrapped);
  } else if (method == "PUT") {
    server_->Put(pattern, wrapped);
  } else if (method == "PATCH") {
    server_->Patch(pattern, wrapped);
  }
}

Status HttpServer::Bind(const std::string& host, int port) {
  server_->set_socket_options([this](socket_t fd) {
    ListenerSocketOptions(fd);
    listener_fd_ = fd;
  });
  ARROW_RETURN_NOT_OK(ProbeBind(host, port));
  if (port == 0) {
    int p = server_->bind_to_any_port(host);
    if (p <= 0) return Unavailable(fmt::format("cannot listen on {}:0", host));
    port_ = p;
  } else {
    if (!server_->bind_to_port(host, port)) {
      return Unavailable(fmt::format("cannot listen on {}:{} (address in use or not permitted)", host, port));
    }
    port_ = port;
  }
  // httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled
  // into Debian's library): a burst of connections would overflow it and
  // wait a second for SYN retransmits. Listening again sets the backlog.
  int listening = 0;
  socklen_t len = sizeof(listening);
  if (listener_fd_ >= 0 && ::getsockopt(listener_fd_, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening) {
    ::listen(listener_fd_, SOMAXCONN);
  }
  return Status::OK();
}

void HttpServer::Start() {
  ConnectionGate::Options options;
  options.header_timeout = limits_.header_timeout;
  options.max_connections = ConnectionBudget();
  options.workers = HttpWorkers();
  gate_ = std::make_unique<ConnectionGate>(options, [this](Connection& c) { return server_->ServeOne(c); });
  server_->set_gate(gate_.get());
  ConnectionGate* gate = gate_.get();
  server_->new_task_queue = [gate] { return new InlineQueue(gate); };
  auto done = std::make_shared<std::atomic<bool>>(false);
  thread_ = std::thread([this, done] {
    if (!server_->listen_after_bind()) spdlog::debug("http server stopped listening");
    *done = true;
  });
  // Stop() is only reliable once the accept loop runs.
  while (!server_->is_running() && !*done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void HttpServer::Stop() {
  if (server_->is_running() || thread_.joinable()) server_->stop();
  if (thread_.joinable()) thread_.join();
  if (gate_) gate_->Shutdown();  // also when the accept loop never ran
}

}  // namespace sediment::server
