// Importer: a cancel and the commit race for the end marker, and exactly one
// of them wins; an import's status reports what happened.
#include "catalog/importer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/test_util.h"
#include "catalog/catalog_testing.h"

namespace sediment::catalog {
namespace {

using sediment::kv::HookedKv;

class ImporterTest : public fixtures::CatalogFixture {
 protected:
  void SetUp() override {
    CatalogFixture::SetUp();
    importer_ = std::make_unique<Importer>(catalog_.get(), kv_, clock_);
    src_ = dir_.Sub("src");
    std::filesystem::create_directories(src_ + "/d");
    std::ofstream(src_ + "/a") << "alpha";
    std::ofstream(src_ + "/d/b") << "beta";
  }
  void TearDown() override { importer_->Stop(); }

  Result<std::string> Start(const std::string& destination = "in/") {
    CommitParams commit;
    commit.message = "import";
    return importer_->Start("repo", "main", {{"common_prefix", "local://" + src_ + "/", destination}}, commit, nullptr);
  }
  ImportStatus WaitForEnd(const std::string& id) {
    for (int i = 0; i < 1000; ++i) {
      auto s = importer_->GetStatus("repo", id);
      EXPECT_TRUE(s.ok()) << s.status().ToString();
      if (!s.ok() || s->completed || !s->error.empty()) return s.ok() ? *s : ImportStatus{};
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "import " << id << " did not end";
    return {};
  }
  std::string Head() { return catalog_->GetBranch("repo", "main")->commit_id; }

  std::unique_ptr<Importer> importer_;
  std::string src_;
};

TEST_F(ImporterTest, ACancelThatReachesTheEndMarkerFirstLeavesTheBranchAsItWas) {
  Put("in/old", "x");
  Commit("one");
  const std::string head = Head();
  // The cancel lands between the import's last look at its record and the
  // batch that would move the branch.
  auto marker = std::make_shared<std::string>();
  kv_->BeforeWrite(
      [marker](const std::string& key) {
        if (key.size() < 4 || key.compare(key.size() - 4, 4, "/end") != 0) return false;
        *marker = key;
        return true;
      },
      [this, marker] {
        const std::string id = marker->substr(std::string("c/imp/repo/").size(), marker->size() - 15);
        ASSERT_OK(importer_->Cancel("repo", id));
      });
  auto id = Start();
  ASSERT_OK(id.status());
  auto s = WaitForEnd(*id);
  EXPECT_FALSE(s.completed);
  EXPECT_EQ(s.error, "Canceled");
  EXPECT_EQ(Head(), head) << "a cancelled import committed";
  EXPECT_TRUE(catalog_->GetEntry("repo", "main", "in/old").ok());
  EXPECT_OK(importer_->Cancel("repo", *id));  // again: nothing changes
  EXPECT_EQ(importer_->GetStatus("repo", *id)->error, "Canceled");
}

TEST_F(ImporterTest, AFinishedImportCannotBeCancelledAndAFailedOneSaysWhy) {
  auto id = Start();
  ASSERT_OK(id.status());
  auto s = WaitForEnd(*id);
  ASSERT_TRUE(s.completed) << s.error;
  EXPECT_EQ(s.ingested_objects, 2);
  EXPECT_EQ(Head(), s.commit_id);
  auto e = catalog_->GetEntry("repo", "main", "in/d/b");
  ASSERT_OK(e.status());
  EXPECT_EQ(e->address, "local://" + src_ + "/d/b");
  EXPECT_EQ(e->size, 4);
  EXPECT_TRUE(IsConflict(importer_->Cancel("repo", *id)));

  // Uncommitted changes on the branch: the import fails, and says so.
  Put("staged", "y");
  auto dirty = Start("again/");
  ASSERT_OK(dirty.status());
  s = WaitForEnd(*dirty);
  EXPECT_FALSE(s.completed);
  EXPECT_NE(s.error.find("import error:"), std::string::npos) << s.error;
  EXPECT_NE(s.error.find("uncommitted"), std::string::npos) << s.error;
  // A failed import can be cancelled, as in lakeFS; its status keeps why it failed.
  ASSERT_OK(importer_->Cancel("repo", *dirty));
  ASSERT_OK(importer_->Cancel("repo", *dirty));
  auto cancelled = importer_->GetStatus("repo", *dirty);
  ASSERT_OK(cancelled.status());
  EXPECT_EQ(cancelled->error.rfind("Canceled; it had failed: import error:", 0), 0u) << cancelled->error;
  EXPECT_NE(cancelled->error.find("uncommitted"), std::string::npos) << cancelled->error;
  EXPECT_FALSE(cancelled->completed);
  EXPECT_TRUE(IsNotFound(importer_->Cancel("repo", "nosuchimport")));
}

TEST_F(ImporterTest, AStatusReadBetweenTheCommitAndItsRecordCountsEveryObject) {
  // The end marker says committed; the record is not updated yet. A status
  // read there reports completed, and the count of what was imported.
  auto committed = std::make_shared<std::atomic<bool>>(false);
  auto seen = std::make_shared<ImportStatus>();
  auto ran = std::make_shared<std::atomic<bool>>(false);  // set once `seen` is written
  kv_->BeforeWrite(
      [committed](const std::string& key) {
        if (key.size() < 4 || key.compare(key.size() - 4, 4, "/end") != 0) return false;
        *committed = true;
        return true;
      },
      [] {});
  kv_->BeforeWrite(
      [committed](const std::string& key) {
        return *committed && key.rfind("c/imp/repo/", 0) == 0 && key.find('/', 11) == std::string::npos;
      },
      [this, seen, ran] {
        struct Done {
          std::atomic<bool>* ran;
          ~Done() { *ran = true; }
        } done{ran.get()};
        auto ids = kv_->Scan("c/imp/repo/", "", 10);
        ASSERT_OK(ids.status());
        ASSERT_FALSE(ids->items.empty());
        std::string id = ids->items.front().key.substr(11);
        id = id.substr(0, id.find('/'));
        auto s = importer_->GetStatus("repo", id);
        ASSERT_OK(s.status());
        *seen = *s;
      });
  auto id = Start();
  ASSERT_OK(id.status());
  auto s = WaitForEnd(*id);
  ASSERT_TRUE(s.completed) << s.error;
  // A status read reports the import completed from its end marker on, so
  // the wait can end while the hook (before the record's write) still runs.
  for (int i = 0; i < 1000 && !*ran; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(*ran) << "the hook did not run between the commit and the record";
  EXPECT_TRUE(seen->completed);
  EXPECT_EQ(seen->ingested_objects, 2);
  EXPECT_EQ(seen->commit_id, s.commit_id);
}

TEST_F(ImporterTest, AnImportOfADeletedRepositoryCommitsNothingToItsSuccessor) {
  // Between the import's walk and its commit, the repository is deleted and
  // one of the same name made: the commit finds its record gone.
  kv_->BeforeWrite([](const std::string& key) { return key.size() > 4 && key.compare(key.size() - 4, 4, "/end") == 0; },
                   [this] {
                     ASSERT_OK(catalog_->DeleteRepository("repo"));
                     ASSERT_OK(catalog_->CreateRepository("repo", dir_.Sub("ns2"), "main", false).status());
                   });
  const std::string head_before = Head();
  auto id = Start();
  ASSERT_OK(id.status());
  for (int i = 0; i < 500 && importer_->GetStatus("repo", *id).ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(IsNotFound(importer_->GetStatus("repo", *id).status())) << "the deletion took the import's record";
  importer_->Stop();  // the job has ended
  EXPECT_TRUE(IsNotFound(catalog_->GetEntry("repo", "main", "in/a").status())) << "imported into the new repository";
  auto log = catalog_->Log("repo", "main", "", 10, false);
  ASSERT_OK(log.status());
  EXPECT_EQ(log->items.size(), 1u) << "only the new repository's first commit";
}

}  // namespace
}  // namespace sediment::catalog
