#include "base/metrics.h"

#include <gtest/gtest.h>

#include <thread>

namespace sediment {
namespace {

TEST(MetricsTest, CounterWithLabelsRenders) {
  MetricsRegistry r;
  auto& c = r.Counter("compaction_bytes_read_total", "Bytes read", {"dataset", "table"});
  c.With({"eth", "logs"}).Add(10);
  c.With({"eth", "logs"}).Add(5);
  c.With({"eth", "blocks"}).Add();
  EXPECT_EQ(c.Find({"eth", "logs"})->Value(), 15);
  EXPECT_EQ(c.Find({"eth", "none"}), nullptr);
  std::string text = r.RenderPrometheus();
  EXPECT_NE(text.find("# HELP compaction_bytes_read_total Bytes read\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE compaction_bytes_read_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("compaction_bytes_read_total{dataset=\"eth\",table=\"logs\"} 15\n"), std::string::npos);
  EXPECT_NE(text.find("compaction_bytes_read_total{dataset=\"eth\",table=\"blocks\"} 1\n"), std::string::npos);
}

TEST(MetricsTest, RegisteringAgainReturnsSameFamily) {
  MetricsRegistry r;
  auto& a = r.Gauge("table_files", "Files", {"dataset", "table"});
  auto& b = r.Gauge("table_files", "Files", {"dataset", "table"});
  EXPECT_EQ(&a, &b);
  a.With({"d", "t"}).Set(3);
  b.With({"d", "t"}).Add(-1);
  EXPECT_EQ(a.With({"d", "t"}).Value(), 2);
}

TEST(MetricsTest, HistogramBucketsAreCumulative) {
  MetricsRegistry r;
  auto& h = r.Histogram("graveler_compaction_seconds", "Duration", {"outcome"}, {0.1, 1, 10});
  auto& s = h.With({"completed"});
  s.Observe(0.05);
  s.Observe(0.5);
  s.Observe(1);  // le is inclusive
  s.Observe(100);
  std::string text = r.RenderPrometheus();
  EXPECT_NE(text.find("graveler_compaction_seconds_bucket{outcome=\"completed\",le=\"0.1\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("graveler_compaction_seconds_bucket{outcome=\"completed\",le=\"1\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("graveler_compaction_seconds_bucket{outcome=\"completed\",le=\"10\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("graveler_compaction_seconds_bucket{outcome=\"completed\",le=\"+Inf\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("graveler_compaction_seconds_count{outcome=\"completed\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("graveler_compaction_seconds_sum{outcome=\"completed\"} 101.55\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE graveler_compaction_seconds histogram"), std::string::npos);
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  MetricsRegistry r;
  r.Counter("x_total", "h", {"path"}).With({"a\"b\\c\nd"}).Add();
  EXPECT_NE(r.RenderPrometheus().find("x_total{path=\"a\\\"b\\\\c\\nd\"} 1"), std::string::npos)
      << r.RenderPrometheus();
  EXPECT_EQ(FormatMetricValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatMetricValue(0.25), "0.25");
}

TEST(MetricsTest, ConcurrentAddsAreNotLost) {
  MetricsRegistry r;
  auto& c = r.Counter("n_total", "h", {"t"});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) c.With({std::to_string(t % 2)}).Add();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.Find({"0"})->Value() + c.Find({"1"})->Value(), 40000);
}

}  // namespace
}  // namespace sediment
