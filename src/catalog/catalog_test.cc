#include "catalog/catalog.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "base/test_util.h"
#include "blob/blob.h"
#include "catalog/catalog_testing.h"
#include "catalog/keys.h"
#include "kv/hooked_kv_testing.h"
#include "kv/kv.h"

namespace sediment::catalog {
namespace {

std::vector<KeyValueEntry> Drain(ValueIterator& it) {
  std::vector<KeyValueEntry> out;
  while (it.Next()) out.push_back({it.key(), it.value()});
  EXPECT_TRUE(it.status().ok()) << it.status().ToString();
  return out;
}

std::vector<std::string> Keys(const std::vector<KeyValueEntry>& v) {
  std::vector<std::string> out;
  for (const auto& e : v) out.push_back(e.key);
  return out;
}

using fixtures::MakeEntry;

using sediment::kv::HookedKv;

TEST(EntryTest, RoundTripAndIdentity) {
  Entry e = MakeEntry("abc", 42);
  e.metadata["k"] = "v";
  auto enc = EncodeEntry(e);
  auto back = DecodeEntry(enc);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, e);
  Entry moved = e;
  moved.address = "elsewhere";
  moved.mtime = 1;
  EXPECT_EQ(EntryIdentity(EncodeEntry(moved)), EntryIdentity(enc));  // same object, other place and time
  Entry changed = e;
  changed.metadata["k"] = "w";
  EXPECT_NE(EntryIdentity(EncodeEntry(changed)), EntryIdentity(enc));
  EXPECT_FALSE(DecodeEntry("").ok());
  EXPECT_FALSE(DecodeEntry(enc.substr(0, enc.size() - 1)).ok());
}

TEST(IteratorTest, CombinedPrefersEarlierSourceAndSeeks) {
  std::vector<std::unique_ptr<ValueIterator>> sources;
  sources.push_back(NewVectorIterator({{"b", "new-b"}, {"d", ""}}));
  sources.push_back(NewVectorIterator({{"a", "a"}, {"b", "old-b"}, {"c", "c"}, {"d", "d"}, {"e", "e"}}));
  auto it = NewCombinedIterator(std::move(sources));
  auto all = Drain(*it);
  ASSERT_EQ(Keys(all), (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(all[1].value, "new-b");
  EXPECT_EQ(all[3].value, "");  // tombstone passes through the combiner
  it->SeekGE("bb");
  ASSERT_TRUE(it->Next());
  EXPECT_EQ(it->key(), "c");
}

TEST(IteratorTest, TombstoneFilterHidesDeletes) {
  std::vector<std::unique_ptr<ValueIterator>> sources;
  sources.push_back(NewVectorIterator({{"b", ""}, {"c", ""}}));
  sources.push_back(NewVectorIterator({{"a", "a"}, {"b", "b"}, {"d", "d"}}));
  auto it = NewTombstoneFilter(NewCombinedIterator(std::move(sources)));
  EXPECT_EQ(Keys(Drain(*it)), (std::vector<std::string>{"a", "d"}));
}

TEST(IteratorTest, KvPrefixIteratorPagesAndSeeks) {
  auto kv = kv::NewMemoryStore();
  for (int i = 0; i < 500; ++i) ASSERT_OK(kv->Set(fmt::format("p/{:04d}", i), "v"));
  ASSERT_OK(kv->Set("q/0000", "other prefix"));
  auto it = NewKvPrefixIterator(kv, "p/");
  EXPECT_EQ(Drain(*it).size(), 500u);
  it->SeekGE("0250");
  ASSERT_TRUE(it->Next());
  EXPECT_EQ(it->key(), "0250");
  ASSERT_TRUE(it->Next());
  it->SeekGE("0260");  // within the fetched page
  ASSERT_TRUE(it->Next());
  EXPECT_EQ(it->key(), "0260");
  it->SeekGE("9");
  EXPECT_FALSE(it->Next());
}

class CatalogTest : public fixtures::CatalogFixture {
 protected:
  std::vector<std::string> ListAll(const std::string& ref, const std::string& prefix = "",
                                   const std::string& delimiter = "", int64_t amount = 7) {
    std::vector<std::string> out;
    for (const auto& item : ListPaged(ref, {prefix, "", delimiter, amount})) out.push_back(item.path);
    return out;
  }

  // Commit() and the type share a name: the type is catalog::Commit in here.
  catalog::Commit DoCommit(const std::string& msg, const std::string& branch = "main") {
    CommitParams p;
    p.message = msg;
    p.committer = "tester";
    auto c = catalog_->CommitBranch("repo", branch, p);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? *c : catalog::Commit{};
  }

  std::shared_ptr<const MetaRange> MetaRangeOf(const std::string& ref) {
    auto r = catalog_->ResolveRef("repo", ref);
    auto c = catalog_->GetCommit("repo", r->commit_id);
    auto repo = catalog_->GetRepository("repo");
    auto ns = catalog_->RepositoryNamespace(*repo);
    return *catalog_->ranges().LoadMetaRange(*ns, c->meta_range_id);
  }
};

TEST_F(CatalogTest, RejectsBadNames) {
  EXPECT_TRUE(IsInvalidArgument(catalog_->CreateRepository("A", dir_.Sub("x"), "main", false).status()));
  EXPECT_TRUE(IsInvalidArgument(catalog_->CreateRepository("ok-name", "relative/path", "main", false).status()));
  EXPECT_TRUE(IsConflict(catalog_->CreateRepository("repo", dir_.Sub("y"), "main", false).status()));
  auto dup = catalog_->CreateRepository("other", dir_.Sub("ns"), "main", false);
  EXPECT_TRUE(IsConflict(dup.status()));
  EXPECT_NE(dup.status().message().find("already used by repository \"repo\""), std::string::npos);
  EXPECT_TRUE(IsNotFound(catalog_->GetRepository("other").status()));  // nothing half-created
  EXPECT_TRUE(IsInvalidArgument(catalog_->CreateBranch("repo", "-bad", "main").status()));
  EXPECT_TRUE(IsInvalidArgument(catalog_->PutEntry("repo", "main", "", MakeEntry("x"))));
  EXPECT_TRUE(IsInvalidArgument(catalog_->PutEntry("repo", "main", std::string("a\0b", 3), MakeEntry("x"))));
  EXPECT_TRUE(IsInvalidArgument(catalog_->PutEntry("repo", "main", std::string(2000, 'a'), MakeEntry("x"))));
  EXPECT_TRUE(IsNotFound(catalog_->ResolveRef("repo", "nope").status()));
}

TEST_F(CatalogTest, ReadsMergeStagingOverCommitted) {
  Put("a", "1");
  Put("b", "2");
  DoCommit("first");
  Put("b", "2b");
  Put("c", "3");
  ASSERT_OK(catalog_->DeleteEntry("repo", "main", "a"));
  EXPECT_TRUE(IsNotFound(catalog_->DeleteEntry("repo", "main", "a")));
  EXPECT_TRUE(IsNotFound(catalog_->GetEntry("repo", "main", "a").status()));
  EXPECT_EQ(catalog_->GetEntry("repo", "main", "b")->checksum, "2b");
  EXPECT_EQ(catalog_->GetEntry("repo", "main@", "b")->checksum, "2");  // committed only
  EXPECT_EQ(ListAll("main"), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(ListAll("main@"), (std::vector<std::string>{"a", "b"}));
}

TEST_F(CatalogTest, DelimitedListingSeeksPastCommonPrefixes) {
  for (int d = 0; d < 5; ++d) {
    for (int f = 0; f < 30; ++f) Put(fmt::format("dir{}/f{:02d}", d, f), "x");
  }
  Put("top", "x");
  auto staged = ListAll("main", "", "/", 2);
  EXPECT_EQ(staged, (std::vector<std::string>{"dir0/", "dir1/", "dir2/", "dir3/", "dir4/", "top"}));
  DoCommit("c");
  EXPECT_EQ(ListAll("main", "", "/", 2), staged);
  EXPECT_EQ(ListAll("main", "dir3/", "/", 7).size(), 30u);
  EXPECT_EQ(ListAll("main").size(), 151u);
}

TEST_F(CatalogTest, CommitRewritesOnlyTouchedRanges) {
  for (int i = 0; i < 400; ++i) Put(fmt::format("k{:05d}", i), fmt::format("v{}", i));
  DoCommit("bulk");
  auto before = MetaRangeOf("main");
  ASSERT_GT(before->ranges.size(), 10u);
  EXPECT_EQ(before->count(), 400);
  Put("k00200", "changed");
  DoCommit("one key");
  auto after = MetaRangeOf("main");
  std::set<std::string> old_ids;
  for (const auto& r : before->ranges) old_ids.insert(r.id);
  int new_ranges = 0;
  for (const auto& r : after->ranges) new_ranges += old_ids.count(r.id) == 0;
  EXPECT_EQ(new_ranges, 1) << "a commit touching one key rewrites exactly one range";
  EXPECT_EQ(after->ranges.size(), before->ranges.size());
  EXPECT_EQ(catalog_->GetEntry("repo", "main", "k00200")->checksum, "changed");
}

TEST_F(CatalogTest, CommitWithNothingStagedFails) {
  CommitParams p;
  p.message = "empty";
  EXPECT_TRUE(IsInvalidArgument(catalog_->CommitBranch("repo", "main", p).status()));
  p.allow_empty = true;
  EXPECT_TRUE(catalog_->CommitBranch("repo", "main", p).ok());
}

TEST_F(CatalogTest, WritesDuringCommitAreKept) {
  for (int i = 0; i < 200; ++i) Put(fmt::format("a{:03d}", i), "x");
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 200; ++i) Put(fmt::format("w{:03d}", i), "y");
    done = true;
  });
  DoCommit("concurrent");
  writer.join();
  // Every write is visible on the branch, committed or staged.
  EXPECT_EQ(ListAll("main", "", "", 1000).size(), 400u);
  // The writer may have finished before the seal: then "rest" commits nothing.
  CommitParams rest;
  rest.message = "rest";
  rest.committer = "tester";
  rest.allow_empty = true;
  ASSERT_OK(catalog_->CommitBranch("repo", "main", rest).status());
  EXPECT_EQ(ListAll("main@", "", "", 1000).size(), 400u);
}

TEST_F(CatalogTest, InterruptedCommitLeavesStagingReadable) {
  Put("a", "1");
  // Seal by hand the way a commit does, then "crash" before the swap.
  auto b = catalog_->GetBranch("repo", "main");
  std::string raw = *kv_->Get(BranchKey("repo", "main"));
  auto j = nlohmann::json::parse(raw);
  j["sealed_tokens"] = {b->staging_token};
  j["staging_token"] = "fresh";
  ASSERT_OK(kv_->Set(BranchKey("repo", "main"), j.dump()));
  EXPECT_EQ(catalog_->GetEntry("repo", "main", "a")->checksum, "1");
  EXPECT_EQ(ListAll("main"), (std::vector<std::string>{"a"}));
  DoCommit("recovered");
  EXPECT_EQ(catalog_->GetEntry("repo", "main@", "a")->checksum, "1");
  EXPECT_TRUE(catalog_->GetBranch("repo", "main")->sealed_tokens.empty());
}

TEST_F(CatalogTest, DiffUncommittedAndRefs) {
  Put("a", "1");
  Put("b", "2");
  auto c1 = DoCommit("c1");
  Put("b", "2b");
  Put("c", "3");
  ASSERT_OK(catalog_->DeleteEntry("repo", "main", "a"));
  Put("d", "4");
  ASSERT_OK(catalog_->DeleteEntry("repo", "main", "d"));  // staged then deleted: no change
  auto diff = catalog_->DiffUncommitted("repo", "main", {});
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& d : diff->items) got.emplace_back(d.path, d.type);
  EXPECT_EQ(got,
            (std::vector<std::pair<std::string, std::string>>{{"a", "removed"}, {"b", "changed"}, {"c", "added"}}));
  auto c2 = DoCommit("c2");
  auto refs = catalog_->DiffRefs("repo", c1.id, c2.id, false, {});
  ASSERT_TRUE(refs.ok());
  EXPECT_EQ(refs->items.size(), 3u);
  EXPECT_TRUE(catalog_->DiffUncommitted("repo", "main", {})->items.empty());
}

