#include "table/table_service.h"

#include <arrow/api.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <future>
#include <random>
#include <set>

#include "kv/lease.h"

namespace sediment::table {

struct TableService::TableState {
  std::mutex pass_mu;        // one pass at a time per table on this server
  std::mutex append_mu;      // one append commit at a time per table on this server
  bool scheduled = false;    // GUARDED_BY(service mu_)
  TimePoint last_started{};  // GUARDED_BY(service mu_)
};

struct TableService::Metrics {
  explicit Metrics(MetricsRegistry* r)
      : bytes_read(r->Counter("compaction_bytes_read_total", "Uncompressed bytes of the files merged by compaction.",
                              {"dataset", "table"})),
        bytes_written(r->Counter("compaction_bytes_written_total",
                                 "Bytes on storage of the files written by compaction.", {"dataset", "table"})),
        files_read(r->Counter("compaction_files_read_total", "Files merged by compaction.", {"dataset", "table"})),
        failed(r->Counter("failed_compactions", "Merges that failed (the inputs stay live).", {"dataset", "table"})),
        successful(r->Counter("successful_compactions", "Merges swapped into the live set.", {"dataset", "table"})),
        discarded(r->Counter("compaction_discarded_total",
                             "Merges whose inputs changed before the swap (e.g. a reorg); output deleted.",
                             {"dataset", "table"})),
        duration(r->Histogram("compaction_duration_seconds", "Time to merge one group and swap it in.",
                              {"dataset", "table"})),
        gc_deleted(r->Counter("gc_files_deleted_total", "Merged-away files deleted after the grace period.",
                              {"dataset", "table"})),
        gc_failed(r->Counter("gc_failed_deletions_total", "Failed deletions of merged-away files (retried).",
                             {"dataset", "table"})),
        orphans(r->Counter("gc_orphans_deleted_total", "Files left by a crash, deleted at start-up.",
                           {"dataset", "table"})),
        reorgs(r->Counter("table_reorgs_total", "Appends that replaced live blocks (chain reorganizations).",
                          {"dataset", "table"})),
        reorg_rewrites(r->Counter("table_reorg_rewrites_total", "Files rewritten without the blocks a reorg replaced.",
                                  {"dataset", "table"})),
        appends(r->Counter("table_segments_appended_total", "Segments appended.", {"dataset", "table"})),
        files(r->Gauge("table_files", "Live files of the table.", {"dataset", "table"})),
        bytes(r->Gauge("table_bytes", "Uncompressed bytes of the table's live files.", {"dataset", "table"})),
        stored(r->Gauge("table_stored_bytes", "Bytes on storage of the table's live files.", {"dataset", "table"})) {}
  MetricFamily<CounterMetric>& bytes_read;
  MetricFamily<CounterMetric>& bytes_written;
  MetricFamily<CounterMetric>& files_read;
  MetricFamily<CounterMetric>& failed;
  MetricFamily<CounterMetric>& successful;
  MetricFamily<CounterMetric>& discarded;
  MetricFamily<HistogramMetric>& duration;
  MetricFamily<CounterMetric>& gc_deleted;
  MetricFamily<CounterMetric>& gc_failed;
  MetricFamily<CounterMetric>& orphans;
  MetricFamily<CounterMetric>& reorgs;
  MetricFamily<CounterMetric>& reorg_rewrites;
  MetricFamily<CounterMetric>& appends;
  MetricFamily<GaugeMetric>& files;
  MetricFamily<GaugeMetric>& bytes;
  MetricFamily<GaugeMetric>& stored;
};

namespace {

std::vector<std::string> Labels(const TableId& id) { return {id.dataset, id.table}; }

std::string LeaseKey(const TableId& id) { return fmt::format("t/lease/{}/{}", id.dataset, id.table); }

std::string NewServerId() {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  return fmt::format("{}-{}-{:08x}", host, ::getpid(), std::random_device{}());
}

Result<int> BlockColumn(const arrow::Schema& schema) {
  int i = schema.GetFieldIndex("block_num");
  if (i < 0) return InvalidArgument("the schema has no block_num column");
  if (!schema.field(i)->type()->Equals(arrow::uint64())) {
    return InvalidArgument(fmt::format("block_num must be uint64, not {}", schema.field(i)->type()->ToString()));
  }
  return i;
}

// Runs fn on `pool` and returns its future result.
template <typename T>
std::future<T> RunOn(ThreadPool* pool, std::function<T()> fn) {
  auto task = std::make_shared<std::packaged_task<T()>>(std::move(fn));
  std::future<T> f = task->get_future();
  // Submit fails only once the pool shuts down: then run it here.
  if (!pool->Submit([task] { (*task)(); }).ok()) (*task)();
  return f;
}

}  // namespace

ReadSnapshot::~ReadSnapshot() {
  if (service_ != nullptr) service_->Unpin(segments_);
}

TableService::TableService(std::shared_ptr<kv::KvStore> kv, std::shared_ptr<blob::BlobStore> blobs,
                           std::shared_ptr<Clock> clock, MetricsRegistry* metrics, const WriterConfig& writer)
    : kv_(kv),
      blobs_(std::move(blobs)),
      clock_(std::move(clock)),
      metrics_registry_(metrics),
      metrics_(std::make_unique<Metrics>(metrics)),
      writer_(writer),
      planner_(PlannerSettings::FromConfig(writer)),
      registry_(kv),
      server_id_(NewServerId()) {
  auto fs = WriterSettings::FromConfig(writer);
  file_settings_ = fs.ok() ? *fs : WriterSettings{};  // the config was validated already
  pass_pool_ = std::make_unique<ThreadPool>("table-passes", 2, 1024);
  merge_pool_ =
      std::make_unique<ThreadPool>("table-merge", static_cast<int>(writer.compactor.write_concurrency), 1 << 20);
  footer_pool_ =
      std::make_unique<ThreadPool>("table-footers", static_cast<int>(writer.compactor.metadata_concurrency), 1 << 20);
}

TableService::~TableService() { Stop(); }

Status TableService::Start(bool background, Duration orphan_min_age) {
  background_ = background;
  // Storage stamps files with real time, whatever clock drives policy.
  TimePoint start = std::chrono::system_clock::now() - orphan_min_age;
  ARROW_ASSIGN_OR_RAISE(auto tables, registry_.ListTables());
  for (const auto& t : tables) {
    auto swept = SweepOrphans(t.id, start);
    if (!swept.ok()) spdlog::warn("table {}: orphan sweep failed: {}", t.id.ToString(), swept.status().ToString());
    auto live = registry_.TakeSnapshot(t.id);
    if (live.ok()) UpdateGauges(t.id, live->segments);
  }
  if (background) {
    double interval = std::max(1.0, writer_.compactor.min_interval);
    timer_ = std::make_unique<PeriodicTask>(
        "table-timer", std::chrono::milliseconds(static_cast<int64_t>(interval * 1000)), [this] { Tick(); });
    timer_->Start();
  }
  return Status::OK();
}

void TableService::Stop() {
  bool was_stopping = stopping_.exchange(true);
  if (timer_) timer_->Stop();
  pass_pool_->Shutdown();
  merge_pool_->Shutdown();
  footer_pool_->Shutdown();
  if (was_stopping) return;
  // Hand our tables over at once rather than when the leases expire.
  std::vector<TableId> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, state] : states_) ids.push_back(id);
  }
  for (const auto& id : ids) {
    kv::Lease lease(kv_, LeaseKey(id), server_id_, lease_ttl());
    Status st = lease.Release();
    if (!st.ok()) spdlog::warn("table {}: cannot release the compaction lease: {}", id.ToString(), st.ToString());
  }
}

