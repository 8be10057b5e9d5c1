// SwapEntry and SwapEntries: staged writes that happen only if the paths still name what
// the writers read (the compare-and-set of Iceberg tables' pointer entries), and the merge resolver
// the catalog offers conflicts to (table merges).
#include <gtest/gtest.h>

#include "base/test_util.h"
#include "catalog/catalog.h"
#include "catalog/catalog_testing.h"

namespace sediment::catalog {
namespace {

using fixtures::MakeEntry;

class SwapEntryTest : public fixtures::CatalogFixture {
 protected:
  std::string AddressAt(const std::string& path, const std::string& ref = "main") {
    auto e = catalog_->GetEntry("repo", ref, path);
    return e.ok() ? e->address : "(" + e.status().ToString() + ")";
  }
};

TEST_F(SwapEntryTest, ASwapFromAbsentCreatesAndASecondOneFromAbsentIsRefused) {
  ASSERT_OK(catalog_->SwapEntry("repo", "main", "t/pointer", MakeEntry("v1"), std::nullopt));
  EXPECT_EQ(AddressAt("t/pointer"), "data/v1");
  Status again = catalog_->SwapEntry("repo", "main", "t/pointer", MakeEntry("v2"), std::nullopt);
  EXPECT_TRUE(IsPreconditionFailed(again)) << again.ToString();
  EXPECT_EQ(AddressAt("t/pointer"), "data/v1") << "nothing written";
}

TEST_F(SwapEntryTest, OfTwoSwapsFromTheSameValueOnlyTheFirstLands) {
  ASSERT_OK(catalog_->SwapEntry("repo", "main", "t/pointer", MakeEntry("v1"), std::nullopt));
  ASSERT_OK(catalog_->SwapEntry("repo", "main", "t/pointer", MakeEntry("v2"), "data/v1"));
  Status lost = catalog_->SwapEntry("repo", "main", "t/pointer", MakeEntry("v3"), "data/v1");
  EXPECT_TRUE(IsPreconditionFailed(lost)) << lost.ToString();
  EXPECT_NE(lost.message().find("no longer names data/v1"), std::string::npos) << lost.message();
  EXPECT_EQ(AddressAt("t/pointer"), "data/v2");
}

TEST_F(SwapEntryTest, TheValueMayBeCommittedSealedOrDeletedInStaging) {
  ASSERT_OK(catalog_->SwapEntry("repo", "main", "t/pointer", MakeEntry("v1"), std::nullopt));
  Commit("first");  // now in the branch's meta-range, not in staging
  ASSERT_OK(catalog_->SwapEntry("repo", "main", "t/pointer", MakeEntry("v2"), "data/v1"));
  EXPECT_EQ(AddressAt("t/pointer"), "data/v2");
  ASSERT_OK(catalog_->DeleteEntry("repo", "main", "t/pointer"));
  EXPECT_TRUE(IsPreconditionFailed(catalog_->SwapEntry("repo", "main", "t/pointer", MakeEntry("v3"), "data/v2")))
      << "deleted in staging: it names nothing";
  ASSERT_OK(catalog_->SwapEntry("repo", "main", "t/pointer", MakeEntry("v3"), std::nullopt));
  EXPECT_EQ(AddressAt("t/pointer"), "data/v3");
}

TEST_F(SwapEntryTest, ABranchSeesItsOwnValueAndATagOrBadPathIsRefused) {
  ASSERT_OK(catalog_->SwapEntry("repo", "main", "t/pointer", MakeEntry("v1"), std::nullopt));
  Commit("first");
  ASSERT_OK(catalog_->CreateBranch("repo", "dev", "main").status());
  ASSERT_OK(catalog_->SwapEntry("repo", "dev", "t/pointer", MakeEntry("dev1"), "data/v1"));
  EXPECT_EQ(AddressAt("t/pointer", "dev"), "data/dev1");
  EXPECT_EQ(AddressAt("t/pointer", "main"), "data/v1") << "main is untouched";
  ASSERT_OK(catalog_->CreateTag("repo", "v1", "main", false).status());
  EXPECT_FALSE(catalog_->SwapEntry("repo", "v1", "t/pointer", MakeEntry("x"), "data/v1").ok()) << "a tag is no branch";
  EXPECT_TRUE(IsInvalidArgument(catalog_->SwapEntry("repo", "main", "", MakeEntry("x"), std::nullopt)));
}

TEST_F(SwapEntryTest, SeveralSwapsLandTogetherOrNotAtAll) {
  using Swap = Catalog::EntrySwap;
  ASSERT_OK(catalog_->SwapEntries(
      "repo", "main", {Swap{"t/a", MakeEntry("a1"), std::nullopt}, Swap{"t/b", MakeEntry("b1"), std::nullopt}}));
  EXPECT_EQ(AddressAt("t/a"), "data/a1");
  EXPECT_EQ(AddressAt("t/b"), "data/b1");
  // One stale expectation: neither lands.
  Status lost = catalog_->SwapEntries(
      "repo", "main", {Swap{"t/a", MakeEntry("a2"), "data/a1"}, Swap{"t/b", MakeEntry("b2"), "data/stale"}});
  EXPECT_TRUE(IsPreconditionFailed(lost)) << lost.ToString();
  EXPECT_EQ(AddressAt("t/a"), "data/a1") << "the first swap did not land alone";
  // A rename: the new path if absent, the old one deleted if still the same.
  ASSERT_OK(catalog_->SwapEntries("repo", "main",
                                  {Swap{"t/c", MakeEntry("a1"), std::nullopt}, Swap{"t/a", std::nullopt, "data/a1"}}));
  EXPECT_EQ(AddressAt("t/c"), "data/a1");
  EXPECT_TRUE(IsNotFound(catalog_->GetEntry("repo", "main", "t/a").status()));
  EXPECT_TRUE(IsInvalidArgument(catalog_->SwapEntries(
      "repo", "main", {Swap{"t/d", MakeEntry("x"), std::nullopt}, Swap{"t/d", MakeEntry("y"), std::nullopt}})))
      << "a path twice";
}

}  // namespace
}  // namespace sediment::catalog

