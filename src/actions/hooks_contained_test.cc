// Hooks cannot hold the server: a Lua script is killed at its deadline
// whatever it runs (a loop in a message handler, a pattern that backtracks
// in C), no action file raises the operator's timeout, hook runs take slots
// of a pool of their own (refused at once when none is free), webhooks reach
// only what the operator allows and hold a bounded answer, and secrets stay
// masked.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <future>

#include "actions/actions_fixture_test.h"
#include "actions/hook_pool_internal.h"
#include "actions/webhook_client_internal.h"

namespace sediment::actions {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

TEST_F(ActionsTest, ALuaLoopInsideItsMessageHandlerOrAPatternBombIsKilledAtTheDeadline) {
  for (const char* script : {"xpcall(function() while true do end end, function() while true do end end)",
                             "string.find(('a'):rep(60), ('a*'):rep(30)..'b')",
                             "local co = coroutine.wrap(function() while true do end end) co()"}) {
    PutLuaAction("a.yaml", "pre-commit", script);
    auto started = Clock::now();
    auto r = service_->Run(Record("pre-commit"));
    ASSERT_FALSE(r.ok()) << script;
    EXPECT_NE(r.status().message().find("ran longer than its timeout (2000ms) and was stopped"), std::string::npos)
        << r.status().message();
    EXPECT_LT(Clock::now() - started, std::chrono::milliseconds(4000)) << script;
  }
}

// A script's finalizers run after it said it is done (lua_close): one that
// blocks on a full pipe or loops must not keep the hook, or its slot.
TEST_F(ActionsTest, AFinalizerThatBlocksOrLoopsCannotOutliveTheRun) {
  for (const char* script : {"keep = setmetatable({}, {__gc = function() print(('x'):rep(1 << 20)) end})",
                             "keep = setmetatable({}, {__gc = function() while true do end end})"}) {
    PutLuaAction("a.yaml", "pre-commit", script);
    auto started = Clock::now();
    auto r = service_->Run(Record("pre-commit"));
    EXPECT_TRUE(r.ok()) << script << r.status().ToString();
    EXPECT_LT(Clock::now() - started, std::chrono::milliseconds(1500)) << script;
  }
}

TEST_F(ActionsTest, AHooksTimeoutMayLowerTheOperatorsCeilingButNotRaiseIt) {
  for (const auto& [timeout, at_most_ms] : std::vector<std::pair<std::string, int>>{{"24h", 4000}, {"300ms", 1500}}) {
    json hook = {
        {"id", "spin"}, {"type", "lua"}, {"properties", {{"script", "while true do end"}, {"timeout", timeout}}}};
    PutObject("_lakefs_actions/a.yaml",
              json({{"name", "Lua check"}, {"on", {{"pre-commit", nullptr}}}, {"hooks", json::array({hook})}}).dump());
    auto started = Clock::now();
    auto r = service_->Run(Record("pre-commit"));
    ASSERT_FALSE(r.ok());
    EXPECT_LT(Clock::now() - started, std::chrono::milliseconds(at_most_ms)) << timeout;
  }
}

TEST_F(ActionsTest, ASecretPassedToLuaIsMaskedInItsOutputAndItsError) {
  setenv("LAKEFSACTION_LUA_TOKEN", "t0ps3cret-value", 1);
  json hook = {{"id", "leak"},
               {"type", "lua"},
               {"properties",
                {{"script", "print('token=' .. args.t) print(args.t:sub(1, 6), args.t:sub(7)) error(args.t)"},
                 {"args", {{"t", "{{ ENV.LAKEFSACTION_LUA_TOKEN }}"}}}}}};
  PutObject("_lakefs_actions/a.yaml",
            json({{"name", "Lua check"}, {"on", {{"pre-commit", nullptr}}}, {"hooks", json::array({hook})}}).dump());
  auto r = service_->Run(Record("pre-commit"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find("t0ps3cret-value"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("*******"), std::string::npos) << r.status().message();
  std::string out = Output(RunIdOf(r.status()));
  EXPECT_NE(out.find("token=*******"), std::string::npos) << out;
  EXPECT_EQ(out.find("t0ps3cret-value"), std::string::npos) << out;
}

TEST_F(ActionsTest, AWebhookToAnInternalAddressIsRefusedByPolicyWithoutConnecting) {
  Receiver rx;
  ActionsOptions o = Options();
  o.webhook_allowed_hosts.clear();
  ASSERT_OK_AND_ASSIGN(service_, ActionsService::Make(catalog_.get(), kv_.get(), o));
  std::string port = rx.Url("").substr(std::string("http://127.0.0.1:").size());
  for (std::string host : {"127.0.0.1", "localhost", "2130706433", "0x7f000001", "127.1", "[::1]", "0.0.0.0",
                           "169.254.169.254", "10.0.0.1", "[::ffff:127.0.0.1]"}) {
    json hook = {{"id", "hk"}, {"type", "webhook"}, {"properties", {{"url", "http://" + host + ":" + port + "/ok"}}}};
    PutObject(
        "_lakefs_actions/h.yaml",
        json({{"name", "Webhook check"}, {"on", {{"pre-commit", nullptr}}}, {"hooks", json::array({hook})}}).dump());
    auto r = service_->Run(Record("pre-commit"));
    ASSERT_FALSE(r.ok()) << host;
    EXPECT_NE(r.status().message().find("refused by policy"), std::string::npos) << host << r.status().message();
  }
  EXPECT_TRUE(rx.Bodies().empty());
}

TEST(AddressPolicyTest, PublicAlwaysInternalOnlyWhenListed) {
  ASSERT_OK_AND_ASSIGN(auto none, AddressPolicy::Parse({}));
  EXPECT_TRUE(none.Allows("example.com", *ParseIp("93.184.216.34")));
  EXPECT_FALSE(none.Allows("localhost", *ParseIp("127.0.0.1")));
  EXPECT_FALSE(none.Allows("metadata", *ParseIp("169.254.169.254")));
  ASSERT_OK_AND_ASSIGN(auto some, AddressPolicy::Parse({"10.0.0.0/8", "hooks.internal", "*.corp"}));
  EXPECT_TRUE(some.Allows("x", *ParseIp("10.1.2.3")));
  EXPECT_FALSE(some.Allows("x", *ParseIp("192.168.0.1")));
  EXPECT_TRUE(some.Allows("HOOKS.internal", *ParseIp("192.168.0.1")));
  EXPECT_TRUE(some.Allows("ci.corp", *ParseIp("172.16.0.5")));
  EXPECT_FALSE(some.Allows("corp", *ParseIp("172.16.0.5")));
  EXPECT_FALSE(AddressPolicy::Parse({"10.0.0.0/33"}).ok());
  EXPECT_FALSE(AddressPolicy::Parse({"a b"}).ok());
}

// A receiver that accepts, reads, and answers with `reply` (or never).
class RawReceiver {
 public:
  explicit RawReceiver(std::function<void(int fd)> reply) : reply_(std::move(reply)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 16);
    thread_ = std::thread([this] {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      (void)!::recv(c, buf, sizeof(buf), 0);
      reply_(c);
      ::close(c);
    });
  }
  ~RawReceiver() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }

 private:
  std::function<void(int)> reply_;
  int fd_ = -1, port_ = 0;
  std::thread thread_;
};

TEST_F(ActionsTest, AWebhookAnswerOfEndlessHeadersIsCutOffAndARedirectIsNotFollowed) {
  RawReceiver endless([](int fd) {
    std::string head = "HTTP/1.1 200 OK\r\n";
    (void)!::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    std::string line(4096, 'x');
    for (int i = 0; i < 1 << 16; ++i) {
      std::string field = "X-" + std::to_string(i) + ": " + line + "\r\n";
      if (::send(fd, field.data(), field.size(), MSG_NOSIGNAL) < 0) return;
    }
  });
  Receiver target;
  RawReceiver redirect([&](int fd) {
    std::string answer = "HTTP/1.1 302 Found\r\nLocation: " + target.Url("/ok") + "\r\nContent-Length: 0\r\n\r\n";
    (void)!::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
  });
  for (const auto& [url, says] : std::vector<std::pair<std::string, std::string>>{
           {endless.Url(), "head is larger than 16384 bytes"}, {redirect.Url(), "status code: 302"}}) {
    json hook = {{"id", "hk"}, {"type", "webhook"}, {"properties", {{"url", url}}}};
    PutObject(
        "_lakefs_actions/h.yaml",
        json({{"name", "Webhook check"}, {"on", {{"pre-commit", nullptr}}}, {"hooks", json::array({hook})}}).dump());
    auto r = service_->Run(Record("pre-commit"));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().message();
  }
  EXPECT_TRUE(target.Bodies().empty()) << "the redirect was followed";
}

TEST(HookPoolTest, ARunWithoutAFreeSlotIsRefusedAtOnceAndPostRunsWaitForOne) {
  HookPool pool(/*workers=*/2, /*per_repository=*/1, /*post_queue=*/10);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> started;
  auto held = std::async(std::launch::async, [&] {
    return pool.RunAndWait("a", [&] {
      started.set_value();
      released.wait();
    });
  });
  started.get_future().wait();
  Status again = pool.RunAndWait("a", [] { ADD_FAILURE() << "ran without a slot"; });
  EXPECT_TRUE(IsBusy(again)) << again.ToString();
  EXPECT_NE(again.message().find("hook runs in progress"), std::string::npos);
  EXPECT_OK(pool.RunAndWait("b", [] {}));  // another repository has its own slot
  std::atomic<bool> post_ran{false};
  ASSERT_OK(pool.Submit("a", [&] { post_ran = true; }));
  EXPECT_FALSE(post_ran) << "a post run took repository a's only slot";
  release.set_value();
  EXPECT_OK(held.get());
  pool.WaitIdle();
  EXPECT_TRUE(post_ran);
  pool.Shutdown();
  EXPECT_TRUE(IsBusy(pool.RunAndWait("a", [] {})));
}

}  // namespace
}  // namespace sediment::actions
