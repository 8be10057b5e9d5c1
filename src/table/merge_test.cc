// MergeSegments on inputs with mixed row groups: full ones written as the
// output wants are copied byte for byte, the rest (small, another codec, no
// page index) decoded and encoded again. The output must hold every row in
// order, with statistics, page index and bloom filters that describe it.
#include "table/merge.h"

#include <arrow/api.h>
#include <arrow/io/api.h>
#include <arrow/util/key_value_metadata.h>
#include <gtest/gtest.h>
#include <parquet/arrow/schema.h>
#include <parquet/arrow/writer.h>
#include <parquet/bloom_filter.h>
#include <parquet/bloom_filter_reader.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/page_index.h>
#include <parquet/properties.h>
#include <parquet/statistics.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "base/test_util.h"
#include "table/page_format.h"
#include "table/plain_pages.h"
#include "table/segment.h"
#include "table/stored_types.h"
#include "table/table_test_fixture_internal.h"

namespace sediment::table {
namespace {

// Counts how many OpenReader calls run at once (each takes a while).
class ConcurrencyCountingStore final : public blob::BlobStore {
 public:
  explicit ConcurrencyCountingStore(std::shared_ptr<blob::BlobStore> inner) : inner_(std::move(inner)) {}
  Result<std::shared_ptr<arrow::io::OutputStream>> OpenWriter(const std::string& path) override {
    return inner_->OpenWriter(path);
  }
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenReader(const std::string& path) override {
    int now = ++open_;
    int seen = max_.load();
    while (now > seen && !max_.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    --open_;
    return inner_->OpenReader(path);
  }
  Result<blob::ObjectInfo> Stat(const std::string& path) override { return inner_->Stat(path); }
  Result<std::vector<blob::ObjectInfo>> List(const std::string& prefix) override { return inner_->List(prefix); }
  Status Delete(const std::string& path) override { return inner_->Delete(path); }
  std::string Describe() const override { return inner_->Describe(); }
  int max() const { return max_.load(); }

 private:
  std::shared_ptr<blob::BlobStore> inner_;
  std::atomic<int> open_{0}, max_{0};
};

// Object storage as a merge sees it: every open counted, reads are requests.
class RemoteCountingStore final : public blob::BlobStore {
 public:
  explicit RemoteCountingStore(std::shared_ptr<blob::BlobStore> inner) : inner_(std::move(inner)) {}
  Result<std::shared_ptr<arrow::io::OutputStream>> OpenWriter(const std::string& path) override {
    return inner_->OpenWriter(path);
  }
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenReader(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    opens_[path]++;
    return inner_->OpenReader(path);
  }
  Result<blob::ObjectInfo> Stat(const std::string& path) override { return inner_->Stat(path); }
  Result<std::vector<blob::ObjectInfo>> List(const std::string& prefix) override { return inner_->List(prefix); }
  Status Delete(const std::string& path) override { return inner_->Delete(path); }
  std::string Describe() const override { return inner_->Describe(); }
  bool Remote() const override { return true; }
  int opens(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    return opens_[path];
  }

 private:
  std::shared_ptr<blob::BlobStore> inner_;
  std::mutex mu_;
  std::map<std::string, int> opens_;
};

// A file whose reads at an offset come back half as long as asked, as a
// file cut short under a reader would.
class ShortReads final : public arrow::io::RandomAccessFile {
 public:
  explicit ShortReads(std::shared_ptr<arrow::io::RandomAccessFile> inner) : inner_(std::move(inner)) {}
  Status Close() override { return inner_->Close(); }
  bool closed() const override { return inner_->closed(); }
  Result<int64_t> Tell() const override { return inner_->Tell(); }
  Status Seek(int64_t position) override { return inner_->Seek(position); }
  Result<int64_t> GetSize() override { return inner_->GetSize(); }
  Result<int64_t> Read(int64_t nbytes, void* out) override { return inner_->Read(nbytes, out); }
  Result<std::shared_ptr<arrow::Buffer>> Read(int64_t nbytes) override { return inner_->Read(nbytes); }
  Result<int64_t> ReadAt(int64_t position, int64_t nbytes, void* out) override {
    return inner_->ReadAt(position, nbytes / 2, out);
  }
  Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t position, int64_t nbytes) override {
    return inner_->ReadAt(position, nbytes / 2);
  }

 private:
  std::shared_ptr<arrow::io::RandomAccessFile> inner_;
};

// A local store whose second open of `path` (a merge's step, after its
// footer's read) reads short.
class ShortReadStore final : public blob::BlobStore {
 public:
  ShortReadStore(std::shared_ptr<blob::BlobStore> inner, std::string path)
      : inner_(std::move(inner)), path_(std::move(path)) {}
  Result<std::shared_ptr<arrow::io::OutputStream>> OpenWriter(const std::string& path) override {
    return inner_->OpenWriter(path);
  }
  Result<std::shared_ptr<arrow::io::OutputStream>> OpenLargeWriter(const std::string& path) override {
    return inner_->OpenLargeWriter(path);
  }
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenReader(const std::string& path) override {
    return inner_->OpenReader(path);
  }
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenReaderSized(const std::string& path, int64_t size) override {
    ARROW_ASSIGN_OR_RAISE(auto file, inner_->OpenReaderSized(path, size));
    if (path == path_ && ++opens_ >= 2) return std::make_shared<ShortReads>(std::move(file));
    return file;
  }
  Result<blob::ObjectInfo> Stat(const std::string& path) override { return inner_->Stat(path); }
  Result<std::vector<blob::ObjectInfo>> List(const std::string& prefix) override { return inner_->List(prefix); }
  Status Delete(const std::string& path) override { return inner_->Delete(path); }
  std::string Describe() const override { return inner_->Describe(); }

 private:
  std::shared_ptr<blob::BlobStore> inner_;
  const std::string path_;
  std::atomic<int> opens_{0};
};

// Holds every step task's read of its input (a file's second open: the first
// reads its footer) until the test says the merge has returned, or for
// kHold, and fails one open of one file once a step's task is held: the merge
// then fails with tasks in flight. A merge that waits for its tasks returns
// after kHold; one that did not would return while they are held (seen by
// in_flight() at its return, and by the tasks themselves once released).
class GatedStore final : public blob::BlobStore {
 public:
  static constexpr std::chrono::milliseconds kHold{200};

  // Fails open number `failing_open` (1: the footer's, 2: a step's) of `failing`.
  GatedStore(std::shared_ptr<blob::BlobStore> inner, std::string failing, int failing_open)
      : inner_(std::move(inner)), failing_(std::move(failing)), failing_open_(failing_open) {}
  Result<std::shared_ptr<arrow::io::OutputStream>> OpenWriter(const std::string& path) override {
    return inner_->OpenWriter(path);
  }
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenReader(const std::string& path) override {
    return inner_->OpenReader(path);
  }
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenReaderSized(const std::string& path, int64_t size) override {
    std::unique_lock lock(mu_);
    const int n = ++opens_[path];
    if (path == failing_ && n == failing_open_) {
      // Not before a step's task is held: the failure comes with one in flight.
      EXPECT_TRUE(cv_.wait_for(lock, std::chrono::seconds(30), [&] { return held_ > 0; }));
      held_at_failure_ = held_;
      return Status::IOError("injected failure");
    }
    if (n >= 2) {
      ++held_;
      cv_.notify_all();
      cv_.wait_for(lock, kHold, [&] { return returned_; });
      if (returned_) ++ran_after_return_;
      --held_;
    }
    lock.unlock();
    return inner_->OpenReaderSized(path, size);
  }
  Result<blob::ObjectInfo> Stat(const std::string& path) override { return inner_->Stat(path); }
  Result<std::vector<blob::ObjectInfo>> List(const std::string& prefix) override { return inner_->List(prefix); }
  Status Delete(const std::string& path) override { return inner_->Delete(path); }
  std::string Describe() const override { return inner_->Describe(); }

  // The test calls it once MergeSegments has returned: held tasks go on.
  void MergeReturned() {
    std::lock_guard lock(mu_);
    returned_ = true;
    cv_.notify_all();
  }
  int in_flight() {
    std::lock_guard lock(mu_);
    return held_;
  }
  int held_at_failure() {
    std::lock_guard lock(mu_);
    return held_at_failure_;
  }
  int ran_after_return() {
    std::lock_guard lock(mu_);
    return ran_after_return_;
  }

 private:
  std::shared_ptr<blob::BlobStore> inner_;
  const std::string failing_;
  const int failing_open_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int> opens_;
  int held_ = 0, held_at_failure_ = 0, ran_after_return_ = 0;
  bool returned_ = false;
};

class MergeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    blobs_ = *blob::OpenBlobStore(dir_.path(), {});
    settings_.compression = {"zstd", 1};
    settings_.max_row_group_rows = 600;
    settings_.bloom_filter_columns = {"topic"};
    table_.id = *ParseTableId("eth.logs");
    table_.schema = TestSchema();
  }

