#include "chain/ingest_job.h"

#include <arrow/api.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "chain/evm_job.h"
#include "chain/keys.h"

namespace sediment::chain {
namespace {

ChainOptions OptionsFrom(const JobConfig& c) {
  ChainOptions o;
  o.seed = static_cast<uint64_t>(c.seed);
  o.start_block = static_cast<uint64_t>(c.start_block);
  o.txs_per_block = c.txs_per_block;
  o.logs_per_tx = c.logs_per_tx;
  o.reorg_probability = c.reorg_probability;
  o.max_reorg_depth = c.max_reorg_depth;
  return o;
}

// Streams the generator's rows for [from, to], a few blocks per batch, so a
// large catch-up segment is never whole in memory.
class ChainBatchReader : public arrow::RecordBatchReader {
 public:
  ChainBatchReader(const ChainGenerator* gen, ChainTable table, uint64_t from, uint64_t to, uint64_t head)
      : gen_(gen), table_(table), next_(from), to_(to), head_(head), schema_(TableSchema(table)) {}
  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }
  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* out) override {
    if (next_ > to_) {
      out->reset();
      return arrow::Status::OK();
    }
    uint64_t end = std::min(to_, next_ + kBlocksPerBatch - 1);
    ARROW_ASSIGN_OR_RAISE(*out, gen_->Generate(table_, next_, end, head_));
    next_ = end + 1;
    return arrow::Status::OK();
  }

 private:
  static constexpr uint64_t kBlocksPerBatch = 32;
  const ChainGenerator* gen_;
  ChainTable table_;
  uint64_t next_, to_, head_;
  std::shared_ptr<arrow::Schema> schema_;
};

}  // namespace

IngestJob::IngestJob(JobConfig config, const WorkerConfig& worker, table::TableService* tables,
                     std::shared_ptr<kv::KvStore> kv, std::shared_ptr<Clock> clock, MetricsRegistry* metrics)
    : Job(worker.poll_interval_secs),
      config_(std::move(config)),
      worker_(worker),
      generator_(OptionsFrom(config_)),
      tables_(tables),
      kv_(std::move(kv)),
      clock_(std::move(clock)),
      metrics_(metrics) {
  status_.dataset = config_.dataset;
  status_.source = config_.source;
}

IngestJob::~IngestJob() { Stop(); }

Result<std::optional<uint64_t>> IngestJob::HeadAt(TimePoint now) {
  std::lock_guard<std::mutex> lock(poll_mu_);
  return HeadAtLocked(now);
}

Result<std::optional<uint64_t>> IngestJob::HeadAtLocked(TimePoint now) {
  if (!anchor_us_) {
    // The first start fixes the chain's clock, for every later restart.
    std::string key = AnchorKey(config_.dataset);
    Status st = kv_->SetIf(key, std::to_string(ToUnixMicros(now)), std::nullopt);
    if (!st.ok() && !IsPreconditionFailed(st)) return st;
    ARROW_ASSIGN_OR_RAISE(std::string v, kv_->Get(key));
    anchor_us_ = std::stoll(v);
  }
  double elapsed = std::max(0.0, static_cast<double>(ToUnixMicros(now) - *anchor_us_) / 1e6);
  int64_t produced = config_.history_blocks + static_cast<int64_t>(std::floor(elapsed / config_.block_time));
  if (produced <= 0) return std::optional<uint64_t>();
  return std::optional<uint64_t>(static_cast<uint64_t>(config_.start_block + produced - 1));
}

Status IngestJob::EnsureTablesLocked() {
  if (tables_ready_) return Status::OK();
  for (ChainTable t : kAllTables) {
    table::TableId id{config_.dataset, TableName(t)};
    ARROW_RETURN_NOT_OK(tables_->CreateTable(id, TableSchema(t)).status());
  }
  tables_ready_ = true;
  return Status::OK();
}

Status IngestJob::PollOnce() {
  std::lock_guard<std::mutex> lock(poll_mu_);
  Status st = [&]() -> Status {
    ARROW_RETURN_NOT_OK(EnsureTablesLocked());
    ARROW_ASSIGN_OR_RAISE(auto head, HeadAtLocked(clock_->Now()));
    {
      std::lock_guard<std::mutex> s(status_mu_);
      status_.head = head;
    }
    if (!head) return Status::OK();
    metrics_->Gauge("ingest_head_block", "The chain source's head block, per job.", {"dataset"})
        .With({config_.dataset})
        .Set(static_cast<double>(*head));
    for (ChainTable t : kAllTables) ARROW_RETURN_NOT_OK(PollTableLocked(t, *head));
    return Status::OK();
  }();
  std::lock_guard<std::mutex> s(status_mu_);
  status_.last_error = st.ok() ? "" : st.ToString();
  return st;
}

