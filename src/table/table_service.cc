#include "table/table_service.h"

#include <arrow/api.h>
#include <arrow/util/key_value_metadata.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "base/crypto.h"
#include "table/stored_types.h"
#include "table/table_metrics_internal.h"

namespace sediment::table {
namespace {

std::string NewServerId() {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  return fmt::format("{}-{}-{}", host, ::getpid(), RandomHex(4));
}

WriterSettings FileSettings(const WriterConfig& writer) {
  auto fs = WriterSettings::FromConfig(writer);
  return fs.ok() ? *fs : WriterSettings{};  // the config was validated already
}

}  // namespace

ReadSnapshot::~ReadSnapshot() {
  if (pins_ != nullptr) pins_->Unpin(segments_);
}

TableService::TableService(std::shared_ptr<kv::KvStore> kv, std::shared_ptr<blob::BlobStore> blobs,
                           std::shared_ptr<Clock> clock, MetricsRegistry* metrics, const WriterConfig& writer,
                           std::string server_id)
    : kv_(kv),
      blobs_(std::move(blobs)),
      clock_(std::move(clock)),
      metrics_(std::make_unique<TableMetrics>(metrics)),
      writer_(writer),
      planner_(PlannerSettings::FromConfig(writer)),
      registry_(kv),
      history_(kv) {
  const WriterSettings file_settings = FileSettings(writer);
  auto ttl = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(writer_.compactor.lease_ttl));
  if (server_id.empty()) server_id = NewServerId();
  leases_ = std::make_unique<TableLeases>(kv_, clock_.get(), std::move(server_id), ttl);
  writer_tag_ = WriterTag(leases_->server_id());
  appender_ = std::make_unique<Appender>(&registry_, &history_, blobs_.get(), clock_.get(), metrics_.get(),
                                         file_settings, static_cast<uint64_t>(writer_.max_reorg_depth), writer_tag_);
  compactor_ = std::make_unique<Compactor>(&registry_, blobs_.get(), clock_.get(), metrics_.get(), writer_,
                                           file_settings, &stopping_, writer_tag_);
  collector_ = std::make_unique<Collector>(&registry_, &history_, blobs_.get(), clock_.get(), metrics_.get(), &pins_,
                                           leases_.get(), SecondsToDuration(writer_.compactor.gc_manifest_grace_period),
                                           static_cast<uint64_t>(writer_.max_reorg_depth));
  scheduler_ = std::make_unique<CompactionScheduler>(
      writer_.compactor, clock_.get(), leases_.get(),
      [this](const TableId& id, const ProgressFn& progress) { return RunPass(id, progress); });
  registry_.SetCommitListener([this](const TableId& id) {
    for (const auto& listener : change_listeners_) listener(id);
  });
}

TableService::~TableService() { Stop(); }

Status TableService::Start(bool background, Duration orphan_min_age) {
  // Storage stamps files with real time, whatever clock drives policy.
  TimePoint start = std::chrono::system_clock::now() - orphan_min_age;
  ARROW_ASSIGN_OR_RAISE(auto tables, registry_.ListTables());
  for (const auto& t : tables) {
    auto swept = collector_->SweepOrphans(t.id, start, writer_tag_);
    if (!swept.ok()) spdlog::warn("table {}: orphan sweep failed: {}", t.id.ToString(), swept.status().ToString());
    auto state = registry_.State(t.id);
    if (state.ok()) metrics_->UpdateGauges(t.id, *state);
  }
  if (background) scheduler_->Start([this] { Tick(); });
  return Status::OK();
}

void TableService::Stop() {
  bool was_stopping = stopping_.exchange(true);
  scheduler_->Stop();
  if (was_stopping) return;
  // Hand our tables over at once rather than when the leases expire.
  leases_->ReleaseAll();
}

void TableService::Tick() {
  std::lock_guard<std::mutex> lock(tick_mu_);
  auto tables = registry_.TablesWithSegments(tick_cursor_, tables_per_tick_);
  if (tables.ok() && tables->size() < tables_per_tick_ && tick_cursor_) {
    // The end of the names: go on from the first, through the one this round began after.
    auto key = [](const TableId& id) { return id.dataset + "/" + id.table; };  // the registry's order
    auto wrapped = registry_.TablesWithSegments(std::nullopt, tables_per_tick_ - tables->size());
    if (wrapped.ok()) {
      for (const auto& id : *wrapped) {
        if (key(id) > key(*tick_cursor_)) break;
        tables->push_back(id);
      }
    }
  }
  if (!tables.ok()) {
    spdlog::warn("tables: cannot list tables: {}", tables.status().ToString());
    return;
  }
  for (const auto& id : *tables) {
    if (stopping_) return;
    tick_cursor_ = id;
    RequestCompaction(id);
    auto gc = RunGc(id);
    if (!gc.ok()) spdlog::warn("table {}: GC failed: {}", id.ToString(), gc.status().ToString());
  }
}

