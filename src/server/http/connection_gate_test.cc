// ConnectionGate on its own: which thread serves a keep-alive connection's
// next request, and that a worker waiting for one never holds up the others.
// Raw sockets and a serve function that answers with the serving thread.
#include "server/http/connection_gate.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

namespace sediment::server {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// A listening socket whose accepted connections go to a gate.
class GateUnderTest {
 public:
  explicit GateUnderTest(ConnectionGate::Options options, milliseconds delay = milliseconds(0))
      : delay_(delay), gate_(options, [this](Connection& c) { return Answer(c); }) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(listener_, 64);
    socklen_t len = sizeof(addr);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] {
      for (;;) {
        int fd = ::accept(listener_, nullptr, nullptr);
        if (fd < 0) return;
        gate_.Add(fd);
      }
    });
  }
  ~GateUnderTest() { Stop(); }
  void Stop() {
    if (!acceptor_.joinable()) return;
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    acceptor_.join();
    gate_.Shutdown();
  }
  int port() const { return port_; }
  // Waits (up to 10 s) until every worker is idle.
  void AwaitIdle(size_t workers) {
    auto until = Clock::now() + std::chrono::seconds(10);
    while (gate_.idle_workers() < workers && Clock::now() < until) std::this_thread::sleep_for(milliseconds(1));
  }

 private:
  // Consumes one head and answers 200 with "<serving thread> <answer number> <request line>" as the body.
  bool Answer(Connection& c) {
    size_t end = c.buffer.find("\r\n\r\n", c.consumed);
    std::string line = c.buffer.substr(c.consumed, c.buffer.find("\r\n", c.consumed) - c.consumed);
    c.consumed = end + 4;
    std::this_thread::sleep_for(delay_);
    std::ostringstream body;
    body << std::this_thread::get_id() << " " << answers_++ << " " << line;
    std::string reply =
        "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.str().size()) + "\r\n\r\n" + body.str();
    return ::send(c.fd, reply.data(), reply.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(reply.size());
  }

  const milliseconds delay_;
  std::atomic<int> answers_{0};
  ConnectionGate gate_;
  int listener_ = -1;
  int port_ = 0;
  std::thread acceptor_;
};

