#include "query/stream.h"

#include <arrow/compute/cast.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "table/table_service.h"

namespace sediment::query {

using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr size_t kDeliveredKept = 512;  // range ends a stream remembers to find where a reorg parts

}  // namespace

void TableWatch::Changed() {
  std::lock_guard<std::mutex> lock(mu_);
  ++version_;
  cv_.notify_all();
}

uint64_t TableWatch::version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

void TableWatch::WaitPast(uint64_t seen, SteadyClock::time_point deadline) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, deadline, [&] { return version_ != seen; });
}

Result<std::unique_ptr<QueryStream>> QueryStream::Open(QueryEngine* engine, table::TableService* tables,
                                                       const TableWatch* watch, const ParsedQuery& query,
                                                       std::optional<StreamCursor> cursor, StreamOptions options) {
  if (query.tables.empty()) {
    return InvalidArgument("a streaming query reads at least one table: its microbatches are block ranges of them");
  }
  for (const auto& id : query.tables) {
    if (id.dataset != query.tables[0].dataset) {
      return InvalidArgument(
          fmt::format("streaming query contains a cross-network join: {} and {} are of different datasets (networks)",
                      query.tables[0].ToString(), id.ToString()));
    }
  }
  const std::string& network = query.tables[0].dataset;
  if (cursor && cursor->network != network) {
    return InvalidArgument(
        fmt::format("the resume cursor names network \"{}\"; the query reads \"{}\"", cursor->network, network));
  }
  ARROW_RETURN_NOT_OK(engine->CheckIncremental(query));
  // The columns, from a run that only prepares: over the first table's first block, so the files' own types.
  ARROW_ASSIGN_OR_RAISE(auto state, tables->State(query.tables[0]));
  uint64_t first = state.empty() ? 0 : state.first;
  ARROW_ASSIGN_OR_RAISE(auto prepared, engine->Run(query, BlockRange{first, first}, /*execute=*/false));
  ARROW_ASSIGN_OR_RAISE(auto schema, prepared->Schema());
  prepared.reset();
  if (!engine->OpenStream()) {
    return Busy(fmt::format("{} streaming queries are open, the most this server keeps ([query] max_streams)",
                            engine->limits().max_streams));
  }
  auto s = std::unique_ptr<QueryStream>(new QueryStream());
  s->engine_ = engine;
  s->tables_ = tables;
  s->watch_ = watch;
  s->query_ = query;
  s->options_ = options;
  s->network_ = network;
  s->schema_ = std::move(schema);
  if (cursor) {
    s->delivered_.emplace_back(cursor->number, cursor->hash);
    s->next_from_ = cursor->number + 1;
  }
  return s;
}

QueryStream::~QueryStream() {
  if (engine_ != nullptr) engine_->CloseStream();
}

Result<Microbatch> QueryStream::Next(const std::function<bool()>& cancelled) {
  const auto keep_alive_at = SteadyClock::now() + options_.keep_alive;
  while (true) {
    if (cancelled()) return Status::Cancelled("the client went away");
    uint64_t seen = watch_->version();
    auto next = TryNext();
    if (!next.ok() && !IsBusy(next.status())) return next.status();  // Busy: every query slot taken, wait
    if (next.ok() && next->has_value()) return std::move(**next);
    auto now = SteadyClock::now();
    if (now >= keep_alive_at) {
      Microbatch keep_alive;
      if (last_span_) keep_alive.span = *last_span_;
      return keep_alive;
    }
    watch_->WaitPast(seen, std::min(keep_alive_at, now + options_.poll));
  }
}

Result<std::optional<std::string>> QueryStream::HashAt(const table::TableId& id, uint64_t block) {
  ARROW_ASSIGN_OR_RAISE(auto stored, tables_->BlockHash(id, block));
  if (stored) return stored;
  ARROW_ASSIGN_OR_RAISE(auto holding, tables_->SegmentsOverlapping(id, block, block));
  for (const auto& s : holding.segments) {
    if (s.end == block && !s.end_hash.empty()) return std::optional<std::string>(s.end_hash);
  }
  return std::optional<std::string>();
}

Result<bool> QueryStream::IsCanonical(uint64_t block, const std::string& hash) {
  const auto& primary = query_.tables[0];
  ARROW_ASSIGN_OR_RAISE(auto now, HashAt(primary, block));
  if (now) return *now == hash;
  ARROW_ASSIGN_OR_RAISE(auto state, tables_->State(primary));
  // Past the table's end: a reorg made the chain shorter. Before the window: final.
  return !state.empty() && block <= state.end;
}

Result<std::optional<uint64_t>> QueryStream::AncestorOf(uint64_t block, const std::string& hash) {
  // The reorg that abandoned `hash` says where the chains parted; a later,
  // deeper reorg may have abandoned that block too: follow the records down.
  std::string at = hash;
  for (int depth = 0; depth < 64; ++depth) {
    ARROW_ASSIGN_OR_RAISE(auto abandoned, tables_->Abandoned(query_.tables[0], at));
    if (!abandoned) break;
    if (!abandoned->ancestor) return std::optional<uint64_t>();  // the reorg replaced block 0: start over
    ARROW_ASSIGN_OR_RAISE(bool holds, IsCanonical(*abandoned->ancestor, abandoned->ancestor_hash));
    if (holds || abandoned->ancestor_hash.empty()) return abandoned->ancestor;
    block = *abandoned->ancestor;
    at = abandoned->ancestor_hash;
  }
  // Not recorded (a reorg of a block whose hash the table never stored): the
  // deepest reorg the table accepts bounds where the chains can part.
  uint64_t depth = tables_->max_reorg_depth();
  if (block < depth) return std::optional<uint64_t>();
  return std::optional<uint64_t>(block - depth);
}

