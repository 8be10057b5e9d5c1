#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "auth/auth.h"
#include "base/test_util.h"
#include "catalog/catalog.h"
#include "catalog/staging_compactor.h"
#include "kv/kv.h"
#include "server/app.h"
#include "server/http/errors.h"
#include "server/http/http_server.h"

namespace sediment::server {
namespace {

TEST(ErrorsTest, OneMappingForEveryCode) {
  struct Case {
    Status st;
    int code;
  };
  std::vector<Case> cases = {
      {NotFound("x"), 404},           {Conflict("x"), 409},
      {PreconditionFailed("x"), 412}, {Busy("x"), 503},
      {InvalidArgument("x"), 400},    {Unauthorized("x"), 401},
      {Forbidden("x"), 403},          {Unavailable("x"), 503},
      {Status::IOError("disk"), 500}, {Status::Invalid("x"), 500},
  };
  for (const auto& c : cases) EXPECT_EQ(HttpStatusFor(c.st), c.code) << c.st.ToString();
}

TEST(ErrorsTest, ReplyErrorWritesJsonMessage) {
  httplib::Response res;
  ReplyError(res, NotFound("table eth.logs not found"));
  EXPECT_EQ(res.status, 404);
  EXPECT_EQ(nlohmann::json::parse(res.body)["message"], "table eth.logs not found");
  ReplyError(res, Busy("no worker free"));
  EXPECT_EQ(res.status, 503);
  EXPECT_EQ(res.get_header_value("Retry-After"), "1");
}

class AppTest : public ::testing::Test {
 protected:
  Config MakeConfig() {
    Config c = *Config::Load("", {});
    c.actions.lua_sandbox = SEDIMENT_LUA_SANDBOX;
    c.server.listen = "127.0.0.1:0";
    c.query.flight_listen = c.query.jsonl_listen = "127.0.0.1:0";
    c.storage.data_dir = dir_.Sub("data");
    return c;
  }
  testing::TempDir dir_;
};

TEST_F(AppTest, HealthcheckMetricsAndUnknownRoute) {
  App app(MakeConfig());
  ASSERT_TRUE(app.Start().ok());
  httplib::Client client("127.0.0.1", app.port());
  auto res = client.Get("/api/v1/healthcheck");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 204);

  res = client.Get("/api/v1/nope");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(nlohmann::json::parse(res->body)["message"], "no route for GET /api/v1/nope");

  res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->get_header_value("Content-Type").find("text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(res->body.find("http_requests_total{method=\"GET\",route=\"server Healthcheck\",code=\"204\"} 1"),
            std::string::npos)
      << res->body;
  EXPECT_NE(res->body.find("sediment_build_info{version="), std::string::npos);

  // Embedded defaults: RocksDB and objects under the data dir.
  EXPECT_TRUE(std::filesystem::is_directory(dir_.Sub("data/kv")));
  EXPECT_TRUE(std::filesystem::is_directory(dir_.Sub("data/objects")));
  app.Stop();
}

TEST_F(AppTest, PortInUseFailsBeforeCreatingAnything) {
  App first(MakeConfig());
  ASSERT_TRUE(first.Start().ok());
  Config second_config = MakeConfig();
  second_config.server.listen = "127.0.0.1:" + std::to_string(first.port());
  second_config.storage.data_dir = dir_.Sub("second");
  App second(second_config);
  Status st = second.Start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("Address already in use"), std::string::npos) << st.ToString();
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("second")));
}

TEST_F(AppTest, DataDirUnderAFileIsAClearError) {
  std::filesystem::create_directories(dir_.path());
  { std::ofstream(dir_.Sub("file")) << "x"; }
  Config c = MakeConfig();
  c.storage.data_dir = dir_.Sub("file/data");
  App app(c);
  Status st = app.Start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot create data directory " + dir_.Sub("file/data")), std::string::npos)
      << st.ToString();
}

