// The fixture of the tables half's tests: a TableService on an in-memory KV
// store, a fault-injecting local blob store and a manual clock, with helpers
// that append blocks of a chain with forks. Included by tests only.
#pragma once

#include <arrow/api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "base/test_util.h"
#include "blob/fault_injection.h"
#include "table/table_service.h"

namespace sediment::table {

inline std::shared_ptr<arrow::Schema> TestSchema() {
  return arrow::schema({arrow::field("block_num", arrow::uint64(), false), arrow::field("log_index", arrow::int32()),
                        arrow::field("fork", arrow::int32()), arrow::field("data", arrow::binary()),
                        arrow::field("topic", arrow::utf8())});
}

// Block hashes of a chain where `fork` tells which version of each block is canonical.
inline std::string Hash(uint64_t block, int fork) {
  return fmt::format("{:016x}", std::hash<std::string>()(fmt::format("{}/{}", block, fork)));
}

// `rows_per_block` rows per block in [start, end], tagged with `fork`.
inline std::shared_ptr<arrow::RecordBatch> Rows(uint64_t start, uint64_t end, int fork, int rows_per_block = 3,
                                                int payload = 40) {
  arrow::UInt64Builder blocks;
  arrow::Int32Builder idx, forks;
  arrow::BinaryBuilder data;
  arrow::StringBuilder topic;
  for (uint64_t b = start; b <= end; ++b) {
    for (int i = 0; i < rows_per_block; ++i) {
      (void)blocks.Append(b);
      (void)idx.Append(i);
      (void)forks.Append(fork);
      (void)data.Append(std::string(payload + (b * 7 + i) % 23, static_cast<char>('a' + b % 26)));
      (void)topic.Append(fmt::format("t{}", b % 5));
    }
  }
  std::vector<std::shared_ptr<arrow::Array>> cols(5);
  (void)blocks.Finish(&cols[0]);
  (void)idx.Finish(&cols[1]);
  (void)forks.Finish(&cols[2]);
  (void)data.Finish(&cols[3]);
  (void)topic.Finish(&cols[4]);
  return arrow::RecordBatch::Make(TestSchema(), cols[0]->length(), cols);
}

inline std::shared_ptr<arrow::RecordBatchReader> Reader(std::vector<std::shared_ptr<arrow::RecordBatch>> batches,
                                                        std::shared_ptr<arrow::Schema> schema = TestSchema()) {
  return *arrow::RecordBatchReader::Make(std::move(batches), schema);
}

class TableServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = *Config::Load("", {});
    auto& w = config_.writer;
    w.bytes = 256 * 1024;
    w.compactor.skip_latest_segments = 0;
    w.compactor.max_eager_bytes = 32 * 1024;
    w.compactor.cooldown_duration = 100;
    w.compactor.gc_manifest_grace_period = 60;
    kv_ = kv::NewMemoryStore();
    auto local = blob::OpenBlobStore(dir_.Sub("objects"), S3Config{});
    ASSERT_TRUE(local.ok());
    faulty_ = std::make_shared<blob::FaultInjectingBlobStore>(*local);
    clock_ = std::make_shared<ManualClock>();
    Restart();
  }

  // A new service on the same KV and storage, as after a crash.
  void Restart(bool background = false) {
    if (service_) service_->Stop();
    service_.reset();
    metrics_ = std::make_unique<MetricsRegistry>();
    service_ = std::make_unique<TableService>(kv_, faulty_, clock_, metrics_.get(), config_.writer);
    ASSERT_TRUE(service_->Start(background).ok());
  }

  void Create() { ASSERT_TRUE(service_->CreateTable(id_, TestSchema()).ok()); }

  // Appends blocks [start, end] of `fork`, with parent hash from `parent_fork`
  // and every block's hash, as a chain indexer sends them.
  Result<AppendResult> Append(uint64_t start, uint64_t end, int fork, int parent_fork = -1, int rows = 3) {
    if (parent_fork < 0) parent_fork = fork;
    AppendRequest req{start, end, Hash(end, fork), Hash(start - 1, parent_fork)};
    for (uint64_t b = start; b <= end; ++b) req.block_hashes.push_back(Hash(b, fork));
    auto reader = Reader({Rows(start, end, fork, rows)});
    return service_->Append(id_, req, reader.get());
  }

  // (block, fork) of every row, in order.
  std::vector<std::pair<uint64_t, int>> ReadRows() {
    auto snap = service_->OpenSnapshot(id_);
    EXPECT_TRUE(snap.ok());
    return RowsOf(**snap);
  }

  std::vector<std::pair<uint64_t, int>> RowsOf(const ReadSnapshot& snap) {
    auto t = service_->ReadAll(snap);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    std::vector<std::pair<uint64_t, int>> out;
    if (!t.ok()) return out;
    auto combined = *(*t)->CombineChunksToBatch();
    auto blocks = std::static_pointer_cast<arrow::UInt64Array>(combined->column(0));
    auto forks = std::static_pointer_cast<arrow::Int32Array>(combined->column(2));
    for (int64_t i = 0; i < combined->num_rows(); ++i) out.emplace_back(blocks->Value(i), forks->Value(i));
    return out;
  }

  // The live set; checks on the way that the incremental state record (the
  // totals and ends appends and listings read) adds up to it.
  std::vector<SegmentRecord> Live() {
    auto snap = service_->LiveSegments(id_);
    EXPECT_TRUE(snap.ok()) << snap.status().ToString();
    if (!snap.ok()) return {};
    ExpectStateOf(snap->segments, snap->state);
    return snap->segments;
  }

  static void ExpectStateOf(const std::vector<SegmentRecord>& live, const TableState& state) {
    TableState want;
    for (const auto& s : live) {
      want.files++;
      want.rows += s.rows;
      want.bytes += s.bytes;
      want.stored_bytes += s.stored_bytes;
    }
    if (!live.empty()) {
      want.first = live.front().start;
      want.last = live.back().start;
      want.end = live.back().end;
    }
    want.token = state.token;
    EXPECT_EQ(state, want) << "the state record: files " << state.files << " rows " << state.rows << " first "
                           << state.first << " last " << state.last << " end " << state.end << "; the live set: files "
                           << want.files << " rows " << want.rows << " first " << want.first << " last " << want.last
                           << " end " << want.end;
  }

  // Paths of objects in storage under the table.
  std::set<std::string> Stored() {
    std::set<std::string> out;
    for (const auto& o : *faulty_->List(TableRegistry::ObjectPrefix(id_))) out.insert(o.path);
    return out;
  }

  std::set<std::string> LiveAndManifest() {
    std::set<std::string> out;
    for (const auto& s : Live()) out.insert(s.path);
    TableRegistry reg(kv_);
    for (const auto& e : *reg.ListGc(id_)) out.insert(e.path);
    return out;
  }

  double Metric(const std::string& name) {
    std::string text = metrics_->RenderPrometheus();
    std::string key = name + "{dataset=\"eth\",table=\"logs\"} ";
    auto pos = text.find(key);
    if (pos == std::string::npos) return 0;
    return std::stod(text.substr(pos + key.size()));
  }

  static void ExpectContiguous(const std::vector<SegmentRecord>& live) {
    for (size_t i = 1; i < live.size(); ++i) {
      EXPECT_EQ(live[i].start, live[i - 1].end + 1) << "no block missing or doubled between segments";
      EXPECT_EQ(live[i].parent_hash, live[i - 1].end_hash);
    }
  }

  testing::TempDir dir_;
  Config config_;
  std::shared_ptr<kv::KvStore> kv_;
  std::shared_ptr<blob::FaultInjectingBlobStore> faulty_;
  std::shared_ptr<ManualClock> clock_;
  std::unique_ptr<MetricsRegistry> metrics_;
  std::unique_ptr<TableService> service_;
  TableId id_{"eth", "logs"};
};

}  // namespace sediment::table