void TableService::Tick() {
  auto tables = registry_.ListTables();
  if (!tables.ok()) {
    spdlog::warn("tables: cannot list tables: {}", tables.status().ToString());
    return;
  }
  for (const auto& t : *tables) {
    if (stopping_) return;
    RequestCompaction(t.id);
    auto gc = RunGc(t.id);
    if (!gc.ok()) spdlog::warn("table {}: GC failed: {}", t.id.ToString(), gc.status().ToString());
  }
}

std::shared_ptr<TableService::TableState> TableService::State(const TableId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& s = states_[id];
  if (!s) s = std::make_shared<TableState>();
  return s;
}

void TableService::UpdateGauges(const TableId& id, const std::vector<SegmentRecord>& live) {
  int64_t bytes = 0, stored = 0;
  for (const auto& s : live) {
    bytes += s.bytes;
    stored += s.stored_bytes;
  }
  metrics_->files.With(Labels(id)).Set(static_cast<double>(live.size()));
  metrics_->bytes.With(Labels(id)).Set(static_cast<double>(bytes));
  metrics_->stored.With(Labels(id)).Set(static_cast<double>(stored));
}

Result<bool> TableService::CreateTable(const TableId& id, const std::shared_ptr<arrow::Schema>& schema) {
  ARROW_RETURN_NOT_OK(BlockColumn(*schema).status());
  if (schema->num_fields() == 0) return InvalidArgument("the schema has no columns");
  return registry_.CreateTable(id, schema, clock_->Now());
}

