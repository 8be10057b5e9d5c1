#include "server/http/connection_gate.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace sediment::server {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kTimeoutReply[] =
    "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 47\r\n\r\n"
    "the request's headers did not arrive in time\r\n\r\n";
constexpr char kTooLargeReply[] =
    "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Type: text/plain\r\n"
    "Content-Length: 36\r\n\r\nthe request's headers are too large\n";
constexpr char kBusyReply[] =
    "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\nContent-Type: text/plain\r\n"
    "Content-Length: 33\r\n\r\ntoo many connections; try again\n";

constexpr auto kLinger = std::chrono::seconds(10);
constexpr size_t kLingerBytes = size_t{1} << 30;

}  // namespace

bool Connection::HasHead() {
  std::string_view unread(buffer.data() + consumed, Unread());
  // Blank lines before a request line are allowed (RFC 9112 2.2); they do not end a head.
  size_t lead = 0;
  while (lead + 1 < unread.size() && unread[lead] == '\r' && unread[lead + 1] == '\n') lead += 2;
  size_t from = std::max(scanned, lead + 3) - 3;
  bool found = unread.size() > lead && unread.find("\r\n\r\n", from) != std::string_view::npos;
  scanned = unread.size();
  return found;
}

ConnectionGate::ConnectionGate(Options options, Serve serve) : options_(options), serve_(std::move(serve)) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  stop_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  gate_thread_ = std::thread([this] { GateLoop(); });
  for (size_t i = 0; i < std::max<size_t>(options_.workers, 1); ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ConnectionGate::~ConnectionGate() {
  Shutdown();
  ::close(epoll_fd_);
  ::close(wake_fd_);
  ::close(stop_fd_);
}

bool ConnectionGate::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

size_t ConnectionGate::idle_workers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return idle_workers_;
}

void ConnectionGate::Wake() {
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

void ConnectionGate::Add(int fd) {
  int yes = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
  auto c = std::make_unique<Connection>();
  c->fd = fd;
  c->awaiting_head = true;  // a new connection's first request is due at once
  c->deadline = Clock::now() + options_.header_timeout;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_ && open_ < options_.max_connections) {
      open_++;
      incoming_.push_back(std::move(c));
      c = nullptr;
    }
  }
  if (c) {
    (void)!::send(fd, kBusyReply, sizeof(kBusyReply) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(fd);
    return;
  }
  Wake();
}

void ConnectionGate::Resume(std::unique_ptr<Connection> c, bool linger) {
  c->awaiting_head = false;
  c->deadline = Clock::now() + options_.idle_timeout;
  if (linger) {
    c->lingering = true;
    c->deadline = Clock::now() + kLinger;
    ::shutdown(c->fd, SHUT_WR);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      incoming_.push_back(std::move(c));
      c = nullptr;
    }
  }
  if (c) {
    Close(std::move(c), nullptr);
    return;
  }
  Wake();
}

void ConnectionGate::Close(std::unique_ptr<Connection> c, const char* reply) {
  if (reply) (void)!::send(c->fd, reply, std::strlen(reply), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(c->fd, SHUT_RDWR);
  ::close(c->fd);
  std::lock_guard<std::mutex> lock(mu_);
  open_--;
}

void ConnectionGate::ToWorkers(std::unique_ptr<Connection> c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.push_back(std::move(c));
  }
  ready_cv_.notify_one();
}

void ConnectionGate::Watch(std::unique_ptr<Connection> c) {
  if (!c->lingering && c->HasHead()) {  // pipelined: the next request is here already
    c->awaiting_head = true;
    ToWorkers(std::move(c));
    return;
  }
  if (!c->lingering && c->Unread() > options_.max_header_bytes) {  // grew so while a worker waited for it
    Close(std::move(c), kTooLargeReply);
    return;
  }
  if (c->Unread() > 0 && !c->awaiting_head) {
    c->awaiting_head = true;
    c->deadline = Clock::now() + options_.header_timeout;
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = c->fd;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
    Close(std::move(c), nullptr);
    return;
  }
  int fd = c->fd;
  waiting_[fd] = std::move(c);
}

void ConnectionGate::GateLoop() {
  std::vector<epoll_event> events(256);
  auto next_sweep = Clock::now();
  for (;;) {
    std::vector<std::unique_ptr<Connection>> incoming;
    bool stop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      incoming.swap(incoming_);
      stop = stopping_;
    }
    if (stop) {
      for (auto& c : incoming) Close(std::move(c), nullptr);
      for (auto& [fd, c] : waiting_) Close(std::move(c), nullptr);
      waiting_.clear();
      return;
    }
    for (auto& c : incoming) Watch(std::move(c));
    int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 250);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == wake_fd_) {
        uint64_t v;
        (void)!::read(wake_fd_, &v, sizeof(v));
      } else {
        Readable(events[i].data.fd);
      }
    }
    if (Clock::now() >= next_sweep) {
      next_sweep = Clock::now() + std::chrono::milliseconds(100);
      SweepDeadlines();
    }
  }
}