std::optional<uint64_t> IngestJob::ResumePointLocked(ChainTable table, const std::vector<table::SegmentRecord>& live,
                                                     uint64_t head, bool whole, bool* reorg) {
  auto& cache = written_hashes_[table];
  uint64_t next = static_cast<uint64_t>(config_.start_block);
  *reorg = false;
  if (live.empty()) return next;
  const auto& last = live.back();
  next = last.end + 1;
  if (last.end <= head && generator_.BlockHashHex(last.end, head) != last.end_hash) {
    // The chain changed under the tables: find the first block that differs.
    *reorg = true;
    bool found = false;
    next = live.front().start;
    for (size_t i = live.size(); i-- > 0 && !found;) {
      const auto& seg = live[i];
      if (generator_.BlockHashHex(seg.start - 1, head) != seg.parent_hash) continue;
      found = true;
      next = seg.start;
      // Inside that segment, blocks this job wrote itself are known by hash.
      for (uint64_t b = seg.start; b <= seg.end; ++b) {
        auto it = cache.find(b);
        if (it == cache.end() || it->second != generator_.BlockHashHex(b, head)) break;
        next = b + 1;
      }
    }
    if (!found && !whole) return std::nullopt;  // not within these segments: look at all of them
    std::lock_guard<std::mutex> s(status_mu_);
    status_.reorgs++;
  }
  return next;
}

void IngestJob::LearnBlockSizeLocked(ChainTable table, const table::SegmentRecord& segment, uint64_t blocks) {
  const auto& writer = tables_->writer_config();
  double bpb = bytes_per_block_.count(table) ? bytes_per_block_[table] : 0;
  double measured = static_cast<double>(segment.bytes) / static_cast<double>(blocks);
  bytes_per_block_[table] = bpb > 0 ? 0.7 * bpb + 0.3 * measured : measured;
  if (writer.rows > 0 && segment.rows > 0) {
    // Rows cap: shrink the size estimate so blocks * rows_per_block <= rows.
    double rows_per_block = static_cast<double>(segment.rows) / static_cast<double>(blocks);
    double max_blocks = static_cast<double>(writer.rows) / rows_per_block;
    bytes_per_block_[table] =
        std::max(bytes_per_block_[table], static_cast<double>(writer.bytes) / std::max(1.0, max_blocks));
  }
}

Status IngestJob::PollTableLocked(ChainTable table, uint64_t head) {
  table::TableId id{config_.dataset, TableName(table)};
  // The last segment, or after a reorg the segments of the reorg window (all of them if the fork is older):
  // what a poll reads does not grow with the table.
  const auto& writer = tables_->writer_config();
  ARROW_ASSIGN_OR_RAISE(auto state, tables_->State(id));
  std::vector<table::SegmentRecord> live;
  bool reorg = false;
  std::optional<uint64_t> resume = static_cast<uint64_t>(config_.start_block);
  if (!state.empty()) {
    ARROW_ASSIGN_OR_RAISE(auto tail, tables_->SegmentsOverlapping(id, state.end, state.end));
    live = std::move(tail.segments);
    resume = ResumePointLocked(table, live, head, false, &reorg);
    if (!resume) {
      uint64_t depth = static_cast<uint64_t>(writer.max_reorg_depth);
      ARROW_ASSIGN_OR_RAISE(auto window,
                            tables_->SegmentsOverlapping(id, state.end > depth ? state.end - depth : 0, UINT64_MAX));
      live = std::move(window.segments);
      resume = ResumePointLocked(table, live, head, false, &reorg);
    }
    if (!resume) {
      ARROW_ASSIGN_OR_RAISE(auto all, tables_->LiveSegments(id));
      live = std::move(all.segments);
      resume = ResumePointLocked(table, live, head, true, &reorg);
    }
  }
  auto& cache = written_hashes_[table];
  uint64_t next = *resume;
  {
    std::lock_guard<std::mutex> s(status_mu_);
    status_.last_block[TableName(table)] =
        live.empty() ? std::nullopt : std::optional<uint64_t>(reorg ? next - 1 : live.back().end);
  }
  while (next <= head) {
    // Catching up: fill segments up to the target; at the head, one per poll.
    uint64_t blocks = head - next + 1;
    double bpb = bytes_per_block_.count(table) ? bytes_per_block_[table] : 0;
    if (bpb > 0) {
      blocks = std::min<uint64_t>(blocks, std::max<uint64_t>(1, static_cast<uint64_t>(writer.bytes / bpb)));
    } else {
      blocks = std::min<uint64_t>(blocks, 64);  // learn the size of a block first
    }
    uint64_t end = next + blocks - 1;
    ChainBatchReader reader(&generator_, table, next, end, head);
    table::AppendRequest req{next, end, generator_.BlockHashHex(end, head), generator_.BlockHashHex(next - 1, head)};
    // Every block's hash within the table's reorg window, so a later reorg
    // from inside this segment can be proven.
    uint64_t window = static_cast<uint64_t>(writer.max_reorg_depth);
    for (uint64_t b = end >= next + window ? end - window + 1 : next; b <= end; ++b) {
      req.block_hashes.push_back(generator_.BlockHashHex(b, head));
    }
    auto result = tables_->Append(id, req, &reader);
    if (!result.ok())
      return WithContext(result.status(), fmt::format("job {}: appending {}", config_.dataset, id.ToString()));
    LearnBlockSizeLocked(table, result->segment, blocks);
    for (uint64_t b = next; b <= end; ++b) cache[b] = generator_.BlockHashHex(b, head);
    while (cache.size() > 4096) cache.erase(cache.begin());
    if (result->reorg) {
      spdlog::info("job {}: {} reorganized from block {}", config_.dataset, id.ToString(), next);
      metrics_->Counter("ingest_reorgs_total", "Reorgs the ingest job handled, per table.", {"dataset", "table"})
          .With({config_.dataset, TableName(table)})
          .Add();
    }
    metrics_->Counter("ingest_blocks_written_total", "Blocks written by ingest jobs.", {"dataset", "table"})
        .With({config_.dataset, TableName(table)})
        .Add(static_cast<double>(blocks));
    {
      std::lock_guard<std::mutex> s(status_mu_);
      status_.segments_written++;
      status_.last_block[TableName(table)] = end;
    }
    next = end + 1;
  }
  return Status::OK();
}