Result<Snapshot> TableService::LiveSegments(const TableId& id) {
  ARROW_RETURN_NOT_OK(registry_.GetTable(id).status());
  return registry_.TakeSnapshot(id);
}

// ---------------------------------------------------------------- appends

Result<AppendResult> TableService::Append(const TableId& id, const AppendRequest& request,
                                          arrow::RecordBatchReader* batches) {
  ARROW_ASSIGN_OR_RAISE(TableInfo table, registry_.GetTable(id));
  if (request.end_block < request.start_block) {
    return InvalidArgument(
        fmt::format("end_block {} is before start_block {}", request.end_block, request.start_block));
  }
  SegmentRecord seg;
  ARROW_ASSIGN_OR_RAISE(seg.end_hash, NormalizeHash("end_hash", request.end_hash));
  ARROW_ASSIGN_OR_RAISE(seg.parent_hash, NormalizeHash("parent_hash", request.parent_hash));
  if (!SameSchema(*batches->schema(), *table.schema)) {
    return InvalidArgument(fmt::format("the batches' schema does not match table {}: got {}; want {}", id.ToString(),
                                       batches->schema()->ToString(), table.schema->ToString()));
  }
  ARROW_ASSIGN_OR_RAISE(int block_col, BlockColumn(*table.schema));
  seg.id = NewSegmentId(request.start_block);
  seg.path = TableRegistry::SegmentPath(id, seg.id);
  seg.start = request.start_block;
  seg.end = request.end_block;
  seg.generation = 0;
  seg.created_at_us = ToUnixMicros(clock_->Now());

  ARROW_ASSIGN_OR_RAISE(auto writer, SegmentFileWriter::Open(blobs_.get(), seg.path, table.schema, file_settings_,
                                                             EncodeSegmentFileMetadata(seg)));
  uint64_t prev = request.start_block;
  int64_t row = 0;
  while (true) {
    std::shared_ptr<arrow::RecordBatch> batch;
    Status st = batches->ReadNext(&batch);
    if (!st.ok()) return InvalidArgument(fmt::format("reading the Arrow IPC stream: {}", st.message()));
    if (!batch) break;
    const auto& blocks = static_cast<const arrow::UInt64Array&>(*batch->column(block_col));
    if (blocks.null_count() > 0) return InvalidArgument("block_num has null values");
    for (int64_t i = 0; i < blocks.length(); ++i, ++row) {
      uint64_t b = blocks.Value(i);
      if (b < request.start_block || b > request.end_block) {
        return InvalidArgument(fmt::format("row {}: block_num {} is outside the segment's range [{}, {}]", row, b,
                                           request.start_block, request.end_block));
      }
      if (b < prev) return InvalidArgument(fmt::format("row {}: block_num goes backwards ({} after {})", row, b, prev));
      prev = b;
    }
    ARROW_RETURN_NOT_OK(writer->Write(batch));
  }
  ARROW_ASSIGN_OR_RAISE(FileFacts facts, writer->Finish());
  seg.rows = facts.rows;
  seg.bytes = facts.bytes;
  seg.stored_bytes = facts.stored_bytes;

  auto result = CommitAppend(table, seg);
  if (!result.ok()) {
    Status del = blobs_->Delete(seg.path);
    if (!del.ok()) spdlog::warn("{}: cannot delete unused {}: {}", id.ToString(), seg.path, del.ToString());
    return result.status();
  }
  metrics_->appends.With(Labels(id)).Add();
  if (Status h = registry_.RecordAppend(id, result->segment); !h.ok()) {
    spdlog::warn("table {}: cannot record the append in the history: {}", id.ToString(), h.ToString());
  }
  RequestCompaction(id);
  return result;
}