  // A segment of blocks [start, end] written through SegmentFileWriter with `settings`.
  SegmentRecord Write(uint64_t start, uint64_t end, const WriterSettings& settings,
                      FileLayout layout = FileLayout::kFinal) {
    SegmentRecord s = Record(start, end);
    auto w =
        *SegmentFileWriter::Open(blobs_.get(), s.path, TestSchema(), settings, layout, EncodeSegmentFileMetadata(s));
    EXPECT_TRUE(w->Write(Rows(start, end, 0, 3)).ok());
    auto facts = w->Finish();
    EXPECT_TRUE(facts.ok()) << facts.status().ToString();
    s.rows = facts->rows;
    s.bytes = facts->bytes;
    s.stored_bytes = facts->stored_bytes;
    return s;
  }

  // A segment written by plain Arrow (no page index, no bloom filters, its own row groups).
  SegmentRecord WritePlain(uint64_t start, uint64_t end, int64_t row_group_rows) {
    SegmentRecord s = Record(start, end);
    auto sink = *blobs_->OpenWriter(s.path);
    auto table = *arrow::Table::FromRecordBatches({Rows(start, end, 0, 3)});
    auto props = parquet::WriterProperties::Builder().compression(arrow::Compression::ZSTD)->build();
    EXPECT_TRUE(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink, row_group_rows, props).ok());
    EXPECT_TRUE(sink->Close().ok());
    s.rows = table->num_rows();
    s.bytes = 1;
    s.stored_bytes = (*blobs_->Stat(s.path)).size;
    return s;
  }

  SegmentRecord Record(uint64_t start, uint64_t end) {
    SegmentRecord s;
    s.id = NewSegmentId(start);
    s.path = TableRegistry::SegmentPath(table_.id, s.id);
    s.start = start;
    s.end = end;
    s.end_hash = Hash(end, 0);
    s.parent_hash = start == 0 ? "" : Hash(start - 1, 0);
    return s;
  }

  std::shared_ptr<arrow::Table> ReadAll(const std::string& path) {
    auto r = *SegmentFileReader::Open(blobs_.get(), path);
    std::vector<std::shared_ptr<arrow::Table>> parts;
    for (int i = 0; i < r->num_row_groups(); ++i) parts.push_back(*r->ReadRowGroup(i));
    auto t = *arrow::ConcatenateTables(parts);
    return *arrow::Table::Make(TestSchema(), t->columns(), t->num_rows())->CombineChunks();
  }

  std::string Bytes(const std::string& path) {
    auto f = *blobs_->OpenReader(path);
    auto b = *f->Read(*f->GetSize());
    return b->ToString();
  }

  Result<SegmentRecord> Merge(const std::vector<SegmentRecord>& inputs, int workers, int footer_threads = 2,
                              blob::BlobStore* store = nullptr, FileLayout layout = FileLayout::kFinal,
                              MergeStats* stats = nullptr) {
    ThreadPool footers("t-footers", footer_threads, 1 << 20), work("t-work", workers, 1 << 20);
    MergeContext ctx{store ? store : blobs_.get(), &footers, &work, workers, &settings_, &stopping_, 7};
    return MergeSegments(ctx, table_, inputs, SystemClock().Now(), layout, stats);
  }

  testing::TempDir dir_;
  std::shared_ptr<blob::BlobStore> blobs_;
  WriterSettings settings_;
  TableInfo table_;
  std::atomic<bool> stopping_{false};
};

TEST_F(MergeTest, CopiesFullRowGroupsAndReencodesTheRest) {
  WriterSettings small = settings_;
  small.max_row_group_rows = 90;
  WriterSettings snappy = settings_;
  snappy.compression = {"snappy", std::nullopt};
  std::vector<SegmentRecord> inputs = {
      Write(0, 399, settings_),    // 1200 rows: two full row groups of 600, copied
      Write(400, 499, small),      // 300 rows in groups of 90: re-encoded together
      WritePlain(500, 599, 100),   // no page index or bloom filter: re-encoded
      Write(600, 799, snappy),     // full groups, another codec: re-encoded
      Write(800, 999, settings_),  // 600 rows: one full row group, copied
  };
  MergeStats stats;
  ThreadPool footers("t-footers", 2, 1 << 20), work("t-work", 2, 1 << 20);
  MergeContext ctx{blobs_.get(), &footers, &work, 2, &settings_, &stopping_, 7};
  auto merged = MergeSegments(ctx, table_, inputs, SystemClock().Now(), FileLayout::kFinal, &stats);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(merged->rows, 3000);
  EXPECT_EQ(stats.row_groups_copied, 3);
  EXPECT_EQ(stats.row_groups_reencoded, 2);

  // Every row, in order.
  std::vector<std::shared_ptr<arrow::Table>> expected;
  for (const auto& s : inputs) expected.push_back(ReadAll(s.path));
  auto want = *(*arrow::ConcatenateTables(expected))->CombineChunks();
  auto got = ReadAll(merged->path);
  ASSERT_TRUE(got->Equals(*want)) << "merged rows differ from the inputs";

  auto file = *blobs_->OpenReader(merged->path);
  auto reader = parquet::ParquetFileReader::Open(file);
  auto md = reader->metadata();
  auto in0 = parquet::ParquetFileReader::Open(*blobs_->OpenReader(inputs[0].path));
  // Copied: the first two row groups are input 0's, byte for byte.
  std::string out_bytes = Bytes(merged->path), in_bytes = Bytes(inputs[0].path);
  for (int rg = 0; rg < 2; ++rg) {
    for (int c = 0; c < md->num_columns(); ++c) {
      auto a = md->RowGroup(rg)->ColumnChunk(c);
      auto b = in0->metadata()->RowGroup(rg)->ColumnChunk(c);
      int64_t a0 = a->has_dictionary_page() ? a->dictionary_page_offset() : a->data_page_offset();
      int64_t b0 = b->has_dictionary_page() ? b->dictionary_page_offset() : b->data_page_offset();
      ASSERT_EQ(a->total_compressed_size(), b->total_compressed_size());
      EXPECT_EQ(out_bytes.substr(a0, a->total_compressed_size()), in_bytes.substr(b0, b->total_compressed_size()))
          << "row group " << rg << " column " << c << " was not copied as it was";
    }
  }
  // Re-encoded rows are packed into full row groups: 300 + 300 small rows
  // make one of 600, the snappy file's 600 another.
  ASSERT_EQ(md->num_row_groups(), 5);
  for (int rg = 0; rg < md->num_row_groups(); ++rg) EXPECT_EQ(md->RowGroup(rg)->num_rows(), 600) << rg;

  // Statistics, page index and bloom filters describe each row group's rows.
  auto pages = reader->GetPageIndexReader();
  ASSERT_NE(pages, nullptr);
  auto& blooms = reader->GetBloomFilterReader();
  int64_t row = 0;
  for (int rg = 0; rg < md->num_row_groups(); ++rg) {
    auto g = md->RowGroup(rg);
    auto slice = got->Slice(row, g->num_rows());
    auto blocks = std::static_pointer_cast<arrow::UInt64Array>(slice->column(0)->chunk(0));
    auto stats = std::static_pointer_cast<parquet::Int64Statistics>(g->ColumnChunk(0)->statistics());
    ASSERT_TRUE(stats && stats->HasMinMax());
    EXPECT_EQ(static_cast<uint64_t>(stats->min()), blocks->Value(0)) << rg;
    EXPECT_EQ(static_cast<uint64_t>(stats->max()), blocks->Value(blocks->length() - 1)) << rg;
    auto rg_pages = pages->RowGroup(rg);
    ASSERT_NE(rg_pages, nullptr) << rg;
    for (int c = 0; c < md->num_columns(); ++c) {
      auto cc = g->ColumnChunk(c);
      auto oi = rg_pages->GetOffsetIndex(c);
      auto ci = rg_pages->GetColumnIndex(c);
      ASSERT_TRUE(oi && ci) << "row group " << rg << " column " << c;
      const auto& locs = oi->page_locations();
      ASSERT_FALSE(locs.empty());
      EXPECT_EQ(locs.front().offset, cc->data_page_offset()) << rg << "/" << c;
      EXPECT_EQ(locs.front().first_row_index, 0);
      const int64_t end = (cc->has_dictionary_page() ? cc->dictionary_page_offset() : cc->data_page_offset()) +
                          cc->total_compressed_size();
      EXPECT_EQ(locs.back().offset + locs.back().compressed_page_size, end) << rg << "/" << c;
      EXPECT_EQ(ci->null_pages().size(), locs.size());
    }
    // block_num's column index brackets each page's rows.
    auto block_index = std::static_pointer_cast<parquet::Int64ColumnIndex>(rg_pages->GetColumnIndex(0));
    auto block_offsets = rg_pages->GetOffsetIndex(0);
    const auto& locs = block_offsets->page_locations();
    for (size_t p = 0; p < locs.size(); ++p) {
      int64_t first = locs[p].first_row_index;
      int64_t last = p + 1 < locs.size() ? locs[p + 1].first_row_index - 1 : g->num_rows() - 1;
      EXPECT_EQ(static_cast<uint64_t>(block_index->min_values()[p]), blocks->Value(first));
      EXPECT_EQ(static_cast<uint64_t>(block_index->max_values()[p]), blocks->Value(last));
    }
    // Every topic of the row group is in its bloom filter; a topic it lacks is not.
    auto topic_col = g->schema()->ColumnIndex("topic");
    auto bloom = blooms.RowGroup(rg)->GetColumnBloomFilter(topic_col);
    ASSERT_NE(bloom, nullptr) << rg;
    auto topics = std::static_pointer_cast<arrow::StringArray>(slice->column(4)->chunk(0));
    for (int64_t i = 0; i < topics->length(); ++i) {
      auto v = topics->GetView(i);
      parquet::ByteArray ba(static_cast<uint32_t>(v.size()), reinterpret_cast<const uint8_t*>(v.data()));
      ASSERT_TRUE(bloom->FindHash(bloom->Hash(&ba))) << v;
    }
    std::string absent = "no such topic";
    parquet::ByteArray ba(static_cast<uint32_t>(absent.size()), reinterpret_cast<const uint8_t*>(absent.data()));
    EXPECT_FALSE(bloom->FindHash(bloom->Hash(&ba)));
    row += g->num_rows();
  }
}

