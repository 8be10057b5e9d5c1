// The JSON-RPC client (evm_rpc.h) against a local HTTP server that misbehaves
// as nodes do: busy (503, 429), slow (past the timeout), then well.
#include "chain/evm_rpc.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>

#include "base/test_util.h"

namespace sediment::chain {
namespace {

using nlohmann::json;

class FakeNode {
 public:
  FakeNode() {
    server_.Post("/", [this](const httplib::Request& req, httplib::Response& res) {
      int n = requests_++;
      if (n < busy_) {
        res.status = n % 2 == 0 ? 503 : 429;
        return;
      }
      if (n < busy_ + slow_) std::this_thread::sleep_for(std::chrono::milliseconds(400));
      json out = json::array();
      for (const auto& call : json::parse(req.body)) {
        if (call["method"] == "eth_blockNumber") {
          out.push_back({{"jsonrpc", "2.0"}, {"id", call["id"]}, {"result", "0x2a"}});
        } else {
          out.push_back({{"jsonrpc", "2.0"},
                         {"id", call["id"]},
                         {"error", {{"code", -32601}, {"message", "the method does not exist"}}}});
        }
      }
      std::reverse(out.begin(), out.end());  // answers may come in any order
      res.set_content(out.dump(), "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    EXPECT_TRUE(testing::Eventually([&] { return server_.is_running(); }));
  }
  ~FakeNode() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::atomic<int> requests_{0};
  int busy_ = 0;
  int slow_ = 0;

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

RpcOptions Fast(const std::string& url) {
  RpcOptions o;
  o.url = url;
  o.timeout_seconds = 0.2;
  o.backoff_initial = 0.01;
  o.backoff_max = 0.05;
  o.max_attempts = 6;
  return o;
}

TEST(JsonRpcClientTest, ABatchAnswersEachCallInOrderWithTheNodesErrors) {
  FakeNode node;
  auto client = JsonRpcClient::Make(Fast(node.url()));
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto out = (*client)->Batch({{"eth_blockNumber", nullptr}, {"eth_nope", json::array({1})}, {"eth_blockNumber", {}}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_EQ(*(*out)[0], "0x2a");
  ASSERT_FALSE((*out)[1].ok());
  EXPECT_NE((*out)[1].status().message().find("the method does not exist"), std::string::npos);
  EXPECT_EQ(*(*out)[2], "0x2a");
  EXPECT_EQ((*client)->retries(), 0);
}

TEST(JsonRpcClientTest, BusyAndSlowAnswersAreRetriedWithBackOff) {
  FakeNode node;
  node.busy_ = 2;  // 503, then 429
  node.slow_ = 1;  // then past the timeout
  auto client = *JsonRpcClient::Make(Fast(node.url()));
  auto head = client->Call("eth_blockNumber", nullptr);
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(*head, "0x2a");
  EXPECT_EQ(client->retries(), 3);
  EXPECT_FALSE(client->last_error().empty());
}

TEST(JsonRpcClientTest, ANodeThatNeverAnswersIsUnavailableNamingTheUrl) {
  RpcOptions o = Fast("http://127.0.0.1:1");  // nothing listens there
  o.max_attempts = 3;
  auto client = *JsonRpcClient::Make(o);
  auto head = client->Call("eth_blockNumber", nullptr);
  ASSERT_FALSE(head.ok());
  EXPECT_TRUE(IsUnavailable(head.status())) << head.status().ToString();
  EXPECT_NE(head.status().message().find("127.0.0.1:1"), std::string::npos);
  EXPECT_EQ(client->retries(), 2);
}

TEST(JsonRpcClientTest, BadUrlsAndOptionsAreRefused) {
  for (const char* url : {"", "ftp://x", "http://", "https://", "http://a b", "http://n:99999"}) {
    RpcOptions o;
    o.url = url;
    auto c = JsonRpcClient::Make(o);
    EXPECT_TRUE(IsInvalidArgument(c.status())) << url;
  }
  RpcOptions o;
  o.url = "http://127.0.0.1:8545";
  o.timeout_seconds = 0;
  EXPECT_TRUE(IsInvalidArgument(JsonRpcClient::Make(o).status()));
}

TEST(JsonRpcClientTest, HttpsUrlsCredentialsAndHeaders) {
  RpcOptions o;
  o.url = "https://user:pa55@rpc.example.com/v2/key";
  o.headers = {"x-api-key: k", "X-Extra: two words"};
  EXPECT_TRUE(JsonRpcClient::Make(o).ok()) << "https, HTTP Basic in the URL, API-key headers";
  o.headers = {"no colon here"};
  auto bad = JsonRpcClient::Make(o);
  ASSERT_TRUE(IsInvalidArgument(bad.status()));
  EXPECT_NE(bad.status().message().find("is not \"Name: value\""), std::string::npos);
  o.headers = {"Content-Length: 0"};
  EXPECT_TRUE(IsInvalidArgument(JsonRpcClient::Make(o).status())) << "httplib's own headers are not settings";
  o.headers = {"Authorization: Bearer x"};
  EXPECT_TRUE(IsInvalidArgument(JsonRpcClient::Make(o).status())) << "two sets of credentials";
  o.headers = {"x-api-key=SECRETKEY"};
  bad = JsonRpcClient::Make(o);
  EXPECT_EQ(bad.status().message().find("SECRETKEY"), std::string::npos) << bad.status().message();
  o.headers = {};
  o.url = "https://u:a%40b%2Fc@rpc.example.com/v3/PROJECTKEY";
  EXPECT_TRUE(JsonRpcClient::Make(o).ok()) << "an escaped password";
  // RFC 3986: '%' starts an escape and nothing else (it was once kept as written).
  o.url = "https://u:50%off@rpc.example.com";
  bad = JsonRpcClient::Make(o);
  ASSERT_TRUE(IsInvalidArgument(bad.status()));
  EXPECT_EQ(bad.status().message().find("50%off"), std::string::npos) << "a password is never echoed";
  EXPECT_NE(bad.status().message().find("%25"), std::string::npos) << bad.status().message();
  o.url = "https://u:ab/cd@rpc.example.com";
  bad = JsonRpcClient::Make(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().find("ab/cd"), std::string::npos) << bad.status().message();
  o.url = "ftp://user:pa55@rpc.example.com";
  bad = JsonRpcClient::Make(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().find("pa55"), std::string::npos) << "a password is never echoed";
  o.url = "http://127.0.0.1:8545";
  o.ca_file = "/etc/ssl/certs/ca-certificates.crt";
  EXPECT_TRUE(IsInvalidArgument(JsonRpcClient::Make(o).status())) << "a CA file is for https";
}

TEST(JsonRpcClientTest, TheRateLimitSpacesCalls) {
  FakeNode node;
  RpcOptions o = Fast(node.url());
  o.rate_limit = 50;  // calls per second
  auto client = *JsonRpcClient::Make(o);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(client->Batch({{"eth_blockNumber", nullptr}, {"eth_blockNumber", nullptr}}).ok());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(s, 0.15) << "10 calls at 50/s take at least 0.18 s (the first is free)";
}

}  // namespace
}  // namespace sediment::chain