Result<AppendResult> TableService::CommitAppend(const TableInfo& table, SegmentRecord seg) {
  const TableId& id = table.id;
  auto state = State(id);
  std::lock_guard<std::mutex> append_lock(state->append_mu);
  for (int attempt = 0;; ++attempt) {
    ARROW_ASSIGN_OR_RAISE(Snapshot snap, registry_.TakeSnapshot(id));
    AppendResult result;
    result.segment = seg;
    LiveSetChange change;
    change.add.push_back(seg);
    const auto& live = snap.segments;
    std::optional<SegmentRecord> rewritten;
    if (!live.empty()) {
      const SegmentRecord& last = live.back();
      if (seg.start == last.end + 1) {
        if (seg.parent_hash != last.end_hash) {
          return Conflict(fmt::format(
              "table {}: parent_hash {} does not match the hash {} of block {}; to replace blocks after a reorg, "
              "send the segment from the first block that changed",
              id.ToString(), seg.parent_hash, last.end_hash, last.end));
        }
        change.keep.push_back(last);  // the tail must still be the same when we commit
      } else if (seg.start > last.end + 1) {
        return Conflict(fmt::format("table {}: segment starts at block {} but the table ends at block {} (gap)",
                                    id.ToString(), seg.start, last.end));
      } else {
        // A reorg: every live segment with blocks at or after seg.start is replaced.
        result.reorg = true;
        for (const auto& s : live) {
          if (s.end < seg.start) {
            if (s.end + 1 == seg.start && s.end_hash != seg.parent_hash) {
              return Conflict(fmt::format("table {}: parent_hash {} does not match the hash {} of block {}",
                                          id.ToString(), seg.parent_hash, s.end_hash, s.end));
            }
            continue;
          }
          change.remove.push_back(s);
          result.replaced.push_back(s);
          if (s.start < seg.start) {
            ARROW_ASSIGN_OR_RAISE(rewritten, RewriteWithout(table, s, seg.start, seg.parent_hash));
            change.add.push_back(*rewritten);
          }
        }
      }
    }
    Status st = registry_.Commit(id, change, clock_->Now());
    if (st.ok()) {
      result.rewritten = rewritten;
      if (result.reorg) {
        metrics_->reorgs.With(Labels(id)).Add();
        bool into_merged = false;
        for (const auto& r : result.replaced) into_merged |= r.generation > 0;
        if (rewritten) metrics_->reorg_rewrites.With(Labels(id)).Add();
        spdlog::info("table {}: reorg from block {} replaced {} file(s){}{}", id.ToString(), seg.start,
                     result.replaced.size(), into_merged ? ", reaching into a merged file" : "",
                     rewritten
                         ? fmt::format("; {} rewritten to end at block {}", result.replaced.front().id, rewritten->end)
                         : "");
      }
      std::vector<SegmentRecord> now_live;
      for (const auto& s : live) {
        if (s.end < seg.start) now_live.push_back(s);
      }
      if (rewritten) now_live.push_back(*rewritten);
      now_live.push_back(seg);
      UpdateGauges(id, now_live);
      return result;
    }
    if (rewritten) (void)blobs_->Delete(rewritten->path);
    if (!IsPreconditionFailed(st) || attempt >= 5) return st;
    // The live set moved under us (a merge swapped in): look again.
  }
}

