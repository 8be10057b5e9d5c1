#include "table/compactor.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "base/failpoint.h"
#include "table/discard.h"
#include "table/histogram.h"
#include "table/run_on_internal.h"
#include "table/table_metrics_internal.h"

namespace sediment::table {

Compactor::Compactor(TableRegistry* registry, blob::BlobStore* blobs, Clock* clock, TableMetrics* metrics,
                     const WriterConfig& writer, const WriterSettings& file_settings, const std::atomic<bool>* stopping,
                     uint32_t writer_tag)
    : registry_(registry),
      blobs_(blobs),
      clock_(clock),
      metrics_(metrics),
      active_(writer.compactor.active),
      planner_(PlannerSettings::FromConfig(writer)),
      file_settings_(file_settings),
      stopping_(stopping),
      writer_tag_(writer_tag),
      write_concurrency_(static_cast<int>(writer.compactor.write_concurrency)),
      metadata_concurrency_(static_cast<int>(writer.compactor.metadata_concurrency)) {}

struct Compactor::PassPools {
  PassPools(int write_concurrency, int metadata_concurrency)
      : group("table-merge", write_concurrency, 1 << 20),
        worker("table-merge-work", write_concurrency, 1 << 20),
        footer("table-footers", metadata_concurrency, 1 << 20) {}
  ThreadPool group, worker, footer;
};

Compactor::~Compactor() = default;

std::unique_ptr<Compactor::PassPools> Compactor::TakePools() {
  {
    std::lock_guard<std::mutex> lock(pools_mu_);
    if (!idle_pools_.empty()) {
      auto pools = std::move(idle_pools_.back());
      idle_pools_.pop_back();
      return pools;
    }
  }
  return std::make_unique<PassPools>(write_concurrency_, metadata_concurrency_);
}

void Compactor::ReturnPools(std::unique_ptr<PassPools> pools) {
  // Nothing of this pass may still run when the next one takes them.
  pools->group.WaitIdle();
  pools->worker.WaitIdle();
  pools->footer.WaitIdle();
  std::lock_guard<std::mutex> lock(pools_mu_);
  if (idle_pools_.size() < 4) idle_pools_.push_back(std::move(pools));
}

Result<PassResult> Compactor::RunPass(const TableId& id, const ProgressFn& progress) {
  PassResult result;
  if (!active_) return result;
  result.ran = true;
  auto started = std::chrono::steady_clock::now();
  // The table after the snapshot: schemas only grow, so no file is newer than it.
  ARROW_ASSIGN_OR_RAISE(Snapshot snap, registry_->TakeSnapshot(id));
  ARROW_ASSIGN_OR_RAISE(TableInfo table, registry_->GetTable(id));
  result.files_considered = static_cast<int64_t>(snap.segments.size());
  struct Job {
    std::vector<SegmentRecord> inputs;
    FileLayout layout;
  };
  std::vector<Job> jobs;
  for (const auto& g : PlanCompaction(snap.segments, planner_, clock_->Now())) {
    jobs.push_back({{snap.segments.begin() + g.first, snap.segments.begin() + g.first + g.count},
                    g.final ? FileLayout::kFinal : FileLayout::kPages});
  }
  if (jobs.empty()) {
    // Nothing to merge: rewrite the oldest file still stored the old way
    // (SegmentRecord::storage), alone, so engines that refuse Parquet's
    // unsigned types (Iceberg's Java readers) read every file in the end.
    const size_t settled = snap.segments.size() - std::min<size_t>(snap.segments.size(), planner_.skip_latest_segments);
    for (size_t i = 0; i < settled; ++i) {
      const auto& s = snap.segments[i];
      if (s.storage >= kStorageVersion) continue;
      const bool full = ClassifyFile(s, planner_, clock_->Now()) == FileAge::kFull;
      jobs.push_back({{s}, full ? FileLayout::kFinal : FileLayout::kPages});
      break;
    }
  }
  if (progress) progress({PassProgress::Kind::kPlanned, jobs.size(), nullptr});

  if (!jobs.empty()) {
    // This pass's threads: groups merged at once, the workers they share, footer readers.
    std::unique_ptr<PassPools> pools = TakePools();
    MergeContext ctx{blobs_,          &pools->footer, &pools->worker, write_concurrency_,
                     &file_settings_, stopping_,      writer_tag_};
    std::vector<std::future<MergeOutcome>> futures;
    for (const auto& job : jobs) {
      futures.push_back(
          RunOn<MergeOutcome>(&pools->group, [this, table, inputs = job.inputs, layout = job.layout, &ctx]() {
            return MergeAndSwap(table, inputs, layout, ctx);
          }));
    }
    for (auto& f : futures) {
      MergeOutcome m = f.get();
      Report(id, m, progress);
      result.merges.push_back(std::move(m));
    }
    ReturnPools(std::move(pools));
  }
  if (!jobs.empty()) {
    auto state = registry_->State(id);
    if (state.ok()) {
      metrics_->UpdateGauges(id, *state);
      result.state_after = *state;
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

MergeOutcome Compactor::MergeAndSwap(const TableInfo& table, const std::vector<SegmentRecord>& inputs,
                                     FileLayout layout, const MergeContext& ctx) {
  MergeOutcome out;
  out.final = layout == FileLayout::kFinal;
  for (const auto& s : inputs) {
    out.inputs.push_back(s.id);
    out.input_stored_bytes += s.stored_bytes;
  }
  if (!inputs.empty()) {
    out.start = inputs.front().start;
    out.end = inputs.back().end;
  }
  if (*stopping_) {
    out.status = MergeStatus::kStopped;
    out.error = "server stopping";
    return out;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto merged = MergeSegments(ctx, table, inputs, clock_->Now(), layout, &out.stats);
  if (!merged.ok()) {
    out.status = merged.status().IsCancelled() ? MergeStatus::kStopped : MergeStatus::kFailed;
    out.error = merged.status().message();
    return out;
  }
  LiveSetChange swap;
  swap.remove = inputs;
  swap.add = {*merged};
  Status st = failpoint::Hit("table.merge.after_publish");
  if (!st.ok()) {
    (void)DiscardUnlessLive(registry_, blobs_, table.id, merged->path);
    out.error = st.message();
    return out;
  }
  st = registry_->Commit(table.id, swap, clock_->Now()).status();
  if (st.ok()) st = failpoint::Hit("table.merge.after_swap");
  if (!st.ok()) {
    // Never delete a file the live set holds: a swap whose outcome is
    // unknown may have landed.
    auto live = DiscardUnlessLive(registry_, blobs_, table.id, merged->path);
    if (!(live.ok() && *live)) {
      if (IsPreconditionFailed(st)) {
        out.status = MergeStatus::kDiscarded;
      } else {
        out.status = MergeStatus::kFailed;
        out.error = "swap failed: " + st.message();
      }
      return out;
    }
  }
  int64_t read = 0;
  for (const auto& s : inputs) read += s.bytes;
  auto labels = Labels(table.id);
  metrics_->bytes_read.With(labels).Add(static_cast<double>(read));
  metrics_->bytes_written.With(labels).Add(static_cast<double>(merged->stored_bytes));
  metrics_->files_read.With(labels).Add(static_cast<double>(inputs.size()));
  metrics_->row_groups.With({table.id.dataset, table.id.table, "copied"})
      .Add(static_cast<double>(out.stats.row_groups_copied));
  metrics_->row_groups.With({table.id.dataset, table.id.table, "pages"})
      .Add(static_cast<double>(out.stats.row_groups_from_pages));
  metrics_->row_groups.With({table.id.dataset, table.id.table, "reencoded"})
      .Add(static_cast<double>(out.stats.row_groups_reencoded));
  metrics_->successful.With(labels).Add();
  metrics_->duration.With(labels).Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  out.status = MergeStatus::kMerged;
  out.output = *merged;
  return out;
}

void Compactor::Report(const TableId& id, const MergeOutcome& m, const ProgressFn& progress) {
  switch (m.status) {
    case MergeStatus::kFailed:
      metrics_->failed.With(Labels(id)).Add();
      spdlog::error("table {}: merging {} file(s) starting at {} failed: {}", id.ToString(), m.inputs.size(),
                    m.inputs.front(), m.error);
      if (progress) progress({PassProgress::Kind::kFailed, 0, &m});
      break;
    case MergeStatus::kDiscarded:
      metrics_->discarded.With(Labels(id)).Add();
      spdlog::info("table {}: merge of {} file(s) from {} discarded: the files changed meanwhile", id.ToString(),
                   m.inputs.size(), m.inputs.front());
      if (progress) progress({PassProgress::Kind::kDiscarded, 0, &m});
      break;
    case MergeStatus::kMerged:
      spdlog::info(
          "table {}: merged {} file(s) into {} ({} rows, {} uncompressed, {} stored; row groups: {} copied, {} made "
          "of copied pages, {} encoded)",
          id.ToString(), m.inputs.size(), m.output->id, m.output->rows, FormatBytes(m.output->bytes),
          FormatBytes(m.output->stored_bytes), m.stats.row_groups_copied, m.stats.row_groups_from_pages,
          m.stats.row_groups_reencoded);
      if (progress) progress({PassProgress::Kind::kMerged, 0, &m});
      break;
    case MergeStatus::kStopped:
      break;
  }
}

}  // namespace sediment::table
