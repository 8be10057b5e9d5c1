// Actions: what an action file may say, what a hook that fails stops, what a
// Lua script cannot reach or exhaust, what a webhook receives and cannot make
// the server hold, and how runs are recorded and listed.
#include "actions/actions.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>

#include "actions/action.h"
#include "actions/actions_fixture_test.h"
#include "actions/keys.h"
#include "base/test_util.h"
#include "blob/blob.h"
#include "catalog/catalog_testing.h"
#include "catalog/keys.h"
#include "kv/hooked_kv_testing.h"

namespace sediment::actions {
namespace {

using nlohmann::json;

TEST(ActionFileTest, AValidFileParsesAndMatchesItsBranches) {
  auto a = ParseAction(R"Y(
name: Check formats
on:
  pre-commit:
    branches: [main, "feature-*"]
  pre-merge:
hooks:
  - id: check
    type: webhook
    properties:
      url: http://localhost:1/x
      timeout : 2s
)Y");
  ASSERT_OK(a.status());
  EXPECT_EQ(a->name, "Check formats");
  EXPECT_TRUE(Matches(*a, "pre-commit", "main"));
  EXPECT_TRUE(Matches(*a, "pre-commit", "feature-1"));
  EXPECT_FALSE(Matches(*a, "pre-commit", "dev"));
  EXPECT_TRUE(Matches(*a, "pre-merge", "anything"));
  EXPECT_FALSE(Matches(*a, "post-commit", "main"));
  EXPECT_EQ(a->hooks[0].properties["timeout"], "2s");
}

TEST(ActionFileTest, EachMistakeIsNamed) {
  struct Case {
    const char* yaml;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"on: {pre-commit: }\nhooks: []", "'name' is required: invalid action"},
           {"name: x!y\non: {pre-commit: }", "'name' is invalid"},
           {"name: act\nhooks: []", "'on' is required"},
           {"name: act\non: {pre-push: }", "event 'pre-push' is not supported"},
           {"name: act\non: {pre-create-tag: {branches: [main]}}", "'branches' is not supported in tag event types"},
           {"name: act\non: {pre-commit: }\nhooks: [{type: webhook, properties: {url: x}}]", "hook[0] missing ID"},
           {"name: act\non: {pre-commit: }\nhooks: [{id: h1, type: webhook, properties: {url: x}}, "
            "{id: h1, type: lua, properties: {script: x}}]",
            "hook[1] duplicate ID 'h1'"},
           {"name: act\non: {pre-commit: }\nhooks: [{id: h1, type: airflow, properties: {}}]",
            "type 'airflow' unknown"},
           {"name: act\non: {pre-commit: }\nhooks: [{id: h1, type: webhook, properties: {}}]",
            "'url' must be supplied"},
           {"name: act\non: {pre-commit: }\nhooks: [{id: h1, type: lua, properties: {args: {}}}]",
            "either 'script' or 'script_path'"},
           {"name: act\non: {pre-commit: }\nhooks: [{id: h1, type: lua, if: 'x == 1', properties: {script: s}}]",
            "'if' expression"},
           {"name: [unclosed", "yaml: line 1"},
       }) {
    auto a = ParseAction(c.yaml);
    ASSERT_FALSE(a.ok()) << c.yaml;
    EXPECT_TRUE(IsInvalidArgument(a.status()));
    EXPECT_NE(a.status().message().find(c.message), std::string::npos) << a.status().message();
  }
}

TEST(ActionFileTest, SecretsComeOnlyFromThePrefixedEnvironment) {
  setenv("LAKEFSACTION_TOKEN", "s3cret", 1);
  setenv("SEDIMENT_OTHER", "private", 1);
  bool secret = false;
  ASSERT_OK_AND_ASSIGN(auto v, ExpandEnv("Bearer {{ ENV.LAKEFSACTION_TOKEN }}", "LAKEFSACTION_", &secret));
  EXPECT_EQ(v, "Bearer s3cret");
  EXPECT_TRUE(secret);
  ASSERT_OK_AND_ASSIGN(v, ExpandEnv("{{ENV.SEDIMENT_OTHER}}", "LAKEFSACTION_", &secret));
  EXPECT_EQ(v, "");
  EXPECT_FALSE(ExpandEnv("{{ ENV.LAKEFSACTION_MISSING }}", "LAKEFSACTION_", &secret).ok());
}

TEST(ActionFileTest, GoDurations) {
  EXPECT_EQ(*ParseGoDuration("2s"), 2000);
  EXPECT_EQ(*ParseGoDuration("1m30s"), 90000);
  EXPECT_EQ(*ParseGoDuration("250ms"), 250);
  EXPECT_FALSE(ParseGoDuration("2 seconds").ok());
  EXPECT_FALSE(ParseGoDuration("").ok());
}

