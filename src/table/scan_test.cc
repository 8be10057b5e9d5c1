#include "table/scan.h"

#include <arrow/api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/test_util.h"
#include "table/table_service.h"

namespace sediment::table {
namespace {

std::shared_ptr<arrow::Schema> Schema() {
  return arrow::schema({arrow::field("block_num", arrow::uint64(), false), arrow::field("value", arrow::int64()),
                        arrow::field("addr", arrow::fixed_size_binary(2)), arrow::field("name", arrow::utf8())});
}

std::shared_ptr<arrow::RecordBatch> Rows(uint64_t start, uint64_t end) {
  arrow::UInt64Builder b;
  arrow::Int64Builder v;
  arrow::FixedSizeBinaryBuilder a(arrow::fixed_size_binary(2));
  arrow::StringBuilder n;
  for (uint64_t i = start; i <= end; ++i) {
    for (int r = 0; r < 2; ++r) {
      (void)b.Append(i);
      (void)v.Append(static_cast<int64_t>(i * 10 + r));
      uint8_t bytes[2] = {static_cast<uint8_t>(i % 4), static_cast<uint8_t>(r)};
      (void)a.Append(bytes);
      (void)n.Append(fmt::format("n{}", i % 3));
    }
  }
  std::vector<std::shared_ptr<arrow::Array>> cols(4);
  (void)b.Finish(&cols[0]);
  (void)v.Finish(&cols[1]);
  (void)a.Finish(&cols[2]);
  (void)n.Finish(&cols[3]);
  return arrow::RecordBatch::Make(Schema(), cols[0]->length(), cols);
}

class ScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = *Config::Load("", {});
    config_.writer.compactor.skip_latest_segments = 0;
    config_.writer.compactor.gc_manifest_grace_period = 10;
    blobs_ = *blob::OpenBlobStore(dir_.Sub("objects"), S3Config{});
    clock_ = std::make_shared<ManualClock>();
    service_ = std::make_unique<TableService>(kv::NewMemoryStore(), blobs_, clock_, &metrics_, config_.writer);
    ASSERT_TRUE(service_->Start(false).ok());
    ASSERT_TRUE(service_->CreateTable(id_, Schema()).ok());
    for (uint64_t s = 0; s < 100; s += 10) {  // ten files of ten blocks
      auto reader = *arrow::RecordBatchReader::Make({Rows(s, s + 9)}, Schema());
      AppendRequest req{s, s + 9, fmt::format("{:064x}", s + 9), fmt::format("{:064x}", s - 1)};
      ASSERT_TRUE(service_->Append(id_, req, reader.get()).ok());
    }
  }

  Result<std::shared_ptr<arrow::Table>> Run(const ScanRequest& req, ScanStats* stats = nullptr) {
    ARROW_ASSIGN_OR_RAISE(auto scan, Scan::Open(service_.get(), id_, req));
    std::vector<std::shared_ptr<arrow::RecordBatch>> out;
    while (true) {
      ARROW_ASSIGN_OR_RAISE(auto b, scan->Next());
      if (!b) break;
      out.push_back(b);
    }
    if (stats) *stats = scan->stats();
    return arrow::Table::FromRecordBatches(scan->schema(), out);
  }

  testing::TempDir dir_;
  Config config_;
  MetricsRegistry metrics_;
  std::shared_ptr<blob::BlobStore> blobs_;
  std::shared_ptr<ManualClock> clock_;
  std::unique_ptr<TableService> service_;
  TableId id_{"eth", "logs"};
};

TEST_F(ScanTest, RangeSkipsFilesAndSlicesRows) {
  ScanRequest req;
  req.from_block = 25;
  req.to_block = 34;
  ScanStats stats;
  auto t = Run(req, &stats);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->num_rows(), 20);
  auto blocks = std::static_pointer_cast<arrow::UInt64Array>((*t)->column(0)->chunk(0));
  EXPECT_EQ(blocks->Value(0), 25u);
  EXPECT_EQ(stats.files_skipped, 8) << "only the two files holding blocks 25..34 are opened";
}

