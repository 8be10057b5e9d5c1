// SwapEntry: a staged write that happens only if the path still names what
// the writer read (the compare-and-set of an Iceberg table's pointer entry).
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
  ASSERT_OK(catalog_->SwapEntries("repo", "main",
                                  {Swap{"t/a", MakeEntry("a1"), std::nullopt}, Swap{"t/b", MakeEntry("b1"), std::nullopt}}));
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
