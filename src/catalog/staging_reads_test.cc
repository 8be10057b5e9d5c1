// Reads during a staging compaction (spec: "Get, List and the uncommitted diff
// return the same results as before"): a reader that loaded the branch just
// before the compaction swapped must still find the entries of the tokens the
// compaction folded, although the dropper deletes folded tokens.
#include <gtest/gtest.h>

#include <thread>
#include <utility>

#include "base/test_util.h"
#include "catalog/catalog.h"
#include "catalog/catalog_testing.h"
#include "kv/hooked_kv_testing.h"

namespace sediment::catalog {
namespace {

using fixtures::MakeEntry;

using sediment::kv::HookedKv;

// The parameter: dropped_token_grace in seconds.
class StagingReadsTest : public fixtures::CatalogFixture, public ::testing::WithParamInterface<double> {
 protected:
  void SetUp() override {
    CatalogOptions opts = Options();
    opts.dropped_token_grace = SecondsToDuration(GetParam());
    catalog_ = NewCatalog(std::move(opts), /*background=*/true);  // the dropper runs, as in a server
    ASSERT_NO_FATAL_FAILURE(CreateRepo(dir_.Sub("ns")));
    for (int i = 0; i < 20; ++i) ASSERT_OK(catalog_->PutEntry("repo", "main", Path(i), MakeEntry("v" + Path(i))));
  }
  static std::string Path(int i) { return "p/" + std::to_string(100 + i); }

  // Pauses the next reader right before it reads the staging token it loaded
  // with the branch; meanwhile a compaction folds that token and swaps, and the
  // background dropper gets every chance to delete it.
  void CompactWhileTheReaderIsPaused() {
    std::string token = catalog_->GetBranch("repo", "main")->staging_token;
    kv_->BeforeRead(HookedKv::Prefix("c/s/" + token + "/"), [this, token] {
      auto r = catalog_->CompactStaging("repo", "main");
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->outcome, CompactionOutcome::kCompleted);
      // The race happened: the dropper, woken by the swap, has looked at the
      // folded token (it stamps the record on first sight) before the reader reads.
      ASSERT_TRUE(testing::Eventually([&] { return DropperSaw(token); })) << "the dropper never ran";
    });
  }
  // Whether the background dropper has seen `token`'s retirement record.
  bool DropperSaw(const std::string& token) {
    auto record = kv_->Get("c/d/" + token);
    return !record.ok() || record->find("seen_us") != std::string::npos;  // stamped, or dropped already
  }
  size_t StagedKeys(const std::string& token) {
    size_t n = 0;
    (void)kv_->ScanAll("c/s/" + token + "/", "", [&](const kv::KeyValue&) -> Result<bool> {
      n++;
      return true;
    });
    return n;
  }
};

// Read in the code: the folded token was dropped as soon as the branch swapped,
// so a Get that loaded the branch before the swap missed the entry.
TEST_P(StagingReadsTest, AGetThatLoadedTheBranchBeforeTheSwapStillFindsTheEntry) {
  CompactWhileTheReaderIsPaused();
  auto e = catalog_->GetEntry("repo", "main", Path(7));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->checksum, "v" + Path(7));
}

TEST_P(StagingReadsTest, AListingThatLoadedTheBranchBeforeTheSwapSeesEveryEntry) {
  CompactWhileTheReaderIsPaused();
  ListOptions opts;
  opts.amount = 1000;
  auto page = catalog_->ListEntries("repo", "main", opts);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->items.size(), 20u);
}

// The folded token's keys do go once the grace period has passed.
TEST_P(StagingReadsTest, FoldedTokensAreDroppedAfterTheGracePeriod) {
  std::string token = catalog_->GetBranch("repo", "main")->staging_token;
  auto r = catalog_->CompactStaging("repo", "main");
  ASSERT_TRUE(r.ok());
  // The grace runs from the dropper's first sight of the retired token.
  ASSERT_TRUE(testing::Eventually([&] { return DropperSaw(token); }));
  EXPECT_GT(StagedKeys(token), 0u) << "dropped within the grace period";
  clock_->AdvanceSeconds(GetParam() + 1);
  EXPECT_TRUE(testing::Eventually([&] { return StagedKeys(token) == 0; })) << "not dropped after the grace period";
  EXPECT_EQ(catalog_->GetEntry("repo", "main", Path(3))->checksum, "v" + Path(3));
}

INSTANTIATE_TEST_SUITE_P(Grace, StagingReadsTest, ::testing::Values(60.0));

}  // namespace
}  // namespace sediment::catalog
