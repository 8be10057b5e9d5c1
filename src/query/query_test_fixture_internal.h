// The query tests' fixture: a table service on an in-memory KV store and a
// local blob store, with an `eth.logs` table of blocks 0..39 in four segments
// (two rows per block; a fork's rows and hashes differ from fork 0's).
#pragma once

#include <arrow/api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/test_util.h"
#include "query/engine.h"
#include "table/table_service.h"

namespace sediment::query {

inline std::shared_ptr<arrow::Schema> LogSchema() {
  return arrow::schema({arrow::field("block_num", arrow::uint64(), false), arrow::field("value", arrow::int64()),
                        arrow::field("addr", arrow::fixed_size_binary(2))});
}

// Block `block`'s hash on `fork`.
inline std::string ForkHash(uint64_t block, int fork) { return fmt::format("{:062x}{:02x}", block, fork); }

// Rows of blocks [start, end]: value = block * 10 + row + fork * 1000.
inline std::shared_ptr<arrow::RecordBatch> Rows(uint64_t start, uint64_t end, int fork = 0) {
  arrow::UInt64Builder b;
  arrow::Int64Builder v;
  arrow::FixedSizeBinaryBuilder a(arrow::fixed_size_binary(2));
  for (uint64_t i = start; i <= end; ++i) {
    for (int r = 0; r < 2; ++r) {
      (void)b.Append(i);
      (void)v.Append(static_cast<int64_t>(i * 10 + r + fork * 1000));
      uint8_t bytes[2] = {static_cast<uint8_t>(i % 4), static_cast<uint8_t>(r)};
      (void)a.Append(bytes);
    }
  }
  std::vector<std::shared_ptr<arrow::Array>> cols(3);
  (void)b.Finish(&cols[0]);
  (void)v.Finish(&cols[1]);
  (void)a.Finish(&cols[2]);
  return arrow::RecordBatch::Make(LogSchema(), cols[0]->length(), cols);
}

class QueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = *Config::Load("", {});
    config_.writer.compactor.skip_latest_segments = 0;
    config_.writer.bloom_filter_columns = {"addr"};  // as the chain tables' addresses and topics
    blobs_ = *blob::OpenBlobStore(dir_.Sub("objects"), S3Config{});
    service_ = std::make_unique<table::TableService>(kv::NewMemoryStore(), blobs_, std::make_shared<ManualClock>(),
                                                     &metrics_, config_.writer);
    ASSERT_TRUE(service_->Start(false).ok());
    ASSERT_TRUE(service_->CreateTable(logs_, LogSchema()).ok());
    for (uint64_t s = 0; s < 40; s += 10) Append(s, s + 9);
    engine_ = std::make_unique<QueryEngine>(service_.get(), limits_, &metrics_);
  }

  // Blocks [s, e] of `fork`, whose parent is block s - 1 of `parent_fork` (a reorg when it is not `fork`).
  void Append(uint64_t s, uint64_t e, int fork = 0, int parent_fork = -1, const table::TableId* id = nullptr) {
    if (parent_fork < 0) parent_fork = fork;
    auto reader = *arrow::RecordBatchReader::Make({Rows(s, e, fork)}, LogSchema());
    table::AppendRequest req{s, e, ForkHash(e, fork), ForkHash(s - 1, parent_fork)};
    for (uint64_t b = s; b <= e; ++b) req.block_hashes.push_back(ForkHash(b, fork));
    auto r = service_->Append(id ? *id : logs_, req, reader.get());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  testing::TempDir dir_;
  Config config_;
  MetricsRegistry metrics_;
  std::shared_ptr<blob::BlobStore> blobs_;
  std::unique_ptr<table::TableService> service_;
  QueryLimits limits_;
  std::unique_ptr<QueryEngine> engine_;
  table::TableId logs_{"eth", "logs"};
};

}  // namespace sediment::query
