// MetricsRegistry: counters, gauges and histograms with labels, rendered in
// the Prometheus text exposition format (version 0.0.4) for GET /metrics.
//
//   auto& bytes_read = registry.Counter("compaction_bytes_read_total", "...", {"dataset", "table"});
//   bytes_read.With({"eth", "logs"}).Add(n);
//
// Thread-safety: everything is safe to call from many threads. References
// returned by the registry and by Family::With stay valid for the registry's
// life, also after the series is removed (it is retired, not freed: a few
// bytes each).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sediment {

class CounterMetric {
 public:
  void Add(double v = 1) { value_.fetch_add(v, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class GaugeMetric {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class HistogramMetric {
 public:
  explicit HistogramMetric(const std::vector<double>& bounds);
  void Observe(double v);
  uint64_t Count() const { return count_.load(std::memory_order_relaxed); }
  double Sum() const { return sum_.load(std::memory_order_relaxed); }
  const std::vector<double>& Bounds() const { return bounds_; }
  // Observations <= Bounds()[i] (cumulative, as Prometheus reports them).
  uint64_t CumulativeCount(size_t i) const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // non-cumulative
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

// Seconds buckets suited to request and compaction durations.
std::vector<double> DefaultSecondsBuckets();

enum class MetricType { kCounter, kGauge, kHistogram };

// All series of one metric name, one per label-value tuple.
template <typename M>
class MetricFamily {
 public:
  MetricFamily(std::vector<std::string> label_names, std::vector<double> bounds)
      : label_names_(std::move(label_names)), bounds_(std::move(bounds)) {}

  // The series for these label values (as many as label names), created on first use.
  M& With(const std::vector<std::string>& label_values);
  // nullptr if the series was never created.
  const M* Find(const std::vector<std::string>& label_values) const;

  // Drops a series from the family (what it measured is gone: a deleted
  // branch); With() creates it afresh.
  void Remove(const std::vector<std::string>& label_values);
  // Drops every series whose label number `index` is `value`.
  void RemoveWhere(size_t index, const std::string& value);

  const std::vector<std::string>& label_names() const { return label_names_; }
  // A consistent copy of (label values -> series) for rendering.
  std::vector<std::pair<std::vector<std::string>, const M*>> Series() const;

 private:
  std::vector<std::string> label_names_;
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<M>> series_;  // GUARDED_BY(mu_)
  std::vector<std::unique_ptr<M>> retired_;                        // GUARDED_BY(mu_): removed, still referenced
};

class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Registering a name again returns the same family; it must have the same
  // type and labels (a programming error otherwise: aborts).
  MetricFamily<CounterMetric>& Counter(const std::string& name, const std::string& help,
                                       std::vector<std::string> labels = {});
  MetricFamily<GaugeMetric>& Gauge(const std::string& name, const std::string& help,
                                   std::vector<std::string> labels = {});
  MetricFamily<HistogramMetric>& Histogram(const std::string& name, const std::string& help,
                                           std::vector<std::string> labels = {},
                                           std::vector<double> bounds = DefaultSecondsBuckets());

  std::string RenderPrometheus() const;

 private:
  struct Entry;
  Entry& Register(const std::string& name, const std::string& help, MetricType type, std::vector<std::string> labels,
                  std::vector<double> bounds);
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Entry>> entries_;  // GUARDED_BY(mu_)
};

// Exposition-format helpers, exposed for tests.
std::string FormatMetricValue(double v);
std::string EscapeLabelValue(const std::string& v);

}  // namespace sediment