void ConnectionGate::Forget(std::map<int, std::unique_ptr<Connection>>::iterator it, const char* reply,
                            bool to_workers) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->first, nullptr);
  auto owned = std::move(it->second);
  waiting_.erase(it);
  if (to_workers) {
    ToWorkers(std::move(owned));
  } else {
    Close(std::move(owned), reply);
  }
}

void ConnectionGate::Readable(int fd) {
  auto it = waiting_.find(fd);
  if (it == waiting_.end()) return;
  Connection& c = *it->second;
  char chunk[16 << 10];
  if (c.lingering) {  // drop what arrives, until the peer closes or enough
    ssize_t got;
    while ((got = ::recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT)) > 0) c.drained += static_cast<size_t>(got);
    if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) || c.drained > kLingerBytes) {
      Forget(it, nullptr, false);
    }
    return;
  }
  // Read what has arrived (level-triggered epoll brings us back for more).
  bool closed = false;
  for (;;) {
    ssize_t got = ::recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (got > 0) {
      c.buffer.append(chunk, static_cast<size_t>(got));
      if (c.Unread() > options_.max_header_bytes) break;
      continue;
    }
    if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) closed = true;
    break;
  }
  if (c.Unread() > 0 && !c.awaiting_head) {
    c.awaiting_head = true;
    c.deadline = Clock::now() + options_.header_timeout;
  }
  if (c.HasHead()) {
    Forget(it, nullptr, true);  // a peer that half-closed after its request still gets the answer
  } else if (closed) {
    Forget(it, nullptr, false);
  } else if (c.Unread() > options_.max_header_bytes) {
    Forget(it, kTooLargeReply, false);
  }
}

void ConnectionGate::SweepDeadlines() {
  auto now = Clock::now();
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    auto next = std::next(it);
    const Connection& c = *it->second;
    if (c.deadline <= now) {
      bool mid_request = !c.lingering && c.awaiting_head && c.Unread() > 0;
      bool never_asked = !c.lingering && c.requests == 0;
      Forget(it, mid_request || never_asked ? kTimeoutReply : nullptr, false);
    }
    it = next;
  }
}

void ConnectionGate::WorkerLoop() {
  for (;;) {
    std::unique_ptr<Connection> c;
    {
      std::unique_lock<std::mutex> lock(mu_);
      idle_workers_++;
      ready_cv_.wait(lock, [&] { return stopping_ || !ready_.empty(); });
      idle_workers_--;
      if (ready_.empty()) return;  // stopping, and nothing left to serve
      c = std::move(ready_.front());
      ready_.pop_front();
    }
    bool keep = ServeInTurn(*c);
    Resume(std::move(c), /*linger=*/!keep);
  }
}

bool ConnectionGate::ServeInTurn(Connection& c) {
  for (;;) {
    bool keep = false;
    try {
      keep = serve_(c);
    } catch (const std::exception& e) {
      spdlog::error("http: serving a connection failed: {}", e.what());
    }
    c.requests++;
    // Drop what the request consumed; keep what belongs to the next one.
    c.buffer.erase(0, c.consumed);
    c.consumed = 0;
    c.scanned = 0;
    if (!keep) return false;
    bool queued, wait;
    {
      std::lock_guard<std::mutex> lock(mu_);
      queued = stopping_ || !ready_.empty();
      // Only while another worker is free for the gate's connections.
      wait = !queued && idle_workers_ > 0;
    }
    // Connections waiting for a worker go first: a pipelined request then
    // queues behind them, as it did before a worker kept its connection.
    if (queued) return true;
    if (!c.HasHead() && !(wait && AwaitHead(c))) return true;
  }
}

bool ConnectionGate::AwaitHead(Connection& c) {
  const auto until = Clock::now() + options_.keep_wait;
  char chunk[16 << 10];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(until - Clock::now());
    if (left.count() <= 0) return false;
    timespec ts{static_cast<time_t>(left.count() / 1'000'000'000), static_cast<long>(left.count() % 1'000'000'000)};
    pollfd p[2] = {{c.fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (::ppoll(p, 2, &ts, nullptr) <= 0 || p[1].revents != 0 || !(p[0].revents & POLLIN)) return false;
    for (;;) {
      ssize_t got = ::recv(c.fd, chunk, sizeof(chunk), MSG_DONTWAIT);
      if (got == 0) return false;  // closed: the gate sees the close itself
      if (got < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;  // drained
        return false;                                                          // reset: the gate sees it too
      }
      c.buffer.append(chunk, static_cast<size_t>(got));
      if (c.Unread() > options_.max_header_bytes) return false;
    }
    if (c.HasHead()) return true;
  }
}

void ConnectionGate::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !gate_thread_.joinable()) return;
    stopping_ = true;
  }
  uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof(one));
  Wake();
  ready_cv_.notify_all();
  if (gate_thread_.joinable()) gate_thread_.join();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
  workers_.clear();
}

}  // namespace sediment::server