Result<PassResult> TableService::RunPass(const TableId& id, const ProgressFn& progress) {
  int64_t started_us = ToUnixMicros(clock_->Now());
  auto t0 = std::chrono::steady_clock::now();
  auto ran = compactor_->RunPass(id, progress);
  if (!ran.ok()) {
    // Busy (another server compacts it) and a stop are not failures of the table.
    if (IsBusy(ran.status()) || ran.status().IsCancelled()) return ran.status();
    // A table that keeps failing the same way (the timer retries it every
    // tick) is recorded again only every ten minutes.
    auto newest = history_.PassHistory(id, 0, "", 1);
    bool repeat = newest.ok() && !newest->empty() && newest->front().error == ran.status().message() &&
                  started_us - newest->front().t_us < 10 * 60 * 1'000'000LL;
    if (!repeat) {
      PassResult failed;
      failed.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      RecordPass(id, failed, started_us, ran.status().message());
    }
    return ran.status();
  }
  PassResult result = std::move(*ran);
  if (!result.merges.empty()) {
    RecordPass(id, result, started_us);
    auto gc = RunGc(id);
    if (!gc.ok()) spdlog::warn("table {}: GC failed: {}", id.ToString(), gc.status().ToString());
  }
  return result;
}

void TableService::RecordPass(const TableId& id, const PassResult& result, int64_t started_us,
                              const std::string& error) {
  PassRecord p;
  p.error = error;
  p.t_us = started_us;
  p.seconds = result.seconds;
  p.server = server_id();
  p.files_considered = result.files_considered;
  p.merges_total = static_cast<int64_t>(result.merges.size());
  static const char* kOutcome[] = {"merged", "failed", "discarded", "stopped"};
  for (const auto& m : result.merges) {
    if (p.merges.size() == PassRecord::kMaxMerges) break;
    PassRecord::Merge r;
    r.outcome = m.status == MergeStatus::kMerged      ? kOutcome[0]
                : m.status == MergeStatus::kFailed    ? kOutcome[1]
                : m.status == MergeStatus::kDiscarded ? kOutcome[2]
                                                      : kOutcome[3];
    r.inputs = static_cast<int64_t>(m.inputs.size());
    r.start = m.start;
    r.end = m.end;
    r.bytes_in = m.input_stored_bytes;
    r.bytes_out = m.output ? m.output->stored_bytes : 0;
    r.error = m.error;
    p.merges.push_back(std::move(r));
  }
  if (result.state_after) {
    p.files_after = result.state_after->files;
    p.stored_bytes_after = result.state_after->stored_bytes;
  }
  // The history is for people: a pass that cannot be recorded still counts.
  if (Status st = history_.RecordPass(id, p); !st.ok()) {
    spdlog::warn("table {}: cannot record the pass in the history: {}", id.ToString(), st.ToString());
  }
}

Result<std::vector<PassRecord>> TableService::PassHistory(const TableId& id, int64_t since_us,
                                                          const std::string& cursor, size_t limit, bool* has_more) {
  ARROW_RETURN_NOT_OK(registry_.GetTable(id).status());
  return history_.PassHistory(id, since_us, cursor, limit, has_more);
}

Result<GcBacklog> TableService::GcBacklogOf(const TableId& id) {
  ARROW_RETURN_NOT_OK(registry_.GetTable(id).status());
  ARROW_ASSIGN_OR_RAISE(auto entries, registry_.ListGc(id));
  GcBacklog b;
  b.files = static_cast<int64_t>(entries.size());
  int64_t grace_us = static_cast<int64_t>(writer_.compactor.gc_manifest_grace_period * 1e6);
  int64_t now_us = ToUnixMicros(clock_->Now());
  for (const auto& e : entries) {
    if (b.oldest_removed_us == 0 || e.removed_at_us < b.oldest_removed_us) b.oldest_removed_us = e.removed_at_us;
    if (e.removed_at_us + grace_us <= now_us) ++b.due;
  }
  b.grace_seconds = writer_.compactor.gc_manifest_grace_period;
  return b;
}

namespace {

// kFixedSizeKey marks stored fields only: on a table's field it would make a binary column read as fixed.
Status NoStoredMarks(const arrow::Schema& schema) {
  for (const auto& f : schema.fields()) {
    if (f->metadata() && f->metadata()->Contains(std::string(kFixedSizeKey))) {
      return InvalidArgument(fmt::format("column \"{}\": field metadata key {} is for Sediment's files, not a table",
                                         f->name(), kFixedSizeKey));
    }
  }
  return Status::OK();
}

}  // namespace