TEST_F(CatalogTest, MergeThreeWayWithConflictsAndStrategies) {
  Put("shared", "base");
  Put("x", "base");
  DoCommit("base");
  ASSERT_OK(catalog_->CreateBranch("repo", "feature", "main").status());
  Put("new-on-feature", "f", "feature");
  Put("x", "feature", "feature");
  DoCommit("feature work", "feature");
  Put("new-on-main", "m");
  DoCommit("main work");

  auto merged = catalog_->Merge("repo", "feature", "main", {}, MergeStrategy::kNone);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(merged->parents.size(), 2u);
  EXPECT_EQ(ListAll("main"), (std::vector<std::string>{"new-on-feature", "new-on-main", "shared", "x"}));
  EXPECT_EQ(catalog_->GetEntry("repo", "main", "x")->checksum, "feature");

  // Both sides change "shared" differently: conflict, then each strategy.
  Put("shared", "feature2", "feature");
  DoCommit("f2", "feature");
  Put("shared", "main2");
  DoCommit("m2");
  auto conflict = catalog_->Merge("repo", "feature", "main", {}, MergeStrategy::kNone);
  EXPECT_TRUE(IsConflict(conflict.status())) << conflict.status().ToString();
  auto dest_wins = catalog_->Merge("repo", "feature", "main", {}, MergeStrategy::kDestWins);
  ASSERT_TRUE(dest_wins.ok());
  EXPECT_EQ(catalog_->GetEntry("repo", "main", "shared")->checksum, "main2");

  // Merging into a dirty branch fails like lakeFS: 400-class error.
  Put("dirt", "d");
  EXPECT_TRUE(IsInvalidArgument(catalog_->Merge("repo", "feature", "main", {}, MergeStrategy::kNone).status()));
}