TEST_F(ActionsTest, NoActionFilesRunNothing) {
  ASSERT_OK_AND_ASSIGN(auto id, service_->Run(Record("pre-commit")));
  EXPECT_EQ(id, "");
  ASSERT_OK_AND_ASSIGN(auto page, service_->ListRuns("repo", "", "", "", 100));
  EXPECT_TRUE(page.items.empty());
}

TEST_F(ActionsTest, ALuaHookRunsFromTheBranchsStagingAndItsPrintsAreItsOutput) {
  PutLuaAction("a.yaml", "pre-commit", "print('event', action.event_type, action.branch_id, username, args == nil)");
  ASSERT_OK_AND_ASSIGN(auto id, service_->Run(Record("pre-commit")));
  ASSERT_EQ(id.size(), 20u);
  EXPECT_EQ(Output(id), "event\tpre-commit\tmain\talice\tfalse\n");
  ASSERT_OK_AND_ASSIGN(auto run, service_->GetRun("repo", id));
  EXPECT_TRUE(run.passed);
  EXPECT_EQ(run.event_type, "pre-commit");
  EXPECT_GT(run.end_micros, 0);
  // Other events and branches the action does not name run nothing.
  ASSERT_OK_AND_ASSIGN(auto none, service_->Run(Record("post-commit")));
  EXPECT_EQ(none, "");
}