Result<bool> TableService::CreateTable(const TableId& id, const std::shared_ptr<arrow::Schema>& schema) {
  ARROW_RETURN_NOT_OK(BlockColumn(*schema).status());
  ARROW_RETURN_NOT_OK(NoStoredMarks(*schema));
  if (schema->num_fields() == 0) return InvalidArgument("the schema has no columns");
  // Fixed binary columns stored as BYTE_ARRAY, unless a field says otherwise (stored_types.h).
  return registry_.CreateTable(id, MarkNewColumns(schema), clock_->Now());
}

Result<bool> TableService::EvolveTable(const TableId& id, const std::shared_ptr<arrow::Schema>& schema) {
  ARROW_RETURN_NOT_OK(BlockColumn(*schema).status());
  ARROW_RETURN_NOT_OK(NoStoredMarks(*schema));
  // The table keeps its own fields as they are: only the new ones take the marks.
  return registry_.EvolveTable(id, MarkNewColumns(schema));
}

Result<Snapshot> TableService::LiveSegments(const TableId& id) {
  ARROW_RETURN_NOT_OK(registry_.GetTable(id).status());
  return registry_.TakeSnapshot(id);
}

Result<TableState> TableService::State(const TableId& id) {
  ARROW_RETURN_NOT_OK(registry_.GetTable(id).status());
  return registry_.State(id);
}

Result<SegmentPage> TableService::ListSegments(const TableId& id, std::optional<uint64_t> after, size_t limit) {
  ARROW_RETURN_NOT_OK(registry_.GetTable(id).status());
  return registry_.ListSegments(id, after, limit);
}

Result<Snapshot> TableService::SegmentsOverlapping(const TableId& id, uint64_t from, uint64_t to) {
  ARROW_RETURN_NOT_OK(registry_.GetTable(id).status());
  return registry_.TakeSnapshot(id, from, to);
}

Result<AppendResult> TableService::Append(const TableId& id, const AppendRequest& request,
                                          arrow::RecordBatchReader* batches) {
  ARROW_ASSIGN_OR_RAISE(AppendResult result, appender_->Append(id, request, batches));
  RequestCompaction(id);
  return result;
}

Result<PassResult> TableService::CompactNow(const TableId& id, const ProgressFn& progress) {
  ARROW_RETURN_NOT_OK(registry_.GetTable(id).status());
  return scheduler_->RunNow(id, progress);
}

Result<std::shared_ptr<ReadSnapshot>> TableService::OpenSnapshot(const TableId& id, uint64_t from, uint64_t to) {
  ARROW_RETURN_NOT_OK(registry_.GetTable(id).status());
  pins_.BeginOpen();
  auto snap = from == 0 && to == UINT64_MAX ? registry_.TakeSnapshot(id) : registry_.TakeSnapshot(id, from, to);
  if (!snap.ok()) {
    pins_.CancelOpen();
    return snap.status();
  }
  // The table as it is after the snapshot: schemas only grow, so every file's is this one or an earlier one.
  auto after = registry_.GetTable(id);
  if (!after.ok()) {
    pins_.CancelOpen();
    return after.status();
  }
  auto out = std::make_shared<ReadSnapshot>();
  out->table_ = id;
  out->schema_ = after->schema;
  out->segments_ = std::move(snap->segments);
  out->table_files_ = snap->state.files;
  pins_.Pin(out->segments_);
  out->pins_ = &pins_;
  return out;
}

Result<std::shared_ptr<arrow::Table>> TableService::ReadAll(const ReadSnapshot& snapshot) {
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  for (const auto& s : snapshot.segments()) {
    ARROW_ASSIGN_OR_RAISE(auto reader, SegmentFileReader::Open(blobs_.get(), s.path));
    ARROW_RETURN_NOT_OK(reader->ReadAs(snapshot.schema()));
    for (int rg = 0; rg < reader->num_row_groups(); ++rg) {
      ARROW_ASSIGN_OR_RAISE(auto t, reader->ReadRowGroup(rg));
      ARROW_ASSIGN_OR_RAISE(auto combined, t->CombineChunksToBatch());
      batches.push_back(combined);
    }
  }
  return arrow::Table::FromRecordBatches(snapshot.schema(), batches);
}

Result<std::vector<AppendRecord>> TableService::AppendHistory(const TableId& id, int64_t since_us,
                                                              const std::string& cursor, size_t limit, bool* has_more) {
  ARROW_RETURN_NOT_OK(registry_.GetTable(id).status());
  return history_.AppendHistory(id, since_us, cursor, limit, has_more);
}

Result<HistogramReport> TableService::Histogram(const TableId& id) {
  ARROW_ASSIGN_OR_RAISE(Snapshot snap, LiveSegments(id));
  return BuildHistogram(snap.segments, planner_, clock_->Now());
}

}  // namespace sediment::table
