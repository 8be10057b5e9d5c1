// The limits every request meets before a handler sees it (http_server.h):
// body size, slow request heads, and the Host rule. Raw sockets, so the test
// controls exactly what arrives and when.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/test_util.h"
#include "server/app.h"
#include "server/http/http_server.h"

namespace sediment::server {
namespace {

// A client socket on 127.0.0.1:port with a receive timeout.
class RawClient {
 public:
  explicit RawClient(int port, std::chrono::seconds timeout = std::chrono::seconds(10)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{static_cast<time_t>(timeout.count()), 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawClient() { ::close(fd_); }
  bool connected() const { return connected_; }
  // Whether an answer (or the close) has arrived.
  bool Readable() {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }
  bool Send(const std::string& s) {
    return ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
  }
  // Everything until the server closes the connection or `until` appears.
  std::string Receive(const std::string& until = "") {
    std::string out;
    char buf[4096];
    for (;;) {
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
      if (!until.empty() && out.find(until) != std::string::npos) break;
    }
    return out;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

class HttpLimitsTest : public ::testing::Test {
 protected:
  void Start(const std::function<void(Config&)>& adjust = nullptr) {
    Config c = *Config::Load("", {});
    c.actions.lua_sandbox = SEDIMENT_LUA_SANDBOX;
    c.server.listen = "127.0.0.1:0";
    c.query.flight_listen = c.query.jsonl_listen = "127.0.0.1:0";
    c.storage.data_dir = dir_.Sub("data");
    c.database.type = "mem";
    c.server.max_body_bytes = 4096;
    if (adjust) adjust(c);
    app_ = std::make_unique<App>(c);
    ASSERT_TRUE(app_->Start().ok());
  }
  std::string Head(const std::string& method, const std::string& path, const std::string& extra = "") {
    return method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(app_->port()) + "\r\n" + extra +
           "\r\n";
  }
  testing::TempDir dir_;
  std::unique_ptr<App> app_;
};

TEST_F(HttpLimitsTest, ALargerContentLengthGets413BeforeTheBodyIsSent) {
  Start();
  RawClient c(app_->port());
  ASSERT_TRUE(c.connected());
  // Only the head is sent: the answer cannot have waited for the body.
  ASSERT_TRUE(
      c.Send(Head("POST", "/api/v1/auth/login", "Content-Type: application/json\r\nContent-Length: 100000000\r\n")));
  std::string reply = c.Receive();
  EXPECT_EQ(reply.rfind("HTTP/1.1 413", 0), 0u) << reply;
  EXPECT_NE(reply.find("max_body_bytes"), std::string::npos) << reply;
}

TEST_F(HttpLimitsTest, AChunkedBodyIsCutOffPastTheLimit) {
  Start();
  RawClient c(app_->port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(
      c.Send(Head("POST", "/api/v1/auth/login", "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n")));
  // 64 MiB at most, far past the 4 KiB limit: sending stops failing once the
  // server has answered and closed (well before, unless it kept reading).
  std::string chunk = "10000\r\n" + std::string(1 << 16, 'x') + "\r\n";
  int sent = 0;
  while (sent < 1024 && !c.Readable() && c.Send(chunk)) sent++;
  EXPECT_LT(sent, 1024) << "the server kept reading a body past its limit";
  std::string reply = c.Receive();
  EXPECT_EQ(reply.rfind("HTTP/1.1 413", 0), 0u) << reply.substr(0, 200);
}

TEST_F(HttpLimitsTest, UploadsStreamPastTheLimit) {
  Start();
  std::string body(64 << 10, 'a');  // 16x the limit, through a streamed route (S3 PutObject: no bucket, so 4xx)
  httplib::Client client("127.0.0.1", app_->port());
  auto res = client.Put("/no-such-bucket/main/x", body, "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_NE(res->status, 413);
}

TEST_F(HttpLimitsTest, SlowHeadsHoldNoWorkerAndAreCutOff) {
  Start([](Config& c) { c.server.header_timeout_secs = 1; });
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 50; ++i) {
    slow.push_back(std::make_unique<RawClient>(app_->port()));
    ASSERT_TRUE(slow.back()->connected());
    ASSERT_TRUE(slow.back()->Send("GET /api/v1/health"));  // and never the rest
  }
  // 50 unfinished heads, more than there are workers: a health check is still answered.
  httplib::Client client("127.0.0.1", app_->port());
  client.set_read_timeout(std::chrono::seconds(2));
  auto res = client.Get("/api/v1/healthcheck");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 204);
  // Each slow head is answered 408 and its connection closed.
  for (auto& c : slow) {
    std::string reply = c->Receive();
    EXPECT_EQ(reply.rfind("HTTP/1.1 408", 0), 0u) << reply;
  }
}

TEST_F(HttpLimitsTest, KeepAliveAndPipelinedRequestsStillWork) {
  Start();
  RawClient c(app_->port());
  ASSERT_TRUE(c.connected());
  // Two requests in one write, then a third later on the same connection.
  ASSERT_TRUE(c.Send(Head("GET", "/api/v1/healthcheck") + Head("GET", "/api/v1/healthcheck")));
  std::string two = c.Receive("HTTP/1.1 204 No Content\r\n");
  while (two.find("HTTP/1.1 204", two.find("HTTP/1.1 204") + 1) == std::string::npos) {
    std::string more = c.Receive("\r\n\r\n");
    if (more.empty()) break;
    two += more;
  }
  EXPECT_NE(two.find("HTTP/1.1 204", two.find("HTTP/1.1 204") + 1), std::string::npos) << two;
  ASSERT_TRUE(c.Send(Head("GET", "/api/v1/healthcheck")));
  EXPECT_EQ(c.Receive("\r\n\r\n").rfind("HTTP/1.1 204", 0), 0u);
}

TEST_F(HttpLimitsTest, HostMustNameThisServer) {
  Start([](Config& c) { c.server.allowed_hosts = {"sediment.example", "*.internal.example"}; });
  auto status = [&](const std::string& host) {
    RawClient c(app_->port());
    c.Send("GET /api/v1/healthcheck HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
    std::string reply = c.Receive();
    return reply.size() > 12 ? std::stoi(reply.substr(9, 3)) : 0;
  };
  std::string port = ":" + std::to_string(app_->port());
  EXPECT_EQ(status("127.0.0.1" + port), 204);
  EXPECT_EQ(status("localhost" + port), 204);
  EXPECT_EQ(status("[::1]" + port), 204);
  EXPECT_EQ(status("sediment.example" + port), 204);
  EXPECT_EQ(status("a.internal.example"), 204);
  EXPECT_EQ(status("repo.s3.local.lakefs.io" + port), 204);  // an S3 virtual host
  EXPECT_EQ(status("attacker.example" + port), 421);
  EXPECT_EQ(status("127.0.0.1.attacker.example"), 421);
}

TEST(HostRuleTest, AnyHostOnlyOnAWildcardListenerWithNothingAllowed) {
  EXPECT_EQ(HostRule("0.0.0.0", {}, {}), nullptr);
  auto rule = HostRule("0.0.0.0", {}, {"sediment.example"});
  ASSERT_NE(rule, nullptr);
  EXPECT_TRUE(rule("sediment.example"));
  EXPECT_FALSE(rule("other.example"));
  rule = HostRule("10.0.0.5", {}, {});
  ASSERT_NE(rule, nullptr);
  EXPECT_TRUE(rule("10.0.0.5"));
  EXPECT_FALSE(rule("evil.example"));
}

}  // namespace
}  // namespace sediment::server