TEST_F(CatalogTest, ResetRevertHardResetAndLog) {
  Put("a", "1");
  auto c1 = DoCommit("c1");
  Put("a", "2");
  Put("b", "x");
  Put("dir/y", "y");
  ASSERT_OK(catalog_->ResetPath("repo", "main", "a", false));
  EXPECT_EQ(catalog_->GetEntry("repo", "main", "a")->checksum, "1");
  ASSERT_OK(catalog_->ResetPath("repo", "main", "dir/", true));
  EXPECT_EQ(ListAll("main"), (std::vector<std::string>{"a", "b"}));
  ASSERT_OK(catalog_->ResetBranch("repo", "main"));
  EXPECT_EQ(ListAll("main"), (std::vector<std::string>{"a"}));

  Put("b", "x");
  auto c2 = DoCommit("c2");
  CommitParams p;
  auto reverted = catalog_->Revert("repo", "main", c2.id, 0, p);
  ASSERT_TRUE(reverted.ok()) << reverted.status().ToString();
  EXPECT_EQ(ListAll("main"), (std::vector<std::string>{"a"}));

  auto log = catalog_->Log("repo", "main", "", 100, false);
  ASSERT_TRUE(log.ok());
  std::vector<std::string> messages;
  for (const auto& c : log->items) messages.push_back(c.message);
  EXPECT_EQ(messages, (std::vector<std::string>{"Revert " + c2.id, "c2", "c1", "Repository created"}));
  auto page = catalog_->Log("repo", "main", c2.id, 1, false);
  ASSERT_EQ(page->items.size(), 1u);
  EXPECT_EQ(page->items[0].id, c1.id);
  EXPECT_TRUE(page->has_more);

  ASSERT_OK(catalog_->HardReset("repo", "main", c1.id));
  EXPECT_EQ(catalog_->GetBranch("repo", "main")->commit_id, c1.id);
  EXPECT_EQ(catalog_->ResolveRef("repo", c2.id.substr(0, 10))->commit_id, c2.id);
  EXPECT_EQ(catalog_->ResolveRef("repo", c2.id + "~1")->commit_id, c1.id);
  Put("z", "z");
  EXPECT_TRUE(IsInvalidArgument(catalog_->HardReset("repo", "main", c2.id)));  // dirty
}

