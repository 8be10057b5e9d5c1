// Test-only: the fixture of the actions tests (a catalog with repository
// "repo", an ActionsService over it) and a webhook receiver on loopback.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "actions/actions.h"
#include "base/test_util.h"
#include "blob/blob.h"
#include "catalog/catalog_testing.h"

namespace sediment::actions {

class ActionsTest : public catalog::fixtures::CatalogFixture {
 protected:
  using json = nlohmann::json;

  // What SetUp starts the service with (a test may start another): on the
  // catalog's manual clock, so runs made one after another get ordered ids
  // when a test advances it.
  ActionsOptions Options() {
    ActionsOptions o;
    o.clock = clock_;
    o.hook_timeout_ms = 2000;
    o.lua_memory_bytes = 16 << 20;
    o.output_bytes = 4096;
    o.lua_sandbox = SEDIMENT_LUA_SANDBOX;
    o.webhook_allowed_hosts = {"127.0.0.1"};  // the receivers below
    return o;
  }

  void SetUp() override {
    CatalogFixture::SetUp();
    auto made = ActionsService::Make(catalog_.get(), kv_.get(), Options());
    ASSERT_OK(made.status());
    service_ = std::move(*made);
  }

  // Stages an object with `content` at `path` on `branch`.
  void PutObject(const std::string& path, const std::string& content, const std::string& branch = "main") {
    ASSERT_OK_AND_ASSIGN(auto repo, catalog_->GetRepository("repo"));
    ASSERT_OK_AND_ASSIGN(auto ns, catalog_->RepositoryNamespace(repo));
    std::string address = "data/obj" + std::to_string(objects_++);
    ASSERT_OK(ns->Put(address, content));
    catalog::Entry e;
    e.address = address;
    e.size = static_cast<int64_t>(content.size());
    e.checksum = "c" + std::to_string(objects_);
    ASSERT_OK(catalog_->PutEntry("repo", branch, path, e));
  }
  void PutLuaAction(const std::string& file, const std::string& event, const std::string& script,
                    const std::string& extra_hooks = "") {
    json hook = {{"id", "lua_hook"}, {"type", "lua"}, {"properties", {{"script", script}}}};
    PutObject("_lakefs_actions/" + file,
              json({{"name", "Action " + file}, {"on", {{event, nullptr}}}, {"hooks", json::array({hook})}}).dump() +
                  extra_hooks);
  }
  HookRecord Record(const std::string& event, const std::string& branch = "main") {
    HookRecord r;
    r.event_type = event;
    r.repository_id = "repo";
    r.branch_id = branch;
    r.source_ref = branch;
    r.commit_message = "msg";
    r.committer = "alice";
    r.user = "alice";
    return r;
  }
  // The output of the first hook of `run`.
  std::string Output(const std::string& run) {
    auto out = service_->TaskOutput("repo", run, "0000_0000");
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? *out : "";
  }
  // The run id a failed run names in its message.
  static std::string RunIdOf(const Status& st) {
    auto at = st.message().find("run id '");
    return at == std::string::npos ? "" : st.message().substr(at + 8, 20);
  }

  std::unique_ptr<ActionsService> service_;
  int objects_ = 0;
};

// A webhook receiver on loopback: records what it gets, answers as told.
class Receiver {
 public:
  Receiver() {
    server_.Post("/ok", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      bodies_.push_back(req.body);
      queries_.push_back(req.params.count("token") ? req.get_param_value("token") : "");
      res.set_content("fine", "text/plain");
    });
    server_.Post("/fail", [](const httplib::Request&, httplib::Response& res) {
      res.status = 500;
      res.set_content("Failed", "text/plain");
    });
    server_.Post("/slow", [](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(std::chrono::seconds(3));
      res.set_content("late", "text/plain");
    });
    server_.Post("/huge", [](const httplib::Request&, httplib::Response& res) {
      res.set_content_provider("text/plain", [](size_t offset, httplib::DataSink& sink) {
        static const std::string chunk(1 << 16, 'z');
        if (offset >= (size_t{1} << 30)) {
          sink.done();
          return true;
        }
        return sink.write(chunk.data(), chunk.size());
      });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  std::string Url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  std::vector<std::string> Bodies() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }
  std::vector<std::string> Queries() {
    std::lock_guard<std::mutex> lock(mu_);
    return queries_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> bodies_, queries_;
};

}  // namespace sediment::actions