TEST_F(MergeTest, ALoneSmallRowGroupBetweenFullOnesIsCopiedToo) {
  // Each file: a full row group of 600 rows and a tail of 300. Nothing to
  // pack a tail with (full groups on both sides): re-encoding it would only
  // produce the same small row group again.
  std::vector<SegmentRecord> inputs = {Write(0, 299, settings_), Write(300, 599, settings_)};
  MergeStats stats;
  ThreadPool footers("t-footers", 2, 1 << 20), work("t-work", 2, 1 << 20);
  MergeContext ctx{blobs_.get(), &footers, &work, 2, &settings_, &stopping_, 7};
  auto merged = MergeSegments(ctx, table_, inputs, SystemClock().Now(), FileLayout::kFinal, &stats);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(stats.row_groups_copied, 4);
  EXPECT_EQ(stats.row_groups_reencoded, 0);
  auto want = *(*arrow::ConcatenateTables({ReadAll(inputs[0].path), ReadAll(inputs[1].path)}))->CombineChunks();
  EXPECT_TRUE(ReadAll(merged->path)->Equals(*want));
}

TEST_F(MergeTest, SameOutputWithOneWorkerOrMany) {
  WriterSettings small = settings_;
  small.max_row_group_rows = 50;
  std::vector<SegmentRecord> inputs;
  for (int i = 0; i < 20; ++i) inputs.push_back(Write(i * 40, i * 40 + 39, i % 3 == 0 ? settings_ : small));
  auto one = Merge(inputs, 1);
  auto four = Merge(inputs, 4);
  ASSERT_TRUE(one.ok() && four.ok());
  auto a = ReadAll(one->path), b = ReadAll(four->path);
  EXPECT_TRUE(a->Equals(*b));
  EXPECT_EQ(a->num_rows(), 20 * 40 * 3);
}

TEST_F(MergeTest, FootersAreReadMetadataConcurrencyAtATime) {
  std::vector<SegmentRecord> inputs;
  for (int i = 0; i < 12; ++i) inputs.push_back(Write(i * 10, i * 10 + 9, settings_));
  for (int threads : {1, 3}) {
    ConcurrencyCountingStore counting(blobs_);
    auto merged = Merge(inputs, 2, threads, &counting);
    ASSERT_TRUE(merged.ok()) << merged.status().ToString();
    EXPECT_EQ(counting.max(), threads) << "metadata_concurrency " << threads;
  }
}

TEST_F(MergeTest, ABlockRangeReadsOnlyThePagesThatHoldIt) {
  WriterSettings paged = settings_;
  paged.max_row_group_rows = 6000;
  paged.final_page_rows = 100;
  auto s = Write(0, 1999, paged);  // 6,000 rows: one row group, pages of 100 rows
  auto reader = *SegmentFileReader::Open(blobs_.get(), s.path);
  ASSERT_EQ(reader->num_row_groups(), 1);
  auto full = *(*reader->ReadRowGroup(0))->CombineChunks();
  std::vector<int> all = {0, 1, 2, 3, 4};
  for (auto [from, to] : std::vector<std::pair<uint64_t, uint64_t>>{{500, 509}, {0, 0}, {1990, 5000}, {333, 334}}) {
    auto part = reader->ReadRowGroupBlocks(0, all, 0, from, to);
    ASSERT_TRUE(part.ok()) << part.status().ToString();
    auto got = *(*part)->CombineChunks();
    EXPECT_LE(got->num_rows(), 300) << "read more pages than the range needs: " << from;
    // A contiguous run of the row group's rows holding every row of the range.
    auto blocks = std::static_pointer_cast<arrow::UInt64Array>(got->column(0)->chunk(0));
    ASSERT_GT(blocks->length(), 0);
    int64_t start = static_cast<int64_t>(blocks->Value(0)) * 3 +
                    std::static_pointer_cast<arrow::Int32Array>(got->column(1)->chunk(0))->Value(0);
    EXPECT_TRUE(got->Equals(*full->Slice(start, got->num_rows()))) << from;
    EXPECT_LE(blocks->Value(0), from);
    EXPECT_GE(blocks->Value(blocks->length() - 1), std::min<uint64_t>(to, 1999));
  }
  auto none = reader->ReadRowGroupBlocks(0, all, 0, 3000, 4000);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)->num_rows(), 0);
  // A range covering most of the row group reads it whole.
  auto most = reader->ReadRowGroupBlocks(0, {3, 0}, 0, 100, 1900);
  ASSERT_TRUE(most.ok());
  EXPECT_EQ((*most)->num_rows(), 6000);
  EXPECT_EQ((*most)->schema()->field(0)->name(), "data");
}

TEST_F(MergeTest, HeadFilesMergeByJoiningTheirDataPages) {
  std::vector<SegmentRecord> inputs;
  for (int i = 0; i < 10; ++i) inputs.push_back(Write(i * 20, i * 20 + 19, settings_, FileLayout::kPages));
  settings_.max_page_rows = 250;
  MergeStats stats;
  auto merged = Merge(inputs, 2, 2, nullptr, FileLayout::kPages, &stats);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(stats.row_groups_from_pages, 1);
  EXPECT_EQ(stats.row_groups_reencoded, 0);
  int64_t input_bytes = 0;
  for (const auto& s : inputs) input_bytes += s.bytes;
  EXPECT_EQ(merged->bytes, input_bytes) << "a merge keeps its inputs' measured size";

  std::vector<std::shared_ptr<arrow::Table>> expected;
  for (const auto& s : inputs) expected.push_back(ReadAll(s.path));
  auto want = *(*arrow::ConcatenateTables(expected))->CombineChunks();
  auto got = ReadAll(merged->path);
  ASSERT_TRUE(got->Equals(*want)) << "merged rows differ from the inputs";

  auto reader = parquet::ParquetFileReader::Open(*blobs_->OpenReader(merged->path));
  auto md = reader->metadata();
  ASSERT_EQ(md->num_row_groups(), 1);
  auto g = md->RowGroup(0);
  EXPECT_EQ(g->num_rows(), 600);
  auto rg_pages = reader->GetPageIndexReader()->RowGroup(0);
  for (int c = 0; c < md->num_columns(); ++c) {
    auto cc = g->ColumnChunk(c);
    EXPECT_FALSE(cc->has_dictionary_page());
    EXPECT_EQ(cc->num_values(), 600);
    // The inputs' small pages (20 blocks, 60 rows each) joined into pages of
    // up to 250 rows (page_joiner_test.cc checks the bytes).
    auto offsets = rg_pages->GetOffsetIndex(c);
    const auto& locs = offsets->page_locations();
    ASSERT_EQ(locs.size(), 3u) << c;
    EXPECT_EQ(locs.front().offset, cc->data_page_offset());
    EXPECT_EQ(locs.back().offset + locs.back().compressed_page_size,
              cc->data_page_offset() + cc->total_compressed_size());
    for (size_t p = 0; p < locs.size(); ++p) {
      EXPECT_EQ(locs[p].first_row_index, static_cast<int64_t>(p) * 240) << "pages of four inputs' 60 rows";
      if (p > 0) {
        EXPECT_EQ(locs[p].offset, locs[p - 1].offset + locs[p - 1].compressed_page_size);
      }
    }
  }
  // Chunk statistics merged from the inputs'.
  auto blocks = std::static_pointer_cast<parquet::Int64Statistics>(g->ColumnChunk(0)->statistics());
  ASSERT_TRUE(blocks && blocks->HasMinMax());
  EXPECT_EQ(blocks->min(), 0);
  EXPECT_EQ(blocks->max(), 199);
  EXPECT_EQ(blocks->null_count(), 0);
  auto topics = std::static_pointer_cast<parquet::ByteArrayStatistics>(g->ColumnChunk(4)->statistics());
  EXPECT_EQ(parquet::ByteArrayToString(topics->min()), "t0");
  EXPECT_EQ(parquet::ByteArrayToString(topics->max()), "t4");
  // block_num's column index brackets each page's rows.
  auto index = std::static_pointer_cast<parquet::Int64ColumnIndex>(rg_pages->GetColumnIndex(0));
  auto offsets = rg_pages->GetOffsetIndex(0);
  const auto& locs = offsets->page_locations();
  auto values = std::static_pointer_cast<arrow::UInt64Array>(got->column(0)->chunk(0));
  for (size_t p = 0; p < locs.size(); ++p) {
    int64_t last = p + 1 < locs.size() ? locs[p + 1].first_row_index - 1 : 599;
    EXPECT_EQ(static_cast<uint64_t>(index->min_values()[p]), values->Value(locs[p].first_row_index));
    EXPECT_EQ(static_cast<uint64_t>(index->max_values()[p]), values->Value(last));
  }
  // The bloom filter holds every topic of the run.
  auto bloom = reader->GetBloomFilterReader().RowGroup(0)->GetColumnBloomFilter(4);
  ASSERT_NE(bloom, nullptr);
  for (std::string t : {"t0", "t1", "t2", "t3", "t4"}) {
    parquet::ByteArray ba(static_cast<uint32_t>(t.size()), reinterpret_cast<const uint8_t*>(t.data()));
    EXPECT_TRUE(bloom->FindHash(bloom->Hash(&ba))) << t;
  }
  // A block range reads the pages that hold it.
  auto seg = *SegmentFileReader::Open(blobs_.get(), merged->path);
  auto part = *(*seg->ReadRowGroupBlocks(0, {0, 1, 2, 3, 4}, 0, 45, 47))->CombineChunks();
  EXPECT_LE(part->num_rows(), 240) << "the joined page that holds them";
  auto part_blocks = std::static_pointer_cast<arrow::UInt64Array>(part->column(0)->chunk(0));
  EXPECT_LE(part_blocks->Value(0), 45u);
  EXPECT_GE(part_blocks->Value(part_blocks->length() - 1), 47u);
}

