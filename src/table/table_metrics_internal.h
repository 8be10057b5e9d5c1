// TableMetrics: the Prometheus families every unit of the tables half writes
// (spec: compaction metrics), created once per TableService and shared by
// reference. Private to src/table.
//
// Thread-safety: the families are safe from many threads.
#pragma once

#include <string>
#include <vector>

#include "base/metrics.h"
#include "table/names.h"

namespace sediment::table {

struct TableState;

struct TableMetrics {
  explicit TableMetrics(MetricsRegistry* r);

  MetricFamily<CounterMetric>& bytes_read;
  MetricFamily<CounterMetric>& bytes_written;
  MetricFamily<CounterMetric>& files_read;
  MetricFamily<CounterMetric>& row_groups;  // label how = copied | reencoded
  MetricFamily<CounterMetric>& failed;
  MetricFamily<CounterMetric>& successful;
  MetricFamily<CounterMetric>& discarded;
  MetricFamily<HistogramMetric>& duration;
  MetricFamily<CounterMetric>& gc_deleted;
  MetricFamily<CounterMetric>& gc_failed;
  MetricFamily<CounterMetric>& orphans;
  MetricFamily<CounterMetric>& reorgs;
  MetricFamily<CounterMetric>& forced_reorgs;
  MetricFamily<CounterMetric>& reorg_rewrites;
  MetricFamily<CounterMetric>& appends;
  MetricFamily<GaugeMetric>& files;
  MetricFamily<GaugeMetric>& bytes;
  MetricFamily<GaugeMetric>& stored;

  // Sets the table_files / table_bytes / table_stored_bytes gauges from the live set's state.
  void UpdateGauges(const TableId& id, const TableState& state);
};

inline std::vector<std::string> Labels(const TableId& id) { return {id.dataset, id.table}; }

}  // namespace sediment::table
