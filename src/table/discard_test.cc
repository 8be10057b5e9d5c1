// Commits whose outcome is unknown (discard.h): a file the live set
// references is never deleted, whatever the KV store answered.
#include "table/discard.h"

#include <gtest/gtest.h>

#include <atomic>

#include "table/table_test_fixture_internal.h"

namespace sediment::table {
namespace {

// A KV store whose next armed batches land but answer Unavailable, as a
// PostgreSQL that went away right after a COMMIT would after its retries.
class LandsButFailsKv final : public kv::KvStore {
 public:
  explicit LandsButFailsKv(std::shared_ptr<kv::KvStore> inner) : inner_(std::move(inner)) {}
  std::atomic<int> armed{0};
  Result<std::string> Get(std::string_view k) override { return inner_->Get(k); }
  Status Set(std::string_view k, std::string_view v) override { return inner_->Set(k, v); }
  Status Delete(std::string_view k) override { return inner_->Delete(k); }
  Result<kv::ScanPage> Scan(std::string_view p, std::string_view f, size_t n) override { return inner_->Scan(p, f, n); }
  Result<std::optional<kv::KeyValue>> Floor(std::string_view p, std::string_view at) override {
    return inner_->Floor(p, at);
  }
  // Only batches that change the live set (t/seg/ keys) are failed.
  Status Apply(const kv::Batch& b) override {
    Status st = inner_->Apply(b);
    bool live_set = false;
    for (const auto& m : b.mutations) live_set |= m.key.rfind("t/seg/", 0) == 0;
    if (st.ok() && live_set && armed > 0) {
      armed--;
      return Unavailable("the database went away after COMMIT");
    }
    return st;
  }
  std::string Describe() const override { return "lands-but-fails"; }

 private:
  std::shared_ptr<kv::KvStore> inner_;
};

class UnknownOutcomeTest : public TableServiceTest {
 protected:
  void SetUp() override {
    TableServiceTest::SetUp();
    lying_ = std::make_shared<LandsButFailsKv>(kv_);
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