TEST_F(CatalogTest, TagsAndBranchLifecycle) {
  Put("a", "1");
  auto c1 = DoCommit("c1");
  ASSERT_TRUE(catalog_->CreateTag("repo", "v1", "main", false).ok());
  EXPECT_TRUE(IsConflict(catalog_->CreateTag("repo", "v1", "main", false).status()));
  EXPECT_EQ(catalog_->ResolveRef("repo", "v1")->commit_id, c1.id);
  EXPECT_EQ(catalog_->ListTags("repo", "", "", 100)->items.size(), 1u);
  ASSERT_OK(catalog_->DeleteTag("repo", "v1"));
  EXPECT_TRUE(IsNotFound(catalog_->GetTag("repo", "v1").status()));

  ASSERT_TRUE(catalog_->CreateBranch("repo", "dev", "main").ok());
  EXPECT_TRUE(IsConflict(catalog_->CreateBranch("repo", "dev", "main").status()));
  Put("staged", "s", "dev");
  EXPECT_TRUE(IsForbidden(catalog_->DeleteBranch("repo", "main")));
  ASSERT_OK(catalog_->DeleteBranch("repo", "dev"));
  ASSERT_OK(catalog_->DropDeadTokens());
  // Its staging is gone from the KV store.
  auto left = kv_->Scan("c/s/", "", 1000);
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->items.empty());
}

// The model check: random puts, deletes and commits; the branch always reads
// like a plain map, the committed view like the map at the last commit.
TEST_F(CatalogTest, RandomOperationsMatchAMapModel) {
  std::mt19937 rng(11);
  std::map<std::string, std::string> model, committed;
  for (int step = 0; step < 60; ++step) {
    int op = static_cast<int>(rng() % 10);
    if (op < 6) {
      for (int i = 0; i < 20; ++i) {
        std::string k = fmt::format("d{}/k{:03d}", rng() % 4, rng() % 200);
        std::string v = fmt::format("v{}", rng() % 1000);
        Put(k, v);
        model[k] = v;
      }
    } else if (op < 8 && !model.empty()) {
      auto it = model.begin();
      std::advance(it, static_cast<long>(rng() % model.size()));
      ASSERT_OK(catalog_->DeleteEntry("repo", "main", it->first));
      model.erase(it);
    } else if (op == 8) {
      CommitParams p;
      p.message = "step";
      auto c = catalog_->CommitBranch("repo", "main", p);
      if (c.ok()) committed = model;
    } else {
      ASSERT_OK(catalog_->ResetBranch("repo", "main"));
      model = committed;
    }
    std::vector<std::string> want;
    for (const auto& [k, v] : model) want.push_back(k);
    ASSERT_EQ(ListAll("main", "", "", 37), want) << "step " << step;
    std::vector<std::string> want_committed;
    for (const auto& [k, v] : committed) want_committed.push_back(k);
    ASSERT_EQ(ListAll("main@", "", "", 37), want_committed) << "step " << step;
    for (const auto& [k, v] : model) ASSERT_EQ(catalog_->GetEntry("repo", "main", k)->checksum, v);
  }
}

}  // namespace
}  // namespace sediment::catalog

