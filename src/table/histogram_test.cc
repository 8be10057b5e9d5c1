#include "table/histogram.h"

#include <gtest/gtest.h>

namespace sediment::table {
namespace {

TEST(HistogramTest, KnownTable) {
  PlannerSettings s;
  s.bytes = 1000 * 1024;  // 1000 KiB target
  s.max_eager_bytes = 100 * 1024;
  s.cooldown = std::chrono::seconds(100);
  TimePoint now = FromUnixMicros(1'000'000'000'000);
  auto seg = [&](int64_t bytes, double age) {
    SegmentRecord r;
    r.bytes = bytes;
    r.stored_bytes = bytes / 4;
    r.rows = 10;
    r.created_at_us = ToUnixMicros(now - SecondsToDuration(age));
    return r;
  };
  std::vector<SegmentRecord> segs = {seg(10 * 1024, 500),  seg(100 * 1024, 1),    seg(150 * 1024, 500),
                                     seg(600 * 1024, 500), seg(1000 * 1024, 500), seg(3000 * 1024, 1)};
  HistogramReport r = BuildHistogram(segs, s, now);
  EXPECT_EQ(r.files, 6);
  EXPECT_EQ(r.bytes, (10 + 100 + 150 + 600 + 1000 + 3000) * 1024);
  EXPECT_EQ(r.below_eager, 2);
  EXPECT_EQ(r.old_below_half_target, 2) << "10 KiB and 150 KiB are old and below 500 KiB";
  EXPECT_DOUBLE_EQ(r.compression_ratio, 0.25);
  // Buckets: <=100K | 100K-200K | 200K-400K | 400K-500K | 500K-1000K | >=1000K
  ASSERT_EQ(r.buckets.size(), 6u);
  EXPECT_EQ(r.buckets.front().label, "<= 100 KiB (eager)");
  EXPECT_EQ(r.buckets.front().files, 2);
  EXPECT_EQ(r.buckets[1].files, 1);
  EXPECT_EQ(r.buckets[4].files, 1);
  EXPECT_EQ(r.buckets.back().files, 2);
  EXPECT_EQ(r.buckets.back().upper, -1);
  int64_t total = 0;
  for (const auto& b : r.buckets) total += b.files;
  EXPECT_EQ(total, 6);
}

TEST(HistogramTest, FormatBytes) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(100 * 1024), "100 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(2147483648), "2 GiB");
}

}  // namespace
}  // namespace sediment::table