TEST_F(ScanTest, ColumnsInTheOrderAskedAndLimit) {
  ScanRequest req;
  req.columns = {"name", "value"};
  req.limit = 7;
  auto t = Run(req);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->schema()->field_names(), (std::vector<std::string>{"name", "value"}));
  EXPECT_EQ((*t)->num_rows(), 7);
  auto combined = *(*t)->CombineChunksToBatch();
  EXPECT_EQ(std::static_pointer_cast<arrow::Int64Array>(combined->column(1))->Value(6), 30);
}

TEST_F(ScanTest, Filters) {
  struct Case {
    std::string filter;
    int64_t rows;
  };
  std::vector<Case> cases = {{"value >= 950", 10},  {"value = 10", 1},   {"value != 10", 199},
                             {"addr = 0x0301", 25}, {"name = 'n1'", 66}, {"block_num < 5", 10}};
  for (const auto& c : cases) {
    ScanRequest req;
    req.filter = *ParseFilter(c.filter);
    auto t = Run(req);
    ASSERT_TRUE(t.ok()) << c.filter << ": " << t.status().ToString();
    EXPECT_EQ((*t)->num_rows(), c.rows) << c.filter;
  }
}

TEST_F(ScanTest, BadRequestsAreClear) {
  struct Case {
    std::function<Status()> run;
    std::string expect;
  };
  auto open = [&](ScanRequest r) { return Scan::Open(service_.get(), id_, r).status(); };
  std::vector<Case> cases = {
      {[&] {
         ScanRequest r;
         r.from_block = 10;
         r.to_block = 5;
         return open(r);
       },
       "from_block 10 is after to_block 5"},
      {[&] {
         ScanRequest r;
         r.columns = {"nope"};
         return open(r);
       },
       "has no column \"nope\""},
      {[&] {
         ScanRequest r;  // found by the tables API fuzzer: this crashed the server
         r.columns = {"value", "name", "value"};
         return open(r);
       },
       "names \"value\" twice"},
      {[&] { return ParseFilter("value ~ 3").status(); }, "is not of the form"},
      {[&] { return ParseFilter("= 3").status(); }, "is not of the form"},
      {[&] {
         ScanRequest r;
         r.filter = Filter{"nope", "=", "1"};
         return open(r);
       },
       "filter: table eth.logs has no column \"nope\""},
      {[&] {
         ScanRequest r;
         r.filter = Filter{"value", "=", "abc"};
         return open(r);
       },
       "not a valid value"},
      {[&] {
         ScanRequest r;
         r.filter = Filter{"addr", "=", "0x01"};
         return open(r);
       },
       "needs exactly 2 bytes"},
      {[&] {
         return Scan::Open(service_.get(), {"eth", "none"}, ScanRequest{}).status();
       },
       "table eth.none not found"},
  };
  for (const auto& c : cases) {
    Status st = c.run();
    EXPECT_FALSE(st.ok()) << c.expect;
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << st.ToString();
  }
}

TEST_F(ScanTest, ScanConcurrentWithCompactionAndGcReturnsItsSnapshot) {
  auto before = Run(ScanRequest{});
  ASSERT_TRUE(before.ok());
  auto scan = Scan::Open(service_.get(), id_, ScanRequest{});
  ASSERT_TRUE(scan.ok());
  std::vector<std::shared_ptr<arrow::RecordBatch>> got;
  got.push_back(*(*scan)->Next());
  // Compaction swaps every file; GC runs past the grace period.
  auto pass = service_->CompactNow(id_);
  ASSERT_TRUE(pass.ok());
  ASSERT_EQ(service_->LiveSegments(id_)->segments.size(), 1u);
  clock_->AdvanceSeconds(100);
  auto gc = service_->RunGc(id_);
  EXPECT_EQ(gc->deleted, 0) << "the open scan holds its files";
  while (true) {
    auto b = (*scan)->Next();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    if (!*b) break;
    got.push_back(*b);
  }
  auto after = *arrow::Table::FromRecordBatches((*scan)->schema(), got);
  EXPECT_TRUE(after->Equals(**before));
  scan->reset();
  EXPECT_EQ(service_->RunGc(id_)->deleted, 10);
  auto again = Run(ScanRequest{});
  EXPECT_TRUE((*again)->Equals(**before));
}

}  // namespace
}  // namespace sediment::table
