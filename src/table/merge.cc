// MergeSegments (merge.h): the pipeline that plans steps as footers arrive,
// runs them ahead on the worker pool and appends their results in order.
// Footers: merge_footers.cc; the plan: merge_plan.cc; the steps:
// merge_steps.cc.
#include "table/merge.h"

#include <arrow/api.h>
#include <fmt/format.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>
#include <parquet/schema.h>

#include <algorithm>
#include <deque>
#include <future>

#include "table/merge_footers_internal.h"
#include "table/merge_plan_internal.h"
#include "table/merge_steps_internal.h"
#include "table/run_on_internal.h"
#include "table/stored_types.h"

namespace sediment::table {
namespace merge_internal {
namespace {

SegmentRecord OutputRecord(const TableInfo& table, const std::vector<SegmentRecord>& inputs, TimePoint now,
                           uint32_t writer_tag) {
  SegmentRecord out;
  out.id = NewSegmentId(inputs.front().start, writer_tag);
  out.path = TableRegistry::SegmentPath(table.id, out.id);
  out.start = inputs.front().start;
  out.end = inputs.back().end;
  out.end_hash = inputs.back().end_hash;
  out.parent_hash = inputs.front().parent_hash;
  std::vector<std::string> parents;
  for (const auto& s : inputs) {
    out.generation = std::max(out.generation, s.generation + 1);
    parents.push_back(s.id);
  }
  out.parents = std::move(parents);
  out.created_at_us = ToUnixMicros(now);
  return out;
}

// The merge's steps, planned as footers arrive and run up to `window`
// (workers + 1) ahead on the worker pool; their results are taken in order.
// Inputs are adjacent and each is in block order: their row groups in order
// are the block order.
class StepPipeline {
 public:
  StepPipeline(const MergeContext& ctx, const TableInfo& table, const std::vector<SegmentRecord>& inputs,
               const parquet::SchemaDescriptor& descr, std::shared_ptr<parquet::WriterProperties> props,
               FileLayout layout)
      : ctx_(ctx),
        inputs_(inputs),
        window_(static_cast<size_t>(ctx.workers + 1)),
        footers_(std::make_shared<Footers>(inputs.size())),
        wholes_(std::make_shared<Wholes>(inputs.size())),
        reads_(ctx, table, inputs),
        planner_(descr, *props, *ctx.file_settings, layout),
        // Workers fill `window` steps; the window is filled again only once
        // this thread has written the one it took (MergeSegments), so
        // `window` buffers serve them all.
        step_inputs_{ctx.blobs,
                     std::make_shared<StepBuffers>(window_),
                     std::make_shared<StepScratches>(window_),
                     footers_.get(),
                     wholes_.get(),
                     &inputs,
                     ctx.file_settings,
                     std::move(props),
                     table.schema,
                     StoredSchema(table.schema),
                     &descr} {}

  // Submits steps until the window is full, planning more as footers arrive.
  Status Fill();
  // Whether every step was taken.
  bool done() const { return ahead_.empty(); }
  // The next step's result, in order (REQUIRES: !done()), and its kind. The
  // caller fills the window again (Fill) once it has dropped the result:
  // the next step then takes the buffers this one gave back.
  Result<Prepared> Next(StepKind* kind);
  // The most buffers held at once for local inputs.
  int64_t most_buffers() { return step_inputs_.buffers->most_held(); }

 private:
  // Drops the footers no step left will read: a merge of thousands of head
  // files holds the footers of the files it is at, not all of them.
  void ReleaseFooters();