Status Job::Start() {
  std::lock_guard<std::mutex> lock(run_mu_);
  if (task_) return Status::OK();
  const std::string name = config().dataset;
  task_ = std::make_unique<PeriodicTask>(
      "job-" + name, std::chrono::milliseconds(static_cast<int64_t>(poll_interval_secs_ * 1000)), [this, name] {
        Status st = PollOnce();
        if (!st.ok()) spdlog::warn("job {}: poll failed: {}", name, st.ToString());
      });
  task_->Start();
  task_->Trigger();
  return Status::OK();
}

void Job::Stop() {
  std::unique_ptr<PeriodicTask> task;
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    task = std::move(task_);
  }
  if (task) task->Stop();
}

bool Job::running() {
  std::lock_guard<std::mutex> lock(run_mu_);
  return task_ != nullptr;
}

JobStatus IngestJob::Describe() {
  JobStatus out;
  {
    std::lock_guard<std::mutex> s(status_mu_);
    out = status_;
  }
  out.running = running();
  if (!out.running) {
    // A stopped job falls behind: its chain goes on producing blocks.
    std::lock_guard<std::mutex> lock(poll_mu_);
    if (anchor_us_) {
      if (auto head = HeadAtLocked(clock_->Now()); head.ok()) out.head = *head;
    }
  }
  return out;
}

JobManager::JobManager(const Config& config, table::TableService* tables, std::shared_ptr<kv::KvStore> kv,
                       std::shared_ptr<Clock> clock, MetricsRegistry* metrics) {
  for (const auto& j : config.jobs) {
    if (j.source == "evm-rpc") {
      jobs_[j.dataset] = std::make_unique<EvmRpcJob>(j, config.worker, tables, metrics);
    } else {
      jobs_[j.dataset] = std::make_unique<IngestJob>(j, config.worker, tables, kv, clock, metrics);
    }
  }
}

Status JobManager::Start() {
  for (auto& [name, job] : jobs_) {
    if (job->config().autostart) ARROW_RETURN_NOT_OK(job->Start());
  }
  return Status::OK();
}

void JobManager::Stop() {
  for (auto& [name, job] : jobs_) job->Stop();
}

std::vector<JobStatus> JobManager::List() {
  std::vector<JobStatus> out;
  for (auto& [name, job] : jobs_) out.push_back(job->Describe());
  return out;
}

Job* JobManager::Find(const std::string& dataset) {
  auto it = jobs_.find(dataset);
  return it == jobs_.end() ? nullptr : it->second.get();
}

Result<JobStatus> JobManager::StartJob(const std::string& dataset) {
  Job* job = Find(dataset);
  if (job == nullptr) return NotFound(fmt::format("job {} not found", dataset));
  ARROW_RETURN_NOT_OK(job->Start());
  return job->Describe();
}

Result<JobStatus> JobManager::StopJob(const std::string& dataset) {
  Job* job = Find(dataset);
  if (job == nullptr) return NotFound(fmt::format("job {} not found", dataset));
  job->Stop();
  return job->Describe();
}

}  // namespace sediment::chain