// Blocks of 40 rows: a payload of 48 random bytes (nothing zstd can shrink) and a note that repeats.
std::shared_ptr<arrow::Schema> PayloadSchema() {
  return arrow::schema({arrow::field("block_num", arrow::uint64(), false), arrow::field("payload", arrow::binary()),
                        arrow::field("note", arrow::utf8())});
}

std::shared_ptr<arrow::RecordBatch> PayloadRows(uint64_t start, uint64_t end) {
  std::mt19937_64 rng(start);
  arrow::UInt64Builder blocks;
  arrow::BinaryBuilder payload;
  arrow::StringBuilder note;
  for (uint64_t b = start; b <= end; ++b) {
    for (int i = 0; i < 40; ++i) {
      uint64_t words[6];
      for (auto& w : words) w = rng();
      (void)blocks.Append(b);
      (void)payload.Append(reinterpret_cast<const uint8_t*>(words), sizeof(words));
      (void)note.Append(fmt::format("a note that repeats, of block {} mod 3", b % 3));  // 4 KiB+ a page, shrinks
    }
  }
  const int64_t n = blocks.length();
  return arrow::RecordBatch::Make(PayloadSchema(), n, {*blocks.Finish(), *payload.Finish(), *note.Finish()});
}

// Whether each data page of column `c` (every row group) is compressed.
std::vector<bool> PagesCompressed(const std::string& bytes, int c) {
  auto file = std::make_shared<arrow::io::BufferReader>(arrow::Buffer::FromString(bytes));
  auto reader = parquet::ParquetFileReader::Open(file);
  std::vector<bool> out;
  for (int g = 0; g < reader->metadata()->num_row_groups(); ++g) {
    auto offsets = reader->GetPageIndexReader()->RowGroup(g)->GetOffsetIndex(c);
    for (const auto& page : offsets->page_locations()) {
      PageHeader h;
      const uint8_t* body = nullptr;
      const auto* at = reinterpret_cast<const uint8_t*>(bytes.data()) + page.offset;
      EXPECT_TRUE(ReadPageHeader(at, at + page.compressed_page_size, &h, &body));
      EXPECT_EQ(h.type, 3) << "a head file's pages are v2";
      out.push_back(h.is_compressed);
      if (!h.is_compressed) EXPECT_EQ(h.compressed, h.uncompressed);
    }
  }
  return out;
}

TEST_F(MergeTest, HeadFilesStoreWhatZstdCannotShrinkAsItIsAndMergesKeepIt) {
  table_.schema = PayloadSchema();
  auto write = [&](uint64_t start, uint64_t end) {
    SegmentRecord s = Record(start, end);
    auto w = *SegmentFileWriter::Open(blobs_.get(), s.path, PayloadSchema(), settings_, FileLayout::kPages,
                                      EncodeSegmentFileMetadata(s));
    EXPECT_TRUE(w->Write(PayloadRows(start, end)).ok());
    auto facts = *w->Finish();
    s.rows = facts.rows;
    s.bytes = facts.bytes;
    s.stored_bytes = facts.stored_bytes;
    return s;
  };
  std::vector<SegmentRecord> inputs;
  for (uint64_t i = 0; i < 8; ++i) inputs.push_back(write(i * 3, i * 3 + 2));  // 120 rows, 6 KiB of payload each
  std::vector<std::shared_ptr<arrow::RecordBatch>> rows;
  for (const auto& s : inputs) {
    const auto payload = PagesCompressed(Bytes(s.path), 1), note = PagesCompressed(Bytes(s.path), 2);
    ASSERT_FALSE(payload.empty() || note.empty());
    EXPECT_EQ(payload, std::vector<bool>(payload.size(), false)) << "payload, stored as it is";
    EXPECT_EQ(note, std::vector<bool>(note.size(), true)) << "note, compressed";
    rows.push_back(PayloadRows(s.start, s.end));
  }
  auto want = *(*arrow::Table::FromRecordBatches(rows))->CombineChunks();
  auto read = [&](const std::string& path) {
    auto r = *SegmentFileReader::Open(blobs_.get(), path);
    std::vector<std::shared_ptr<arrow::Table>> parts;
    for (int i = 0; i < r->num_row_groups(); ++i) parts.push_back(*r->ReadRowGroup(i));
    auto t = *arrow::ConcatenateTables(parts);
    return *arrow::Table::Make(PayloadSchema(), t->columns(), t->num_rows())->CombineChunks();
  };
  // A head merge joins the pages as they are; a final merge encodes them again (these 960 payloads fit
  // in one dictionary, so its pages are dictionary indices, compressed).
  MergeStats stats;
  auto joined = Merge(inputs, 2, 2, nullptr, FileLayout::kPages, &stats);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(stats.row_groups_from_pages, 2)
      << stats.row_groups_copied << " copied, " << stats.row_groups_reencoded << " encoded again";
  EXPECT_TRUE(read(joined->path)->Equals(*want));
  const auto joined_payload = PagesCompressed(Bytes(joined->path), 1);
  EXPECT_EQ(joined_payload, std::vector<bool>(joined_payload.size(), false));
  auto final = Merge(inputs, 2);
  ASSERT_TRUE(final.ok()) << final.status().ToString();
  EXPECT_TRUE(read(final->path)->Equals(*want));
  // writer.store_incompressible = false: every page compressed.
  settings_.store_incompressible = false;
  const auto all = PagesCompressed(Bytes(write(24, 26).path), 1);
  EXPECT_EQ(all, std::vector<bool>(all.size(), true));
}

TEST_F(MergeTest, LocalHeadFilesAreReadIntoAFewBuffersReusedStepAfterStep) {
  // 40 head files of 60 rows, then 200 of 12, packed into row groups of up
  // to 600 rows: 4 steps of 10 files, then 4 of 50, each of those larger
  // (50 footers and page indexes) than any buffer the first ones took.
  std::vector<SegmentRecord> inputs;
  uint64_t block = 0;
  for (int i = 0; i < 240; ++i) {
    const uint64_t blocks = i < 40 ? 20 : 4;
    inputs.push_back(Write(block, block + blocks - 1, settings_, FileLayout::kPages));
    block += blocks;
  }
  MergeStats stats;
  auto merged = Merge(inputs, 2, 2, nullptr, FileLayout::kPages, &stats);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(stats.row_groups_from_pages, 8);
  EXPECT_GE(stats.step_buffers, 1);
  EXPECT_LE(stats.step_buffers, 3) << "the steps in flight (workers + 1), no more: the window is filled again "
                                      "once the step written gave its buffer back";
  std::vector<std::shared_ptr<arrow::Table>> expected;
  for (const auto& s : inputs) expected.push_back(ReadAll(s.path));
  EXPECT_TRUE(ReadAll(merged->path)->Equals(*(*(*arrow::ConcatenateTables(expected))->CombineChunks())))
      << "every step's rows, from buffers other steps used before";
}

