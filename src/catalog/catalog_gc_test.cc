// Catalog garbage collection (catalog_gc.h): what nothing within retention
// reaches is deleted after the grace period; everything a branch, tag or
// retained commit reaches stays, also while writers and compactions run.
#include "catalog/catalog_gc.h"

#include <arrow/buffer.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "base/test_util.h"
#include "blob/blob.h"
#include "catalog/catalog.h"
#include "catalog/catalog_testing.h"

namespace sediment::catalog {
namespace {

class CatalogGcTest : public fixtures::CatalogFixture {
 protected:
  void SetUp() override {
    catalog_ = NewCatalog();
    ASSERT_NO_FATAL_FAILURE(CreateRepo("local://" + dir_.Sub("ns")));
    ns_ = *catalog_->RepositoryNamespace(*catalog_->GetRepository("repo"));
  }

  // An upload: data in the namespace, then the staged entry.
  void Upload(const std::string& path, const std::string& content, const std::string& branch = "main") {
    std::string address = "data/" + path + "-" + std::to_string(n_++);
    ASSERT_OK(ns_->Put(address, content));
    Entry e;
    e.address = address;
    e.checksum = content;
    e.size = static_cast<int64_t>(content.size());
    ASSERT_OK(catalog_->PutEntry("repo", branch, path, e));
  }
  GcReport Gc(GcOptions o) {
    auto r = CollectGarbage(catalog_.get(), "repo", o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : GcReport{};
  }
  static GcOptions NoGrace(bool dry_run = false) {
    GcOptions o;
    o.grace = Duration::zero();
    o.dry_run = dry_run;
    return o;
  }
  std::set<std::string> Files() {
    std::set<std::string> out;
    for (const auto& f : *ns_->List("")) out.insert(f.path);
    return out;
  }
  // Every entry a ref lists reads back, with its data present.
  void ExpectReadable(const std::string& ref) {
    ListOptions o;
    o.amount = 1000;
    auto page = catalog_->ListEntries("repo", ref, o);
    ASSERT_TRUE(page.ok()) << ref << ": " << page.status().ToString();
    for (const auto& item : page->items) {
      auto data = ns_->Get(item.entry.address);
      ASSERT_TRUE(data.ok()) << ref << " " << item.path << ": " << data.status().ToString();
      EXPECT_EQ((*data)->ToString(), item.entry.checksum);
    }
  }

  Namespace ns_;
  int n_ = 0;
};

TEST_F(CatalogGcTest, OnlyWhatNothingReachesIsDeletedAndADryRunDeletesNothing) {
  Upload("kept/committed", "c1");
  Upload("kept/overwritten", "old");
  Commit("first");
  Upload("kept/overwritten", "new");  // the old data is still in "first"
  Upload("kept/staged", "s1");
  ASSERT_OK(catalog_->CreateBranch("repo", "side", "main").status());
  Upload("side/only", "side1", "side");
  ASSERT_OK(catalog_->CompactStaging("repo", "main").status());
  Upload("gone/reset", "r1", "side");
  ASSERT_OK(catalog_->ResetPath("repo", "side", "gone/reset", /*prefix=*/false));
  ASSERT_OK(ns_->Put("data/orphan", "an upload whose entry never landed"));
  Upload("kept/after-compaction", "a1");
  Commit("second");  // the compacted meta-range is superseded

  auto before = Files();
  GcReport dry = Gc(NoGrace(/*dry_run=*/true));
  EXPECT_EQ(Files(), before) << "a dry run deletes nothing";
  EXPECT_GE(dry.deleted, 3) << "the reset object, the orphan, the superseded compaction";
  std::set<std::string> listed(dry.paths.begin(), dry.paths.end());
  EXPECT_TRUE(listed.count("data/orphan"));

  GcReport real = Gc(NoGrace());
  EXPECT_EQ(real.deleted, dry.deleted);
  EXPECT_EQ(std::set<std::string>(real.paths.begin(), real.paths.end()), listed);
  EXPECT_FALSE(Files().count("data/orphan"));
  for (const auto& p : listed) EXPECT_EQ(p.find("kept"), std::string::npos) << p;
  ExpectReadable("main");
  ExpectReadable("side");
  ExpectReadable("main~1");
  EXPECT_EQ(Gc(NoGrace()).deleted, 0) << "nothing left to collect";
}

// The lakeFS-form copies the metadata route keeps for presigned reads
// (`_lakefs_sst/{meta_range|range}/{id}`) live as long as their range file.
TEST_F(CatalogGcTest, KeptLakeFsFormCopiesGoWithTheirRange) {
  Upload("a", "v1");
  Commit("first");
  auto head = catalog_->GetCommit("repo", catalog_->GetBranch("repo", "main")->commit_id);
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  const std::string live = head->meta_range_id;
  const std::string dead(64, 'e');
  ASSERT_OK(ns_->Put("_lakefs/" + dead, "a range nothing refers to"));
  auto mr = catalog_->ranges().LoadMetaRange(ns_, live);
  ASSERT_TRUE(mr.ok() && !(*mr)->ranges.empty()) << mr.status().ToString();
  const std::string live_range = (*mr)->ranges.front().id;
  ASSERT_OK(ns_->Put("_lakefs_sst/meta_range/" + live, "copy of the live meta-range"));
  ASSERT_OK(ns_->Put("_lakefs_sst/range/" + live_range, "copy of a live range"));
  ASSERT_OK(ns_->Put("_lakefs_sst/range/" + dead, "copy of the dead range"));
  ASSERT_OK(ns_->Put("_lakefs_sst/meta_range/" + dead, "copy of it as a meta-range"));
  ASSERT_OK(ns_->Put("_lakefs_sst/other/" + dead, "not a kind the route makes"));
  ASSERT_OK(ns_->Put("_lakefs_sst/range/short", "not an id"));

  GcReport r = Gc(NoGrace());
  auto files = Files();
  EXPECT_FALSE(files.count("_lakefs/" + dead));
  EXPECT_FALSE(files.count("_lakefs_sst/range/" + dead)) << "its range is gone: so is the copy";
  EXPECT_FALSE(files.count("_lakefs_sst/meta_range/" + dead));
  EXPECT_TRUE(files.count("_lakefs_sst/meta_range/" + live)) << "its meta-range is the head's";
  EXPECT_TRUE(files.count("_lakefs_sst/range/" + live_range)) << "its range is the head's";
  EXPECT_TRUE(files.count("_lakefs_sst/other/" + dead)) << "not ours to take";
  EXPECT_TRUE(files.count("_lakefs_sst/range/short")) << "not ours to take";
  EXPECT_EQ(r.deleted, 3);
  ExpectReadable("main");
}

TEST_F(CatalogGcTest, HistoryOlderThanTheRetentionIsCollectedHeadsAndTagsNever) {
  Upload("a", "v1");
  Commit("old");
  std::string old_commit = catalog_->GetBranch("repo", "main")->commit_id;
  clock_->AdvanceSeconds(30 * 86400);
  Upload("a", "v2");
  Commit("new");
  GcOptions keep = NoGrace();
  keep.retention = std::chrono::hours(24 * 60);
  GcReport kept = Gc(keep);
  EXPECT_EQ(kept.deleted, 0) << "within 60 days: v1 stays; deleted " << (kept.paths.empty() ? "" : kept.paths[0]);
  ASSERT_OK(catalog_->CreateTag("repo", "v1-tag", old_commit, false).status());
  GcOptions drop = NoGrace();
  drop.retention = std::chrono::hours(24 * 21);
  EXPECT_EQ(Gc(drop).deleted, 0) << "a tag keeps the old commit";
  ASSERT_OK(catalog_->DeleteTag("repo", "v1-tag"));
  GcReport r = Gc(drop);
  EXPECT_GE(r.deleted, 1) << "v1 is only in a commit older than 21 days";
  ExpectReadable("main");
}

// lakeFS's GC rules: a default retention and a branch's own. A commit both
// branches reach keeps its objects for the longer of the two, wherever the
// walk met it first.
TEST_F(CatalogGcTest, TheRepositorysRulesGiveEachBranchItsRetention) {
  Upload("a", "shared-v1");
  Commit("shared");
  ASSERT_OK(catalog_->CreateBranch("repo", "zarchive", "main").status());
  clock_->AdvanceSeconds(86400);
  Upload("b", "main-v1");
  Commit("main old");
  Upload("c", "archive-v1", "zarchive");
  Commit("archive old", "zarchive");
  clock_->AdvanceSeconds(10 * 86400);
  Upload("a", "shared-v2");
  Upload("b", "main-v2");
  Commit("main new");
  Upload("a", "archive-v2", "zarchive");
  Upload("c", "archive-v2", "zarchive");
  Commit("archive new", "zarchive");
  const auto before = Files();

  EXPECT_TRUE(IsInvalidArgument(catalog_->SetGcRules("repo", GcRules{-1, {}})));
  EXPECT_TRUE(IsInvalidArgument(catalog_->SetGcRules("repo", GcRules{1, {{"no/such name", 3}}})));
  ASSERT_OK(catalog_->SetGcRules("repo", GcRules{5, {{"zarchive", 30}}}));
  ASSERT_EQ(catalog_->GetRepository("repo")->gc_rules, (GcRules{5, {{"zarchive", 30}}}));
  GcReport r = Gc(NoGrace());
  // main keeps 5 days: its 10-day-old "main old" loses b=main-v1; archive keeps
  // 30: "archive old" and "shared" (reached from both) keep theirs.
  EXPECT_EQ(r.deleted, 1) << (r.paths.empty() ? "" : r.paths[0]);
  auto after = Files();
  for (const auto& f : before) {
    if (after.count(f) == 0) EXPECT_EQ(f.rfind("data/b-", 0), 0u) << f;
  }
  ExpectReadable("main");
  ExpectReadable("zarchive");
  // A run that names its retention ignores the rules.
  GcOptions named = NoGrace();
  named.retention = std::chrono::hours(24);
  named.use_repository_rules = false;
  EXPECT_GE(Gc(named).deleted, 2);  // archive-v1 and shared-v1 go too
  ASSERT_OK(catalog_->SetGcRules("repo", std::nullopt));
  EXPECT_FALSE(catalog_->GetRepository("repo")->gc_rules.has_value());
}

TEST_F(CatalogGcTest, YoungFilesStayWhateverReachesThem) {
  ASSERT_OK(ns_->Put("data/just-written", "an upload in flight"));
  GcOptions o;
  o.grace = std::chrono::hours(1);
  GcReport r = Gc(o);
  EXPECT_EQ(r.deleted, 0);
  EXPECT_GE(r.kept_young, 1);
  EXPECT_TRUE(Files().count("data/just-written"));
}

// Writers, commits and staging compactions keep going while GC runs with a
// short grace: nothing any ref reaches is ever deleted.
TEST_F(CatalogGcTest, SafeWhileWritersCommitAndCompact) {
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 120; ++i) {
      Upload("w/" + std::to_string(i % 40), "v" + std::to_string(i));
      if (i % 10 == 9) Commit("c" + std::to_string(i));
      if (i % 25 == 24) (void)catalog_->CompactStaging("repo", "main");
    }
    done = true;
  });
  GcOptions o;
  o.grace = std::chrono::milliseconds(200);
  int runs = 0;
  while (!done) {
    GcReport r = Gc(o);
    EXPECT_EQ(r.failed, 0);
    runs++;
  }
  writer.join();
  EXPECT_GT(runs, 1) << "GC never ran while the writer wrote";
  // Once the grace has passed for the last writes, a run keeps nothing young.
  EXPECT_TRUE(testing::Eventually([&] {
    GcReport r = Gc(o);
    EXPECT_EQ(r.failed, 0);
    return r.kept_young == 0;
  }));
  ExpectReadable("main");
  ExpectReadable("main@");
  ExpectReadable("main~1");
}

}  // namespace
}  // namespace sediment::catalog