namespace sediment::catalog {
namespace {

// The range cache keeps to its byte budget and reads evicted files back from
// the storage namespace.
TEST(RangeCacheTest, KeepsToItsBudgetAndRefetchesEvictedFiles) {
  testing::TempDir dir;
  auto kv = kv::NewMemoryStore();
  CatalogOptions opts;
  opts.dropped_token_grace = Duration::zero();  // these tests watch the dropper work at once
  opts.cache_dir = dir.Sub("cache");
  opts.namespaces.local_roots = {dir.path()};
  opts.cache_bytes = 4096;  // a few range files
  opts.ranges = {512, 2048, 8};
  Catalog catalog(kv, std::make_shared<ManualClock>(), opts);
  ASSERT_TRUE(catalog.Start(false).ok());
  ASSERT_TRUE(catalog.CreateRepository("repo", dir.Sub("ns"), "main", false).ok());
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(catalog.PutEntry("repo", "main", fmt::format("k{:04d}", i), MakeEntry(fmt::format("v{}", i))).ok());
  }
  CommitParams p;
  p.message = "many ranges";
  ASSERT_TRUE(catalog.CommitBranch("repo", "main", p).ok());
  int64_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(opts.cache_dir)) files += e.path().extension() == ".sst";
  EXPECT_LE(catalog.ranges().cached_bytes(), 4096 + 3000) << "at most one file over the budget";
  EXPECT_LT(files, 20);
  // A fresh server on the same cache (no open readers) still reads every
  // entry: evicted ranges come back from the namespace.
  Catalog fresh(kv, std::make_shared<ManualClock>(), opts);
  ASSERT_TRUE(fresh.Start(false).ok());
  for (int i = 0; i < 500; i += 7) {
    auto e = fresh.GetEntry("repo", "main@", fmt::format("k{:04d}", i));
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    EXPECT_EQ(e->checksum, fmt::format("v{}", i));
  }
  EXPECT_LE(fresh.ranges().cached_bytes(), 4096 + 3000);
}

}  // namespace
}  // namespace sediment::catalog

namespace sediment::catalog {
namespace {

class CatalogScaleTest : public CatalogTest {
 protected:
  std::vector<std::string> PagedLog(Catalog& cat, int64_t amount, bool first_parent) {
    std::vector<std::string> ids;
    std::string after;
    for (int guard = 0; guard < 1000; ++guard) {
      auto page = cat.Log("repo", "main", after, amount, first_parent);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok()) break;
      for (const auto& c : page->items) ids.push_back(c.id);
      if (!page->has_more) break;
      after = page->items.back().id;
    }
    return ids;
  }

