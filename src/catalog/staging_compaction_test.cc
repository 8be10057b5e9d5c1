// The spec's rules for staging compaction (staging-compaction.md), one test each,
// plus a model check of random operation sequences.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "base/metrics.h"
#include "base/test_util.h"
#include "catalog/catalog.h"
#include "catalog/catalog_testing.h"
#include "catalog/keys.h"
#include "catalog/staging_compactor.h"
#include "kv/kv.h"
#include "kv/lease.h"

namespace sediment::catalog {
namespace {

using fixtures::MakeEntry;

class StagingCompactionTest : public fixtures::CatalogFixture {
 protected:
  CompactionResult Compact(const std::string& branch = "main") {
    auto r = catalog_->CompactStaging("repo", branch);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : CompactionResult{};
  }

  std::vector<std::string> List(const std::string& ref, const std::string& delimiter = "",
                                const std::string& prefix = "", int64_t amount = 7) {
    std::vector<std::string> out;
    for (const auto& item : ListPaged(ref, {prefix, "", delimiter, amount})) {
      out.push_back(item.path + (item.common_prefix ? "" : "=" + item.entry.checksum));
    }
    return out;
  }

  std::vector<std::string> Diff(const std::string& branch = "main", int64_t amount = 5) {
    std::vector<std::string> out;
    ListOptions o{"", "", "", amount};
    while (true) {
      auto page = catalog_->DiffUncommitted("repo", branch, o);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok()) return out;
      for (const auto& d : page->items) out.push_back(d.type + ":" + d.path);
      if (!page->has_more) return out;
      o.after = page->items.back().path;
    }
  }
};

TEST_F(StagingCompactionTest, ReadsAndDiffAreUnchangedAndTheBranchStaysUncommitted) {
  for (int i = 0; i < 50; ++i) Put(fmt::format("d{}/k{:02d}", i % 3, i), "c");
  CommitParams p;
  p.message = "base";
  auto base = catalog_->CommitBranch("repo", "main", p);
  ASSERT_TRUE(base.ok());
  for (int i = 0; i < 80; i += 2) Put(fmt::format("d{}/k{:02d}", i % 4, i), "s");
  ASSERT_OK(catalog_->DeleteEntry("repo", "main", "d1/k01"));
  auto before = std::make_tuple(List("main"), List("main", "/"), List("main", "/", "d2/"), Diff());
  auto r = Compact();
  ASSERT_EQ(r.outcome, CompactionOutcome::kCompleted);
  EXPECT_FALSE(r.meta_range_id.empty());
  auto b = catalog_->GetBranch("repo", "main");
  EXPECT_EQ(b->compacted_meta_range_id, r.meta_range_id);
  EXPECT_EQ(b->commit_id, base->id) << "compaction does not commit";
  EXPECT_TRUE(b->sealed_tokens.empty());
  EXPECT_EQ(std::make_tuple(List("main"), List("main", "/"), List("main", "/", "d2/"), Diff()), before);
  EXPECT_EQ(List("main@"), List(base->id)) << "the committed view is untouched";
  // Staging was dropped (in the background task; run it here).
  ASSERT_OK(catalog_->DropDeadTokens());
  auto staged = kv_->Scan("c/s/", "", 10);
  EXPECT_TRUE(staged->items.empty());
}

TEST_F(StagingCompactionTest, NewWritesStageOverTheCompactedMetaRange) {
  Put("a", "1");
  Put("b", "1");
  Compact();
  Put("b", "2");
  Put("c", "2");
  ASSERT_OK(catalog_->DeleteEntry("repo", "main", "a"));
  EXPECT_EQ(List("main"), (std::vector<std::string>{"b=2", "c=2"}));
  EXPECT_EQ(Diff(), (std::vector<std::string>{"added:b", "added:c"}));
  EXPECT_TRUE(IsNotFound(catalog_->GetEntry("repo", "main", "a").status()));
  // A second compaction folds the new staging into the first one's result.
  auto r = Compact();
  EXPECT_EQ(r.outcome, CompactionOutcome::kCompleted);
  EXPECT_EQ(List("main"), (std::vector<std::string>{"b=2", "c=2"}));
}

TEST_F(StagingCompactionTest, LaterCompactionsReuseUntouchedRanges) {
  for (int i = 0; i < 600; ++i) Put(fmt::format("k{:05d}", i), "v");
  auto first = Compact();
  EXPECT_GT(first.stats.ranges_written, 10);
  Put("k00300", "changed");
  auto second = Compact();
  EXPECT_EQ(second.stats.ranges_written, 1) << "one new key touches one range";
  EXPECT_EQ(second.stats.ranges_reused, first.stats.ranges_written - 1);
}

TEST_F(StagingCompactionTest, CommitIncludesTheCompactedMetaRangeAndLaterStaging) {
  Put("a", "1");
  Compact();
  Put("b", "2");
  CommitParams p;
  p.message = "all of it";
  auto c = catalog_->CommitBranch("repo", "main", p);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(List("main@"), (std::vector<std::string>{"a=1", "b=2"}));
  auto b = catalog_->GetBranch("repo", "main");
  EXPECT_TRUE(b->compacted_meta_range_id.empty()) << "commit clears it";
  EXPECT_TRUE(Diff().empty());
  // A compacted branch with nothing staged since still commits.
  Put("c", "3");
  Compact();
  EXPECT_TRUE(catalog_->CommitBranch("repo", "main", p).ok());
  EXPECT_EQ(List("main@").size(), 3u);
}

TEST_F(StagingCompactionTest, ResetAllDiscardsItResetPathRestoresTheCommittedValue) {
  Put("a", "1");
  CommitParams p;
  p.message = "c";
  ASSERT_TRUE(catalog_->CommitBranch("repo", "main", p).ok());
  Put("a", "2");
  Put("dir/x", "x");
  Put("dir/y", "y");
  Compact();
  ASSERT_OK(catalog_->ResetPath("repo", "main", "a", false));
  EXPECT_EQ(List("main"), (std::vector<std::string>{"a=1", "dir/x=x", "dir/y=y"}));
  ASSERT_OK(catalog_->ResetPath("repo", "main", "dir/", true));
  EXPECT_EQ(List("main"), (std::vector<std::string>{"a=1"}));
  EXPECT_TRUE(Diff().empty());
  Put("b", "b");
  Compact();
  ASSERT_OK(catalog_->ResetBranch("repo", "main"));
  EXPECT_TRUE(catalog_->GetBranch("repo", "main")->compacted_meta_range_id.empty());
  EXPECT_EQ(List("main"), (std::vector<std::string>{"a=1"}));
}

TEST_F(StagingCompactionTest, MergeRevertCherryPickAndHardResetFailAsOnADirtyBranch) {
  Put("a", "1");
  CommitParams p;
  p.message = "c1";
  auto c1 = catalog_->CommitBranch("repo", "main", p);
  ASSERT_OK(catalog_->CreateBranch("repo", "dev", "main").status());
  Put("b", "2", "dev");
  p.message = "c2";
  auto c2 = catalog_->CommitBranch("repo", "dev", p);
  ASSERT_TRUE(c2.ok());
  Put("z", "z");
  // The error on a dirty branch...
  Status dirty = catalog_->Merge("repo", "dev", "main", {}, MergeStrategy::kNone).status();
  ASSERT_TRUE(IsInvalidArgument(dirty)) << dirty.ToString();
  Compact();
  ASSERT_FALSE(catalog_->GetBranch("repo", "main")->compacted_meta_range_id.empty());
  // ...is the error on a compacted one (staging is empty now).
  EXPECT_EQ(catalog_->Merge("repo", "dev", "main", {}, MergeStrategy::kNone).status().ToString(), dirty.ToString());
  EXPECT_EQ(catalog_->Revert("repo", "main", c1->id, 0, {}).status().ToString(), dirty.ToString());
  CommitParams me;
  me.committer = "me";
  EXPECT_EQ(catalog_->CherryPick("repo", "main", c2->id, 0, me).status().ToString(), dirty.ToString());
  EXPECT_EQ(catalog_->HardReset("repo", "main", c1->id).ToString(), dirty.ToString());
  p.message = "clean again";
  ASSERT_TRUE(catalog_->CommitBranch("repo", "main", p).ok());
  EXPECT_TRUE(catalog_->Merge("repo", "dev", "main", {}, MergeStrategy::kNone).ok());
}

TEST_F(StagingCompactionTest, CommitOrResetDuringACompactionDiscardsIt) {
  Put("a", "1");
  auto r = catalog_->CompactStaging("repo", "main", [&] {
    CommitParams p;
    p.message = "raced";
    ASSERT_TRUE(catalog_->CommitBranch("repo", "main", p).ok());
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcome, CompactionOutcome::kDiscarded);
  EXPECT_TRUE(catalog_->GetBranch("repo", "main")->compacted_meta_range_id.empty());
  EXPECT_EQ(List("main@"), (std::vector<std::string>{"a=1"}));

  Put("b", "2");
  r = catalog_->CompactStaging("repo", "main", [&] { ASSERT_OK(catalog_->ResetBranch("repo", "main")); });
  EXPECT_EQ(r->outcome, CompactionOutcome::kDiscarded);
  EXPECT_EQ(List("main"), (std::vector<std::string>{"a=1"}));
}

TEST_F(StagingCompactionTest, ACompactionLandingDuringACommitDoesNotFailIt) {
  Put("a", "1");
  Put("b", "1");
  int hooks = 0;
  catalog_->SetAfterCommitSealForTesting([&] {
    if (hooks++ > 0) return;
    Put("c", "during");  // staged after the commit's seal
    auto r = catalog_->CompactStaging("repo", "main");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->outcome, CompactionOutcome::kCompleted);
  });
  CommitParams p;
  p.message = "raced by a compaction";
  auto c = catalog_->CommitBranch("repo", "main", p);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(hooks, 2) << "the commit started over once";
  // The compaction folded "c" too; the retried commit includes everything.
  EXPECT_EQ(List("main@"), (std::vector<std::string>{"a=1", "b=1", "c=during"}));
  EXPECT_TRUE(catalog_->GetBranch("repo", "main")->compacted_meta_range_id.empty());
  EXPECT_TRUE(Diff().empty());
}

TEST_F(StagingCompactionTest, AResetDuringACommitIsNotUndoneByIt) {
  Put("a", "1");
  catalog_->SetAfterCommitSealForTesting([&] { ASSERT_OK(catalog_->ResetBranch("repo", "main")); });
  CommitParams p;
  p.message = "raced by a reset";
  EXPECT_TRUE(IsConflict(catalog_->CommitBranch("repo", "main", p).status()));
  catalog_->SetAfterCommitSealForTesting(nullptr);
  EXPECT_TRUE(List("main").empty());
  EXPECT_TRUE(List("main@").empty());
}

TEST_F(StagingCompactionTest, WritesDuringACompactionAreNeverLost) {
  for (int i = 0; i < 300; ++i) Put(fmt::format("pre{:04d}", i), "v");
  constexpr int kWrites = 1500;
  std::atomic<bool> done{false};
  std::atomic<int> acknowledged{0};
  std::thread writer([&] {
    for (int i = 0; i < kWrites; ++i) {
      if (catalog_->PutEntry("repo", "main", fmt::format("w{:05d}", i), MakeEntry("w")).ok()) acknowledged = i + 1;
    }
    done = true;
  });
  int rounds = 0;
  for (; !done || rounds < 3; ++rounds) Compact();
  writer.join();
  EXPECT_EQ(acknowledged.load(), kWrites);
  Compact();
  auto all = List("main", "", "", 1000);
  EXPECT_EQ(static_cast<int>(all.size()), 300 + acknowledged.load());
  for (int i = 0; i < acknowledged; ++i) {
    ASSERT_TRUE(catalog_->GetEntry("repo", "main", fmt::format("w{:05d}", i)).ok()) << i;
  }
}

TEST_F(StagingCompactionTest, ACompactionCutOffAfterSealingLeavesTheBranchReadable) {
  Put("a", "1");
  Put("b", "2");
  auto before = List("main");
  // What a crash right after sealing leaves: the token moved to the sealed list.
  auto b = catalog_->GetBranch("repo", "main");
  std::string raw = *kv_->Get(BranchKey("repo", "main"));
  std::string sealed = raw;
  sealed.replace(sealed.find("\"sealed_tokens\":[]"), 18, "\"sealed_tokens\":[\"" + b->staging_token + "\"]");
  sealed.replace(sealed.find(b->staging_token), b->staging_token.size(), "freshtoken");
  ASSERT_OK(kv_->Set(BranchKey("repo", "main"), sealed));
  EXPECT_EQ(List("main"), before);
  EXPECT_EQ(Diff(), (std::vector<std::string>{"added:a", "added:b"}));
  EXPECT_EQ(Compact().outcome, CompactionOutcome::kCompleted);  // the next one folds it in
  EXPECT_EQ(List("main"), before);
}

TEST_F(StagingCompactionTest, ReadOnlyRepositoriesAreNeverCompacted) {
  ASSERT_TRUE(catalog_->CreateRepository("frozen", dir_.Sub("ns2"), "main", true).ok());
  EXPECT_TRUE(IsForbidden(catalog_->CompactStaging("frozen", "main").status()));
  MetricsRegistry metrics;
  StagingCompactor compactor(catalog_.get(), kv_, clock_, &metrics, {});
  ASSERT_OK(compactor.Start(false));
  EXPECT_TRUE(IsForbidden(compactor.Submit("frozen", "main")));
}

TEST_F(StagingCompactionTest, TwoServersNeverCompactOneBranchAtOnce) {
  auto other_catalog = NewCatalog();  // a second server on the same KV store
  MetricsRegistry m1, m2;
  StagingCompactor a(catalog_.get(), kv_, clock_, &m1, {.owner = "server-a"});
  StagingCompactor b(other_catalog.get(), kv_, clock_, &m2, {.owner = "server-b"});
  ASSERT_OK(a.Start(false));
  ASSERT_OK(b.Start(false));
  Put("x", "1");
  std::promise<void> sealed, release;
  auto release_future = release.get_future().share();
  a.SetAfterSealHookForTesting([&] {
    sealed.set_value();
    release_future.wait();
  });
  auto running = std::async(std::launch::async, [&] { return a.CompactNow("repo", "main"); });
  sealed.get_future().wait();
  Status st = b.CompactNow("repo", "main");
  EXPECT_TRUE(IsBusy(st)) << st.ToString();
  EXPECT_NE(st.message().find("server-a"), std::string::npos) << st.message();
  release.set_value();
  ASSERT_OK(running.get());
  EXPECT_TRUE(b.CompactNow("repo", "main").ok()) << "free again once the first finished";
  auto last = a.LastStatus("repo", "main");
  EXPECT_EQ(last->state, "completed");
  EXPECT_NE(m1.RenderPrometheus().find("graveler_compaction_seconds_count{outcome=\"completed\"} 1"), std::string::npos)
      << m1.RenderPrometheus();
}

TEST_F(StagingCompactionTest, SubmitIsBusyWhenNoWorkerIsFree) {
  MetricsRegistry metrics;
  StagingCompactor compactor(catalog_.get(), kv_, clock_, &metrics, {.workers = 1, .owner = "solo"});
  ASSERT_OK(compactor.Start(false));
  ASSERT_OK(catalog_->CreateBranch("repo", "other", "main").status());
  Put("x", "1");
  Put("y", "1", "other");
  std::promise<void> sealed, release;
  auto release_future = release.get_future().share();
  compactor.SetAfterSealHookForTesting([&, once = std::make_shared<std::atomic<bool>>(false)] {
    if (once->exchange(true)) return;
    sealed.set_value();
    release_future.wait();
  });
  ASSERT_OK(compactor.Submit("repo", "main"));
  sealed.get_future().wait();
  EXPECT_TRUE(IsBusy(compactor.Submit("repo", "other")));
  release.set_value();
  compactor.Stop();  // waits for the running one
  EXPECT_FALSE(catalog_->GetBranch("repo", "main")->compacted_meta_range_id.empty());
}

TEST_F(StagingCompactionTest, MutationCountIsSharedAndTriggersAtTheThreshold) {
  auto other_catalog = NewCatalog();
  MetricsRegistry m1, m2;
  StagingCompactorOptions opts{.auto_trigger = true, .threshold = 10, .workers = 1, .owner = "a"};
  StagingCompactor a(catalog_.get(), kv_, clock_, &m1, opts);
  opts.owner = "b";
  StagingCompactor b(other_catalog.get(), kv_, clock_, &m2, opts);
  ASSERT_OK(a.Start(false));
  ASSERT_OK(b.Start(false));
  for (int i = 0; i < 4; ++i) Put(fmt::format("a{}", i), "v");
  for (int i = 0; i < 4; ++i) ASSERT_OK(other_catalog->PutEntry("repo", "main", fmt::format("b{}", i), MakeEntry("v")));
  ASSERT_OK(a.Flush());
  ASSERT_OK(b.Flush());
  EXPECT_EQ(*a.StagedMutations("repo", "main"), 8) << "both servers' writes count";
  EXPECT_TRUE(catalog_->GetBranch("repo", "main")->compacted_meta_range_id.empty()) << "below the threshold";
  for (int i = 4; i < 6; ++i) Put(fmt::format("a{}", i), "v");
  ASSERT_OK(a.Flush());  // 10: crosses the threshold
  a.Stop();              // waits for the triggered compaction
  EXPECT_FALSE(catalog_->GetBranch("repo", "main")->compacted_meta_range_id.empty());
  EXPECT_EQ(*b.StagedMutations("repo", "main"), 0) << "the count restarts after a compaction";
  EXPECT_NE(m1.RenderPrometheus().find("graveler_staged_mutations{repository=\"repo\",branch=\"main\"} 10"),
            std::string::npos)
      << m1.RenderPrometheus();
}

TEST_F(StagingCompactionTest, ACountOverTheThresholdTriggersAgainAfterADeadServersLeaseExpires) {
  MetricsRegistry metrics;
  StagingCompactorOptions opts{.auto_trigger = true, .threshold = 3, .workers = 1, .owner = "alive"};
  opts.recheck_every_flushes = 1;
  StagingCompactor compactor(catalog_.get(), kv_, clock_, &metrics, opts);
  ASSERT_OK(compactor.Start(false));
  // A server that died while compacting main still holds its lease.
  kv::Lease dead(kv_, "c/cl/repo/main", "dead-server", std::chrono::seconds(60));
  ASSERT_TRUE(*dead.TryAcquire(clock_->Now()));
  for (int i = 0; i < 3; ++i) Put(fmt::format("k{}", i), "v");
  ASSERT_OK(compactor.Flush());  // over the threshold, but the lease is taken
  ASSERT_OK(compactor.Flush());  // Start(false): a flush runs the triggered work inline, so it tried, and again
  EXPECT_TRUE(catalog_->GetBranch("repo", "main")->compacted_meta_range_id.empty());
  clock_->Advance(std::chrono::seconds(61));
  // No new write: the periodic re-check of stored counters triggers it.
  EXPECT_TRUE(testing::Eventually([&] {
    EXPECT_OK(compactor.Flush());
    return !catalog_->GetBranch("repo", "main")->compacted_meta_range_id.empty();
  }));
}

// The model check: random puts, deletes, compactions, commits and resets; after
// every step Get, both listings and the uncommitted diff match a plain map.
TEST_F(StagingCompactionTest, RandomOperationsMatchAMapModel) {
  std::mt19937 rng(5);
  std::map<std::string, std::string> model, committed;
  for (int step = 0; step < 120; ++step) {
    int op = static_cast<int>(rng() % 20);
    if (op < 9) {
      for (int i = 0; i < 15; ++i) {
        std::string k = fmt::format("d{}/s{}/k{:03d}", rng() % 3, rng() % 3, rng() % 300);
        std::string v = fmt::format("v{}", rng() % 5);
        Put(k, v);
        model[k] = v;
      }
    } else if (op < 12 && !model.empty()) {
      for (int i = 0; i < 5 && !model.empty(); ++i) {
        auto it = model.begin();
        std::advance(it, static_cast<long>(rng() % model.size()));
        ASSERT_OK(catalog_->DeleteEntry("repo", "main", it->first));
        model.erase(it);
      }
    } else if (op < 16) {
      Compact();
    } else if (op < 18) {
      CommitParams p;
      p.message = "step";
      if (catalog_->CommitBranch("repo", "main", p).ok()) committed = model;
    } else if (op == 18) {
      ASSERT_OK(catalog_->ResetBranch("repo", "main"));
      model = committed;
    } else if (!model.empty()) {
      auto it = model.begin();
      std::advance(it, static_cast<long>(rng() % model.size()));
      ASSERT_OK(catalog_->ResetPath("repo", "main", it->first, false));
      auto c = committed.find(it->first);
      if (c == committed.end()) {
        model.erase(it);
      } else {
        it->second = c->second;
      }
    }
    // Expected views from the model.
    std::vector<std::string> flat, root, nested, diff;
    std::set<std::string> seen_root, seen_nested;
    for (const auto& [k, v] : model) {
      flat.push_back(k + "=" + v);
      std::string top = k.substr(0, k.find('/') + 1);
      if (seen_root.insert(top).second) root.push_back(top);
      if (k.rfind("d1/", 0) == 0) {
        std::string sub = k.substr(0, k.find('/', 3) + 1);
        if (seen_nested.insert(sub).second) nested.push_back(sub);
      }
    }
    std::set<std::string> keys;
    for (const auto& [k, v] : model) keys.insert(k);
    for (const auto& [k, v] : committed) keys.insert(k);
    for (const auto& k : keys) {
      auto m = model.find(k);
      auto c = committed.find(k);
      if (c == committed.end()) {
        diff.push_back("added:" + k);
      } else if (m == model.end()) {
        diff.push_back("removed:" + k);
      } else if (m->second != c->second) {
        diff.push_back("changed:" + k);
      }
    }
    ASSERT_EQ(List("main", "", "", 13), flat) << "step " << step;
    ASSERT_EQ(List("main", "/", "", 2), root) << "step " << step;
    ASSERT_EQ(List("main", "/", "d1/", 1), nested) << "step " << step;
    ASSERT_EQ(Diff("main", 9), diff) << "step " << step;
    for (int i = 0; i < 5; ++i) {
      std::string k = fmt::format("d{}/s{}/k{:03d}", rng() % 3, rng() % 3, rng() % 300);
      auto got = catalog_->GetEntry("repo", "main", k);
      auto m = model.find(k);
      if (m == model.end()) {
        ASSERT_TRUE(IsNotFound(got.status())) << k;
      } else {
        ASSERT_TRUE(got.ok()) << k;
        ASSERT_EQ(got->checksum, m->second) << k;
      }
    }
  }
}

}  // namespace
}  // namespace sediment::catalog