TEST_F(MergeTest, AFileShorterThanItsRecordFailsNamingTheFile) {
  std::vector<SegmentRecord> inputs;
  for (int i = 0; i < 4; ++i) inputs.push_back(Write(i * 20, i * 20 + 19, settings_, FileLayout::kPages));
  inputs[2].stored_bytes += 100;
  auto merged = Merge(inputs, 2, 2, nullptr, FileLayout::kPages);
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.status().message().find(inputs[2].path), std::string::npos) << merged.status().message();
  EXPECT_NE(merged.status().message().find("bytes"), std::string::npos) << merged.status().message();
}

TEST_F(MergeTest, OnObjectStorageAHeadFileIsFetchedOnce) {
  std::vector<SegmentRecord> inputs;
  for (int i = 0; i < 8; ++i) inputs.push_back(Write(i * 20, i * 20 + 19, settings_, FileLayout::kPages));
  RemoteCountingStore remote(blobs_);
  MergeStats stats;
  auto merged = Merge(inputs, 2, 2, &remote, FileLayout::kPages, &stats);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(stats.row_groups_from_pages, 1);
  for (const auto& s : inputs) EXPECT_EQ(remote.opens(s.path), 1) << "footer and pages in one request";
  std::vector<std::shared_ptr<arrow::Table>> expected;
  for (const auto& s : inputs) expected.push_back(ReadAll(s.path));
  EXPECT_TRUE(ReadAll(merged->path)->Equals(*(*(*arrow::ConcatenateTables(expected))->CombineChunks())));
}

TEST_F(MergeTest, UInt32ValuesFrom2To31OrderAndReadAsTheyAre) {
  // A uint32 column on both sides of 2^31: as 32-bit signed numbers the second
  // file's values would come first. Files store it widened to int64
  // (table/stored_types.h), so every value orders and reads as it is.
  table_.schema =
      arrow::schema({arrow::field("block_num", arrow::uint64(), false), arrow::field("n", arrow::uint32())});
  const uint32_t half = uint32_t{1} << 31;
  std::vector<SegmentRecord> inputs;
  for (uint32_t first : {half - 10, half}) {
    const uint64_t start = inputs.size() * 10;
    arrow::UInt64Builder blocks;
    arrow::UInt32Builder n;
    for (uint32_t i = 0; i < 10; ++i) {
      ASSERT_TRUE(blocks.Append(start + i).ok());
      ASSERT_TRUE(n.Append(first + i).ok());
    }
    auto batch = arrow::RecordBatch::Make(table_.schema, 10, {*blocks.Finish(), *n.Finish()});
    SegmentRecord s = Record(start, start + 9);
    auto w = *SegmentFileWriter::Open(blobs_.get(), s.path, table_.schema, settings_, FileLayout::kPages,
                                      EncodeSegmentFileMetadata(s));
    ASSERT_TRUE(w->Write(batch).ok());
    auto facts = *w->Finish();
    s.rows = facts.rows;
    s.bytes = facts.bytes;
    s.stored_bytes = facts.stored_bytes;
    inputs.push_back(s);
  }
  MergeStats stats;
  auto merged = Merge(inputs, 1, 1, nullptr, FileLayout::kPages, &stats);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  ASSERT_EQ(stats.row_groups_from_pages, 1);
  auto md = parquet::ParquetFileReader::Open(*blobs_->OpenReader(merged->path))->metadata();
  auto chunk = std::dynamic_pointer_cast<parquet::Int64Statistics>(md->RowGroup(0)->ColumnChunk(1)->statistics());
  ASSERT_NE(chunk, nullptr);
  EXPECT_EQ(chunk->min(), half - 10);
  EXPECT_EQ(chunk->max(), int64_t{half} + 9);
  auto back = *(*SegmentFileReader::Open(blobs_.get(), merged->path))->ReadRowGroup(0);
  ASSERT_TRUE(back->schema()->Equals(*table_.schema)) << back->schema()->ToString();
  auto n = std::static_pointer_cast<arrow::UInt32Array>(back->column(1)->chunk(0));
  EXPECT_EQ(n->Value(0), half - 10);
  EXPECT_EQ(n->Value(19), half + 9);
}

TEST_F(MergeTest, UInt64IsStoredSignedAndReadBackUnsigned) {
  // What Iceberg's Java readers need (table/stored_types.h): no UINT_64 in new
  // files, the table's uint64 from Sediment's reader, and a file written the
  // old way (plain Arrow: UINT_64) merged with new ones into the new form.
  std::vector<SegmentRecord> inputs = {Write(0, 99, settings_, FileLayout::kPages),
                                       Write(100, 199, settings_, FileLayout::kPages), WritePlain(200, 299, 100)};
  auto legacy = parquet::ParquetFileReader::Open(*blobs_->OpenReader(inputs[2].path))->metadata();
  ASSERT_TRUE(legacy->schema()->Column(0)->logical_type()->is_int());
  for (const auto& s : inputs) {
    auto r = *SegmentFileReader::Open(blobs_.get(), s.path);
    EXPECT_TRUE(r->schema()->field(0)->type()->Equals(arrow::uint64())) << s.path;
  }
  MergeStats stats;
  auto merged = Merge(inputs, 1, 1, nullptr, FileLayout::kPages, &stats);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(stats.row_groups_copied, 2);     // the new files' row groups, as they are
  EXPECT_EQ(stats.row_groups_reencoded, 1);  // the legacy file's, packed into one
  for (const auto& path : {inputs[0].path, merged->path}) {
    auto md = parquet::ParquetFileReader::Open(*blobs_->OpenReader(path))->metadata();
    const auto* block = md->schema()->Column(0);
    EXPECT_EQ(block->physical_type(), parquet::Type::INT64) << path;
    EXPECT_TRUE(block->logical_type()->is_none()) << path << ": " << block->logical_type()->ToString();
  }
  std::vector<std::shared_ptr<arrow::Table>> expected;
  for (const auto& s : inputs) expected.push_back(ReadAll(s.path));
  auto want = *(*arrow::ConcatenateTables(expected))->CombineChunks();
  auto got = ReadAll(merged->path);
  EXPECT_TRUE(got->Equals(*want));
  auto reader = *SegmentFileReader::Open(blobs_.get(), merged->path);
  EXPECT_TRUE(reader->schema()->Equals(*TestSchema()));
  for (int rg = 0; rg < reader->num_row_groups(); ++rg) {
    uint64_t lo = 0, hi = 0;
    ASSERT_TRUE(reader->RowGroupUInt64Range(rg, 0, &lo, &hi));
    if (lo > 150 || hi < 151) continue;
    auto range = *reader->ReadRowGroupBlocks(rg, {0, 3}, 0, 150, 151);
    EXPECT_TRUE(range->schema()->field(0)->type()->Equals(arrow::uint64()));
    EXPECT_GE(range->num_rows(), 6) << lo << ".." << hi;
  }
}

TEST_F(MergeTest, BloomFiltersOfDifferentSizesAreRebuiltFromTheirColumn) {
  settings_.bloom_filter_columns = {"topic", "data"};
  // 60 and 1,200 distinct payloads: filters folded to different sizes.
  std::vector<SegmentRecord> inputs = {Write(0, 19, settings_, FileLayout::kPages),
                                       Write(20, 419, settings_, FileLayout::kPages)};
  settings_.max_row_group_rows = 10'000;
  auto merged = Merge(inputs, 1, 1, nullptr, FileLayout::kPages);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  auto reader = parquet::ParquetFileReader::Open(*blobs_->OpenReader(merged->path));
  ASSERT_EQ(reader->metadata()->num_row_groups(), 1);
  auto bloom = reader->GetBloomFilterReader().RowGroup(0)->GetColumnBloomFilter(3);
  ASSERT_NE(bloom, nullptr);
  auto data = std::static_pointer_cast<arrow::BinaryArray>(ReadAll(merged->path)->column(3)->chunk(0));
  for (int64_t i = 0; i < data->length(); ++i) {
    auto v = data->GetView(i);
    parquet::ByteArray ba(static_cast<uint32_t>(v.size()), reinterpret_cast<const uint8_t*>(v.data()));
    ASSERT_TRUE(bloom->FindHash(bloom->Hash(&ba))) << i;
  }
  int false_positives = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string absent = fmt::format("absent-{}", i);
    parquet::ByteArray ba(static_cast<uint32_t>(absent.size()), reinterpret_cast<const uint8_t*>(absent.data()));
    false_positives += bloom->FindHash(bloom->Hash(&ba)) ? 1 : 0;
  }
  EXPECT_LT(false_positives, 2000 * 5 / 100) << "the filter is too small for the run";
}