  // Point reads of commit records ("c/c/").
  std::shared_ptr<std::atomic<int64_t>> commit_reads_ = kv_->CountReads(HookedKv::Prefix("c/c/"));
};

// History with side branches merged in at several points: every page size
// lists exactly the one-page log, resuming or (on a server that did not see
// the previous page) walking from the head.
TEST_F(CatalogScaleTest, LogPagesResumeExactlyAcrossMerges) {
  ASSERT_OK(catalog_->CreateBranch("repo", "side", "main").status());
  for (int i = 0; i < 12; ++i) {
    Put(fmt::format("m{}", i), "v");
    DoCommit(fmt::format("main {}", i));
    if (i % 3 == 0) {
      Put(fmt::format("s{}", i), "v", "side");
      DoCommit(fmt::format("side {}", i), "side");
      Put(fmt::format("s{}b", i), "v", "side");
      DoCommit(fmt::format("side {}b", i), "side");
    }
    if (i % 4 == 3) {
      ASSERT_TRUE(catalog_->Merge("repo", "side", "main", {}, MergeStrategy::kNone).ok());
    }
  }
  for (bool first_parent : {false, true}) {
    auto all = catalog_->Log("repo", "main", "", 1000, first_parent);
    ASSERT_TRUE(all.ok());
    std::vector<std::string> want;
    for (const auto& c : all->items) want.push_back(c.id);
    for (int64_t amount : {1, 2, 3, 7}) {
      EXPECT_EQ(PagedLog(*catalog_, amount, first_parent), want) << "amount " << amount;
    }
    // Another server (no cursor) walks from the head and agrees.
    auto fresh = NewCatalog();
    auto page = fresh->Log("repo", "main", want[4], 3, first_parent);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    ASSERT_EQ(page->items.size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(page->items[i].id, want[5 + i]);
  }
}

// The cost of a page does not grow with how deep into the history it is.
TEST_F(CatalogScaleTest, ALogPageReadsAsManyCommitsDeepInTheHistoryAsAtItsHead) {
  for (int i = 0; i < 120; ++i) {
    Put("k", fmt::format("v{}", i));
    DoCommit(fmt::format("c{}", i));
  }
  std::string after;
  std::vector<int64_t> reads;
  for (int p = 0; p < 20; ++p) {
    int64_t before = commit_reads_->load();
    auto page = catalog_->Log("repo", "main", after, 5, false);
    ASSERT_TRUE(page.ok());
    reads.push_back(commit_reads_->load() - before);
    after = page->items.back().id;
  }
  EXPECT_LE(reads.back(), reads.front() + 2) << "page 20 against page 1, commit records read";
}

// Many changes on both sides, spread over many small ranges: the streamed
// three-way merge gives what the changes say, and a conflict writes nothing.
TEST_F(CatalogScaleTest, AMergeOfManyChangesStreamsThemInOrder) {
  for (int i = 0; i < 600; ++i) Put(fmt::format("k{:04d}", i), "base");
  DoCommit("base");
  ASSERT_OK(catalog_->CreateBranch("repo", "feature", "main").status());
  for (int i = 0; i < 600; i += 2) Put(fmt::format("k{:04d}", i), "feature", "feature");
  for (int i = 1; i < 600; i += 6) ASSERT_OK(catalog_->DeleteEntry("repo", "feature", fmt::format("k{:04d}", i)));
  for (int i = 600; i < 900; ++i) Put(fmt::format("k{:04d}", i), "feature", "feature");
  DoCommit("feature", "feature");
  for (int i = 3; i < 600; i += 6) Put(fmt::format("k{:04d}", i), "main");
  DoCommit("main");
  auto merged = catalog_->Merge("repo", "feature", "main", {}, MergeStrategy::kNone);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  for (int i = 0; i < 900; ++i) {
    auto e = catalog_->GetEntry("repo", "main", fmt::format("k{:04d}", i));
    std::string want = i >= 600 || i % 2 == 0 ? "feature" : i % 6 == 1 ? "" : i % 6 == 3 ? "main" : "base";
    if (want.empty()) {
      EXPECT_TRUE(IsNotFound(e.status())) << i;
    } else {
      ASSERT_TRUE(e.ok()) << i << " " << e.status().ToString();
      EXPECT_EQ(e->checksum, want) << i;
    }
  }
  // Both sides change 300 keys: a conflict names the first five and the count; main is unchanged.
  for (int i = 0; i < 300; ++i) Put(fmt::format("k{:04d}", i), "f2", "feature");
  DoCommit("f2", "feature");
  for (int i = 0; i < 300; ++i) Put(fmt::format("k{:04d}", i), "m2");
  auto head = DoCommit("m2");
  auto conflict = catalog_->Merge("repo", "feature", "main", {}, MergeStrategy::kNone);
  ASSERT_TRUE(IsConflict(conflict.status())) << conflict.status().ToString();
  EXPECT_NE(conflict.status().message().find("300 path(s)"), std::string::npos) << conflict.status().message();
  EXPECT_NE(conflict.status().message().find("k0000, k0001"), std::string::npos) << conflict.status().message();
  EXPECT_EQ(catalog_->GetBranch("repo", "main")->commit_id, head.id);
}

// A link address links once, for the branch and path it was issued for,
// before it expires; anything else (another repository's address, an
// object's address read from a listing) links nothing.
TEST_F(CatalogTest, LinkAddressesLinkOnceWhereIssuedUntilTheyExpire) {
  ASSERT_OK(catalog_->CreateBranch("repo", "dev", "main").status());
  auto repo = *catalog_->GetRepository("repo");
  auto issued = catalog_->IssueLinkAddress(repo, "main", "public/x");
  ASSERT_OK(issued.status());
  std::string a = *issued;
  EXPECT_EQ(a.rfind("data/", 0), 0u) << a;
  EXPECT_TRUE(IsInvalidArgument(catalog_->CheckLinkAddress("repo", "main", "public/y", a)));
  EXPECT_TRUE(IsInvalidArgument(catalog_->CheckLinkAddress("repo", "dev", "public/x", a)));
  EXPECT_TRUE(IsInvalidArgument(catalog_->CheckLinkAddress("repo", "main", "public/x", "data/never/issued")));
  Put("secret/x", "s3cr3t");
  auto secret = catalog_->GetEntry("repo", "main", "secret/x");
  ASSERT_OK(secret.status());
  EXPECT_TRUE(IsInvalidArgument(catalog_->ClaimLinkAddress("repo", "main", "public/x", secret->address)));
  ASSERT_OK(catalog_->CheckLinkAddress("repo", "main", "public/x", a));
  ASSERT_OK(catalog_->ClaimLinkAddress("repo", "main", "public/x", a));
  Status again = catalog_->ClaimLinkAddress("repo", "main", "public/x", a);
  EXPECT_TRUE(IsInvalidArgument(again));
  EXPECT_NE(again.message().find("linked already"), std::string::npos) << again.ToString();

  std::string b = *catalog_->IssueLinkAddress(repo, "main", "public/y");
  ASSERT_OK(catalog_->IssueLinkAddress(repo, "main", "public/z").status());
  // An address issued with a lifetime of its own (a multipart upload's) lasts that long.
  std::string upload = *catalog_->IssueLinkAddress(repo, "main", "public/big", std::chrono::hours(24));
  clock_->Advance(std::chrono::hours(1));
  ASSERT_OK(catalog_->CheckLinkAddress("repo", "main", "public/big", upload));
  Status expired = catalog_->ClaimLinkAddress("repo", "main", "public/y", b);
  EXPECT_TRUE(IsInvalidArgument(expired));
  EXPECT_NE(expired.message().find("expired"), std::string::npos) << expired.ToString();
  // GC forgets the expired ones and keeps the current one.
  std::string d = *catalog_->IssueLinkAddress(repo, "main", "public/w");
  ASSERT_OK(catalog_->PruneLinkAddresses("repo"));
  int left = 0;
  ASSERT_OK(kv_->ScanAll("c/la/repo/", "", [&](const kv::KeyValue&) -> Result<bool> {
    left++;
    return true;
  }));
  EXPECT_EQ(left, 2) << "public/w's and the upload's";
  ASSERT_OK(catalog_->ClaimLinkAddress("repo", "main", "public/w", d));
  clock_->Advance(std::chrono::hours(23));
  EXPECT_TRUE(IsInvalidArgument(catalog_->CheckLinkAddress("repo", "main", "public/big", upload)));
}

// PutUploadedEntry deletes data written for an entry that staging refused
// before it wrote anything, and keeps it once a staging write was issued: the
// entry may be staged, and a commit may have taken it.
TEST_F(CatalogTest, UploadedDataIsDeletedOnlyWhenNothingWasStaged) {
  // Stages an entry for freshly written data; whether the data is still stored.
  auto upload = [&](const std::string& branch, const std::string& path, bool if_absent, Status* st) {
    auto repo = catalog_->GetRepository("repo");
    auto ns = catalog_->RepositoryNamespace(*repo);
    Entry e = MakeEntry("up");
    e.address = NewDataAddress(0);
    EXPECT_OK((*ns)->Put(e.address, "up"));
    *st = catalog_->PutUploadedEntry(*repo, branch, path, e, if_absent);
    return (*ns)->Stat(e.address).ok();
  };
  Status st;
  EXPECT_FALSE(upload("main", "", false, &st));
  EXPECT_TRUE(IsInvalidArgument(st)) << st.ToString();
  EXPECT_FALSE(upload("nope", "a", false, &st));
  EXPECT_TRUE(IsNotFound(st)) << st.ToString();
  EXPECT_FALSE(upload("nope", "a", /*if_absent=*/true, &st));
  EXPECT_TRUE(IsNotFound(st)) << st.ToString();
  EXPECT_TRUE(upload("main", "a", false, &st));
  ASSERT_OK(st);
  EXPECT_FALSE(upload("main", "a", /*if_absent=*/true, &st));
  EXPECT_TRUE(IsPreconditionFailed(st)) << st.ToString();
  ASSERT_OK(catalog_->SetBranchProtection("repo", {"guarded"}, std::nullopt));
  EXPECT_FALSE(upload("guarded", "a", false, &st));
  EXPECT_TRUE(IsForbidden(st)) << st.ToString();
  // The branch deleted between the staged write and its re-check: NotFound,
  // but the entry was written (a commit could have sealed it first).
  ASSERT_OK(catalog_->CreateBranch("repo", "doomed", "main").status());
  kv_->BeforeWrite(HookedKv::Prefix("c/s/"), [&] { EXPECT_OK(catalog_->DeleteBranch("repo", "doomed")); });
  EXPECT_TRUE(upload("doomed", "b", false, &st));
  EXPECT_TRUE(IsNotFound(st)) << st.ToString();
}

// Cherry-pick replays one commit's change onto another branch; revert undoes
// it. One rule for both: a merge commit needs a parent number.
TEST_F(CatalogTest, CherryPickReplaysACommitAndRevertUndoesIt) {
  Put("base", "0");
  DoCommit("base");
  ASSERT_OK(catalog_->CreateBranch("repo", "dev", "main").status());
  ASSERT_OK(catalog_->CreateBranch("repo", "other", "main").status());
  Put("feature", "f1", "dev");
  CommitParams by_dev;
  by_dev.committer = "dev-person";
  by_dev.message = "add feature";
  by_dev.metadata = {{"ticket", "42"}};
  auto picked_from = catalog_->CommitBranch("repo", "dev", by_dev);
  ASSERT_OK(picked_from.status());

  // Plain: the change lands on main with the commit's message and metadata, and the picker as committer.
  CommitParams me;
  me.committer = "me";
  auto picked = catalog_->CherryPick("repo", "main", picked_from->id, 0, me);
  ASSERT_OK(picked.status());
  EXPECT_EQ(catalog_->GetEntry("repo", "main", "feature")->checksum, "f1");
  EXPECT_EQ(picked->message, "add feature");
  EXPECT_EQ(picked->committer, "me");
  EXPECT_EQ(picked->metadata.at("ticket"), "42");
  EXPECT_EQ(picked->metadata.at("cherry-pick-origin"), picked_from->id);
  EXPECT_EQ(picked->metadata.at("cherry-pick-committer"), "dev-person");
  EXPECT_EQ(picked->parents.size(), 1u);
  // Overrides replace the message and metadata.
  Put("feature2", "f2", "dev");
  auto second = DoCommit("second", "dev");
  CommitParams overriding = me;
  overriding.message = "picked with a message of my own";
  overriding.metadata = {{"k", "v"}};
  auto picked2 = catalog_->CherryPick("repo", "main", second.id, 0, overriding);
  ASSERT_OK(picked2.status());
  EXPECT_EQ(picked2->message, "picked with a message of my own");
  EXPECT_EQ(picked2->metadata.count("ticket"), 0u);
  EXPECT_EQ(picked2->metadata.at("k"), "v");
  // Again: nothing left to apply.
  EXPECT_FALSE(catalog_->CherryPick("repo", "main", second.id, 0, me).ok());

  // A merge commit: its parent number says which side's change to replay.
  Put("on-other", "o", "other");
  DoCommit("other work", "other");
  Put("dev-only", "d", "dev");
  DoCommit("dev work", "dev");
  auto merge = catalog_->Merge("repo", "dev", "other", CommitParams{}, MergeStrategy::kNone);
  ASSERT_OK(merge.status());
  ASSERT_EQ(merge->parents.size(), 2u);
  ASSERT_OK(catalog_->CreateBranch("repo", "target", "main").status());
  for (auto replay : {&Catalog::CherryPick, &Catalog::Revert}) {
    Status no_parent = (catalog_.get()->*replay)("repo", "target", merge->id, 0, me).status();
    EXPECT_TRUE(IsInvalidArgument(no_parent)) << no_parent.ToString();
    EXPECT_NE(no_parent.message().find("parent number"), std::string::npos) << no_parent.ToString();
    EXPECT_TRUE(IsInvalidArgument((catalog_.get()->*replay)("repo", "target", merge->id, 3, me).status()));
  }
  // Parent 1 is other's side: the merge brought dev's changes into it.
  auto from_merge = catalog_->CherryPick("repo", "target", merge->id, 1, me);
  ASSERT_OK(from_merge.status());
  EXPECT_EQ(catalog_->GetEntry("repo", "target", "dev-only")->checksum, "d");
  EXPECT_TRUE(IsNotFound(catalog_->GetEntry("repo", "target", "on-other").status()));

  // A conflict: the branch changed the same path otherwise.
  Put("feature", "mine", "other");
  DoCommit("conflicting", "other");
  Status conflict = catalog_->CherryPick("repo", "other", picked_from->id, 0, me).status();
  EXPECT_TRUE(IsConflict(conflict)) << conflict.ToString();
  EXPECT_EQ(catalog_->GetEntry("repo", "other", "feature")->checksum, "mine") << "a conflict changes nothing";

  // Revert undoes the cherry-picked change on main.
  auto reverted = catalog_->Revert("repo", "main", picked->id, 0, me);
  ASSERT_OK(reverted.status());
  EXPECT_TRUE(IsNotFound(catalog_->GetEntry("repo", "main", "feature").status()));
}

}  // namespace
}  // namespace sediment::catalog