Result<SegmentRecord> TableService::RewriteWithout(const TableInfo& table, const SegmentRecord& s, uint64_t cut_block,
                                                   const std::string& end_hash) {
  ARROW_ASSIGN_OR_RAISE(int block_col, BlockColumn(*table.schema));
  SegmentRecord out;
  out.id = NewSegmentId(s.start);
  out.path = TableRegistry::SegmentPath(table.id, out.id);
  out.start = s.start;
  out.end = cut_block - 1;
  out.end_hash = end_hash;
  out.parent_hash = s.parent_hash;
  out.generation = s.generation;
  out.parents = {s.id};
  out.created_at_us = ToUnixMicros(clock_->Now());
  ARROW_ASSIGN_OR_RAISE(auto reader, SegmentFileReader::Open(blobs_.get(), s.path));
  ARROW_ASSIGN_OR_RAISE(auto writer, SegmentFileWriter::Open(blobs_.get(), out.path, table.schema, file_settings_,
                                                             EncodeSegmentFileMetadata(out)));
  bool done = false;
  for (int rg = 0; rg < reader->num_row_groups() && !done; ++rg) {
    ARROW_ASSIGN_OR_RAISE(auto t, reader->ReadRowGroup(rg));
    arrow::TableBatchReader batches(*t);
    std::shared_ptr<arrow::RecordBatch> batch;
    while (!done) {
      ARROW_RETURN_NOT_OK(batches.ReadNext(&batch));
      if (!batch) break;
      const auto& blocks = static_cast<const arrow::UInt64Array&>(*batch->column(block_col));
      const uint64_t* v = blocks.raw_values();
      int64_t keep = std::lower_bound(v, v + blocks.length(), cut_block) - v;
      if (keep < batch->num_rows()) done = true;
      if (keep > 0) ARROW_RETURN_NOT_OK(writer->Write(batch->Slice(0, keep)));
    }
  }
  ARROW_ASSIGN_OR_RAISE(FileFacts facts, writer->Finish());
  out.rows = facts.rows;
  out.bytes = facts.bytes;
  out.stored_bytes = facts.stored_bytes;
  return out;
}

// ---------------------------------------------------------------- compaction