TEST_F(MergeTest, PlainPagesAreHashedWithoutArrowsReader) {
  WriterSettings paged = settings_;
  paged.max_page_rows = 16;  // many pages per chunk
  auto head = Write(0, 39, paged, FileLayout::kPages);
  auto final_file = Write(0, 39, settings_, FileLayout::kFinal);
  auto rows = ReadAll(head.path);
  for (int c : {1, 3, 4}) {  // int32 (nullable), binary, utf8
    std::string bytes = Bytes(head.path);
    auto md = parquet::ParquetFileReader::Open(*blobs_->OpenReader(head.path))->metadata();
    auto cc = md->RowGroup(0)->ColumnChunk(c);
    std::string_view chunk(bytes.data() + cc->data_page_offset(), static_cast<size_t>(cc->total_compressed_size()));
    parquet::BlockSplitBloomFilter filter;
    filter.Init(4096);
    auto read = HashPlainValues(chunk, *md->schema()->Column(c), static_cast<int>(cc->compression()), &filter);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    ASSERT_TRUE(*read) << "column " << c;
    // Every value is in, as Arrow's hashing of it.
    auto column = rows->column(c)->chunk(0);
    for (int64_t i = 0; i < column->length(); ++i) {
      uint64_t h = 0;
      if (c == 1) {
        h = filter.Hash(static_cast<int32_t>(std::static_pointer_cast<arrow::Int32Array>(column)->Value(i)));
      } else {
        auto v = std::static_pointer_cast<arrow::BinaryArray>(column)->GetView(i);
        parquet::ByteArray ba(static_cast<uint32_t>(v.size()), reinterpret_cast<const uint8_t*>(v.data()));
        h = filter.Hash(&ba);
      }
      ASSERT_TRUE(filter.FindHash(h)) << "column " << c << " row " << i;
    }
    // A chunk cut inside a page is an error, not a guess.
    auto cut = HashPlainValues(chunk.substr(0, chunk.size() - 5), *md->schema()->Column(c),
                               static_cast<int>(cc->compression()), &filter);
    EXPECT_FALSE(cut.ok()) << "column " << c;
  }
  // Dictionary pages are not for this reader.
  std::string bytes = Bytes(final_file.path);
  auto md = parquet::ParquetFileReader::Open(*blobs_->OpenReader(final_file.path))->metadata();
  auto cc = md->RowGroup(0)->ColumnChunk(4);
  ASSERT_TRUE(cc->has_dictionary_page());
  std::string_view chunk(bytes.data() + cc->dictionary_page_offset(), static_cast<size_t>(cc->total_compressed_size()));
  parquet::BlockSplitBloomFilter filter;
  filter.Init(4096);
  auto read = HashPlainValues(chunk, *md->schema()->Column(4), static_cast<int>(cc->compression()), &filter);
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(*read);
}

TEST_F(MergeTest, EachRowGroupTakesTheWayItAllows) {
  WriterSettings small = settings_;
  small.max_row_group_rows = 90;
  std::vector<SegmentRecord> inputs = {
      Write(0, 49, settings_, FileLayout::kPages),     // 150 rows: pages
      Write(50, 99, settings_, FileLayout::kPages),    // 150 rows: pages, with the one before
      Write(100, 149, settings_, FileLayout::kFinal),  // dictionaries: encoded
      Write(150, 199, settings_, FileLayout::kFinal),  // dictionaries: encoded, with the one before
      Write(200, 399, settings_, FileLayout::kFinal),  // a full row group: copied
      Write(400, 449, small, FileLayout::kPages),      // 90 + 60 rows: pages
  };
  MergeStats stats;
  auto merged = Merge(inputs, 2, 2, nullptr, FileLayout::kPages, &stats);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(stats.row_groups_from_pages, 2);
  EXPECT_EQ(stats.row_groups_reencoded, 1);
  EXPECT_EQ(stats.row_groups_copied, 1);
  std::vector<std::shared_ptr<arrow::Table>> expected;
  for (const auto& s : inputs) expected.push_back(ReadAll(s.path));
  auto want = *(*arrow::ConcatenateTables(expected))->CombineChunks();
  EXPECT_TRUE(ReadAll(merged->path)->Equals(*want));
  // The encoded row group is written for copying pages too: no dictionary.
  auto md = parquet::ParquetFileReader::Open(*blobs_->OpenReader(merged->path))->metadata();
  EXPECT_FALSE(md->RowGroup(1)->ColumnChunk(4)->has_dictionary_page());
  EXPECT_TRUE(md->RowGroup(2)->ColumnChunk(4)->has_dictionary_page()) << "the copied row group keeps its encoding";

  // The final merge of the same files encodes every row group fully.
  MergeStats final_stats;
  auto final_file = Merge(inputs, 2, 2, nullptr, FileLayout::kFinal, &final_stats);
  ASSERT_TRUE(final_file.ok()) << final_file.status().ToString();
  EXPECT_EQ(final_stats.row_groups_from_pages, 0);
  EXPECT_EQ(final_stats.row_groups_copied, 1);
  auto fmd = parquet::ParquetFileReader::Open(*blobs_->OpenReader(final_file->path))->metadata();
  for (int rg = 0; rg < fmd->num_row_groups(); ++rg) {
    EXPECT_TRUE(fmd->RowGroup(rg)->ColumnChunk(4)->has_dictionary_page()) << rg;
    EXPECT_TRUE(fmd->RowGroup(rg)->ColumnChunk(4)->bloom_filter_offset()) << rg;
  }
  EXPECT_TRUE(ReadAll(final_file->path)->Equals(*want));
}