  const MergeContext& ctx_;
  const std::vector<SegmentRecord>& inputs_;
  const size_t window_;
  // Footers are filled in input order; a task reads only those of its step's
  // inputs, filled before the step was planned.
  std::shared_ptr<Footers> footers_;
  std::shared_ptr<Wholes> wholes_;
  FooterReads reads_;
  Planner planner_;
  StepInputs step_inputs_;
  std::vector<Step> steps_;
  size_t planned_ = 0;   // inputs whose footers were taken
  size_t next_ = 0;      // steps submitted
  size_t done_ = 0;      // steps taken from `ahead_`, in order
  size_t released_ = 0;  // inputs whose footers were dropped
  std::deque<std::future<Result<Prepared>>> ahead_;
  // Declared last, so destroyed first: however the merge returns, every task
  // submitted is waited for before anything it reads (the inputs, footers and
  // buffers) can go.
  JoinTasksOnExit<Result<Prepared>> join_{ahead_};
};

Status StepPipeline::Fill() {
  while (ahead_.size() < window_) {
    if (next_ < steps_.size()) {
      // A task holds the footers and whole files it reads.
      ahead_.push_back(
          RunOn<Result<Prepared>>(ctx_.worker_pool, [step_inputs = step_inputs_, footers = footers_, wholes = wholes_,
                                                     step = steps_[next_++]]() { return Produce(step_inputs, step); }));
    } else if (planned_ < inputs_.size()) {
      ARROW_ASSIGN_OR_RAISE(FooterRead read, reads_.Take(planned_));
      (*footers_)[planned_] = std::move(read.footer);
      (*wholes_)[planned_] = std::move(read.whole);
      planner_.Add(planned_, *(*footers_)[planned_], &steps_);
      if (++planned_ == inputs_.size()) planner_.Flush(&steps_);
    } else {
      break;
    }
  }
  return Status::OK();
}

Result<Prepared> StepPipeline::Next(StepKind* kind) {
  auto ready = ahead_.front().get();
  ahead_.pop_front();
  if (!ready.ok()) return ready.status();
  *kind = steps_[done_++].kind;
  ReleaseFooters();
  return ready;
}

void StepPipeline::ReleaseFooters() {
  size_t keep_from = planned_;
  if (done_ < steps_.size()) keep_from = std::min(keep_from, steps_[done_].pieces.front().input);
  if (auto pending = planner_.PendingFirstInput()) keep_from = std::min(keep_from, *pending);
  for (; released_ < keep_from; ++released_) {
    (*footers_)[released_].reset();
    (*wholes_)[released_].reset();
  }
}

// Counts the output row groups a step made, by how it made them.
void CountStep(StepKind kind, const Prepared& ready, MergeStats* stats) {
  const auto made = static_cast<int64_t>(ready.run ? 1 : ready.row_groups.size());
  (kind == StepKind::kCopy    ? stats->row_groups_copied
   : kind == StepKind::kPages ? stats->row_groups_from_pages
                              : stats->row_groups_reencoded) += made;
  stats->inputs_decoded_plain += ready.plain_decoded;
}

// Appends a step's result to the output; adds its rows to `rows`.
Status AppendStep(SegmentFileWriter* writer, const Prepared& ready, int64_t* rows) {
  if (ready.run) {
    ARROW_RETURN_NOT_OK(writer->AppendPages(*ready.run));
    *rows += ready.run->rows();
  }
  for (const auto& rg : ready.row_groups) {
    ARROW_RETURN_NOT_OK(writer->Append(rg));
    *rows += rg.rows();
  }
  return Status::OK();
}

}  // namespace
}  // namespace merge_internal

Result<SegmentRecord> MergeSegments(const MergeContext& ctx, const TableInfo& table,
                                    const std::vector<SegmentRecord>& inputs, TimePoint now, FileLayout layout,
                                    MergeStats* stats) {
  using merge_internal::AppendStep;
  using merge_internal::CountStep;
  using merge_internal::Prepared;
  using merge_internal::StepKind;
  using merge_internal::StepPipeline;
  SegmentRecord out = merge_internal::OutputRecord(table, inputs, now, ctx.writer_tag);
  int64_t stored_in = 0;
  for (const auto& s : inputs) stored_in += s.stored_bytes;
  ARROW_ASSIGN_OR_RAISE(auto writer, SegmentFileWriter::Open(ctx.blobs, out.path, table.schema, *ctx.file_settings,
                                                             layout, EncodeSegmentFileMetadata(out), stored_in));
  const auto props = writer->properties();
  ARROW_ASSIGN_OR_RAISE(auto descr, ParquetSchemaFor(*StoredSchema(table.schema), *props));
  // Workers read, decode and encode up to `window` (workers + 1) steps
  // ahead; this thread copies them into the output in order. Whichever way
  // this returns, the pipeline waits for its tasks first (they read `inputs`).
  StepPipeline pipeline(ctx, table, inputs, *descr, props, layout);
  ARROW_RETURN_NOT_OK(pipeline.Fill());
  int64_t rows = 0;
  while (!pipeline.done()) {
    if (*ctx.stopping) return Status::Cancelled("server stopping");
    {
      StepKind kind = StepKind::kEncode;
      ARROW_ASSIGN_OR_RAISE(Prepared ready, pipeline.Next(&kind));
      if (stats) CountStep(kind, ready, stats);
      ARROW_RETURN_NOT_OK(AppendStep(writer.get(), ready, &rows));
    }  // its buffers given back, for the step submitted next
    ARROW_RETURN_NOT_OK(pipeline.Fill());
  }
  if (stats) stats->step_buffers = std::max(stats->step_buffers, pipeline.most_buffers());
  ARROW_ASSIGN_OR_RAISE(FileFacts facts, writer->Finish());
  out.rows = facts.rows;
  // A merge moves rows, it does not change them: the output's measured size
  // is its inputs' (what the planner added up), whatever encoding it got.
  out.bytes = 0;
  for (const auto& s : inputs) out.bytes += s.bytes;
  out.stored_bytes = facts.stored_bytes;
  int64_t expected = 0;
  for (const auto& s : inputs) expected += s.rows;
  if (rows != out.rows || rows != expected) {
    (void)ctx.blobs->Delete(out.path);
    return Status::IOError(
        fmt::format("merged {} rows from {} in the inputs but the output has {}", rows, expected, out.rows));
  }
  return out;
}

}  // namespace sediment::table
