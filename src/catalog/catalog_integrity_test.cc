// Integrity rules of the catalog under concurrency and interruption, one test
// each: a racing operation is run to completion at the exact moment another one
// writes (HookedKv), or an operation is cut off by a failed write, and the test
// states what must hold afterwards.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/metrics.h"
#include "base/test_util.h"
#include "catalog/catalog.h"
#include "catalog/catalog_testing.h"
#include "catalog/keys.h"
#include "catalog/staging_compactor.h"
#include "kv/hooked_kv_testing.h"
#include "kv/kv.h"
#include "kv/lease.h"

namespace sediment::catalog {
namespace {

using fixtures::MakeEntry;

using sediment::kv::HookedKv;

// A write to the staged entry of `path`, in any token.
HookedKv::KeyMatch StagedPath(const std::string& path) {
  return [path](const std::string& key) {
    return key.rfind("c/s/", 0) == 0 && key.size() > path.size() &&
           key.compare(key.size() - path.size() - 1, std::string::npos, "/" + path) == 0;
  };
}

class CatalogIntegrityTest : public fixtures::CatalogFixture {
 protected:
  void Compact(const std::string& branch = "main") {
    auto r = catalog_->CompactStaging("repo", branch);
    ASSERT_OK(r.status());
    ASSERT_EQ(r->outcome, CompactionOutcome::kCompleted);
  }
  // The checksum a path reads as on a ref, or "-" if absent.
  std::string Read(const std::string& path, const std::string& ref = "main") {
    auto e = catalog_->GetEntry("repo", ref, path);
    if (IsNotFound(e.status())) return "-";
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? e->checksum : "error";
  }
  std::vector<std::string> Diff(const std::string& branch = "main") {
    std::vector<std::string> out;
    auto page = catalog_->DiffUncommitted("repo", branch, {"", "", "", 1000});
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    if (page.ok()) {
      for (const auto& d : page->items) out.push_back(d.type + ":" + d.path);
    }
    return out;
  }
  std::vector<std::string> KeysUnder(const std::string& prefix) {
    std::vector<std::string> out;
    EXPECT_TRUE(kv_->ScanAll(prefix, "",
                             [&](const kv::KeyValue& kv) -> Result<bool> {
                               out.push_back(kv.key);
                               return true;
                             })
                    .ok());
    return out;
  }
  std::string Token(const std::string& branch = "main") { return catalog_->GetBranch("repo", branch)->staging_token; }
};

// --- 1. ResetPath racing a staging compaction or a commit -----------------------

// A compaction sealed the token holding the change and folded it; the reset
// lands before the compaction swaps its result in. The reset must survive it.
TEST_F(CatalogIntegrityTest, ResetPathIsNotUndoneByACompactionThatFoldedTheChangeFirst) {
  Put("target", "orig");
  Commit("base");
  Put("target", "changed");
  Put("other", "x");
  // The swap is the compaction's first write of a drop record (c/d/...).
  kv_->BeforeWrite(HookedKv::Prefix("c/d/"), [&] { ASSERT_OK(catalog_->ResetPath("repo", "main", "target", false)); });
  Compact();
  EXPECT_EQ(Read("target"), "orig") << "the reset was lost to the compaction";
  EXPECT_EQ(Diff(), (std::vector<std::string>{"added:other"}));

  // The same with a prefix.
  Put("dir/a", "1");
  Put("dir/b", "1");
  kv_->BeforeWrite(HookedKv::Prefix("c/d/"), [&] { ASSERT_OK(catalog_->ResetPath("repo", "main", "dir/", true)); });
  Compact();
  EXPECT_EQ(Read("dir/a"), "-");
  EXPECT_EQ(Read("dir/b"), "-");
  EXPECT_EQ(Diff(), (std::vector<std::string>{"added:other"}));
}

// On a compacted branch the reset restages the committed value; a compaction
// that seals, folds and drops the reset's token first must not swallow it.
TEST_F(CatalogIntegrityTest, ResetPathOnACompactedBranchIsNotLostInADroppedToken) {
  Put("target", "orig");
  Commit("base");
  Put("target", "changed");
  Compact();
  Put("other", "x");  // something for the racing compaction to fold
  kv_->BeforeWrite(StagedPath("target"), [&] {
    Compact();
    ASSERT_OK(catalog_->DropDeadTokens());
  });
  ASSERT_OK(catalog_->ResetPath("repo", "main", "target", false));
  EXPECT_EQ(Read("target"), "orig") << "the reset was written into a dropped token";
  EXPECT_EQ(Diff(), (std::vector<std::string>{"added:other"}));
}

// A commit racing a reset cannot lose it: the branch ends up as if the commit
// came first (the change committed, nothing left uncommitted). This held before.
TEST_F(CatalogIntegrityTest, ResetPathRacingACommitEndsAsIfTheCommitCameFirst) {
  Put("target", "orig");
  Commit("base");
  Put("target", "changed");
  Compact();
  kv_->BeforeWrite(StagedPath("target"), [&] { Commit("raced"); });
  ASSERT_OK(catalog_->ResetPath("repo", "main", "target", false));
  EXPECT_EQ(Read("target"), Read("target", "main@"));
  EXPECT_TRUE(Diff().empty());
}

// --- 2. Writes landing in an already-dropped token -------------------------------

TEST_F(CatalogIntegrityTest, AWriteThatLandsInADroppedTokenIsSweptByTheDropper) {
  Put("a", "1");
  std::string dead = Token();
  // Before the write lands, a compaction seals and swaps the token and the dropper removes it.
  kv_->BeforeWrite(StagedPath("late"), [&] {
    Compact();
    ASSERT_OK(catalog_->DropDeadTokens());
    ASSERT_TRUE(KeysUnder(StagingPrefix(dead)).empty());
  });
  Put("late", "v");
  EXPECT_EQ(Read("late"), "v") << "the write was redone in the new token";
  ASSERT_OK(catalog_->DropDeadTokens());
  EXPECT_TRUE(KeysUnder(StagingPrefix(dead)).empty()) << "the write into the dropped token leaked";

  // The same when the branch itself is deleted under the write.
  ASSERT_OK(catalog_->CreateBranch("repo", "dev", "main").status());
  std::string dev = Token("dev");
  kv_->BeforeWrite(StagedPath("gone"), [&] {
    ASSERT_OK(catalog_->DeleteBranch("repo", "dev"));
    ASSERT_OK(catalog_->DropDeadTokens());
  });
  EXPECT_TRUE(IsNotFound(catalog_->PutEntry("repo", "dev", "gone", MakeEntry("v"))));
  ASSERT_OK(catalog_->DropDeadTokens());
  EXPECT_TRUE(KeysUnder(StagingPrefix(dev)).empty()) << "the write into the deleted branch's token leaked";
  EXPECT_TRUE(KeysUnder("c/d/").empty());
}

// --- 3. If-None-Match: * is atomic -------------------------------------------------

TEST_F(CatalogIntegrityTest, IfAbsentUploadsOfOnePathHaveOneWinner) {
  // The other upload lands between this one's check and its write.
  kv_->BeforeWrite(StagedPath("obj"), [&] {
    ASSERT_OK(catalog_->PutEntry("repo", "main", "obj", MakeEntry("first"), /*if_absent=*/true));
  });
  Status second = catalog_->PutEntry("repo", "main", "obj", MakeEntry("second"), /*if_absent=*/true);
  EXPECT_TRUE(IsPreconditionFailed(second)) << second.ToString();
  EXPECT_NE(second.message().find("\"obj\" already exists"), std::string::npos) << second.message();
  EXPECT_EQ(Read("obj"), "first");

  // The same when a compaction moves the first upload into a sealed token meanwhile.
  kv_->BeforeWrite(StagedPath("obj2"), [&] {
    ASSERT_OK(catalog_->PutEntry("repo", "main", "obj2", MakeEntry("first"), /*if_absent=*/true));
    Compact();
  });
  second = catalog_->PutEntry("repo", "main", "obj2", MakeEntry("second"), /*if_absent=*/true);
  EXPECT_TRUE(IsPreconditionFailed(second)) << second.ToString();
  EXPECT_EQ(Read("obj2"), "first");
}

// Exists means: on the branch as read — staging, sealed tokens, a compacted
// meta-range, the commit — with tombstones hiding what is below them.
TEST_F(CatalogIntegrityTest, IfAbsentSeesEveryLayerAndTombstones) {
  Put("committed", "c");
  Put("committed-deleted", "c");
  Put("compacted-deleted", "c");
  Commit("base");
  ASSERT_OK(catalog_->DeleteEntry("repo", "main", "committed-deleted"));
  ASSERT_OK(catalog_->DeleteEntry("repo", "main", "compacted-deleted"));
  Put("compacted", "m");
  Compact();
  Put("staged", "s");
  auto put = [&](const std::string& path) {
    return catalog_->PutEntry("repo", "main", path, MakeEntry("new"), /*if_absent=*/true);
  };
  EXPECT_TRUE(IsPreconditionFailed(put("committed")));
  EXPECT_TRUE(IsPreconditionFailed(put("compacted")));
  EXPECT_TRUE(IsPreconditionFailed(put("staged")));
  ASSERT_OK(put("compacted-deleted"));
  ASSERT_OK(catalog_->DeleteEntry("repo", "main", "staged"));
  ASSERT_OK(put("staged"));  // over a staged tombstone
  ASSERT_OK(put("committed-deleted"));
  ASSERT_OK(put("brand-new"));
  for (const auto& p : {"compacted-deleted", "staged", "committed-deleted", "brand-new"}) EXPECT_EQ(Read(p), "new");
  EXPECT_EQ(Read("committed"), "c");
  EXPECT_EQ(Read("compacted"), "m");
}

// --- 4. Branch and tag names ------------------------------------------------------

TEST_F(CatalogIntegrityTest, ABranchAndATagOfOneNameNeverBothExist) {
  // A tag created between the branch's check and its write.
  kv_->BeforeWrite(HookedKv::Exactly("c/b/repo/x"),
                   [&] { ASSERT_OK(catalog_->CreateTag("repo", "x", "main", false).status()); });
  Status st = catalog_->CreateBranch("repo", "x", "main").status();
  EXPECT_TRUE(IsConflict(st)) << st.ToString();
  EXPECT_NE(st.message().find("a tag named \"x\""), std::string::npos) << st.message();
  EXPECT_TRUE(IsNotFound(catalog_->GetBranch("repo", "x").status()));

  // A branch created between the tag's check and its write, with and without force.
  for (bool force : {false, true}) {
    std::string name = force ? "z" : "y";
    kv_->BeforeWrite(HookedKv::Exactly("c/t/repo/" + name),
                     [&] { ASSERT_OK(catalog_->CreateBranch("repo", name, "main").status()); });
    st = catalog_->CreateTag("repo", name, "main", force).status();
    EXPECT_TRUE(IsConflict(st)) << st.ToString();
    EXPECT_NE(st.message().find("a branch named \"" + name + "\""), std::string::npos) << st.message();
    EXPECT_TRUE(IsNotFound(catalog_->GetTag("repo", name).status()));
  }
}

// Two CreateBranch of one name: the absence of the branch was already a
// precondition of the batch, so exactly one wins. This held before.
TEST_F(CatalogIntegrityTest, TwoCreateBranchOfOneNameHaveOneWinner) {
  kv_->BeforeWrite(HookedKv::Exactly("c/b/repo/dev"),
                   [&] { ASSERT_OK(catalog_->CreateBranch("repo", "dev", "main").status()); });
  Status st = catalog_->CreateBranch("repo", "dev", "main").status();
  EXPECT_TRUE(IsConflict(st)) << st.ToString();
  EXPECT_NE(st.message().find("branch \"dev\" already exists"), std::string::npos) << st.message();
}

// --- 5. DeleteBranch and the staging-compaction bookkeeping ------------------------

TEST_F(CatalogIntegrityTest, DeleteBranchRemovesItsCompactionCounterStatusAndLease) {
  MetricsRegistry metrics;
  StagingCompactor compactor(catalog_.get(), kv_, clock_, &metrics, {.owner = "me"});
  ASSERT_OK(compactor.Start(false));
  ASSERT_OK(catalog_->CreateBranch("repo", "dev", "main").status());
  Put("a", "1", "dev");
  ASSERT_OK(compactor.CompactNow("repo", "dev"));  // status c/cs/...
  Put("b", "1", "dev");
  ASSERT_OK(compactor.Flush());  // counter c/m/...
  // A server died while compacting dev: its lease c/cl/... stays.
  kv::Lease dead(kv_, "c/cl/repo/dev", "dead-server", std::chrono::seconds(60));
  ASSERT_TRUE(*dead.TryAcquire(clock_->Now()));
  for (const auto& k : {"c/m/repo/dev", "c/cs/repo/dev", "c/cl/repo/dev"}) ASSERT_TRUE(kv_->Get(k).ok()) << k;
  ASSERT_OK(catalog_->DeleteBranch("repo", "dev"));
  for (const auto& k : {"c/m/repo/dev", "c/cs/repo/dev", "c/cl/repo/dev"}) {
    EXPECT_TRUE(IsNotFound(kv_->Get(k).status())) << k << " outlived its branch";
  }

  // A branch deleted while a compaction of it runs: the compaction records no status afterwards.
  ASSERT_OK(catalog_->CreateBranch("repo", "dev2", "main").status());
  Put("a", "1", "dev2");
  compactor.SetAfterSealHookForTesting([&] { ASSERT_OK(catalog_->DeleteBranch("repo", "dev2")); });
  EXPECT_FALSE(compactor.CompactNow("repo", "dev2").ok());
  for (const auto& k : {"c/m/repo/dev2", "c/cs/repo/dev2", "c/cl/repo/dev2"}) {
    EXPECT_TRUE(IsNotFound(kv_->Get(k).status())) << k << " outlived its branch";
  }
}

// --- 6. DeleteRepository -----------------------------------------------------------

TEST_F(CatalogIntegrityTest, DeleteRepositoryCutOffBeforeItDecidesChangesNothing) {
  Put("a", "1");
  ASSERT_OK(catalog_->CreateBranch("repo", "dev", "main").status());
  Put("b", "2", "dev");
  kv_->FailWrite(HookedKv::Exactly("c/r/repo"), Status::IOError("injected: store unavailable"));
  EXPECT_FALSE(catalog_->DeleteRepository("repo").ok());
  ASSERT_OK(catalog_->DropDeadTokens());
  ASSERT_OK(catalog_->GetRepository("repo").status());
  EXPECT_EQ(Read("a"), "1") << "a repository that was not deleted lost its staging";
  EXPECT_EQ(Read("b", "dev"), "2") << "a repository that was not deleted lost its staging";
  ASSERT_OK(catalog_->DeleteRepository("repo"));  // and it can still be deleted
  EXPECT_TRUE(IsNotFound(catalog_->GetRepository("repo").status()));
}

TEST_F(CatalogIntegrityTest, DeleteRepositoryCutOffAfterItDecidesIsInvisibleAndTheNameIsReusable) {
  Put("a", "1");
  Commit("c1");
  std::string c1 = catalog_->GetBranch("repo", "main")->commit_id;
  Put("b", "2");
  ASSERT_OK(catalog_->CreateBranch("repo", "dev", "main").status());
  Put("d", "3", "dev");
  ASSERT_OK(catalog_->CreateTag("repo", "v1", "main", false).status());
  std::vector<std::string> tokens = {Token("main"), Token("dev")};
  // Cut off in the bulk cleanup, once the repository is gone.
  kv_->FailWrite(HookedKv::Prefix("c/c/repo/"), Status::IOError("injected: store unavailable"));
  ASSERT_OK(catalog_->DeleteRepository("repo"));  // deleted; the cleanup is left to the background
  ASSERT_TRUE(kv_->Get("c/rd/repo").ok()) << "the cleanup was not cut off";
  EXPECT_TRUE(IsNotFound(catalog_->GetRepository("repo").status()));
  EXPECT_TRUE(catalog_->ListRepositories("", "", 100)->items.empty());
  EXPECT_TRUE(IsNotFound(catalog_->GetBranch("repo", "dev").status()));
  EXPECT_TRUE(IsNotFound(catalog_->GetTag("repo", "v1").status()));

  // The old namespace still holds the old files, so it is not reused (docs/catalog.md).
  EXPECT_TRUE(IsConflict(catalog_->CreateRepository("repo", dir_.Sub("ns"), "main", false).status()));
  // Re-created with the same name: a fresh repository, nothing of the old one.
  ASSERT_OK(catalog_->CreateRepository("repo", dir_.Sub("ns-again"), "main", false).status());
  auto branches = catalog_->ListBranches("repo", "", "", 100);
  ASSERT_OK(branches.status());
  ASSERT_EQ(branches->items.size(), 1u);
  EXPECT_EQ(branches->items[0].id, "main");
  auto tags = catalog_->ListTags("repo", "", "", 100);
  ASSERT_OK(tags.status());
  EXPECT_TRUE(tags->items.empty());
  EXPECT_TRUE(IsNotFound(catalog_->ResolveRef("repo", c1).status()));
  auto log = catalog_->Log("repo", "main", "", 100, false);
  ASSERT_OK(log.status());
  ASSERT_EQ(log->items.size(), 1u);
  EXPECT_EQ(log->items[0].message, "Repository created");
  auto entries = catalog_->ListEntries("repo", "main", {});
  ASSERT_OK(entries.status());
  EXPECT_TRUE(entries->items.empty());
  ASSERT_OK(catalog_->DropDeadTokens());
  for (const auto& t : tokens) EXPECT_TRUE(KeysUnder(StagingPrefix(t)).empty()) << t;
  EXPECT_TRUE(KeysUnder("c/d/").empty());
}

// Another module's records of a repository (actions' runs: src/actions) go
// with it, through the prefixes the module names; another repository's stay.
TEST_F(CatalogIntegrityTest, DeleteRepositoryDeletesWhatOtherModulesKeepOfIt) {
  ASSERT_OK(catalog_->AddRepositoryKeyOwner(
      "other", [](const std::string& repo) { return std::vector<std::string>{"x/o/" + repo + "/"}; }));
  ASSERT_OK(kv_->Set("x/o/repo/1", "a"));
  ASSERT_OK(kv_->Set("x/o/repo2/1", "b"));
  ASSERT_OK(catalog_->DeleteRepository("repo"));
  EXPECT_TRUE(KeysUnder("x/o/repo/").empty());
  EXPECT_EQ(KeysUnder("x/o/repo2/"), std::vector<std::string>{"x/o/repo2/1"});
  EXPECT_TRUE(KeysUnder(RepoDeletionsPrefix()).empty());
}

// A prefix that does not hold the repository's name as a whole component
// could take another repository's records (or every key): the cleanup
// refuses it and deletes nothing of it; the deletion stays pending until the
// module names a right one.
TEST_F(CatalogIntegrityTest, AnOwnersPrefixThatIsNotTheRepositorysDeletesNothing) {
  ASSERT_OK(kv_->Set("x/o/repo2/1", "b"));
  for (const std::string bad : {"", "x/o/", "x/o/repo", "x/o/repo2/"}) {
    ASSERT_OK(
        catalog_->AddRepositoryKeyOwner("other", [bad](const std::string&) { return std::vector<std::string>{bad}; }));
    if (catalog_->GetRepository("repo").ok()) ASSERT_OK(catalog_->DeleteRepository("repo"));
    Status st = catalog_->DropDeadTokens();
    EXPECT_FALSE(st.ok()) << "\"" << bad << "\"";
    EXPECT_NE(st.message().find("module other"), std::string::npos) << st.message();
    EXPECT_EQ(KeysUnder("x/o/"), std::vector<std::string>{"x/o/repo2/1"});
    EXPECT_TRUE(kv_->Get(RepoDeletionKey("repo")).ok()) << "the deletion finished without the module's records";
  }
  ASSERT_OK(catalog_->AddRepositoryKeyOwner(
      "other", [](const std::string& repo) { return std::vector<std::string>{"x/o/" + repo + "/"}; }));
  ASSERT_OK(catalog_->DropDeadTokens());
  EXPECT_TRUE(IsNotFound(kv_->Get(RepoDeletionKey("repo")).status()));
  EXPECT_EQ(KeysUnder("x/o/"), std::vector<std::string>{"x/o/repo2/1"});
}

// The background cleanup may finish a deletion at any moment once started: a
// module naming its prefixes after that could have had records left behind.
TEST_F(CatalogIntegrityTest, KeyOwnersRegisterBeforeTheBackgroundCleanupStarts) {
  auto owner = [](const std::string& repo) { return std::vector<std::string>{"x/o/" + repo + "/"}; };
  auto quiet = NewCatalog(Options(), /*background=*/false);
  EXPECT_OK(quiet->AddRepositoryKeyOwner("other", owner));  // no background cleanup runs
  auto running = NewCatalog(Options(), /*background=*/true);
  Status st = running->AddRepositoryKeyOwner("other", owner);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("before Catalog::Start"), std::string::npos) << st.message();
}

TEST_F(CatalogIntegrityTest, ABranchCreatedWhileItsRepositoryIsDeletedLeavesNothing) {
  Put("a", "1");
  std::string late_token;
  kv_->BeforeWrite(HookedKv::Exactly("c/r/repo"), [&] {
    ASSERT_OK(catalog_->CreateBranch("repo", "late", "main").status());
    Put("x", "1", "late");
    late_token = Token("late");
  });
  ASSERT_OK(catalog_->DeleteRepository("repo"));
  ASSERT_OK(catalog_->DropDeadTokens());
  for (const auto& p : {"c/r/repo", "c/b/repo/", "c/t/repo/", "c/c/repo/", "c/m/repo/", "c/cs/repo/", "c/cl/repo/"}) {
    EXPECT_TRUE(KeysUnder(p).empty()) << p;
  }
  EXPECT_TRUE(KeysUnder("c/s/").empty()) << "the late branch's staging leaked";
  EXPECT_TRUE(KeysUnder("c/d/").empty());
}

// --- 10. Ancestor counts ------------------------------------------------------------

TEST_F(CatalogIntegrityTest, HugeAncestorCountsAreInvalidArguments) {
  Put("a", "1");
  Commit("c1");
  for (const auto& ref : {"main~99999999999", "main^99999999999", "main~999999999999999999999999999999"}) {
    auto r = catalog_->ResolveRef("repo", ref);
    EXPECT_TRUE(IsInvalidArgument(r.status())) << ref << ": " << r.status().ToString();
    EXPECT_NE(r.status().message().find("too large"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(ref), std::string::npos) << r.status().message();
  }
  // Counts in range behave as before.
  EXPECT_TRUE(catalog_->ResolveRef("repo", "main~1").ok());
  EXPECT_TRUE(IsNotFound(catalog_->ResolveRef("repo", "main~5").status()));
  EXPECT_TRUE(IsNotFound(catalog_->ResolveRef("repo", "main^3").status()));
}

}  // namespace
}  // namespace sediment::catalog
