// Commits whose outcome is unknown (discard.h): a file the live set
// references is never deleted, whatever the KV store answered.
#include "table/discard.h"

#include <gtest/gtest.h>

#include "kv/lands_but_fails_kv_testing.h"
#include "table/table_test_fixture_internal.h"

namespace sediment::table {
namespace {

using kv::LandsButFailsKv;

class UnknownOutcomeTest : public TableServiceTest {
 protected:
  void SetUp() override {
    TableServiceTest::SetUp();
    lying_ = std::make_shared<LandsButFailsKv>(kv_, "t/seg/");  // batches that change the live set
    kv_ = lying_;
    Restart();
  }
  std::shared_ptr<LandsButFailsKv> lying_;
};

// Read in the code: an append or a swap whose commit landed but reported an
// error deleted the file the live set now points at.
TEST_F(UnknownOutcomeTest, AnAppendThatLandedKeepsItsFile) {
  Create();
  ASSERT_TRUE(Append(0, 9, 0).ok());
  lying_->armed = 1;
  auto r = Append(10, 19, 0);
  EXPECT_TRUE(IsUnavailable(r.status())) << r.status().ToString();
  ASSERT_EQ(Live().size(), 2u) << "the append landed";
  EXPECT_EQ(ReadRows().size(), 20u * 3) << "and its file is still there";
}

TEST_F(UnknownOutcomeTest, ASwapThatLandedKeepsTheMergedFileAndCountsAsMerged) {
  Create();
  for (uint64_t b = 0; b < 20; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  lying_->armed = 1;
  auto pass = service_->CompactNow(id_);
  ASSERT_TRUE(pass.ok());
  ASSERT_EQ(pass->merges.size(), 1u);
  EXPECT_EQ(pass->merges[0].status, MergeStatus::kMerged) << pass->merges[0].error;
  ASSERT_EQ(Live().size(), 1u);
  EXPECT_EQ(ReadRows().size(), 20u * 3);
}

}  // namespace
}  // namespace sediment::table
