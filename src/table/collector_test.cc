// GC (collector.h): the live set is never collected, and each deletion is
// counted once however many collections run.
#include "table/collector.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "table/table_test_fixture_internal.h"

namespace sediment::table {
namespace {

TEST_F(TableServiceTest, GcNeverDeletesALiveFile) {
  Create();
  ASSERT_TRUE(Append(0, 9, 0).ok());
  // A manifest entry that names a live file (as a retried commit could leave).
  TableRegistry reg(kv_);
  SegmentRecord live = Live()[0];
  SegmentRecord same_file = live;
  same_file.id = live.id + "-again";
  LiveSetChange change;
  change.remove = {live};
  change.add = {same_file};
  ASSERT_TRUE(reg.Commit(id_, change, clock_->Now()).ok());
  ASSERT_EQ(reg.ListGc(id_)->size(), 1u);
  clock_->AdvanceSeconds(3600);
  auto gc = service_->RunGc(id_);
  ASSERT_TRUE(gc.ok());
  EXPECT_EQ(gc->deleted, 0);
  EXPECT_TRUE(reg.ListGc(id_)->empty()) << "the bad entry is dropped";
  EXPECT_EQ(ReadRows().size(), 30u) << "the file stays";
}

// Read in the code: the timer's GC and the one after a pass ran at once and
// both counted the same deletions.
TEST_F(TableServiceTest, ConcurrentGcCountsEachDeletionOnce) {
  config_.writer.bytes = 3000;
  Restart();
  Create();
  for (uint64_t b = 0; b < 200; b += 2) ASSERT_TRUE(Append(b, b + 1, 0, -1, 1).ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(service_->CompactNow(id_).ok());
  TableRegistry reg(kv_);
  size_t waiting = reg.ListGc(id_)->size();
  ASSERT_GT(waiting, 20u);
  clock_->AdvanceSeconds(3600);
  std::atomic<int64_t> deleted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        auto gc = service_->RunGc(id_);
        if (gc.ok()) deleted += gc->deleted;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(deleted.load(), static_cast<int64_t>(waiting));
  EXPECT_EQ(Metric("gc_files_deleted_total"), static_cast<double>(waiting));
  EXPECT_TRUE(reg.ListGc(id_)->empty());
}

}  // namespace
}  // namespace sediment::table
