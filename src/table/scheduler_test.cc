#include "table/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace sediment::table {
namespace {

const TableId kTable{"eth", "logs"};

TEST(TableLeasesTest, OneServerHoldsATableUntilItReleases) {
  auto kv = kv::NewMemoryStore();
  ManualClock clock;
  TableLeases a(kv, &clock, "server-a", std::chrono::seconds(60));
  TableLeases b(kv, &clock, "server-b", std::chrono::seconds(60));
  ASSERT_TRUE(*a.Hold(kTable));
  EXPECT_FALSE(*b.Hold(kTable));
  EXPECT_EQ(*b.Holder(kTable), "server-a");
  a.ReleaseAll();
  EXPECT_TRUE(*b.Hold(kTable)) << "released at stop, not after the TTL";
}

TEST(TableLeasesTest, AnExpiredLeaseIsTakenOver) {
  auto kv = kv::NewMemoryStore();
  ManualClock clock;
  TableLeases a(kv, &clock, "server-a", std::chrono::seconds(60));
  TableLeases b(kv, &clock, "server-b", std::chrono::seconds(60));
  ASSERT_TRUE(*a.Hold(kTable));
  clock.AdvanceSeconds(61);
  EXPECT_TRUE(*b.Hold(kTable));
  EXPECT_FALSE(*a.Hold(kTable));
}

TEST(CompactionSchedulerTest, RunNowIsBusyWhileAnotherServerHoldsTheLease) {
  auto kv = kv::NewMemoryStore();
  ManualClock clock;
  TableLeases mine(kv, &clock, "server-a", std::chrono::seconds(60));
  TableLeases other(kv, &clock, "server-b", std::chrono::seconds(60));
  int passes = 0;
  CompactionScheduler scheduler(CompactorConfig{}, &clock, &mine, [&](const TableId&, const ProgressFn&) {
    passes++;
    return Result<PassResult>(PassResult{});
  });
  ASSERT_TRUE(*other.Hold(kTable));
  auto r = scheduler.RunNow(kTable, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("server-b"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(passes, 0);
  other.ReleaseAll();
  ASSERT_TRUE(scheduler.RunNow(kTable, nullptr).ok());
  EXPECT_EQ(passes, 1);
}

TEST(CompactionSchedulerTest, RequestsWithinMinIntervalStartNoSecondPass) {
  auto kv = kv::NewMemoryStore();
  ManualClock clock;
  TableLeases leases(kv, &clock, "server-a", std::chrono::seconds(60));
  CompactorConfig config;
  config.min_interval = 10;
  std::atomic<int> passes{0};
  CompactionScheduler scheduler(config, &clock, &leases, [&](const TableId&, const ProgressFn&) {
    passes++;
    return Result<PassResult>(PassResult{});
  });
  scheduler.Request(kTable);
  scheduler.WaitIdle();
  EXPECT_EQ(passes, 0) << "not started: passes run only through RunNow";
  scheduler.Start([] {});
  scheduler.Request(kTable);
  scheduler.WaitIdle();
  EXPECT_EQ(passes, 1);
  clock.AdvanceSeconds(5);
  scheduler.Request(kTable);
  scheduler.WaitIdle();
  EXPECT_EQ(passes, 1) << "min_interval has not passed";
  clock.AdvanceSeconds(6);
  scheduler.Request(kTable);
  scheduler.WaitIdle();
  EXPECT_EQ(passes, 2);
  scheduler.Stop();
}

TEST(CompactionSchedulerTest, RequestsDoNothingWhenCompactionIsOff) {
  auto kv = kv::NewMemoryStore();
  ManualClock clock;
  TableLeases leases(kv, &clock, "server-a", std::chrono::seconds(60));
  CompactorConfig config;
  config.active = false;
  std::atomic<int> passes{0};
  CompactionScheduler scheduler(config, &clock, &leases, [&](const TableId&, const ProgressFn&) {
    passes++;
    return Result<PassResult>(PassResult{});
  });
  scheduler.Start([] {});
  scheduler.Request(kTable);
  scheduler.WaitIdle();
  EXPECT_EQ(passes, 0);
}

// Read in the code: a pass longer than lease_ttl let another server take the
// table and run the same plan.
TEST(CompactionSchedulerTest, ThePassKeepsItsLeaseWhileItRuns) {
  auto kv = kv::NewMemoryStore();
  auto clock = SystemClock::Default();
  TableLeases mine(kv, clock.get(), "server-a", std::chrono::milliseconds(300));
  TableLeases other(kv, clock.get(), "server-b", std::chrono::milliseconds(300));
  std::atomic<int> taken{0};
  CompactionScheduler scheduler(CompactorConfig{}, clock.get(), &mine, [&](const TableId&, const ProgressFn&) {
    for (int i = 0; i < 24; ++i) {  // 1.2 s, four TTLs
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (*other.Hold(kTable)) taken++;
    }
    return Result<PassResult>(PassResult{});
  });
  ASSERT_TRUE(scheduler.RunNow(kTable, nullptr).ok());
  EXPECT_EQ(taken, 0) << "another server took the table during the pass";
}

}  // namespace
}  // namespace sediment::table
