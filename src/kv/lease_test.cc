#include "kv/lease.h"

#include <gtest/gtest.h>

namespace sediment::kv {
namespace {

TEST(LeaseTest, OneHolderAtATimeAndTakeoverAfterExpiry) {
  auto kv = NewMemoryStore();
  ManualClock clock;
  Lease a(kv, "lease/x", "server-a", std::chrono::seconds(30));
  Lease b(kv, "lease/x", "server-b", std::chrono::seconds(30));
  EXPECT_TRUE(*a.TryAcquire(clock.Now()));
  EXPECT_FALSE(*b.TryAcquire(clock.Now()));
  EXPECT_EQ(*b.Holder(clock.Now()), "server-a");
  clock.AdvanceSeconds(20);
  EXPECT_TRUE(*a.TryAcquire(clock.Now())) << "the holder renews";
  clock.AdvanceSeconds(20);
  EXPECT_FALSE(*b.TryAcquire(clock.Now())) << "renewed: still valid";
  clock.AdvanceSeconds(11);
  EXPECT_TRUE(*b.TryAcquire(clock.Now())) << "a died: its lease expired";
  EXPECT_FALSE(*a.TryAcquire(clock.Now()));
  ASSERT_TRUE(a.Release().ok()) << "releasing a lease we lost changes nothing";
  EXPECT_EQ(*a.Holder(clock.Now()), "server-b");
  ASSERT_TRUE(b.Release().ok());
  EXPECT_EQ(*a.Holder(clock.Now()), "");
  EXPECT_TRUE(*a.TryAcquire(clock.Now()));
}

TEST(LeaseTest, GarbageValueDoesNotWedge) {
  auto kv = NewMemoryStore();
  ASSERT_TRUE(kv->Set("lease/y", "not json").ok());
  Lease a(kv, "lease/y", "a", std::chrono::seconds(5));
  EXPECT_TRUE(*a.TryAcquire(ManualClock().Now()));
}

}  // namespace
}  // namespace sediment::kv