class Client {
 public:
  explicit Client(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{20, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Client() { ::close(fd_); }
  bool connected() const { return connected_; }
  void Send(const std::string& s) { ASSERT_EQ(::send(fd_, s.data(), s.size(), MSG_NOSIGNAL), (ssize_t)s.size()); }
  // One answer's status line and body (the body is the serving thread), or "" if the connection ended.
  std::string Answer() {
    char buf[1024];
    for (;;) {
      size_t head = got_.find("\r\n\r\n");
      if (head != std::string::npos) {
        size_t cl = got_.find("Content-Length: ");
        size_t length = cl == std::string::npos || cl > head ? 0 : std::stoul(got_.substr(cl + 16));
        if (got_.size() >= head + 4 + length) {
          std::string answer = got_.substr(0, got_.find("\r\n")) + " " + got_.substr(head + 4, length);
          got_.erase(0, head + 4 + length);  // the next answers' bytes stay
          return answer;
        }
      }
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return std::exchange(got_, "");
      got_.append(buf, static_cast<size_t>(n));
    }
  }
  std::string Get() {
    Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    return Answer();
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::string got_;  // received, not yet returned as an answer
};

// An answer's fields: 0 the status code, 1 the serving thread, 2 the answer number, 3... the request line.
std::string Field(const std::string& answer, int i) {
  std::istringstream in(answer.substr(answer.find(' ') + 1));
  std::string code, reason, field;
  in >> code >> reason;  // "200 OK"
  if (i == 0) return code;
  for (int k = 1; k <= i; ++k) in >> field;
  return field;
}

ConnectionGate::Options Opts(size_t workers, std::chrono::microseconds keep_wait) {
  ConnectionGate::Options o;
  o.workers = workers;
  o.keep_wait = keep_wait;
  o.max_header_bytes = 1024;
  return o;
}

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

TEST(ConnectionGateTest, AKeepAliveClientsNextRequestIsServedByTheWorkerThatAnsweredItsLast) {
  GateUnderTest gate(Opts(4, std::chrono::seconds(10)));
  gate.AwaitIdle(4);
  Client c(gate.port());
  ASSERT_TRUE(c.connected());
  std::string first = c.Get();
  ASSERT_EQ(first.rfind("HTTP/1.1 200 OK ", 0), 0u) << first;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Field(c.Get(), 1), Field(first, 1)) << "request " << i + 2;
}

TEST(ConnectionGateTest, AWorkerWaitingForItsConnectionLeavesOthersToAFreeWorker) {
  GateUnderTest gate(Opts(2, std::chrono::seconds(10)));
  gate.AwaitIdle(2);  // so a's worker sees the other one free
  Client a(gate.port()), b(gate.port());
  ASSERT_TRUE(a.connected() && b.connected());
  std::string on_a = a.Get();  // a's worker now waits (10 s) for a's next request
  auto t = Clock::now();
  std::string on_b = b.Get();
  EXPECT_LT(SecondsSince(t), 5.0) << "b waited for a's worker";
  EXPECT_NE(Field(on_b, 1), Field(on_a, 1));
}

TEST(ConnectionGateTest, TheOnlyFreeWorkerDoesNotWaitForAnIdleConnection) {
  GateUnderTest gate(Opts(1, std::chrono::seconds(10)));
  Client a(gate.port()), b(gate.port());
  ASSERT_TRUE(a.connected() && b.connected());
  ASSERT_EQ(a.Get().rfind("HTTP/1.1 200", 0), 0u);  // and a stays idle
  auto t = Clock::now();
  EXPECT_EQ(b.Get().rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_LT(SecondsSince(t), 5.0) << "the one worker held on to an idle connection";
  EXPECT_EQ(a.Get().rfind("HTTP/1.1 200", 0), 0u);  // a is still served
}

TEST(ConnectionGateTest, AHeadSplitAcrossTheWaitIsServedOnceWhole) {
  GateUnderTest gate(Opts(2, milliseconds(50)));
  gate.AwaitIdle(2);
  Client c(gate.port());
  ASSERT_TRUE(c.connected());
  ASSERT_EQ(c.Get().rfind("HTTP/1.1 200", 0), 0u);
  c.Send("GET / HT");  // begun while the worker waits, finished after it gave up
  std::this_thread::sleep_for(milliseconds(300));
  c.Send("TP/1.1\r\nHost: x\r\n\r\n");
  std::string answer = c.Answer();
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_EQ(answer.substr(answer.size() - 14), "GET / HTTP/1.1") << answer;  // the whole request line
}

TEST(ConnectionGateTest, PipelinedRequestsQueueBehindConnectionsWaitingForAWorker) {
  GateUnderTest gate(Opts(1, std::chrono::seconds(10)), milliseconds(20));
  Client a(gate.port()), b(gate.port());
  ASSERT_TRUE(a.connected() && b.connected());
  std::string twenty;
  for (int i = 0; i < 20; ++i) twenty += "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
  a.Send(twenty);
  ASSERT_EQ(Field(a.Answer(), 0), "200");  // a's first is served; its other 19 are buffered
  std::string on_b = b.Get();
  ASSERT_EQ(Field(on_b, 0), "200");
  EXPECT_LT(std::stoi(Field(on_b, 2)), 10) << "b waited behind a's pipelined requests";
  for (int i = 1; i < 20; ++i) EXPECT_EQ(Field(a.Answer(), 0), "200") << i;
}

TEST(ConnectionGateTest, ShutdownEndsAWorkersWait) {
  GateUnderTest gate(Opts(2, std::chrono::seconds(30)));
  gate.AwaitIdle(2);
  Client c(gate.port());
  ASSERT_TRUE(c.connected());
  ASSERT_EQ(Field(c.Get(), 0), "200");  // a worker now waits for c, which stays open
  auto t = Clock::now();
  gate.Stop();
  EXPECT_LT(SecondsSince(t), 5.0);
}

TEST(ConnectionGateTest, AHeadGrowingPastTheLimitWhileAWorkerWaitsIsRefusedAtOnce) {
  GateUnderTest gate(Opts(2, std::chrono::seconds(10)));
  gate.AwaitIdle(2);
  Client c(gate.port());
  ASSERT_TRUE(c.connected());
  ASSERT_EQ(c.Get().rfind("HTTP/1.1 200", 0), 0u);
  auto t = Clock::now();
  c.Send("GET / HTTP/1.1\r\nX-Long: " + std::string(2000, 'a'));  // never ends, past the 1 KiB limit
  std::string reply = c.Answer();
  EXPECT_EQ(reply.rfind("HTTP/1.1 431", 0), 0u) << reply;
  EXPECT_LT(SecondsSince(t), 5.0) << "refused only at the header timeout";
}

}  // namespace
}  // namespace sediment::server
