#include "chain/ingest_job.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <gtest/gtest.h>

#include <sstream>

#include "base/test_util.h"
#include "blob/blob.h"

namespace sediment::chain {
namespace {

class IngestJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = *Config::Load("", {});
    config_.writer.bytes = 400'000;
    config_.writer.compactor.skip_latest_segments = 2;
    config_.writer.compactor.max_eager_bytes = 60'000;
    config_.writer.compactor.cooldown_duration = 30;
    config_.writer.compactor.gc_manifest_grace_period = 10;
    job_.dataset = "eth";
    job_.seed = 3;
    job_.history_blocks = 40;
    job_.block_time = 1;
    job_.txs_per_block = 12;
    job_.logs_per_tx = 1.5;
    job_.reorg_probability = 0.25;
    job_.max_reorg_depth = 4;
    kv_ = kv::NewMemoryStore();
    blobs_ = *blob::OpenBlobStore(dir_.Sub("objects"), S3Config{});
    clock_ = std::make_shared<ManualClock>();
    Restart();
  }

  void Restart() {
    job.reset();
    if (tables_) tables_->Stop();
    tables_.reset();
    metrics_ = std::make_unique<MetricsRegistry>();
    tables_ = std::make_unique<table::TableService>(kv_, blobs_, clock_, metrics_.get(), config_.writer);
    ASSERT_TRUE(tables_->Start(false).ok());
    job = std::make_unique<IngestJob>(job_, config_.worker, tables_.get(), kv_, clock_, metrics_.get());
  }

  // Every row of a table, as IPC bytes of the combined rows (for exact comparison).
  std::shared_ptr<arrow::Table> ReadTable(ChainTable t) {
    auto snap = tables_->OpenSnapshot({"eth", TableName(t)});
    EXPECT_TRUE(snap.ok());
    auto rows = tables_->ReadAll(**snap);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return *rows;
  }

  // The sum of a counter over all its label sets, from the exposition text.
  double MetricSum(const std::string& name) {
    std::istringstream text(metrics_->RenderPrometheus());
    double sum = 0;
    for (std::string line; std::getline(text, line);) {
      if (line.rfind(name + "{", 0) == 0) sum += std::stod(line.substr(line.rfind(' ') + 1));
    }
    return sum;
  }

  void ExpectCanonical(uint64_t head) {
    ChainGenerator gen = job->generator();
    for (ChainTable t : kAllTables) {
      auto got = ReadTable(t);
      auto want = gen.Generate(t, 0, head, head);
      ASSERT_TRUE(want.ok());
      auto want_table = *arrow::Table::FromRecordBatches({*want});
      ASSERT_EQ(got->num_rows(), want_table->num_rows()) << TableName(t);
      EXPECT_TRUE(got->Equals(*want_table)) << TableName(t) << ": the live chain equals the generator's, row by row";
    }
  }

  testing::TempDir dir_;
  Config config_;
  JobConfig job_;
  std::shared_ptr<kv::KvStore> kv_;
  std::shared_ptr<blob::BlobStore> blobs_;
  std::shared_ptr<ManualClock> clock_;
  std::unique_ptr<MetricsRegistry> metrics_;
  std::unique_ptr<table::TableService> tables_;
  std::unique_ptr<IngestJob> job;
};

TEST_F(IngestJobTest, HeadFollowsTheClock) {
  EXPECT_EQ(**job->HeadAt(clock_->Now()), 39u) << "history_blocks exist at once";
  clock_->AdvanceSeconds(2.5);
  EXPECT_EQ(**job->HeadAt(clock_->Now()), 41u);
  Restart();  // the anchor is in the KV store: same chain after a restart
  EXPECT_EQ(**job->HeadAt(clock_->Now()), 41u);
}

TEST_F(IngestJobTest, CatchUpFillsSegmentsToTheTarget) {
  job_.history_blocks = 400;
  job_.reorg_probability = 0;
  Restart();
  ASSERT_TRUE(job->PollOnce().ok());
  auto live = tables_->LiveSegments({"eth", "logs"})->segments;
  ASSERT_GE(live.size(), 3u);
  // After the first (size-learning) segment, catch-up segments are near the target.
  for (size_t i = 1; i + 1 < live.size(); ++i) {
    EXPECT_GT(live[i].bytes, config_.writer.bytes / 2) << i;
    EXPECT_LT(live[i].bytes, config_.writer.bytes * 3 / 2) << i;
  }
  EXPECT_EQ(live.back().end, 399u);
  ExpectCanonical(399);
}

TEST_F(IngestJobTest, ReorgsEndToEndMatchTheCanonicalChain) {
  int compactions = 0;
  for (int step = 0; step < 120; ++step) {
    clock_->AdvanceSeconds(1 + step % 3);
    ASSERT_TRUE(job->PollOnce().ok()) << job->Describe().last_error;
    if (step % 7 == 0) {
      auto pass = tables_->CompactNow({"eth", "logs"});
      ASSERT_TRUE(pass.ok());
      for (const auto& m : pass->merges) compactions += m.output ? 1 : 0;
      ASSERT_TRUE(tables_->CompactNow({"eth", "transactions"}).ok());
      ASSERT_TRUE(tables_->RunGc({"eth", "logs"}).ok());
    }
  }
  uint64_t head = **job->HeadAt(clock_->Now());
  EXPECT_GT(job->Describe().reorgs, 10);
  EXPECT_GT(compactions, 3);
  ExpectCanonical(head);
  // The tables replaced blocks, and at least once inside a file (rewritten
  // without the replaced blocks), not only whole head segments.
  EXPECT_GT(MetricSum("table_reorgs_total"), 10);
  EXPECT_GT(MetricSum("table_reorg_rewrites_total"), 0);
}

TEST_F(IngestJobTest, ResumesAfterRestartWithoutDuplicates) {
  for (int i = 0; i < 10; ++i) {
    clock_->AdvanceSeconds(1);
    ASSERT_TRUE(job->PollOnce().ok());
  }
  Restart();  // a new process: no cached hashes
  for (int i = 0; i < 10; ++i) {
    clock_->AdvanceSeconds(1);
    ASSERT_TRUE(job->PollOnce().ok()) << job->Describe().last_error;
  }
  ExpectCanonical(**job->HeadAt(clock_->Now()));
}

TEST_F(IngestJobTest, AtTheHeadOneSegmentPerTablePerPoll) {
  job_.reorg_probability = 0;
  Restart();
  ASSERT_TRUE(job->PollOnce().ok());
  size_t before = tables_->LiveSegments({"eth", "blocks"})->segments.size();
  clock_->AdvanceSeconds(3);  // three new blocks
  ASSERT_TRUE(job->PollOnce().ok());
  auto live = tables_->LiveSegments({"eth", "blocks"})->segments;
  ASSERT_EQ(live.size(), before + 1);
  EXPECT_EQ(live.back().end - live.back().start + 1, 3u);
  ASSERT_TRUE(job->PollOnce().ok());  // nothing new: nothing written
  EXPECT_EQ(tables_->LiveSegments({"eth", "blocks"})->segments.size(), before + 1);
}

}  // namespace
}  // namespace sediment::chain