TEST_F(MergeTest, MarkedFixedBinaryIsStoredAsByteArrayAndReadBackFixed) {
  // kStoreBinaryKey (table/stored_types.h): files store the column as
  // BYTE_ARRAY, through the head files, the page-joining merge and the final
  // encode, with bloom filters and bounds of its bytes; Sediment's reader gives
  // fixed_size_binary back. An unmarked fixed column stays FIXED_LEN_BYTE_ARRAY.
  auto marked = arrow::key_value_metadata({std::string(kStoreBinaryKey)}, {"true"});
  table_.schema = arrow::schema({arrow::field("block_num", arrow::uint64(), false),
                                 arrow::field("address", arrow::fixed_size_binary(4), false, marked),
                                 arrow::field("topic", arrow::fixed_size_binary(4), true, marked),
                                 arrow::field("raw", arrow::fixed_size_binary(4), false)});
  settings_.bloom_filter_columns = {"address"};
  auto value = [](uint64_t b, int salt) {
    uint32_t v = static_cast<uint32_t>(b * 2654435761u + static_cast<uint32_t>(salt));
    return std::string(reinterpret_cast<const char*>(&v), 4);
  };
  auto write = [&](uint64_t start, uint64_t end, FileLayout layout) {
    arrow::UInt64Builder blocks;
    arrow::FixedSizeBinaryBuilder address(arrow::fixed_size_binary(4)), topic(arrow::fixed_size_binary(4)),
        raw(arrow::fixed_size_binary(4));
    for (uint64_t b = start; b <= end; ++b) {
      EXPECT_TRUE(blocks.Append(b).ok());
      EXPECT_TRUE(address.Append(value(b, 1)).ok());
      EXPECT_TRUE(b % 3 == 0 ? topic.AppendNull().ok() : topic.Append(value(b, 2)).ok());
      EXPECT_TRUE(raw.Append(value(b, 3)).ok());
    }
    auto batch = arrow::RecordBatch::Make(table_.schema, static_cast<int64_t>(end - start + 1),
                                          {*blocks.Finish(), *address.Finish(), *topic.Finish(), *raw.Finish()});
    SegmentRecord s = Record(start, end);
    auto w =
        *SegmentFileWriter::Open(blobs_.get(), s.path, table_.schema, settings_, layout, EncodeSegmentFileMetadata(s));
    EXPECT_TRUE(w->Write(batch).ok());
    auto facts = *w->Finish();
    s.rows = facts.rows;
    s.bytes = facts.bytes;
    s.stored_bytes = facts.stored_bytes;
    return s;
  };
  auto read_all = [&](const std::string& path) {
    auto r = *SegmentFileReader::Open(blobs_.get(), path);
    std::vector<std::shared_ptr<arrow::Table>> parts;
    for (int i = 0; i < r->num_row_groups(); ++i) {
      auto rg = r->ReadRowGroup(i);
      EXPECT_TRUE(rg.ok()) << rg.status().ToString();
      parts.push_back(*rg);
    }
    return *(*arrow::ConcatenateTables(parts))->CombineChunks();
  };
  std::vector<SegmentRecord> heads = {write(0, 99, FileLayout::kPages), write(100, 199, FileLayout::kPages)};
  MergeStats stats;
  auto joined = Merge(heads, 1, 1, nullptr, FileLayout::kPages, &stats);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(stats.row_groups_from_pages, 1) << "BYTE_ARRAY pages join as FLBA ones did";
  auto final_file = Merge({*joined, write(200, 299, FileLayout::kPages)}, 2);
  ASSERT_TRUE(final_file.ok()) << final_file.status().ToString();
  auto want = *(*arrow::ConcatenateTables({read_all(heads[0].path), read_all(heads[1].path)}))->CombineChunks();
  for (const auto& path : {heads[0].path, joined->path, final_file->path}) {
    SCOPED_TRACE(path);
    auto reader = parquet::ParquetFileReader::Open(*blobs_->OpenReader(path));
    auto md = reader->metadata();
    EXPECT_EQ(md->schema()->Column(1)->physical_type(), parquet::Type::BYTE_ARRAY);
    EXPECT_EQ(md->schema()->Column(2)->physical_type(), parquet::Type::BYTE_ARRAY);
    EXPECT_EQ(md->schema()->Column(3)->physical_type(), parquet::Type::FIXED_LEN_BYTE_ARRAY);
    // What other readers see ("ARROW:schema") has no field metadata: DataFusion
    // would skip the bloom filters of a column with any. The markers are kept
    // under kStoredSchemaKey for Sediment's reader.
    std::shared_ptr<arrow::Schema> seen;
    ASSERT_TRUE(parquet::arrow::FromParquetSchema(md->schema(), parquet::ArrowReaderProperties(),
                                                  md->key_value_metadata(), &seen)
                    .ok());
    for (const auto& f : seen->fields()) EXPECT_FALSE(f->HasMetadata()) << f->ToString(true);
    EXPECT_TRUE(md->key_value_metadata()->Contains(std::string(kStoredSchemaKey)));
    auto got = read_all(path);
    ASSERT_TRUE(got->schema()->Equals(*table_.schema, /*check_metadata=*/false)) << got->schema()->ToString();
    if (path != final_file->path) {
      EXPECT_TRUE(got->Slice(0, std::min(got->num_rows(), want->num_rows()))
                      ->Equals(*want->Slice(0, std::min(got->num_rows(), want->num_rows()))));
    }
  }
  auto got = read_all(final_file->path);
  ASSERT_EQ(got->num_rows(), 300);
  auto address = std::static_pointer_cast<arrow::FixedSizeBinaryArray>(got->column(1)->chunk(0));
  auto topic = std::static_pointer_cast<arrow::FixedSizeBinaryArray>(got->column(2)->chunk(0));
  for (int64_t i = 0; i < 300; ++i) {
    ASSERT_EQ(address->GetString(i), value(static_cast<uint64_t>(i), 1)) << i;
    ASSERT_EQ(topic->IsNull(i), i % 3 == 0) << i;
  }
  auto reader = parquet::ParquetFileReader::Open(*blobs_->OpenReader(final_file->path));
  auto bloom = reader->GetBloomFilterReader().RowGroup(0)->GetColumnBloomFilter(1);
  ASSERT_NE(bloom, nullptr);
  for (int64_t i = 0; i < address->length(); ++i) {
    parquet::ByteArray ba(4, address->GetValue(i));
    ASSERT_TRUE(bloom->FindHash(bloom->Hash(&ba))) << i;
  }
  auto bounds = reader->metadata()->RowGroup(0)->ColumnChunk(1)->encoded_statistics();
  ASSERT_TRUE(bounds && bounds->has_min && bounds->has_max);
  EXPECT_EQ(bounds->min().size(), 4u) << "a bound is the value's bytes, without a length";
}

// `table` written by Arrow's writer, its Arrow schema stored, 10 rows a row group.
void WriteWithArrow(blob::BlobStore* blobs, const std::string& path, const arrow::Table& table) {
  auto sink = *blobs->OpenWriter(path);
  auto arrow_props = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  ASSERT_TRUE(parquet::arrow::WriteTable(table, arrow::default_memory_pool(), sink, 10,
                                         parquet::default_writer_properties(), arrow_props)
                  .ok());
  ASSERT_TRUE(sink->Close().ok());
}

// `table` written by Arrow's writer with kStoredSchemaKey = `key_value`.
void WriteWithStoredSchemaKey(blob::BlobStore* blobs, const std::string& path, const arrow::Table& table,
                              const std::string& key_value) {
  WriteWithArrow(blobs, path,
                 *table.ReplaceSchemaMetadata(arrow::key_value_metadata({std::string(kStoredSchemaKey)}, {key_value})));
}

TEST_F(MergeTest, AFileWhoseStoredSchemaKeyDisagreesWithItsColumnsIsRefused) {
  // sediment.schema (kStoredSchemaKey) gives Sediment's reader the stored
  // fields' markers, applied by position; one that names other fields (at
  // any level of structs), or is no schema at all, is an error naming the
  // file and the key, not a schema taken on trust.
  arrow::Int64Builder blocks, a, b;
  arrow::BinaryBuilder address;
  ASSERT_TRUE(blocks.Append(1).ok() && a.Append(2).ok() && b.Append(3).ok() && address.Append("abcd").ok());
  auto flat = arrow::Table::Make(arrow::schema({arrow::field("block_num", arrow::int64(), false),
                                                arrow::field("address", arrow::binary(), false)}),
                                 {*blocks.Finish(), *address.Finish()});
  auto pair = arrow::struct_({arrow::field("a", arrow::int64(), false), arrow::field("b", arrow::int64(), false)});
  auto nested = arrow::Table::Make(
      arrow::schema({arrow::field("block_num", arrow::int64(), false), arrow::field("pair", pair, false)}),
      {flat->column(0)->chunk(0), *arrow::StructArray::Make({*a.Finish(), *b.Finish()}, pair->fields())});
  auto unsigned_md = arrow::key_value_metadata({std::string(kUnsignedKey)}, {"uint64"});
  auto other_names = *StoredArrowSchema(*arrow::schema(
      {arrow::field("block_num", arrow::int64(), false), arrow::field("topic", arrow::binary(), false)}));
  auto swapped_children = *StoredArrowSchema(
      *arrow::schema({arrow::field("block_num", arrow::int64(), false),
                      arrow::field("pair",
                                   arrow::struct_({arrow::field("b", arrow::int64(), false, unsigned_md),
                                                   arrow::field("a", arrow::int64(), false)}),
                                   false)}));
  const struct {
    std::string path;
    std::shared_ptr<arrow::Table> table;
    std::string key;
  } cases[] = {{"other-names.parquet", flat, other_names},
               {"not-a-schema.parquet", flat, "bm90IGEgc2NoZW1h"},
               {"swapped-struct-children.parquet", nested, swapped_children}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path);
    WriteWithStoredSchemaKey(blobs_.get(), c.path, *c.table, c.key);
    auto reader = SegmentFileReader::Open(blobs_.get(), c.path);
    ASSERT_FALSE(reader.ok());
    EXPECT_NE(reader.status().message().find("sediment.schema"), std::string::npos) << reader.status().message();
    EXPECT_NE(reader.status().message().find(c.path), std::string::npos) << reader.status().message();
  }
}

TEST_F(MergeTest, AnInputWhoseStoredSchemaKeyIsNoSchemaFailsTheMergeNamingItAndPublishesNothing) {
  // The merge checks each input's footer before it reads a row: a forged
  // sediment.schema stops it there, with the file and the key named.
  std::vector<SegmentRecord> inputs;
  for (uint64_t b = 0; b < 30; b += 10) inputs.push_back(WritePlain(b, b + 9, 600));
  auto rows = *arrow::Table::FromRecordBatches({Rows(10, 19, 0, 3)});
  WriteWithStoredSchemaKey(blobs_.get(), inputs[1].path, *rows, "bm90IGEgc2NoZW1h");
  inputs[1].stored_bytes = (*blobs_->Stat(inputs[1].path)).size;
  auto before = *blobs_->List("");
  auto merged = Merge(inputs, 2);
  ASSERT_FALSE(merged.ok());
  const std::string& message = merged.status().message();
  EXPECT_NE(message.find(inputs[1].path + ": its sediment.schema is not a schema"), std::string::npos) << message;
  EXPECT_EQ(message.find(inputs[1].path + ": " + inputs[1].path), std::string::npos) << "named once: " << message;
  EXPECT_EQ(blobs_->List("")->size(), before.size()) << "nothing published";
}

