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

// A holder that asks for "at least this much more" writes only when less is
// left, and always holds it for that long after a true answer.
TEST(LeaseTest, AHolderAskingOftenRenewsOnlyWhenLittleIsLeft) {
  auto kv = NewMemoryStore();
  ManualClock clock;
  Lease a(kv, "lease/z", "a", std::chrono::seconds(30));
  Lease b(kv, "lease/z", "b", std::chrono::seconds(30));
  ASSERT_TRUE(*a.TryAcquire(clock.Now(), std::chrono::seconds(15)));
  const std::string first = *kv->Get("lease/z");
  clock.AdvanceSeconds(10);
  ASSERT_TRUE(*a.TryAcquire(clock.Now(), std::chrono::seconds(15)));
  EXPECT_EQ(*kv->Get("lease/z"), first) << "20 s left of 30: not written again";
  clock.AdvanceSeconds(10);
  ASSERT_TRUE(*a.TryAcquire(clock.Now(), std::chrono::seconds(15)));
  EXPECT_NE(*kv->Get("lease/z"), first) << "10 s left: renewed";
  clock.AdvanceSeconds(29);
  EXPECT_FALSE(*b.TryAcquire(clock.Now(), std::chrono::seconds(15))) << "held until 30 s after the renewal";
  clock.AdvanceSeconds(2);
  EXPECT_TRUE(*b.TryAcquire(clock.Now(), std::chrono::seconds(15)));
  EXPECT_FALSE(*a.TryAcquire(clock.Now(), std::chrono::seconds(15)));
}

TEST(LeaseTest, GarbageValueDoesNotWedge) {
  auto kv = NewMemoryStore();
  ASSERT_TRUE(kv->Set("lease/y", "not json").ok());
  Lease a(kv, "lease/y", "a", std::chrono::seconds(5));
  EXPECT_TRUE(*a.TryAcquire(ManualClock().Now()));
}

}  // namespace
}  // namespace sediment::kv