Status QueryStream::CheckCanonical() {
  if (delivered_.empty()) return Status::OK();
  ARROW_ASSIGN_OR_RAISE(bool still, IsCanonical(delivered_.back().first, delivered_.back().second));
  if (still) return Status::OK();
  // The chains parted at or before the last delivered end: go back to the newest that holds.
  auto oldest = delivered_.back();
  delivered_.pop_back();
  while (!delivered_.empty()) {
    ARROW_ASSIGN_OR_RAISE(bool holds, IsCanonical(delivered_.back().first, delivered_.back().second));
    if (holds) break;
    oldest = delivered_.back();
    delivered_.pop_back();
  }
  if (!delivered_.empty()) {
    next_from_ = delivered_.back().first + 1;
  } else {
    ARROW_ASSIGN_OR_RAISE(auto ancestor, AncestorOf(oldest.first, oldest.second));
    next_from_ = ancestor ? *ancestor + 1 : 0;
    if (ancestor) {
      ARROW_ASSIGN_OR_RAISE(auto hash, HashAt(query_.tables[0], *ancestor));
      if (hash) delivered_.emplace_back(*ancestor, *hash);
    }
  }
  reorg_ = true;
  return Status::OK();
}

Result<std::optional<Microbatch>> QueryStream::TryNext() {
  ARROW_RETURN_NOT_OK(CheckCanonical());
  // Where every table has data: after the greatest first block, up to the least last one.
  uint64_t first = 0, watermark = UINT64_MAX;
  for (const auto& id : query_.tables) {
    ARROW_ASSIGN_OR_RAISE(auto state, tables_->State(id));
    if (state.empty()) return std::optional<Microbatch>();
    first = std::max(first, state.first);
    watermark = std::min(watermark, state.end);
  }
  uint64_t from = std::max(first, next_from_.value_or(first));
  if (from > watermark) return std::optional<Microbatch>();
  const uint64_t limit = std::min(watermark, from + std::min(options_.max_blocks - 1, UINT64_MAX - from));
  // The range ends at a segment end of the first table (its record holds the hash), at most `limit`;
  // a segment longer than max_blocks is one range.
  const auto& primary = query_.tables[0];
  ARROW_ASSIGN_OR_RAISE(auto holding, tables_->SegmentsOverlapping(primary, from, limit));
  std::optional<uint64_t> to;
  std::string hash;
  for (const auto& s : holding.segments) {
    if (s.end <= limit || (!to && s.end <= watermark)) to = s.end, hash = s.end_hash;
  }
  if (!to) {  // the first table is ahead of another: its blocks to `limit` are in the window
    ARROW_ASSIGN_OR_RAISE(auto stored, tables_->BlockHash(primary, limit));
    if (!stored) return std::optional<Microbatch>();
    to = limit, hash = *stored;
  }
  Microbatch batch;
  batch.span = BlockSpan{network_, from, *to, hash, ""};
  if (!delivered_.empty() && delivered_.back().first + 1 == from) {
    batch.span.prev_hash = delivered_.back().second;
  } else if (from > 0) {
    ARROW_ASSIGN_OR_RAISE(auto prev, HashAt(primary, from - 1));
    if (!prev) {  // the first table's first segment knows its parent
      for (const auto& s : holding.segments) {
        if (s.start == from) prev = s.parent_hash;
      }
    }
    batch.span.prev_hash = prev.value_or("");
  }
  ARROW_ASSIGN_OR_RAISE(batch.run, engine_->Run(query_, BlockRange{from, *to}));
  // Pinned now: every table must still reach the end and agree on its hash
  // (a reorg may have reached one table and not yet another).
  for (const auto& id : query_.tables) {
    ARROW_ASSIGN_OR_RAISE(auto at, HashAt(id, *to));
    if (at && *at != hash) return std::optional<Microbatch>();
    if (!at) {
      ARROW_ASSIGN_OR_RAISE(auto state, tables_->State(id));
      if (state.empty() || state.end < *to) return std::optional<Microbatch>();
    }
  }
  batch.reorg = reorg_;
  reorg_ = false;
  next_from_ = *to + 1;
  delivered_.emplace_back(*to, hash);
  last_span_ = batch.span;
  if (delivered_.size() > kDeliveredKept) delivered_.pop_front();
  return std::optional<Microbatch>(std::move(batch));
}

Result<std::shared_ptr<arrow::RecordBatch>> Conform(const std::shared_ptr<arrow::RecordBatch>& batch,
                                                    const std::shared_ptr<arrow::Schema>& schema) {
  if (batch->schema()->Equals(*schema, /*check_metadata=*/false)) return batch;
  if (batch->num_columns() != schema->num_fields()) {
    return Status::Invalid(
        fmt::format("a microbatch has {} columns where the stream has {}", batch->num_columns(), schema->num_fields()));
  }
  std::vector<std::shared_ptr<arrow::Array>> columns;
  for (int i = 0; i < batch->num_columns(); ++i) {
    auto column = batch->column(i);
    if (!column->type()->Equals(schema->field(i)->type())) {
      ARROW_ASSIGN_OR_RAISE(column, arrow::compute::Cast(*column, schema->field(i)->type()));
    }
    columns.push_back(std::move(column));
  }
  return arrow::RecordBatch::Make(schema, batch->num_rows(), std::move(columns));
}

}  // namespace sediment::query