namespace sediment::catalog {
namespace {

// Writes counted before a commit but flushed after it were committed: the
// branch has nothing staged, and only writes into the new token count.
TEST_F(StagingCompactionTest, WritesACommitTookAreNotCountedAfterIt) {
  MetricsRegistry metrics;
  StagingCompactorOptions opts{.auto_trigger = false, .threshold = 1000, .workers = 1, .owner = "a"};
  StagingCompactor compactor(catalog_.get(), kv_, clock_, &metrics, opts);
  ASSERT_OK(compactor.Start(false));
  for (int i = 0; i < 3; ++i) Put(fmt::format("c{}", i), "v");
  CommitParams p;
  p.committer = "t";
  p.message = "took them";
  // Sealed but not yet committed: the writes are still staged, and count.
  int64_t while_sealed = -1;
  catalog_->SetAfterCommitSealForTesting([&] {
    ASSERT_OK(compactor.Flush());
    while_sealed = *compactor.StagedMutations("repo", "main");
  });
  ASSERT_OK(catalog_->CommitBranch("repo", "main", p).status());
  catalog_->SetAfterCommitSealForTesting(nullptr);
  EXPECT_EQ(while_sealed, 3);
  Put("c3", "v");
  ASSERT_OK(catalog_->CommitBranch("repo", "main", p).status());
  ASSERT_OK(compactor.Flush());
  EXPECT_EQ(*compactor.StagedMutations("repo", "main"), 0) << "the commit took the write";

  Put("after", "v");
  ASSERT_OK(catalog_->DeleteEntries("repo", "main", {"c0", "c1", "no-such-path"}, false).status());
  ASSERT_OK(compactor.Flush());
  EXPECT_EQ(*compactor.StagedMutations("repo", "main"), 3) << "one write and two deletes since";
  ASSERT_OK(catalog_->CommitBranch("repo", "main", p).status());
  Put("later", "v");
  ASSERT_OK(compactor.Flush());
  EXPECT_EQ(*compactor.StagedMutations("repo", "main"), 1);
  compactor.Stop();
}

TEST_F(StagingCompactionTest, ABranchsStagedMutationsSeriesGoesWithTheBranch) {
  MetricsRegistry metrics;
  StagingCompactorOptions opts{.auto_trigger = false, .threshold = 1000, .workers = 1, .owner = "a"};
  StagingCompactor compactor(catalog_.get(), kv_, clock_, &metrics, opts);
  ASSERT_OK(compactor.Start(false));
  auto series = [&](const std::string& branch) {
    return metrics.RenderPrometheus().find("graveler_staged_mutations{repository=\"repo\",branch=\"" + branch +
                                           "\"}") != std::string::npos;
  };
  for (const char* b : {"dev", "gone-later", "raced"}) {
    ASSERT_TRUE(catalog_->CreateBranch("repo", b, "main").ok());
    ASSERT_OK(catalog_->PutEntry("repo", b, "x", MakeEntry("v")));
  }
  ASSERT_OK(compactor.Flush());
  EXPECT_TRUE(series("dev"));
  EXPECT_TRUE(series("gone-later"));
  ASSERT_OK(catalog_->DeleteBranch("repo", "dev"));
  EXPECT_FALSE(series("dev")) << "dropped when the branch is deleted";
  EXPECT_TRUE(series("gone-later"));
  // Deleted by another server (no listener here): a flush with its count finds it gone.
  ASSERT_OK(catalog_->PutEntry("repo", "gone-later", "y", MakeEntry("v")));
  auto other = NewCatalog();
  ASSERT_OK(other->DeleteBranch("repo", "gone-later"));
  ASSERT_OK(compactor.Flush());
  EXPECT_FALSE(series("gone-later"));
  // Deleted elsewhere with nothing pending here: the periodic recheck drops it.
  ASSERT_OK(other->DeleteBranch("repo", "raced"));
  compactor.Stop();
  StagingCompactorOptions recheck = opts;
  recheck.auto_trigger = true;
  recheck.recheck_every_flushes = 1;
  StagingCompactor second(catalog_.get(), kv_, clock_, &metrics, recheck);
  ASSERT_OK(second.Start(false));
  ASSERT_OK(second.Flush());
  EXPECT_FALSE(series("raced"));
  // A deleted repository takes all its series.
  ASSERT_OK(catalog_->PutEntry("repo", "main", "z", MakeEntry("v")));
  ASSERT_OK(second.Flush());
  EXPECT_TRUE(series("main"));
  ASSERT_OK(catalog_->DeleteRepository("repo"));
  EXPECT_FALSE(series("main"));
  second.Stop();
}

}  // namespace
}  // namespace sediment::catalog