void TableService::RequestCompaction(const TableId& id) {
  if (!writer_.compactor.active || stopping_ || !background_) return;
  auto state = State(id);
  {
    std::lock_guard<std::mutex> lock(mu_);
    TimePoint now = clock_->Now();
    if (state->scheduled) return;
    if (state->last_started != TimePoint{} &&
        now - state->last_started < SecondsToDuration(writer_.compactor.min_interval)) {
      return;
    }
    state->scheduled = true;
    state->last_started = now;
  }
  Status st = pass_pool_->TrySubmit([this, id, state] {
    {
      std::unique_lock<std::mutex> pass(state->pass_mu, std::try_to_lock);
      auto mine = HoldLease(id);  // one server at a time compacts a table
      if (pass.owns_lock() && !stopping_ && mine.ok() && *mine) {
        auto r = RunPassLocked(id, nullptr);
        if (!r.ok()) spdlog::warn("table {}: compaction pass failed: {}", id.ToString(), r.status().ToString());
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    state->scheduled = false;
  });
  if (!st.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    state->scheduled = false;
  }
}

void TableService::WaitIdle() { pass_pool_->WaitIdle(); }

Result<bool> TableService::HoldLease(const TableId& id) {
  State(id);  // remembered, so Stop() releases it
  kv::Lease lease(kv_, LeaseKey(id), server_id_, lease_ttl());
  return lease.TryAcquire(clock_->Now());
}

Result<PassResult> TableService::CompactNow(const TableId& id, const ProgressFn& progress) {
  ARROW_RETURN_NOT_OK(registry_.GetTable(id).status());
  kv::Lease lease(kv_, LeaseKey(id), server_id_, lease_ttl());
  State(id);  // remembered, so Stop() releases the lease
  ARROW_ASSIGN_OR_RAISE(bool mine, lease.TryAcquire(clock_->Now()));
  if (!mine) {
    auto holder = lease.Holder(clock_->Now());
    return Busy(fmt::format("table {} is being compacted by another server ({}); try again later", id.ToString(),
                            holder.ok() ? *holder : "?"));
  }
  auto state = State(id);
  std::lock_guard<std::mutex> pass(state->pass_mu);
  {
    std::lock_guard<std::mutex> lock(mu_);
    state->last_started = clock_->Now();
  }
  return RunPassLocked(id, progress);
}

Result<PassResult> TableService::RunPassLocked(const TableId& id, const ProgressFn& progress) {
  PassResult result;
  if (!writer_.compactor.active) return result;
  result.ran = true;
  auto started = std::chrono::steady_clock::now();
  ARROW_ASSIGN_OR_RAISE(TableInfo table, registry_.GetTable(id));
  ARROW_ASSIGN_OR_RAISE(Snapshot snap, registry_.TakeSnapshot(id));
  result.files_considered = static_cast<int64_t>(snap.segments.size());
  auto groups = PlanCompaction(snap.segments, planner_, clock_->Now());
  if (progress) progress({PassProgress::Kind::kPlanned, groups.size(), nullptr});

  // Merge up to write_concurrency groups at once; each group swaps itself in
  // as soon as it is written, so one failure doesn't hold back the others.
  std::vector<std::future<MergeOutcome>> futures;
  for (const auto& g : groups) {
    std::vector<SegmentRecord> inputs(snap.segments.begin() + g.first, snap.segments.begin() + g.first + g.count);
    futures.push_back(RunOn<MergeOutcome>(merge_pool_.get(), [this, table, inputs]() -> MergeOutcome {
      MergeOutcome out;
      for (const auto& s : inputs) out.inputs.push_back(s.id);
      if (stopping_) {
        out.error = "server stopping";
        return out;
      }
      auto t0 = std::chrono::steady_clock::now();
      auto merged = MergeGroup(table, inputs);
      if (!merged.ok()) {
        out.error = merged.status().message();
        return out;
      }
      Status st = registry_.Commit(table.id, LiveSetChange{inputs, {*merged}, {}}, clock_->Now());
      if (!st.ok()) {
        Status del = blobs_->Delete(merged->path);
        if (!del.ok())
          spdlog::warn("table {}: cannot delete {}: {}", table.id.ToString(), merged->path, del.ToString());
        if (IsPreconditionFailed(st)) {
          out.discarded = true;
        } else {
          out.error = "swap failed: " + st.message();
        }
        return out;
      }
      int64_t read = 0;
      for (const auto& s : inputs) read += s.bytes;
      auto labels = Labels(table.id);
      metrics_->bytes_read.With(labels).Add(static_cast<double>(read));
      metrics_->bytes_written.With(labels).Add(static_cast<double>(merged->stored_bytes));
      metrics_->files_read.With(labels).Add(static_cast<double>(inputs.size()));
      metrics_->successful.With(labels).Add();
      metrics_->duration.With(labels).Observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      out.output = *merged;
      return out;
    }));
  }
  for (auto& f : futures) {
    MergeOutcome m = f.get();
    if (!m.error.empty() && m.error != "server stopping") {
      metrics_->failed.With(Labels(id)).Add();
      spdlog::error("table {}: merging {} file(s) starting at {} failed: {}", id.ToString(), m.inputs.size(),
                    m.inputs.front(), m.error);
      if (progress) progress({PassProgress::Kind::kFailed, 0, &m});
    } else if (m.discarded) {
      metrics_->discarded.With(Labels(id)).Add();
      spdlog::info("table {}: merge of {} file(s) from {} discarded: the files changed meanwhile", id.ToString(),
                   m.inputs.size(), m.inputs.front());
      if (progress) progress({PassProgress::Kind::kDiscarded, 0, &m});
    } else if (m.output) {
      spdlog::info("table {}: merged {} file(s) into {} ({} rows, {} uncompressed, {} stored)", id.ToString(),
                   m.inputs.size(), m.output->id, m.output->rows, FormatBytes(m.output->bytes),
                   FormatBytes(m.output->stored_bytes));
      if (progress) progress({PassProgress::Kind::kMerged, 0, &m});
    }
    result.merges.push_back(std::move(m));
  }
  if (!groups.empty()) {
    auto live = registry_.TakeSnapshot(id);
    if (live.ok()) UpdateGauges(id, live->segments);
    auto gc = RunGc(id);
    if (!gc.ok()) spdlog::warn("table {}: GC failed: {}", id.ToString(), gc.status().ToString());
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

Result<SegmentRecord> TableService::MergeGroup(const TableInfo& table, const std::vector<SegmentRecord>& inputs) {
  // Footers first, metadata_concurrency at a time.
  std::vector<std::future<Result<std::unique_ptr<SegmentFileReader>>>> opening;
  for (const auto& s : inputs) {
    opening.push_back(RunOn<Result<std::unique_ptr<SegmentFileReader>>>(
        footer_pool_.get(), [this, path = s.path]() { return SegmentFileReader::Open(blobs_.get(), path); }));
  }
  std::vector<std::unique_ptr<SegmentFileReader>> readers;
  Status first_error;
  for (size_t i = 0; i < opening.size(); ++i) {
    auto r = opening[i].get();
    if (!r.ok()) {
      if (first_error.ok()) first_error = Status::IOError(fmt::format("{}: {}", inputs[i].path, r.status().message()));
      continue;
    }
    if (!SameSchema(*(*r)->schema(), *table.schema)) {
      if (first_error.ok()) {
        first_error = Status::IOError(
            fmt::format("{}: schema {} differs from the table's", inputs[i].path, (*r)->schema()->ToString()));
      }
      continue;
    }
    if ((*r)->facts().rows != inputs[i].rows) {
      if (first_error.ok()) {
        first_error = Status::IOError(fmt::format("{}: {} rows in the file, {} in the registry", inputs[i].path,
                                                  (*r)->facts().rows, inputs[i].rows));
      }
      continue;
    }
    readers.push_back(std::move(*r));
  }
  ARROW_RETURN_NOT_OK(first_error);

  SegmentRecord out;
  out.id = NewSegmentId(inputs.front().start);
  out.path = TableRegistry::SegmentPath(table.id, out.id);
  out.start = inputs.front().start;
  out.end = inputs.back().end;
  out.end_hash = inputs.back().end_hash;
  out.parent_hash = inputs.front().parent_hash;
  for (const auto& s : inputs) {
    out.generation = std::max(out.generation, s.generation + 1);
    out.parents.push_back(s.id);
  }
  out.created_at_us = ToUnixMicros(clock_->Now());
  ARROW_ASSIGN_OR_RAISE(auto writer, SegmentFileWriter::Open(blobs_.get(), out.path, table.schema, file_settings_,
                                                             EncodeSegmentFileMetadata(out)));
  // Inputs are adjacent and each is in block order: their concatenation is
  // the block order. One row group in memory per merge.
  int64_t rows = 0;
  for (size_t i = 0; i < readers.size(); ++i) {
    for (int rg = 0; rg < readers[i]->num_row_groups(); ++rg) {
      if (stopping_) return Status::Cancelled("server stopping");
      auto t = readers[i]->ReadRowGroup(rg);
      if (!t.ok()) return Status::IOError(fmt::format("{}: {}", inputs[i].path, t.status().message()));
      arrow::TableBatchReader batches(**t);
      std::shared_ptr<arrow::RecordBatch> batch;
      while (true) {
        ARROW_RETURN_NOT_OK(batches.ReadNext(&batch));
        if (!batch) break;
        rows += batch->num_rows();
        ARROW_RETURN_NOT_OK(writer->Write(batch));
      }
    }
  }
  ARROW_ASSIGN_OR_RAISE(FileFacts facts, writer->Finish());
  out.rows = facts.rows;
  out.bytes = facts.bytes;
  out.stored_bytes = facts.stored_bytes;
  if (rows != out.rows) {
    (void)blobs_->Delete(out.path);
    return Status::IOError(fmt::format("merged {} rows but the output has {}", rows, out.rows));
  }
  return out;
}

// ---------------------------------------------------------------- GC and snapshots

Result<GcResult> TableService::RunGc(const TableId& id) {
  GcResult result;
  // The lease holder collects; others would only race it to the same deletes.
  ARROW_ASSIGN_OR_RAISE(bool mine, HoldLease(id));
  if (!mine) return result;
  ARROW_RETURN_NOT_OK(
      registry_.PruneHistory(id, ToUnixMicros(clock_->Now() - std::chrono::hours(24 * TableRegistry::kHistoryDays))));
  ARROW_ASSIGN_OR_RAISE(auto entries, registry_.ListGc(id));
  const Duration grace = SecondsToDuration(writer_.compactor.gc_manifest_grace_period);
  TimePoint now = clock_->Now();
  for (const auto& e : entries) {
    if (now - FromUnixMicros(e.removed_at_us) < grace) {
      result.waiting++;
      continue;
    }
    {
      // A file in the manifest is not live, so no snapshot taken from now on
      // can hold it; one being taken right now might have read it while it
      // was live, so wait for those too.
      std::lock_guard<std::mutex> lock(mu_);
      if (snapshots_opening_ > 0 || pins_.count(e.path)) {
        result.waiting++;
        continue;
      }
    }
    Status st = blobs_->Delete(e.path);
    if (st.ok()) st = registry_.RemoveGcEntry(id, e.id);
    if (st.ok()) {
      result.deleted++;
      metrics_->gc_deleted.With(Labels(id)).Add();
    } else {
      result.failed++;
      metrics_->gc_failed.With(Labels(id)).Add();
      spdlog::warn("table {}: cannot delete {} (will retry): {}", id.ToString(), e.path, st.ToString());
    }
  }
  return result;
}

Result<int64_t> TableService::SweepOrphans(const TableId& id, TimePoint older_than) {
  ARROW_ASSIGN_OR_RAISE(Snapshot snap, registry_.TakeSnapshot(id));
  ARROW_ASSIGN_OR_RAISE(auto gc, registry_.ListGc(id));
  std::set<std::string> known;
  for (const auto& s : snap.segments) known.insert(s.path);
  for (const auto& e : gc) known.insert(e.path);
  ARROW_ASSIGN_OR_RAISE(auto objects, blobs_->List(TableRegistry::ObjectPrefix(id)));
  int64_t removed = 0;
  for (const auto& o : objects) {
    if (known.count(o.path) || o.mtime >= older_than) continue;
    Status st = blobs_->Delete(o.path);
    if (!st.ok()) {
      spdlog::warn("table {}: cannot delete orphan {}: {}", id.ToString(), o.path, st.ToString());
      continue;
    }
    spdlog::info("table {}: deleted orphan {} (left by an interrupted write)", id.ToString(), o.path);
    metrics_->orphans.With(Labels(id)).Add();
    removed++;
  }
  return removed;
}

Result<std::shared_ptr<ReadSnapshot>> TableService::OpenSnapshot(const TableId& id) {
  ARROW_ASSIGN_OR_RAISE(TableInfo table, registry_.GetTable(id));
  {
    std::lock_guard<std::mutex> lock(mu_);
    snapshots_opening_++;
  }
  auto snap = registry_.TakeSnapshot(id);
  std::lock_guard<std::mutex> lock(mu_);
  snapshots_opening_--;
  ARROW_RETURN_NOT_OK(snap.status());
  auto out = std::make_shared<ReadSnapshot>();
  out->service_ = this;
  out->table_ = id;
  out->schema_ = table.schema;
  out->segments_ = std::move(snap->segments);
  for (const auto& s : out->segments_) pins_[s.path]++;
  return out;
}

void TableService::Unpin(const std::vector<SegmentRecord>& segments) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& s : segments) {
    auto it = pins_.find(s.path);
    if (it != pins_.end() && --it->second == 0) pins_.erase(it);
  }
}

Result<std::shared_ptr<arrow::Table>> TableService::ReadAll(const ReadSnapshot& snapshot) {
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  for (const auto& s : snapshot.segments()) {
    ARROW_ASSIGN_OR_RAISE(auto reader, SegmentFileReader::Open(blobs_.get(), s.path));
    for (int rg = 0; rg < reader->num_row_groups(); ++rg) {
      ARROW_ASSIGN_OR_RAISE(auto t, reader->ReadRowGroup(rg));
      ARROW_ASSIGN_OR_RAISE(auto combined, t->CombineChunksToBatch());
      batches.push_back(combined);
    }
  }
  return arrow::Table::FromRecordBatches(snapshot.schema(), batches);
}

Result<std::vector<AppendRecord>> TableService::AppendHistory(const TableId& id, int64_t since_us) {
  ARROW_RETURN_NOT_OK(registry_.GetTable(id).status());
  return registry_.AppendHistory(id, since_us);
}

Result<HistogramReport> TableService::Histogram(const TableId& id) {
  ARROW_ASSIGN_OR_RAISE(Snapshot snap, LiveSegments(id));
  return BuildHistogram(snap.segments, planner_, clock_->Now());
}

}  // namespace sediment::table
