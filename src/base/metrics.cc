#include "base/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace sediment {

HistogramMetric::HistogramMetric(const std::vector<double>& bounds)
    : bounds_(bounds), buckets_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  std::sort(bounds_.begin(), bounds_.end());
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i] = 0;
}

void HistogramMetric::Observe(double v) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

uint64_t HistogramMetric::CumulativeCount(size_t i) const {
  uint64_t total = 0;
  for (size_t j = 0; j <= i && j <= bounds_.size(); ++j) total += buckets_[j].load(std::memory_order_relaxed);
  return total;
}

std::vector<double> DefaultSecondsBuckets() {
  return {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
}

template <typename M>
M& MetricFamily<M>::With(const std::vector<std::string>& label_values) {
  if (label_values.size() != label_names_.size()) {
    std::fprintf(stderr, "metrics: %zu label values for %zu labels\n", label_values.size(), label_names_.size());
    std::abort();
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = series_[label_values];
  if (!slot) {
    if constexpr (std::is_same_v<M, HistogramMetric>) {
      slot = std::make_unique<M>(bounds_);
    } else {
      slot = std::make_unique<M>();
    }
  }
  return *slot;
}

template <typename M>
const M* MetricFamily<M>::Find(const std::vector<std::string>& label_values) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_.find(label_values);
  return it == series_.end() ? nullptr : it->second.get();
}

template <typename M>
void MetricFamily<M>::Remove(const std::vector<std::string>& label_values) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_.find(label_values);
  if (it == series_.end()) return;
  retired_.push_back(std::move(it->second));
  series_.erase(it);
}

template <typename M>
void MetricFamily<M>::RemoveWhere(size_t index, const std::string& value) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = series_.begin(); it != series_.end();) {
    if (index < it->first.size() && it->first[index] == value) {
      retired_.push_back(std::move(it->second));
      it = series_.erase(it);
    } else {
      ++it;
    }
  }
}

template <typename M>
std::vector<std::pair<std::vector<std::string>, const M*>> MetricFamily<M>::Series() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::vector<std::string>, const M*>> out;
  for (const auto& [labels, m] : series_) out.emplace_back(labels, m.get());
  return out;
}

template class MetricFamily<CounterMetric>;
template class MetricFamily<GaugeMetric>;
template class MetricFamily<HistogramMetric>;

struct MetricsRegistry::Entry {
  std::string help;
  MetricType type;
  std::vector<std::string> labels;
  std::unique_ptr<MetricFamily<CounterMetric>> counter;
  std::unique_ptr<MetricFamily<GaugeMetric>> gauge;
  std::unique_ptr<MetricFamily<HistogramMetric>> histogram;
};

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

MetricsRegistry::Entry& MetricsRegistry::Register(const std::string& name, const std::string& help, MetricType type,
                                                  std::vector<std::string> labels, std::vector<double> bounds) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = entries_[name];
  if (slot) {
    if (slot->type != type || slot->labels != labels) {
      std::fprintf(stderr, "metrics: %s registered twice with different type or labels\n", name.c_str());
      std::abort();
    }
    return *slot;
  }
  slot = std::make_unique<Entry>();
  slot->help = help;
  slot->type = type;
  slot->labels = labels;
  switch (type) {
    case MetricType::kCounter:
      slot->counter = std::make_unique<MetricFamily<CounterMetric>>(labels, bounds);
      break;
    case MetricType::kGauge:
      slot->gauge = std::make_unique<MetricFamily<GaugeMetric>>(labels, bounds);
      break;
    case MetricType::kHistogram:
      slot->histogram = std::make_unique<MetricFamily<HistogramMetric>>(labels, bounds);
      break;
  }
  return *slot;
}

MetricFamily<CounterMetric>& MetricsRegistry::Counter(const std::string& name, const std::string& help,
                                                      std::vector<std::string> labels) {
  return *Register(name, help, MetricType::kCounter, std::move(labels), {}).counter;
}

MetricFamily<GaugeMetric>& MetricsRegistry::Gauge(const std::string& name, const std::string& help,
                                                  std::vector<std::string> labels) {
  return *Register(name, help, MetricType::kGauge, std::move(labels), {}).gauge;
}

MetricFamily<HistogramMetric>& MetricsRegistry::Histogram(const std::string& name, const std::string& help,
                                                          std::vector<std::string> labels, std::vector<double> bounds) {
  return *Register(name, help, MetricType::kHistogram, std::move(labels), std::move(bounds)).histogram;
}

std::string FormatMetricValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

std::string Labels(const std::vector<std::string>& names, const std::vector<std::string>& values,
                   const std::string& extra_name = "", const std::string& extra_value = "") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += (out.empty() ? "" : ",") + names[i] + "=\"" + EscapeLabelValue(values[i]) + "\"";
  }
  if (!extra_name.empty()) out += (out.empty() ? "" : ",") + extra_name + "=\"" + extra_value + "\"";
  return out.empty() ? out : "{" + out + "}";
}

std::string EscapeHelp(const std::string& h) {
  std::string out;
  for (char c : h) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string MetricsRegistry::RenderPrometheus() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [name, e] : entries_) {
    static const char* kTypes[] = {"counter", "gauge", "histogram"};
    out += "# HELP " + name + " " + EscapeHelp(e->help) + "\n";
    out += "# TYPE " + name + " " + kTypes[static_cast<int>(e->type)] + "\n";
    switch (e->type) {
      case MetricType::kCounter:
        for (const auto& [lv, m] : e->counter->Series()) {
          out += name + Labels(e->labels, lv) + " " + FormatMetricValue(m->Value()) + "\n";
        }
        break;
      case MetricType::kGauge:
        for (const auto& [lv, m] : e->gauge->Series()) {
          out += name + Labels(e->labels, lv) + " " + FormatMetricValue(m->Value()) + "\n";
        }
        break;
      case MetricType::kHistogram:
        for (const auto& [lv, m] : e->histogram->Series()) {
          const auto& bounds = m->Bounds();
          for (size_t i = 0; i < bounds.size(); ++i) {
            out += name + "_bucket" + Labels(e->labels, lv, "le", FormatMetricValue(bounds[i])) + " " +
                   std::to_string(m->CumulativeCount(i)) + "\n";
          }
          // +Inf and _count from the same read of the buckets, so they agree.
          std::string total = std::to_string(m->CumulativeCount(bounds.size()));
          out += name + "_bucket" + Labels(e->labels, lv, "le", "+Inf") + " " + total + "\n";
          out += name + "_sum" + Labels(e->labels, lv) + " " + FormatMetricValue(m->Sum()) + "\n";
          out += name + "_count" + Labels(e->labels, lv) + " " + total + "\n";
        }
        break;
    }
  }
  return out;
}

}  // namespace sediment