TEST_F(ActionsTest, AFailingHookAbortsWithLakeFsMessageAndIsRecorded) {
  PutLuaAction("a.yaml", "pre-merge", "error('no PII allowed')");
  auto r = service_->Run(Record("pre-merge"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsPreconditionFailed(r.status()));
  const std::string& m = r.status().message();
  EXPECT_EQ(m.rfind("pre-merge hook aborted, run id '", 0), 0u) << m;
  EXPECT_NE(m.find("1 error occurred:\n\t* hook run id '0000_0000' failed on action 'Action a.yaml' hook 'lua_hook': "
                   "action failed: "),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("no PII allowed"), std::string::npos) << m;
  std::string id = RunIdOf(r.status());
  ASSERT_OK_AND_ASSIGN(auto run, service_->GetRun("repo", id));
  EXPECT_FALSE(run.passed);
  EXPECT_NE(Output(id).find("Error: action failed:"), std::string::npos);
}

TEST_F(ActionsTest, HookFailGivesItsMessageAndLaterHooksAreSkippedUnlessTheyAskForFailure) {
  PutObject("_lakefs_actions/a", R"Y(
name: Guard
on: {pre-commit: }
hooks:
  - {id: first, type: lua, properties: {script: "local h = require('hook'); h.fail('schema mismatch')"}}
  - {id: second, type: lua, properties: {script: "print('never')"}}
  - {id: cleanup, type: lua, if: "failure()", properties: {script: "print('cleaning up')"}}
)Y");
  auto r = service_->Run(Record("pre-commit"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("hook 'first': action failed: schema mismatch\n"), std::string::npos)
      << r.status().message();
  std::string id = RunIdOf(r.status());
  ASSERT_OK_AND_ASSIGN(auto tasks, service_->ListTasks("repo", id, "", 100));
  ASSERT_EQ(tasks.items.size(), 3u);
  EXPECT_FALSE(tasks.items[0].passed);
  EXPECT_EQ(tasks.items[1].start_micros, 0);  // skipped
  EXPECT_TRUE(tasks.items[2].passed);
  ASSERT_OK_AND_ASSIGN(auto skipped, service_->TaskOutput("repo", id, "0000_0001"));
  EXPECT_EQ(skipped, "");
  ASSERT_OK_AND_ASSIGN(auto cleanup, service_->TaskOutput("repo", id, "0000_0002"));
  EXPECT_EQ(cleanup, "cleaning up\n");
  EXPECT_TRUE(IsNotFound(service_->TaskOutput("repo", id, "0000_0009").status()));
}

TEST_F(ActionsTest, AnInvalidActionFileAbortsNamingTheFileAndRecordsNoRun) {
  PutObject("_lakefs_actions/broken.yaml", "name: act\non: {pre-commit: }\nhooks: [{id: hk, type: webhook}]");
  auto r = service_->Run(Record("pre-commit"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsPreconditionFailed(r.status()));
  EXPECT_NE(r.status().message().find("parsing file _lakefs_actions/broken.yaml: hook[0] type 'webhook': missing hook "
                                      "properties: invalid action"),
            std::string::npos)
      << r.status().message();
  ASSERT_OK_AND_ASSIGN(auto page, service_->ListRuns("repo", "", "", "", 100));
  EXPECT_TRUE(page.items.empty());
}

TEST_F(ActionsTest, LuaHasNoWayOutOfItsSandbox) {
  PutLuaAction("a.yaml", "pre-commit", R"Y(
print(io == nil, os == nil, debug == nil, package == nil, dofile == nil, loadfile == nil, string.dump == nil)
local f, err = load("\27Lua binary chunk")
print(f == nil, err ~= nil)
local ok = pcall(require, "io")
print(ok)
local g = load("return 1 + 1")
print(g())
)Y");
  ASSERT_OK_AND_ASSIGN(auto id, service_->Run(Record("pre-commit")));
  EXPECT_EQ(Output(id), "true\ttrue\ttrue\ttrue\ttrue\ttrue\ttrue\ntrue\ttrue\nfalse\n2\n");
}

TEST_F(ActionsTest, LuaCannotTakeMoreMemoryThanItsCap) {
  PutLuaAction("a.yaml", "pre-commit", "local t = {} for i = 1, 100 do t[i] = string.rep('x', 1 << 20) .. i end");
  auto r = service_->Run(Record("pre-commit"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("more than its memory limit"), std::string::npos) << r.status().message();
}

TEST_F(ActionsTest, ALuaHookThatNeverEndsIsCutOffEvenInsidePcall) {
  PutLuaAction("a.yaml", "pre-commit", "while true do pcall(function() while true do end end) end");
  auto started = std::chrono::steady_clock::now();
  auto r = service_->Run(Record("pre-commit"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ran longer than its timeout"), std::string::npos) << r.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
}

TEST_F(ActionsTest, PrintedOutputIsCutAtItsLimit) {
  PutLuaAction("a.yaml", "pre-commit", "for i = 1, 10000 do print(string.rep('y', 100)) end");
  ASSERT_OK_AND_ASSIGN(auto id, service_->Run(Record("pre-commit")));
  std::string out = Output(id);
  EXPECT_LT(out.size(), 4200u);
  EXPECT_NE(out.find("[output cut at 4096 bytes]"), std::string::npos);
}

TEST_F(ActionsTest, LuaLibrariesWork) {
  PutLuaAction("a.yaml", "pre-commit", R"Y(
local json = require("encoding/json")
local hex = require("encoding/hex")
local sha = require("crypto/sha256")
local strings = require("strings")
local path = require("path")
local t = json.unmarshal('{"a":[1,2,3],"b":"x"}')
print(#t.a, t.b, json.marshal({k = "v"}))
print(hex.encode(sha.digest("abc")))
print(table.concat(strings.split("a,b,c", ","), "|"), strings.has_prefix("table/x", "table/"))
print(path.parse("tables/users/part-0.parquet").base_name, path.join("/", "a", "b"))
print(json.marshal(array()))
)Y");
  ASSERT_OK_AND_ASSIGN(auto id, service_->Run(Record("pre-commit")));
  EXPECT_EQ(Output(id),
            "3\tx\t{\"k\":\"v\"}\n\n"
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n"
            "a|b|c\ttrue\n"
            "part-0.parquet\ta/b\n"
            "[]\n\n");
}

TEST_F(ActionsTest, ScriptsCannotMakeCxxWorkOrMemoryBeyondTheirCap) {
  PutLuaAction("a.yaml", "pre-commit", R"Y(
local json = require("encoding/json")
local strings = require("strings")
local path = require("path")
local t = {} for i = 1, 60 do t = {t, t} end
print(pcall(json.marshal, t))
print(pcall(strings.replace, string.rep("a", 1000000), "a", string.rep("b", 1000000), -1))
print(pcall(path.parse, "a", ""), pcall(path.is_hidden, "a", ""), pcall(path.join, "", "a"))
print(strings.replace("ab", "", "-", -1), strings.replace("aaa", "a", "b", 2))
x = 1
print(load("return x + 1")())
)Y");
  auto started = std::chrono::steady_clock::now();
  ASSERT_OK_AND_ASSIGN(auto id, service_->Run(Record("pre-commit")));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  std::string out = Output(id);
  EXPECT_NE(out.find("false\t"), std::string::npos) << out;
  EXPECT_NE(out.find("too large to convert to JSON"), std::string::npos) << out;
  EXPECT_NE(out.find("strings.replace: the result would exceed"), std::string::npos) << out;
  EXPECT_NE(out.find("false\tfalse\tfalse\t"), std::string::npos) << out;
  EXPECT_NE(out.find("-a-b-\tbba\n2\n"), std::string::npos) << out;
}

TEST_F(ActionsTest, AYamlBombIsRefused) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [*" + static_cast<char>(c - 1);
    for (int i = 0; i < 9; ++i) bomb += std::string(", *") + static_cast<char>(c - 1);
    bomb += "]\n";
  }
  auto a = ParseAction(bomb);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("too many values"), std::string::npos) << a.status().message();
}

TEST_F(ActionsTest, AScriptThatIsNotAStringFailsTheHookNotTheServer) {
  PutObject(
      "_lakefs_actions/a.yaml",
      "name: Odd\non: {pre-commit: }\nhooks: [{id: odd, type: lua, properties: {script: null, script_path: x.lua}}]");
  auto r = service_->Run(Record("pre-commit"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("script_path needs the lakeFS API"), std::string::npos) << r.status().message();
}

TEST_F(ActionsTest, RunsListNewestFirstByBranchAndByCommitAndPostRunsGiveThePreRunItsCommit) {
  PutLuaAction("a.yaml", "pre-commit", "print(1)");
  PutLuaAction("b.yaml", "post-commit", "print(2)");
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(auto id, service_->Run(Record("pre-commit")));
    ids.push_back(id);
    clock_->Advance(std::chrono::milliseconds(1));  // the next run is newer
  }
  ASSERT_OK_AND_ASSIGN(auto page, service_->ListRuns("repo", "", "", "", 2));
  ASSERT_EQ(page.items.size(), 2u);
  EXPECT_TRUE(page.has_more);
  EXPECT_EQ(page.items[0].run_id, ids[2]);
  EXPECT_EQ(page.items[1].run_id, ids[1]);
  ASSERT_OK_AND_ASSIGN(page, service_->ListRuns("repo", "main", "", ids[1], 10));
  ASSERT_EQ(page.items.size(), 1u);
  EXPECT_EQ(page.items[0].run_id, ids[0]);
  EXPECT_FALSE(page.has_more);
  EXPECT_TRUE(IsInvalidArgument(service_->ListRuns("repo", "main", "abc", "", 10).status()));

  HookRecord post = Record("post-commit");
  post.commit_id = "c0ffee";
  post.source_ref = "main";
  post.pre_run_id = ids[2];
  service_->RunPostAsync(post, /*set_pre_run_commit=*/true);
  service_->WaitIdle();
  ASSERT_OK_AND_ASSIGN(page, service_->ListRuns("repo", "", "c0ffee", "", 10));
  ASSERT_EQ(page.items.size(), 2u);
  EXPECT_EQ(page.items[0].event_type, "post-commit");
  EXPECT_EQ(page.items[1].run_id, ids[2]);
  EXPECT_EQ(page.items[1].commit_id, "c0ffee");
}

// Whether the KV store holds any record of runs of repository `repo`.
bool HasRunRecords(kv::KvStore& kv, const std::string& repo) {
  for (const auto& p : RepositoryKeyPrefixes(repo)) {
    auto page = kv.Scan(p, "", 1);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    if (!page.ok() || !page->items.empty()) return true;
  }
  return false;
}

// The catalog spells no key of ours: it deletes what ActionsService::Make
// registered (Catalog::AddRepositoryKeyOwner).
TEST_F(ActionsTest, RunsGoWithTheirRepository) {
  PutLuaAction("a.yaml", "pre-commit", "print(1)");
  ASSERT_OK(service_->Run(Record("pre-commit")).status());
  ASSERT_TRUE(HasRunRecords(*kv_, "repo"));
  ASSERT_OK(catalog_->DeleteRepository("repo"));
  EXPECT_FALSE(HasRunRecords(*kv_, "repo"));
  CreateRepo(dir_.Sub("ns2"));
  ASSERT_OK_AND_ASSIGN(auto page, service_->ListRuns("repo", "", "", "", 100));
  EXPECT_TRUE(page.items.empty());
}

TEST_F(ActionsTest, RunsGoWithTheirRepositoryWhenItsCleanupIsFinishedInTheBackground) {
  PutLuaAction("a.yaml", "pre-commit", "print(1)");
  ASSERT_OK(service_->Run(Record("pre-commit")).status());
  // Cut off at the runs, after the catalog's own records.
  kv_->FailWrite(kv::HookedKv::Prefix(RepositoryKeyPrefixes("repo")[0]),
                 Status::IOError("injected: store unavailable"));
  ASSERT_OK(catalog_->DeleteRepository("repo"));
  ASSERT_TRUE(HasRunRecords(*kv_, "repo")) << "the cleanup was not cut off";
  ASSERT_OK(catalog_->DropDeadTokens());  // the background pass
  EXPECT_FALSE(HasRunRecords(*kv_, "repo"));
  EXPECT_TRUE(IsNotFound(kv_->Get(catalog::RepoDeletionKey("repo")).status())) << "the deletion is not finished";
}

TEST_F(ActionsTest, RunIdsSortNewestFirst) {
  std::string a = ActionsService::NewRunId(clock_->Now());
  clock_->Advance(std::chrono::microseconds(1));
  std::string b = ActionsService::NewRunId(clock_->Now());
  EXPECT_EQ(a.size(), 20u);
  EXPECT_LT(b, a);
}

TEST_F(ActionsTest, AWebhookGetsTheEventAndSecretsAreMaskedInItsOutput) {
  Receiver rx;
  setenv("LAKEFSACTION_TOKEN", "s3cret", 1);
  PutObject("_lakefs_actions/hook.yaml",
            json({{"name", "Notify"},
                  {"on", {{"pre-merge", {{"branches", {"main"}}}}}},
                  {"hooks",
                   {{{"id", "notify"},
                     {"type", "webhook"},
                     {"properties",
                      {{"url", rx.Url("/ok")}, {"query_params", {{"token", "{{ ENV.LAKEFSACTION_TOKEN }}"}}}}}}}}})
                .dump());
  HookRecord r = Record("pre-merge");
  r.commit_id = "abc";
  r.merge_source = "feature";
  r.commit_metadata = {{"k", "v"}};
  ASSERT_OK_AND_ASSIGN(auto id, service_->Run(r));
  ASSERT_EQ(rx.Bodies().size(), 1u);
  json body = json::parse(rx.Bodies()[0]);
  EXPECT_EQ(body["event_type"], "pre-merge");
  EXPECT_EQ(body["action_name"], "Notify");
  EXPECT_EQ(body["hook_id"], "notify");
  EXPECT_EQ(body["repository_id"], "repo");
  EXPECT_EQ(body["branch_id"], "main");
  EXPECT_EQ(body["commit_id"], "abc");
  EXPECT_EQ(body["merge_source"], "feature");
  EXPECT_EQ(body["committer"], "alice");
  EXPECT_EQ(body["commit_metadata"]["k"], "v");
  EXPECT_FALSE(body.contains("tag_id"));
  EXPECT_EQ(std::string(body["event_time"]).size(), 20u);
  EXPECT_EQ(rx.Queries()[0], "s3cret");
  std::string out = Output(id);
  EXPECT_NE(out.find("token: *******"), std::string::npos) << out;
  EXPECT_EQ(out.find("s3cret"), std::string::npos) << out;
  EXPECT_NE(out.find("HTTP/1.1 200"), std::string::npos) << out;
}

TEST_F(ActionsTest, AWebhookThatFailsOrHangsStopsTheOperation) {
  Receiver rx;
  PutObject("_lakefs_actions/f",
            json({{"name", "Fail"},
                  {"on", {{"pre-commit", nullptr}}},
                  {"hooks", {{{"id", "hk"}, {"type", "webhook"}, {"properties", {{"url", rx.Url("/fail")}}}}}}})
                .dump());
  auto r = service_->Run(Record("pre-commit"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("action failed: webhook request failed (status code: 500)"), std::string::npos)
      << r.status().message();
  PutObject(
      "_lakefs_actions/f",
      json({{"name", "Fail"},
            {"on", {{"pre-commit", nullptr}}},
            {"hooks",
             {{{"id", "hk"}, {"type", "webhook"}, {"properties", {{"url", rx.Url("/slow")}, {"timeout", "500ms"}}}}}}})
          .dump());
  auto started = std::chrono::steady_clock::now();
  r = service_->Run(Record("pre-commit"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("timeout"), std::string::npos) << r.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(2500));
}

TEST_F(ActionsTest, AWebhookCannotMakeTheServerHoldItsHugeAnswer) {
  Receiver rx;
  PutObject("_lakefs_actions/h",
            json({{"name", "Huge"},
                  {"on", {{"pre-commit", nullptr}}},
                  {"hooks", {{{"id", "hk"}, {"type", "webhook"}, {"properties", {{"url", rx.Url("/huge")}}}}}}})
                .dump());
  ASSERT_OK_AND_ASSIGN(auto id, service_->Run(Record("pre-commit")));
  std::string out = Output(id);
  EXPECT_LE(out.size(), 4200u);  // the output limit; the answer was read no further than 64 KiB
}

}  // namespace
}  // namespace sediment::actions