namespace sediment::catalog {
namespace {

// A resolver that merges paths under t/ by joining both sides' checksums, and
// refuses t/refuse with a reason.
class JoiningResolver : public MergeResolver {
 public:
  bool Handles(const std::string& path) const override { return path.rfind("t/", 0) == 0; }
  Result<Entry> Resolve(const Repository&, const std::string& path, const std::optional<Entry>& base,
                        const std::optional<Entry>& source, const std::optional<Entry>& dest) override {
    calls++;
    if (path == "t/refuse") return Conflict("both sides rewrote it");
    EXPECT_TRUE(base && source && dest);
    return fixtures::MakeEntry(source->checksum + "+" + dest->checksum);
  }
  int calls = 0;
};

class MergeResolverTest : public fixtures::CatalogFixture {};

TEST_F(MergeResolverTest, AConflictTheResolverHandlesMergesOnceAndOthersStayConflicts) {
  JoiningResolver resolver;
  catalog_->SetMergeResolver(&resolver);
  for (const char* p : {"t/x", "t/refuse", "plain"}) Put(p, "base");
  Commit("base");
  ASSERT_OK(catalog_->CreateBranch("repo", "dev", "main").status());
  Put("t/x", "dev", "dev");
  Commit("dev", "dev");
  Put("t/x", "main");
  Commit("main");
  ASSERT_OK(catalog_->Merge("repo", "dev", "main", CommitParams{}, MergeStrategy::kNone).status());
  EXPECT_EQ(catalog_->GetEntry("repo", "main", "t/x")->checksum, "dev+main");
  EXPECT_EQ(resolver.calls, 1) << "the check pass and the writing pass share one resolution";

  for (const char* p : {"t/refuse", "plain"}) {
    Put(p, "dev2", "dev");
    Put(p, "main2");
  }
  Commit("dev2", "dev");
  Commit("main2");
  auto refused = catalog_->Merge("repo", "dev", "main", CommitParams{}, MergeStrategy::kNone);
  ASSERT_TRUE(IsConflict(refused.status())) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("t/refuse (both sides rewrote it)"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("plain"), std::string::npos) << refused.status().message();
  EXPECT_EQ(catalog_->GetEntry("repo", "main", "t/x")->checksum, "dev+main") << "nothing changed";
}

}  // namespace
}  // namespace sediment::catalog
