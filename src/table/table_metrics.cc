#include "table/registry.h"
#include "table/table_metrics_internal.h"

namespace sediment::table {

TableMetrics::TableMetrics(MetricsRegistry* r)
    : bytes_read(r->Counter("compaction_bytes_read_total", "Uncompressed bytes of the files merged by compaction.",
                            {"dataset", "table"})),
      bytes_written(r->Counter("compaction_bytes_written_total", "Bytes on storage of the files written by compaction.",
                               {"dataset", "table"})),
      files_read(r->Counter("compaction_files_read_total", "Files merged by compaction.", {"dataset", "table"})),
      row_groups(r->Counter("compaction_row_groups_total",
                            "Row groups written by compaction: copied as encoded bytes, or decoded and encoded again.",
                            {"dataset", "table", "how"})),
      failed(r->Counter("failed_compactions", "Merges that failed (the inputs stay live).", {"dataset", "table"})),
      successful(r->Counter("successful_compactions", "Merges swapped into the live set.", {"dataset", "table"})),
      discarded(r->Counter("compaction_discarded_total",
                           "Merges whose inputs changed before the swap (e.g. a reorg); output deleted.",
                           {"dataset", "table"})),
      duration(
          r->Histogram("compaction_duration_seconds", "Time to merge one group and swap it in.", {"dataset", "table"})),
      gc_deleted(r->Counter("gc_files_deleted_total", "Merged-away files deleted after the grace period.",
                            {"dataset", "table"})),
      gc_failed(r->Counter("gc_failed_deletions_total", "Failed deletions of merged-away files (retried).",
                           {"dataset", "table"})),
      orphans(
          r->Counter("gc_orphans_deleted_total", "Files left by a crash, deleted at start-up.", {"dataset", "table"})),
      reorgs(r->Counter("table_reorgs_total", "Appends that replaced live blocks (chain reorganizations).",
                        {"dataset", "table"})),
      forced_reorgs(r->Counter("table_forced_reorgs_total",
                               "Reorgs accepted without proof because the request said force=true.",
                               {"dataset", "table"})),
      reorg_rewrites(r->Counter("table_reorg_rewrites_total", "Files rewritten without the blocks a reorg replaced.",
                                {"dataset", "table"})),
      appends(r->Counter("table_segments_appended_total", "Segments appended.", {"dataset", "table"})),
      files(r->Gauge("table_files", "Live files of the table.", {"dataset", "table"})),
      bytes(r->Gauge("table_bytes", "Uncompressed bytes of the table's live files.", {"dataset", "table"})),
      stored(r->Gauge("table_stored_bytes", "Bytes on storage of the table's live files.", {"dataset", "table"})) {}

void TableMetrics::UpdateGauges(const TableId& id, const TableState& state) {
  files.With(Labels(id)).Set(static_cast<double>(state.files));
  bytes.With(Labels(id)).Set(static_cast<double>(state.bytes));
  stored.With(Labels(id)).Set(static_cast<double>(state.stored_bytes));
}

}  // namespace sediment::table
