// Hooks fire from the catalog's operations (catalog/hooks.h), whatever calls
// them: these tests call the Catalog directly, with no HTTP in sight, and the
// actions service as its hook runner.
#include "actions/actions_fixture_test.h"

namespace sediment::actions {
namespace {

class CatalogHooksTest : public ActionsTest {
 protected:
  void SetUp() override {
    ActionsTest::SetUp();
    catalog_->SetHooks(service_.get());
  }
  void TearDown() override {
    catalog_->SetHooks(nullptr);
    ActionsTest::TearDown();
  }
  catalog::CommitParams Params(const std::string& message = "msg") {
    catalog::CommitParams p;
    p.committer = "alice";
    p.message = message;
    return p;
  }
  std::string Head(const std::string& branch = "main") {
    auto b = catalog_->GetBranch("repo", branch);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? b->commit_id : "";
  }
};

TEST_F(CatalogHooksTest, AFailingPreCommitHookStopsACommitMadeOutsideAnyApi) {
  PutLuaAction("a.yaml", "pre-commit", "error('not on main')");
  std::string before = Head();
  auto c = catalog_->CommitBranch("repo", "main", Params());
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(IsPreconditionFailed(c.status())) << c.status().ToString();
  EXPECT_NE(c.status().message().find("pre-commit hook aborted"), std::string::npos) << c.status().message();
  EXPECT_EQ(Head(), before) << "the branch did not move";
  ASSERT_OK_AND_ASSIGN(auto runs, service_->ListRuns("repo", "", "", "", 100));
  ASSERT_EQ(runs.items.size(), 1u);
  EXPECT_EQ(runs.items[0].event_type, "pre-commit");
}

TEST_F(CatalogHooksTest, APassingCommitRunsPrepareAndPreCommitThenPostCommitWithItsId) {
  PutLuaAction("a.yaml", "pre-commit", "print('checked')");
  PutLuaAction("b.yaml", "post-commit", "print('after')");
  ASSERT_OK_AND_ASSIGN(auto c, catalog_->CommitBranch("repo", "main", Params()));
  service_->WaitIdle();
  ASSERT_OK_AND_ASSIGN(auto runs, service_->ListRuns("repo", "", "", "", 100));
  std::vector<std::string> events;
  for (const auto& r : runs.items) events.push_back(r.event_type);
  EXPECT_NE(std::find(events.begin(), events.end(), "pre-commit"), events.end());
  EXPECT_NE(std::find(events.begin(), events.end(), "post-commit"), events.end());
  for (const auto& r : runs.items) EXPECT_EQ(r.commit_id, c.id) << r.event_type << " names the new commit";
}

TEST_F(CatalogHooksTest, TagsBranchesAndMergesAreHookedToo) {
  PutLuaAction("t.yaml", "pre-create-tag", "error('no tags')");
  Commit("first");
  auto tag = catalog_->CreateTag("repo", "v1", "main", false, "alice");
  EXPECT_TRUE(IsPreconditionFailed(tag.status())) << tag.status().ToString();
  EXPECT_TRUE(IsNotFound(catalog_->GetTag("repo", "v1").status())) << "no tag was made";

  PutLuaAction("b.yaml", "pre-create-branch", "error('no branches')");
  Commit("actions");
  auto branch = catalog_->CreateBranch("repo", "dev", "main", "alice");
  EXPECT_TRUE(IsPreconditionFailed(branch.status())) << branch.status().ToString();
  EXPECT_TRUE(IsNotFound(catalog_->GetBranch("repo", "dev").status()));
}

TEST_F(CatalogHooksTest, AFailingPreMergeHookLeavesTheDestinationWhereItWas) {
  ASSERT_OK(catalog_->CreateBranch("repo", "dev", "main", "alice").status());
  // A pre-merge hook's actions are read from the source (as lakeFS reads them).
  PutObject("a.txt", "a", "dev");
  PutObject(
      "_lakefs_actions/m.yaml",
      json({{"name", "frozen"},
            {"on", {{"pre-merge", nullptr}}},
            {"hooks",
             json::array({{{"id", "lua_hook"}, {"type", "lua"}, {"properties", {{"script", "error('frozen')"}}}}})}})
          .dump(),
      "dev");
  ASSERT_OK(catalog_->CommitBranch("repo", "dev", Params("on dev")).status());
  std::string before = Head();
  auto merged = catalog_->Merge("repo", "dev", "main", Params("merge"), catalog::MergeStrategy::kNone);
  EXPECT_TRUE(IsPreconditionFailed(merged.status())) << merged.status().ToString();
  EXPECT_EQ(Head(), before);
}

TEST_F(CatalogHooksTest, AHooksOwnCallsFireNoHooks) {
  PutLuaAction("a.yaml", "pre-commit", "error('never')");
  catalog::NoHooksOnThisThread scope;
  EXPECT_TRUE(catalog::NoHooksOnThisThread::Active());
  ASSERT_OK(catalog_->CommitBranch("repo", "main", Params()).status());
  ASSERT_OK_AND_ASSIGN(auto runs, service_->ListRuns("repo", "", "", "", 100));
  EXPECT_TRUE(runs.items.empty());
}

}  // namespace
}  // namespace sediment::actions