TEST_F(MergeTest, AStoredFixedBinaryValueOfAnotherLengthIsAnErrorNamingTheColumn) {
  // A file (not written by Sediment) whose binary column says it holds
  // fixed_size_binary(4) but has a 3-byte value: refused, not truncated or padded.
  auto md = arrow::key_value_metadata({std::string(kStoreBinaryKey), std::string(kFixedSizeKey)}, {"true", "4"});
  auto schema = arrow::schema({arrow::field("block_num", arrow::int64(), false,
                                            arrow::key_value_metadata({std::string(kUnsignedKey)}, {"uint64"})),
                               arrow::field("address", arrow::binary(), false, md)});
  arrow::Int64Builder blocks;
  arrow::BinaryBuilder address;
  ASSERT_TRUE(blocks.AppendValues({1, 2}).ok());
  ASSERT_TRUE(address.Append("abcd").ok());
  ASSERT_TRUE(address.Append("abc").ok());
  auto table = arrow::Table::Make(schema, {*blocks.Finish(), *address.Finish()});
  const std::string path = "odd.parquet";
  WriteWithArrow(blobs_.get(), path, *table);
  auto reader = SegmentFileReader::Open(blobs_.get(), path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_TRUE((*reader)->schema()->field(1)->type()->Equals(arrow::fixed_size_binary(4)));
  auto rows = (*reader)->ReadRowGroup(0);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("column address"), std::string::npos) << rows.status().message();
  // A merge reads the stored values and encodes them again without converting
  // them (ReadStoredAs): the same value is refused there too.
  auto stored = *SegmentFileReader::Open(blobs_.get(), path);
  ASSERT_TRUE(stored->ReadStoredAs(stored->schema()).ok());
  auto raw = stored->ReadRowGroup(0);
  ASSERT_FALSE(raw.ok());
  EXPECT_NE(raw.status().message().find("column address: row 1 holds 3 bytes"), std::string::npos)
      << raw.status().message();
}

TEST_F(MergeTest, AFinalMergeDecodesHeadFilesFromTheirPlainPages) {
  // Head files (kPages: PLAIN pages, no dictionaries) re-encoded into a final
  // file are decoded by plain_decode.h, not Arrow's reader; a file written
  // otherwise (plain Arrow: dictionaries, UINT_64) in the same merge goes
  // through Arrow's reader. Either way the rows are the inputs'.
  settings_.max_row_group_rows = 100000;
  std::vector<SegmentRecord> inputs;
  for (uint64_t b = 0; b < 40; b += 10) inputs.push_back(Write(b, b + 9, settings_, FileLayout::kPages));
  inputs.push_back(WritePlain(40, 49, 1000));
  MergeStats stats;
  auto merged = Merge(inputs, 2, 2, nullptr, FileLayout::kFinal, &stats);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(stats.inputs_decoded_plain, 4);
  EXPECT_EQ(stats.row_groups_reencoded, 1);
  std::vector<std::shared_ptr<arrow::Table>> expected;
  for (const auto& s : inputs) expected.push_back(ReadAll(s.path));
  auto want = *(*arrow::ConcatenateTables(expected))->CombineChunks();
  EXPECT_TRUE(ReadAll(merged->path)->Equals(*want));
}

TEST_F(MergeTest, AFinalMergeOfHeadFilesReadsLocalChunksByColumnAndRemoteRowGroupsWhole) {
  // Local files: each column chunk read as its column is decoded; on object
  // storage each row group fetched whole. Several steps on two workers, so
  // scratch (encoder, column buffers) is reused step after step; the rows
  // are the inputs' either way.
  settings_.max_row_group_rows = 150;
  std::vector<SegmentRecord> inputs;
  for (uint64_t b = 0; b < 120; b += 10) inputs.push_back(Write(b, b + 9, settings_, FileLayout::kPages));
  std::vector<std::shared_ptr<arrow::Table>> expected;
  for (const auto& s : inputs) expected.push_back(ReadAll(s.path));
  auto want = *(*arrow::ConcatenateTables(expected))->CombineChunks();
  RemoteCountingStore remote(blobs_);
  for (blob::BlobStore* store : {static_cast<blob::BlobStore*>(nullptr), static_cast<blob::BlobStore*>(&remote)}) {
    SCOPED_TRACE(store ? "object storage" : "local");
    MergeStats stats;
    auto merged = Merge(inputs, 2, 2, store, FileLayout::kFinal, &stats);
    ASSERT_TRUE(merged.ok()) << merged.status().ToString();
    EXPECT_EQ(stats.inputs_decoded_plain, static_cast<int64_t>(inputs.size()));
    EXPECT_GT(stats.row_groups_reencoded, 2);
    EXPECT_TRUE(ReadAll(merged->path)->Equals(*want));
  }
}

TEST_F(MergeTest, FinalAndLargeOutputsAreWrittenAroundThePageCache) {
  // A final file, or any output of at least kLargeFileBytes (what a merge
  // expects from its inputs' sizes), goes through OpenLargeWriter (O_DIRECT
  // locally); a small file that will be merged again through the page cache.
  struct Counting : blob::BlobStore {
    explicit Counting(blob::BlobStore* inner) : inner(inner) {}
    Result<std::shared_ptr<arrow::io::OutputStream>> OpenWriter(const std::string& path) override {
      return inner->OpenWriter(path);
    }
    Result<std::shared_ptr<arrow::io::OutputStream>> OpenLargeWriter(const std::string& path) override {
      ++large;
      return inner->OpenLargeWriter(path);
    }
    Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenReader(const std::string& path) override {
      return inner->OpenReader(path);
    }
    Result<blob::ObjectInfo> Stat(const std::string& path) override { return inner->Stat(path); }
    Result<std::vector<blob::ObjectInfo>> List(const std::string& prefix) override { return inner->List(prefix); }
    Status Delete(const std::string& path) override { return inner->Delete(path); }
    std::string Describe() const override { return inner->Describe(); }
    blob::BlobStore* inner;
    int large = 0;
  } store(blobs_.get());
  auto open = [&](FileLayout layout, int64_t expected) {
    auto w = SegmentFileWriter::Open(&store, "w.parquet", TestSchema(), settings_, layout, "{}", expected);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
  };
  open(FileLayout::kPages, SegmentFileWriter::kLargeFileBytes - 1);
  EXPECT_EQ(store.large, 0);
  open(FileLayout::kPages, SegmentFileWriter::kLargeFileBytes);
  EXPECT_EQ(store.large, 1);
  open(FileLayout::kFinal, 0);
  EXPECT_EQ(store.large, 2);
}

TEST_F(MergeTest, AColumnChunkReadShortFailsNamingTheFileAndColumnAndPublishesNothing) {
  // A final merge of local head files reads each column chunk as its column
  // is decoded: one read short is an error naming the file and the column,
  // and no output is left behind.
  std::vector<SegmentRecord> inputs;
  for (uint64_t b = 0; b < 40; b += 10) inputs.push_back(Write(b, b + 9, settings_, FileLayout::kPages));
  auto before = *blobs_->List("");
  ShortReadStore shorted(blobs_, inputs[2].path);
  auto merged = Merge(inputs, 2, 2, &shorted, FileLayout::kFinal);
  ASSERT_FALSE(merged.ok());
  const std::string& message = merged.status().message();
  EXPECT_NE(message.find(inputs[2].path), std::string::npos) << message;
  EXPECT_NE(message.find("column block_num: reading its chunk"), std::string::npos) << message;
  EXPECT_EQ(blobs_->List("")->size(), before.size()) << "nothing published";
}

TEST_F(MergeTest, RowCountDisagreeingWithRegistryFailsNamingTheFile) {
  auto a = Write(0, 9, settings_);
  auto b = Write(10, 19, settings_);
  b.rows += 1;
  auto merged = Merge({a, b}, 2);
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.status().message().find(b.path), std::string::npos) << merged.status().message();
}

TEST_F(MergeTest, AnEarlyReturnWaitsForTheStepsInFlight) {
  // Six inputs of one full row group each: a step each, workers + 1 = 3 of
  // them in flight. Input 0's step fails, and then input 2's footer (steps 0
  // and 1 submitted), each while another step's task is held: MergeSegments
  // returns early with tasks reading its inputs, and must wait for them.
  std::vector<SegmentRecord> inputs;
  for (int i = 0; i < 6; ++i) inputs.push_back(Write(i * 100, i * 100 + 99, settings_));
  for (auto [failing, failing_open] : {std::pair<size_t, int>{0, 2}, std::pair<size_t, int>{2, 1}}) {
    SCOPED_TRACE(failing_open == 2 ? "a step fails" : "a footer fails");
    GatedStore gated(blobs_, inputs[failing].path, failing_open);
    ThreadPool footers("t-footers", 2, 1 << 20), work("t-work", 2, 1 << 20);
    MergeContext ctx{&gated, &footers, &work, 2, &settings_, &stopping_, 7};
    auto merged = MergeSegments(ctx, table_, inputs, SystemClock().Now(), FileLayout::kFinal);
    const int in_flight = gated.in_flight();
    gated.MergeReturned();
    work.Shutdown();
    footers.Shutdown();
    ASSERT_FALSE(merged.ok());
    EXPECT_NE(merged.status().message().find(inputs[failing].path), std::string::npos) << merged.status().message();
    EXPECT_GE(gated.held_at_failure(), 1) << "a step's task was reading when the input failed";
    EXPECT_EQ(in_flight, 0) << "MergeSegments returned with a task still reading its inputs";
    EXPECT_EQ(gated.ran_after_return(), 0);
  }
}

}  // namespace
}  // namespace sediment::table