TEST_F(AppTest, InjectedMemoryKvNeedsNoKvDirectory) {
  AppDeps deps;
  deps.kv = kv::NewMemoryStore();
  App app(MakeConfig(), deps);
  ASSERT_TRUE(app.Start().ok());
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("data/kv")));
  EXPECT_EQ(app.kv().Describe(), "mem");
}

// POST .../compact answers 202 and runs in the background, or 503 when no
// worker is free; GET reports what the branch holds.
TEST_F(AppTest, CompactAnswers202Or503WhenNoWorkerIsFree) {
  Config config = MakeConfig();
  config.graveler.compaction.workers = 1;
  App app(config);
  ASSERT_TRUE(app.Start().ok());
  ASSERT_TRUE(app.auth().Setup("admin", "AKIATEST", "test-secret").ok());
  auto& cat = app.catalog();
  auto created = cat.CreateRepository("repo", dir_.Sub("data/namespaces/repo"), "main", false);  // the default root
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_TRUE(cat.CreateBranch("repo", "other", "main").ok());
  catalog::Entry e;
  e.checksum = "c";
  e.address = "data/x";
  ASSERT_TRUE(cat.PutEntry("repo", "main", "a", e).ok());
  ASSERT_TRUE(cat.PutEntry("repo", "other", "b", e).ok());
  std::promise<void> sealed, release;
  auto release_future = release.get_future().share();
  auto once = std::make_shared<std::atomic<bool>>(false);
  app.staging_compactor().SetAfterSealHookForTesting([&, once] {
    if (once->exchange(true)) return;
    sealed.set_value();
    release_future.wait();
  });
  httplib::Client client("127.0.0.1", app.port());
  client.set_basic_auth("AKIATEST", "test-secret");
  auto res = client.Post("/api/v1/repositories/repo/branches/main/compact");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 202);
  sealed.get_future().wait();
  res = client.Post("/api/v1/repositories/repo/branches/other/compact");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503) << res->body;
  EXPECT_NE(res->body.find("no staging-compaction worker is free"), std::string::npos) << res->body;
  release.set_value();
  EXPECT_TRUE(testing::Eventually([&] {
    res = client.Get("/api/v1/repositories/repo/branches/main/compact");
    return res && nlohmann::json::parse(res->body)["compacted"].get<bool>();
  }));
  auto j = nlohmann::json::parse(res->body);
  EXPECT_EQ(j["meta_range_id"].get<std::string>().size(), 64u);
  // The refused branch can be compacted once the worker is free (it frees
  // its slot just after publishing what it compacted, so this may take a try).
  EXPECT_TRUE(testing::Eventually([&] {
    res = client.Post("/api/v1/repositories/repo/branches/other/compact");
    return res && res->status == 202;
  }));
  app.Stop();
}

TEST(HttpServerTest, StopWaitsForInFlightRequests) {
  MetricsRegistry metrics;
  HttpServer server(&metrics);
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  server.Handle("GET", "/slow", "/slow", [&](const httplib::Request&, httplib::Response& res) {
    entered.set_value();
    released.wait();  // in flight until the test lets it finish, while Stop() runs
    res.set_content("done", "text/plain");
  });
  server.Handle("GET", "/throw", "/throw",
                [](const httplib::Request&, httplib::Response&) { throw std::runtime_error("boom"); });
  ASSERT_TRUE(server.Bind("127.0.0.1", 0).ok());
  server.Start();

  httplib::Client thrower("127.0.0.1", server.port());
  auto res = thrower.Get("/throw");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 500);
  EXPECT_EQ(nlohmann::json::parse(res->body)["message"], "internal error: boom");

  auto slow = std::async(std::launch::async, [&] {
    httplib::Client client("127.0.0.1", server.port());
    auto r = client.Get("/slow");
    return r ? r->body : std::string("<no response>");
  });
  entered.get_future().wait();
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    server.Stop();
    stopped = true;
  });
  EXPECT_FALSE(stopped.load()) << "Stop() returned while a request was in flight";
  release.set_value();
  stopper.join();
  EXPECT_EQ(slow.get(), "done");
}

}  // namespace
}  // namespace sediment::server
