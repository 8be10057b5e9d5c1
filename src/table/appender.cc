#include "table/appender.h"

#include <arrow/api.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/failpoint.h"
#include "table/discard.h"
#include "table/table_metrics_internal.h"

namespace sediment::table {

Result<int> BlockColumn(const arrow::Schema& schema) {
  int i = schema.GetFieldIndex("block_num");
  if (i < 0) return InvalidArgument("the schema has no block_num column");
  if (!schema.field(i)->type()->Equals(arrow::uint64())) {
    return InvalidArgument(fmt::format("block_num must be uint64, not {}", schema.field(i)->type()->ToString()));
  }
  return i;
}

std::mutex& Appender::CommitMutex(const TableId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& m = commit_mu_[id];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

Result<AppendResult> Appender::Append(const TableId& id, const AppendRequest& request,
                                      arrow::RecordBatchReader* batches) {
  ARROW_ASSIGN_OR_RAISE(TableInfo table, registry_->GetTable(id));
  ARROW_ASSIGN_OR_RAISE(SegmentRecord seg, NewSegment(table, request, batches));
  ARROW_ASSIGN_OR_RAISE(auto hashes, RequestHashes(request, seg));
  Status written = WriteSegment(table, request, batches, &seg);
  if (written.ok()) written = failpoint::Hit("table.append.after_write");
  auto result = written.ok() ? Commit(table, seg, hashes, request.force) : Result<AppendResult>(written);
  if (!result.ok()) {
    (void)DiscardUnlessLive(registry_, blobs_, id, seg.path);
    return result.status();
  }
  SEDIMENT_FAILPOINT(result->reorg ? "table.reorg.after_commit" : "table.append.after_commit");
  metrics_->appends.With(Labels(id)).Add();
  if (Status h = history_->RecordAppend(id, result->segment); !h.ok()) {
    spdlog::warn("table {}: cannot record the append in the history: {}", id.ToString(), h.ToString());
  }
  return result;
}

Result<SegmentRecord> Appender::NewSegment(const TableInfo& table, const AppendRequest& request,
                                           arrow::RecordBatchReader* batches) {
  const TableId& id = table.id;
  if (request.end_block < request.start_block) {
    return InvalidArgument(
        fmt::format("end_block {} is before start_block {}", request.end_block, request.start_block));
  }
  if (request.end_block > static_cast<uint64_t>(INT64_MAX)) {
    // Files store block_num as a signed 64-bit integer (Iceberg's long; table/stored_types.h).
    return InvalidArgument(
        fmt::format("end_block {} is beyond 2^63-1, the largest block number a table holds", request.end_block));
  }
  SegmentRecord seg;
  ARROW_ASSIGN_OR_RAISE(seg.end_hash, NormalizeHash("end_hash", request.end_hash));
  ARROW_ASSIGN_OR_RAISE(seg.parent_hash, NormalizeHash("parent_hash", request.parent_hash));
  if (!SameSchema(*batches->schema(), *table.schema)) {
    return InvalidArgument(fmt::format("the batches' schema does not match table {}: got {}; want {}", id.ToString(),
                                       batches->schema()->ToString(), table.schema->ToString()));
  }
  seg.id = NewSegmentId(request.start_block, writer_tag_);
  seg.path = TableRegistry::SegmentPath(id, seg.id);
  seg.start = request.start_block;
  seg.end = request.end_block;
  seg.generation = 0;
  seg.created_at_us = ToUnixMicros(clock_->Now());
  return seg;
}

Result<std::map<uint64_t, std::string>> Appender::RequestHashes(const AppendRequest& request,
                                                                const SegmentRecord& seg) {
  std::map<uint64_t, std::string> out;
  const auto& given = request.block_hashes;
  uint64_t blocks = seg.end - seg.start + 1;
  if (given.size() > blocks) {
    return InvalidArgument(fmt::format("block_hashes has {} hashes but the segment [{}, {}] has {} blocks",
                                       given.size(), seg.start, seg.end, blocks));
  }
  for (size_t i = 0; i < given.size(); ++i) {
    ARROW_ASSIGN_OR_RAISE(std::string h, NormalizeHash(fmt::format("block_hashes[{}]", i), given[i]));
    out[seg.end - (given.size() - 1) + i] = std::move(h);
  }
  if (!given.empty() && out[seg.end] != seg.end_hash) {
    return InvalidArgument(
        fmt::format("the last of block_hashes ({}) is not end_hash ({})", out[seg.end], seg.end_hash));
  }
  out[seg.end] = seg.end_hash;
  if (seg.start > 0) out[seg.start - 1] = seg.parent_hash;
  return out;
}

Status Appender::WriteSegment(const TableInfo& table, const AppendRequest& request, arrow::RecordBatchReader* batches,
                              SegmentRecord* seg) {
  ARROW_ASSIGN_OR_RAISE(int block_col, BlockColumn(*table.schema));
  ARROW_ASSIGN_OR_RAISE(auto writer, SegmentFileWriter::Open(blobs_, seg->path, table.schema, file_settings_,
                                                             FileLayout::kPages, EncodeSegmentFileMetadata(*seg)));
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
  seg->rows = facts.rows;
  seg->bytes = facts.bytes;
  seg->stored_bytes = facts.stored_bytes;
  return Status::OK();
}

Result<AppendResult> Appender::Commit(const TableInfo& table, const SegmentRecord& seg,
                                      const std::map<uint64_t, std::string>& hashes, bool force) {
  const TableId& id = table.id;
  std::lock_guard<std::mutex> append_lock(CommitMutex(id));
  for (int attempt = 0;; ++attempt) {
    ARROW_ASSIGN_OR_RAISE(TableState state, registry_->State(id));
    AppendResult result;
    result.segment = seg;
    auto planned = PlanChange(table, seg, state, force, &result);
    if (!planned.ok()) {
      // Planning reads the last segment, and the file a reorg straddles; if the
      // live set moved meanwhile, that one may have been merged away: plan again.
      auto now = registry_->State(id);
      if (attempt < 5 && now.ok() && now->token != state.token) continue;
      return planned.status();
    }
    LiveSetChange change = std::move(*planned);
    // Keep the hashes within the window below the new head (seg.end).
    for (const auto& [block, hash] : hashes) {
      if (block + max_reorg_depth_ >= seg.end) change.put_hashes[block] = hash;  // a reorg D deep needs head - D
    }
    auto committed = registry_->Commit(id, change, clock_->Now());
    if (committed.ok()) {
      Committed(id, *committed, result, force);
      return result;
    }
    if (result.rewritten) (void)DiscardUnlessLive(registry_, blobs_, id, result.rewritten->path);
    if (!IsPreconditionFailed(committed.status()) || attempt >= 5) return committed.status();
    // The live set moved under us (a merge swapped in, another append landed): look again.
  }
}

Result<LiveSetChange> Appender::PlanChange(const TableInfo& table, const SegmentRecord& seg, const TableState& state,
                                           bool force, AppendResult* result) {
  const TableId& id = table.id;
  LiveSetChange change;
  change.add.push_back(seg);
  if (state.empty()) {
    change.expect_version = state.token;  // two first appends: one wins, the other looks again
    return change;
  }
  ARROW_ASSIGN_OR_RAISE(SegmentRecord last, registry_->Segment(id, state.last));
  if (seg.start == last.end + 1) {
    if (seg.parent_hash != last.end_hash) {
      return Conflict(fmt::format(
          "table {}: parent_hash {} does not match the hash {} of block {}; to replace blocks after a reorg, "
          "send the segment from the first block that changed",
          id.ToString(), seg.parent_hash, last.end_hash, last.end));
    }
    change.keep.push_back(last);  // the tail must still be the same when we commit
    return change;
  }
  if (seg.start > last.end + 1) {
    return Conflict(fmt::format("table {}: segment starts at block {} but the table ends at block {} (gap)",
                                id.ToString(), seg.start, last.end));
  }
  // A reorg: proven against the stored hash of the block before it, then
  // every live segment with blocks at or after seg.start is replaced. Only
  // those segments and the one before them are read.
  ARROW_ASSIGN_OR_RAISE(Snapshot tail, registry_->TakeSnapshot(id, seg.start == 0 ? 0 : seg.start - 1, UINT64_MAX));
  ARROW_RETURN_NOT_OK(CheckReorg(id, seg, tail, force));
  result->reorg = true;
  // Nothing may have landed meanwhile: a tail another server appended after
  // our snapshot would otherwise survive next to the blocks that replace it.
  change.expect_version = tail.state.token;
  ARROW_ASSIGN_OR_RAISE(auto replaced, registry_->HashesFrom(id, seg.start));
  for (auto& [block, hash] : replaced) {
    change.drop_hashes.push_back(block);
    if (hash == seg.parent_hash) continue;  // cannot be: that hash is the ancestor's
    std::optional<uint64_t> ancestor;
    if (seg.start > 0) ancestor = seg.start - 1;
    change.abandoned.push_back(AbandonedBlock{block, std::move(hash), ancestor, seg.parent_hash});
  }
  for (const auto& s : tail.segments) {
    if (s.end < seg.start) {
      if (s.end + 1 == seg.start) change.keep.push_back(s);  // the proof must still hold when we commit
      continue;
    }
    change.remove.push_back(s);
    result->replaced.push_back(s);
    if (s.start < seg.start) {
      ARROW_ASSIGN_OR_RAISE(result->rewritten, RewriteWithout(table, s, seg.start, seg.parent_hash));
      change.add.push_back(*result->rewritten);
      SEDIMENT_FAILPOINT("table.reorg.after_rewrite");
    }
  }
  return change;
}

Result<std::optional<std::string>> Appender::StoredHash(const TableId& id, const Snapshot& tail, uint64_t start) {
  // The hash of block start - 1: the end of the segment before, the parent of the table's first, else the window.
  for (const auto& s : tail.segments) {
    if (s.end + 1 == start) return std::optional<std::string>(s.end_hash);
  }
  if (!tail.segments.empty() && tail.segments.front().start == start && tail.state.first == start) {
    return std::optional<std::string>(tail.segments.front().parent_hash);
  }
  if (start == 0) return std::optional<std::string>();
  return registry_->BlockHash(id, start - 1);
}

Status Appender::CheckReorg(const TableId& id, const SegmentRecord& seg, const Snapshot& tail, bool force) {
  if (tail.state.empty()) return PreconditionFailed(fmt::format("table {}: the live set changed", id.ToString()));
  const uint64_t head = tail.state.end, first = tail.state.first;
  const std::string how = "nothing was changed; send force=true to replace the blocks anyway";
  if (seg.start < first) {
    if (force) return Status::OK();
    return Conflict(fmt::format("table {}: the segment starts at block {}, before the table's first block {}; {}",
                                id.ToString(), seg.start, first, how));
  }
  const uint64_t depth = head - seg.start + 1;
  if (depth > max_reorg_depth_ && !force) {
    return Conflict(fmt::format(
        "table {}: a reorg from block {} replaces {} blocks (through block {}), more than max_reorg_depth {}; {}",
        id.ToString(), seg.start, depth, head, max_reorg_depth_, how));
  }
  ARROW_ASSIGN_OR_RAISE(auto stored, StoredHash(id, tail, seg.start));
  const std::string parent = seg.start == 0 ? "the parent of block 0" : fmt::format("block {}", seg.start - 1);
  if (!stored) {
    if (force) return Status::OK();
    return Conflict(fmt::format(
        "table {}: no stored hash of {} to prove the reorg from block {} against (parent_hash {}); the table "
        "keeps the hashes of segment ends and of the block_hashes writers send; {}",
        id.ToString(), parent, seg.start, seg.parent_hash, how));
  }
  if (*stored != seg.parent_hash) {
    if (force) {
      spdlog::warn("table {}: forced reorg from block {}: parent_hash {} differs from the stored hash {} of {}",
                   id.ToString(), seg.start, seg.parent_hash, *stored, parent);
      return Status::OK();
    }
    return Conflict(
        fmt::format("table {}: parent_hash {} of the segment from block {} does not match the stored hash {} of {}; "
                    "nothing was changed",
                    id.ToString(), seg.parent_hash, seg.start, *stored, parent));
  }
  return Status::OK();
}

void Appender::Committed(const TableId& id, const TableState& state, const AppendResult& result, bool force) {
  const SegmentRecord& seg = result.segment;
  const auto& rewritten = result.rewritten;
  if (result.reorg) {
    metrics_->reorgs.With(Labels(id)).Add();
    if (force) metrics_->forced_reorgs.With(Labels(id)).Add();
    bool into_merged = false;
    for (const auto& r : result.replaced) into_merged |= r.generation > 0;
    if (rewritten) metrics_->reorg_rewrites.With(Labels(id)).Add();
    auto log = force ? spdlog::level::warn : spdlog::level::info;
    spdlog::log(
        log, "table {}: {}reorg from block {} replaced {} file(s){}{}", id.ToString(), force ? "forced " : "",
        seg.start, result.replaced.size(), into_merged ? ", reaching into a merged file" : "",
        rewritten ? fmt::format("; {} rewritten to end at block {}", result.replaced.front().id, rewritten->end) : "");
  }
  metrics_->UpdateGauges(id, state);
}

Result<SegmentRecord> Appender::RewriteWithout(const TableInfo& table, const SegmentRecord& s, uint64_t cut_block,
                                               const std::string& end_hash) {
  ARROW_ASSIGN_OR_RAISE(int block_col, BlockColumn(*table.schema));
  SegmentRecord out;
  out.id = NewSegmentId(s.start, writer_tag_);
  out.path = TableRegistry::SegmentPath(table.id, out.id);
  out.start = s.start;
  out.end = cut_block - 1;
  out.end_hash = end_hash;
  out.parent_hash = s.parent_hash;
  out.generation = s.generation;
  out.parents = {s.id};
  out.created_at_us = ToUnixMicros(clock_->Now());
  ARROW_ASSIGN_OR_RAISE(auto reader, SegmentFileReader::Open(blobs_, s.path));
  // The table's schema now (it may have gained columns since the append began): a file of an
  // earlier version is rewritten in this one.
  ARROW_ASSIGN_OR_RAISE(TableInfo now, registry_->GetTable(table.id));
  ARROW_RETURN_NOT_OK(reader->ReadAs(now.schema));
  ARROW_ASSIGN_OR_RAISE(auto writer, SegmentFileWriter::Open(blobs_, out.path, now.schema, file_settings_,
                                                             FileLayout::kPages, EncodeSegmentFileMetadata(out)));
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

}  // namespace sediment::table
