#include "table/table_service.h"

#include <arrow/api.h>
#include <arrow/util/key_value_metadata.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/schema.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "table/scan.h"
#include "table/segment.h"
#include "table/stored_types.h"
#include "table/table_test_fixture_internal.h"

namespace sediment::table {
namespace {

TEST_F(TableServiceTest, CreateTableRules) {
  EXPECT_TRUE(*service_->CreateTable(id_, TestSchema()));
  EXPECT_FALSE(*service_->CreateTable(id_, TestSchema())) << "same schema again is fine";
  auto other = arrow::schema({arrow::field("block_num", arrow::uint64())});
  EXPECT_TRUE(IsConflict(service_->CreateTable(id_, other).status()));
  TableId t2{"eth", "bad"};
  EXPECT_TRUE(
      IsInvalidArgument(service_->CreateTable(t2, arrow::schema({arrow::field("x", arrow::int32())})).status()));
  EXPECT_TRUE(IsInvalidArgument(
      service_->CreateTable(t2, arrow::schema({arrow::field("block_num", arrow::int64())})).status()));
  auto tables = service_->ListTables();
  ASSERT_TRUE(tables.ok());
  ASSERT_EQ(tables->size(), 1u);
  EXPECT_TRUE((*tables)[0].schema->Equals(*TestSchema()));
}

TEST_F(TableServiceTest, ANewTablesFixedBinaryIsStoredAsByteArrayUnlessAFieldSaysOtherwise) {
  // stored_types.h: a new table's top-level fixed binary columns get
  // kStoreBinaryKey; "false" keeps FIXED_LEN_BYTE_ARRAY; a column added later
  // gets it too, and the table's own columns keep what they had.
  auto keep = arrow::key_value_metadata({std::string(kStoreBinaryKey)}, {"false"});
  auto v1 = arrow::schema({arrow::field("block_num", arrow::uint64(), false),
                           arrow::field("address", arrow::fixed_size_binary(3), false),
                           arrow::field("raw", arrow::fixed_size_binary(3), false, keep)});
  // The stored files' own mark is refused on a table's field (it would read a binary column as fixed).
  auto stored_mark =
      arrow::schema({v1->field(0), arrow::field("b", arrow::binary(), true,
                                                arrow::key_value_metadata({std::string(kFixedSizeKey)}, {"3"}))});
  auto refused = service_->CreateTable(id_, stored_mark);
  ASSERT_TRUE(IsInvalidArgument(refused.status())) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("column \"b\""), std::string::npos) << refused.status().message();
  EXPECT_TRUE(IsNotFound(service_->GetTable(id_).status())) << "nothing created";
  ASSERT_TRUE(*service_->CreateTable(id_, v1));
  EXPECT_FALSE(*service_->CreateTable(id_, v1)) << "the same schema again: the marks are not a difference";
  auto v2 = arrow::schema({v1->field(0), v1->field(1)->WithMetadata(keep), v1->field(2),
                           arrow::field("topic", arrow::fixed_size_binary(3), true)});
  ASSERT_TRUE(*service_->EvolveTable(id_, v2));
  auto info = *service_->GetTable(id_);
  EXPECT_TRUE(StoresFixedAsBinary(*info.schema->field(1))) << "kept from creation, not the evolved schema's";
  EXPECT_FALSE(StoresFixedAsBinary(*info.schema->field(2)));
  EXPECT_TRUE(StoresFixedAsBinary(*info.schema->field(3)));
  arrow::UInt64Builder blocks;
  arrow::FixedSizeBinaryBuilder address(arrow::fixed_size_binary(3)), raw(arrow::fixed_size_binary(3)),
      topic(arrow::fixed_size_binary(3));
  for (uint64_t b = 0; b < 4; ++b) {
    ASSERT_TRUE(blocks.Append(b).ok());
    ASSERT_TRUE(address.Append(fmt::format("a{:02}", b)).ok());
    ASSERT_TRUE(raw.Append(fmt::format("r{:02}", b)).ok());
    ASSERT_TRUE((b % 2 ? topic.AppendNull() : topic.Append(fmt::format("t{:02}", b))).ok());
  }
  auto batch =
      arrow::RecordBatch::Make(info.schema, 4, {*blocks.Finish(), *address.Finish(), *raw.Finish(), *topic.Finish()});
  AppendRequest req{0, 3, Hash(3, 0), Hash(uint64_t(0) - 1, 0)};
  for (uint64_t b = 0; b <= 3; ++b) req.block_hashes.push_back(Hash(b, 0));
  auto reader = Reader({batch}, info.schema);
  ASSERT_TRUE(service_->Append(id_, req, reader.get()).ok());
  auto md = parquet::ParquetFileReader::Open(*faulty_->OpenReader(Live()[0].path))->metadata();
  EXPECT_EQ(md->schema()->Column(1)->physical_type(), parquet::Type::BYTE_ARRAY);
  EXPECT_EQ(md->schema()->Column(2)->physical_type(), parquet::Type::FIXED_LEN_BYTE_ARRAY);
  EXPECT_EQ(md->schema()->Column(3)->physical_type(), parquet::Type::BYTE_ARRAY);
  auto snap = service_->OpenSnapshot(id_);
  ASSERT_TRUE(snap.ok());
  auto t = *service_->ReadAll(**snap);
  ASSERT_TRUE(t->schema()->Equals(*info.schema, /*check_metadata=*/false)) << t->schema()->ToString();
  EXPECT_TRUE(t->Equals(*arrow::Table::FromRecordBatches({batch}).ValueOrDie()));
  // A scan filter on the stored-as-binary column takes the table's type.
  ScanRequest q;
  q.columns = {"block_num"};
  q.filter = *ParseFilter("address = 0x613032");
  auto scan = Scan::Open(service_.get(), id_, q);
  ASSERT_TRUE(scan.ok()) << scan.status().ToString();
  int64_t n = 0;
  while (auto b = *(*scan)->Next()) n += b->num_rows();
  EXPECT_EQ(n, 1);
}

TEST_F(TableServiceTest, ATableGainsNullableColumnsAndItsOldFilesReadWithNulls) {
  config_.writer.compactor.max_eager_bytes = 1 << 20;
  Restart();
  Create();
  for (uint64_t b = 0; b < 20; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  auto v1 = TestSchema();
  // Stored in microseconds (kStoreMicrosKey): Iceberg v2 and Spark read no nanoseconds.
  auto added = arrow::field("at", arrow::timestamp(arrow::TimeUnit::NANO, "+00:00"), true,
                            arrow::key_value_metadata({std::string(kStoreMicrosKey)}, {"true"}));
  arrow::FieldVector fields = v1->fields();
  fields.push_back(added);
  auto v2 = arrow::schema(fields);
  // Anything but new nullable columns after the others is refused, naming what, and changes nothing.
  auto expect_refused = [&](std::shared_ptr<arrow::Schema> s, const std::string& says) {
    auto r = service_->EvolveTable(id_, s);
    ASSERT_TRUE(IsInvalidArgument(r.status())) << says << ": " << r.status().ToString();
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().message();
    EXPECT_TRUE(service_->GetTable(id_)->schema->Equals(*v1));
  };
  expect_refused(arrow::schema({v1->field(0), v1->field(1)}), "drops column \"fork\"");
  auto not_null = fields;
  not_null.back() = added->WithNullable(false);
  expect_refused(arrow::schema(not_null), "must be nullable");
  auto retyped = fields;
  retyped[1] = arrow::field("log_index", arrow::int64());
  expect_refused(arrow::schema(retyped), "column \"log_index\" changes from int32 to int64");
  auto twice = v1->fields();
  twice.push_back(arrow::field("data", arrow::utf8()));
  expect_refused(arrow::schema(twice), "appears twice");
  EXPECT_TRUE(IsNotFound(service_->EvolveTable({"eth", "nope"}, v2).status()));

  ASSERT_TRUE(*service_->EvolveTable(id_, v2));
  EXPECT_FALSE(*service_->EvolveTable(id_, v2)) << "the same schema again changes nothing";
  auto info = service_->GetTable(id_);
  EXPECT_EQ(info->version(), 2);
  ASSERT_EQ(info->history.size(), 1u);
  EXPECT_TRUE(info->history[0]->Equals(*v1));
  // Appends now use the new schema; the old one is refused.
  EXPECT_TRUE(IsInvalidArgument(Append(20, 24, 0).status()));
  auto rows = Rows(20, 24, 0);
  auto cols = rows->columns();
  arrow::TimestampBuilder at(added->type(), arrow::default_memory_pool());
  for (int64_t i = 0; i < rows->num_rows(); ++i)
    ASSERT_TRUE(at.Append(int64_t{1700000000} * 1000000000 + i * 1000).ok());
  cols.push_back(*at.Finish());
  AppendRequest req{20, 24, Hash(24, 0), Hash(19, 0)};
  for (uint64_t b = 20; b <= 24; ++b) req.block_hashes.push_back(Hash(b, 0));
  auto reader = Reader({arrow::RecordBatch::Make(v2, rows->num_rows(), cols)}, v2);
  auto appended = service_->Append(id_, req, reader.get());
  ASSERT_TRUE(appended.ok()) << appended.status().ToString();
  // A nanosecond with a fraction of a microsecond cannot be stored: refused, nothing written.
  auto live_before = Live();
  arrow::TimestampBuilder odd(added->type(), arrow::default_memory_pool());
  auto more = Rows(25, 25, 0);
  for (int64_t i = 0; i < more->num_rows(); ++i) ASSERT_TRUE(odd.Append(i + 1).ok());
  auto more_cols = more->columns();
  more_cols.push_back(*odd.Finish());
  AppendRequest req2{25, 25, Hash(25, 0), Hash(24, 0), {Hash(25, 0)}};
  auto odd_reader = Reader({arrow::RecordBatch::Make(v2, more->num_rows(), more_cols)}, v2);
  EXPECT_FALSE(service_->Append(id_, req2, odd_reader.get()).ok());
  EXPECT_EQ(Live().size(), live_before.size());

  auto check = [&](const std::string& when) {
    auto snap = service_->OpenSnapshot(id_);
    ASSERT_TRUE(snap.ok());
    auto t = service_->ReadAll(**snap);
    ASSERT_TRUE(t.ok()) << when << ": " << t.status().ToString();
    EXPECT_TRUE((*t)->schema()->Equals(*v2)) << when;
    auto c = *(*t)->CombineChunksToBatch();
    ASSERT_EQ(c->num_rows(), 75) << when;
    auto ts = std::static_pointer_cast<arrow::TimestampArray>(c->GetColumnByName("at"));
    EXPECT_EQ(ts->null_count(), 60) << when << ": the first 20 blocks' rows have no value";
    EXPECT_EQ(ts->Value(60), int64_t{1700000000} * 1000000000) << when << ": nanoseconds back";
    EXPECT_EQ(ts->Value(74), int64_t{1700000000} * 1000000000 + 14000) << when;
    // A scan of the new column alone, and of a block range in the old files.
    ScanRequest q;
    q.columns = {"at", "block_num"};
    q.from_block = 3;
    q.to_block = 21;
    auto scan = Scan::Open(service_.get(), id_, q);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    int64_t n = 0, nulls = 0;
    while (auto b = *(*scan)->Next()) {
      n += b->num_rows();
      nulls += b->column(0)->null_count();
    }
    EXPECT_EQ(n, 19 * 3) << when;
    EXPECT_EQ(nulls, 17 * 3) << when;
  };
  check("before a merge");
  // The old files and the new one merge into a file of the new schema.
  auto pass = service_->CompactNow(id_);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  ASSERT_FALSE(pass->merges.empty());
  ASSERT_TRUE(pass->merges[0].output.has_value()) << pass->merges[0].error;
  check("after a merge");
  auto merged = SegmentFileReader::Open(faulty_.get(), Live()[0].path);
  ASSERT_TRUE(merged.ok());
  EXPECT_TRUE((*merged)->schema()->Equals(*v2)) << (*merged)->schema()->ToString();
}

TEST_F(TableServiceTest, AppendWritesSegmentFilesWithMetadata) {
  Create();
  ASSERT_TRUE(Append(0, 9, 0).ok());
  auto r = Append(10, 19, 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->reorg);
  auto live = Live();
  ASSERT_EQ(live.size(), 2u);
  ExpectContiguous(live);
  const auto& s = live[1];
  EXPECT_EQ(s.start, 10u);
  EXPECT_EQ(s.end, 19u);
  EXPECT_EQ(s.rows, 30);
  EXPECT_GT(s.bytes, 0);
  EXPECT_GT(s.stored_bytes, 0);
  EXPECT_EQ(s.generation, 0);
  EXPECT_EQ(s.path, "tables/eth/logs/" + s.id + ".parquet");
  EXPECT_EQ(s.id.substr(0, 10), "000000010-");
  // The file's own metadata agrees with the registry.
  auto reader = SegmentFileReader::Open(faulty_.get(), s.path);
  ASSERT_TRUE(reader.ok());
  auto meta = DecodeSegmentFileMetadata((*reader)->segment_metadata());
  ASSERT_TRUE(meta.ok()) << (*reader)->segment_metadata();
  EXPECT_EQ(meta->start, s.start);
  EXPECT_EQ(meta->end, s.end);
  EXPECT_EQ(meta->end_hash, s.end_hash);
  EXPECT_EQ(meta->parent_hash, s.parent_hash);
  EXPECT_EQ((*reader)->facts().rows, s.rows);
  EXPECT_EQ((*reader)->facts().bytes, s.bytes);
  EXPECT_EQ(ReadRows().size(), 60u);
}

TEST_F(TableServiceTest, EmptySegmentsAreAllowed) {
  Create();
  ASSERT_TRUE(Append(0, 4, 0, 0, /*rows=*/0).ok());
  ASSERT_TRUE(Append(5, 9, 0).ok());
  EXPECT_EQ(Live().size(), 2u);
  EXPECT_EQ(Live()[0].rows, 0);
}

TEST_F(TableServiceTest, BadAppendsChangeNothing) {
  Create();
  ASSERT_TRUE(Append(0, 9, 0).ok());
  auto before_live = Live();
  auto before_files = Stored();
  struct Case {
    const char* what;
    std::function<Status()> run;
    std::string expect;
  };
  auto append = [&](AppendRequest req, std::shared_ptr<arrow::RecordBatch> batch,
                    std::shared_ptr<arrow::Schema> schema = TestSchema()) {
    return service_->Append(id_, req, Reader({batch}, schema).get()).status();
  };
  std::vector<Case> cases = {
      {"rows outside the range",
       [&] {
         return append({10, 12, Hash(12, 0), Hash(9, 0)}, Rows(10, 13, 0));
       },
       "block_num 13 is outside the segment's range [10, 12]"},
      {"rows going backwards",
       [&] {
         auto a = Rows(11, 12, 0);
         auto b = Rows(10, 10, 0);
         return service_->Append(id_, {10, 12, Hash(12, 0), Hash(9, 0)}, Reader({a, b}).get()).status();
       },
       "block_num goes backwards (10 after 12)"},
      {"end before start",
       [&] {
         return append({10, 9, Hash(9, 0), Hash(9, 0)}, Rows(10, 10, 0));
       },
       "end_block 9 is before start_block 10"},
      {"block beyond 2^63-1",
       [&] {
         const uint64_t big = uint64_t{1} << 63;
         return append({10, big, Hash(big, 0), Hash(9, 0)}, Rows(10, 10, 0));
       },
       "end_block 9223372036854775808 is beyond 2^63-1"},
      {"bad hash",
       [&] {
         return append({10, 12, "xyz!", Hash(9, 0)}, Rows(10, 12, 0));
       },
       "end_hash"},
      {"schema mismatch",
       [&] {
         auto schema = arrow::schema({arrow::field("block_num", arrow::uint64())});
         auto arr = *arrow::MakeArrayFromScalar(arrow::UInt64Scalar(10), 1);
         return append({10, 12, Hash(12, 0), Hash(9, 0)}, arrow::RecordBatch::Make(schema, 1, {arr}), schema);
       },
       "does not match table eth.logs"},
      {"gap",
       [&] {
         return append({20, 22, Hash(22, 0), Hash(19, 0)}, Rows(20, 22, 0));
       },
       "segment starts at block 20 but the table ends at block 9 (gap)"},
      {"parent mismatch",
       [&] {
         return append({10, 12, Hash(12, 0), Hash(9, 1)}, Rows(10, 12, 0));
       },
       "does not match the hash"},
      {"unknown table",
       [&] {
         return service_->Append({"eth", "nope"}, {10, 12, Hash(12, 0), Hash(9, 0)}, Reader({Rows(10, 12, 0)}).get())
             .status();
       },
       "table eth.nope not found"},
  };
  for (const auto& c : cases) {
    Status st = c.run();
    EXPECT_FALSE(st.ok()) << c.what;
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << c.what << ": " << st.ToString();
    EXPECT_EQ(Live(), before_live) << c.what;
    EXPECT_EQ(Stored(), before_files) << c.what << ": no file left behind";
  }
}

TEST_F(TableServiceTest, CompactionMergesSmallFilesAndGcDeletesAfterGrace) {
  config_.writer.compactor.max_eager_bytes = 2000;  // the inputs are eager, the merged file is not
  Restart();
  Create();
  for (uint64_t b = 0; b < 40; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  auto rows_before = ReadRows();
  auto inputs = Live();
  ASSERT_EQ(inputs.size(), 8u);
  auto pass = service_->CompactNow(id_);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  ASSERT_EQ(pass->merges.size(), 1u);
  ASSERT_TRUE(pass->merges[0].output.has_value()) << pass->merges[0].error;
  auto live = Live();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].start, 0u);
  EXPECT_EQ(live[0].end, 39u);
  EXPECT_EQ(live[0].generation, 1);
  EXPECT_EQ(live[0].parents.size(), 8u);
  EXPECT_EQ(live[0].end_hash, inputs.back().end_hash);
  EXPECT_EQ(ReadRows(), rows_before);

  // Inputs stay in storage for the grace period.
  EXPECT_EQ(Stored().size(), 9u);
  clock_->AdvanceSeconds(59);
  EXPECT_EQ(service_->RunGc(id_)->deleted, 0);
  clock_->AdvanceSeconds(1);
  auto gc = service_->RunGc(id_);
  EXPECT_EQ(gc->deleted, 8);
  EXPECT_EQ(Stored(), std::set<std::string>{live[0].path});
  EXPECT_EQ(Metric("gc_files_deleted_total"), 8);

  // The merged file is new: larger than eager, it waits for the cooldown.
  for (uint64_t b = 40; b < 50; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  pass = service_->CompactNow(id_);
  ASSERT_EQ(pass->merges.size(), 1u);
  EXPECT_EQ(pass->merges[0].inputs.size(), 2u) << "only the two new small files";
}

TEST_F(TableServiceTest, MetricsAfterAKnownSequence) {
  Create();
  for (uint64_t b = 0; b < 20; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  int64_t read = 0;
  for (const auto& s : Live()) read += s.bytes;
  EXPECT_EQ(Metric("table_files"), 4);
  auto pass = service_->CompactNow(id_);
  ASSERT_TRUE(pass.ok());
  auto out = Live();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Metric("compaction_bytes_read_total"), read);
  EXPECT_EQ(Metric("compaction_bytes_written_total"), out[0].stored_bytes);
  EXPECT_EQ(Metric("compaction_files_read_total"), 4);
  EXPECT_EQ(Metric("successful_compactions"), 1);
  EXPECT_EQ(Metric("failed_compactions"), 0);
  EXPECT_EQ(Metric("table_files"), 1);
  EXPECT_EQ(Metric("table_bytes"), out[0].bytes);
  EXPECT_EQ(Metric("table_segments_appended_total"), 4);
  EXPECT_NE(metrics_->RenderPrometheus().find("compaction_duration_seconds_count{dataset=\"eth\",table=\"logs\"} 1"),
            std::string::npos);
}

TEST_F(TableServiceTest, SnapshotSurvivesSwapAndGc) {
  Create();
  for (uint64_t b = 0; b < 30; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  auto snap = service_->OpenSnapshot(id_);
  ASSERT_TRUE(snap.ok());
  auto rows = RowsOf(**snap);
  ASSERT_TRUE(service_->CompactNow(id_).ok());
  EXPECT_EQ(Live().size(), 1u);
  clock_->AdvanceSeconds(3600);
  auto gc = service_->RunGc(id_);
  EXPECT_EQ(gc->deleted, 0) << "files held by an open snapshot are not deleted";
  EXPECT_EQ(gc->waiting, 6);
  EXPECT_EQ(RowsOf(**snap), rows) << "the snapshot still reads every file";
  snap->reset();
  EXPECT_EQ(service_->RunGc(id_)->deleted, 6);
  EXPECT_EQ(ReadRows(), rows);
}

TEST_F(TableServiceTest, ReorgReplacesHeadSegments) {
  Create();
  ASSERT_TRUE(Append(0, 9, 0).ok());
  ASSERT_TRUE(Append(10, 14, 0).ok());
  ASSERT_TRUE(Append(15, 19, 0).ok());
  // Blocks from 15 change.
  auto r = Append(15, 21, 1, 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->reorg);
  EXPECT_EQ(r->replaced.size(), 1u);
  EXPECT_FALSE(r->rewritten.has_value());
  auto live = Live();
  ASSERT_EQ(live.size(), 3u);
  ExpectContiguous(live);
  EXPECT_EQ(live.back().end, 21u);
  auto rows = ReadRows();
  ASSERT_EQ(rows.size(), 22u * 3);
  EXPECT_EQ(rows[14 * 3], std::make_pair(uint64_t{14}, 0));
  EXPECT_EQ(rows[15 * 3], std::make_pair(uint64_t{15}, 1));
  EXPECT_EQ(Metric("table_reorgs_total"), 1);
  EXPECT_EQ(Metric("table_reorg_rewrites_total"), 0);
}

TEST_F(TableServiceTest, ReorgIntoAMergedFileRewritesIt) {
  Create();
  for (uint64_t b = 0; b < 30; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  ASSERT_TRUE(service_->CompactNow(id_).ok());
  ASSERT_EQ(Live().size(), 1u);
  ASSERT_EQ(Live()[0].generation, 1);
  // A reorg from block 22: the merged file [0, 29] keeps [0, 21].
  auto r = Append(22, 31, 1, 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->reorg);
  ASSERT_TRUE(r->rewritten.has_value());
  EXPECT_EQ(r->rewritten->end, 21u);
  EXPECT_EQ(r->rewritten->end_hash, Hash(21, 0));
  auto live = Live();
  ASSERT_EQ(live.size(), 2u);
  ExpectContiguous(live);
  auto rows = ReadRows();
  ASSERT_EQ(rows.size(), 32u * 3);
  for (const auto& [block, fork] : rows) EXPECT_EQ(fork, block < 22 ? 0 : 1) << block;
  EXPECT_EQ(Metric("table_reorg_rewrites_total"), 1);
  // A reorg at the very first block (same parent) replaces everything.
  ASSERT_TRUE(Append(0, 3, 2, 0).ok());
  EXPECT_EQ(Live().size(), 1u);
  EXPECT_EQ(ReadRows().size(), 12u);
}

TEST_F(TableServiceTest, CompactionOffDoesNothing) {
  config_.writer.compactor.active = false;
  Restart();
  Create();
  for (uint64_t b = 0; b < 20; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  auto pass = service_->CompactNow(id_);
  ASSERT_TRUE(pass.ok());
  EXPECT_FALSE(pass->ran);
  EXPECT_EQ(Live().size(), 4u);
}

TEST_F(TableServiceTest, CorruptSegmentFailsOnlyItsGroup) {
  config_.writer.bytes = 3000;  // small target: several groups
  config_.writer.compactor.max_eager_bytes = 3000;
  Restart();
  Create();
  for (uint64_t b = 0; b < 40; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  auto live = Live();
  auto groups = PlanCompaction(live, service_->planner_settings(), clock_->Now());
  ASSERT_GE(groups.size(), 2u) << "segment bytes: " << live[0].bytes;
  // Corrupt the first file of the first group.
  ASSERT_TRUE(faulty_->Put(live[0].path, "this is not parquet").ok());
  auto pass = service_->CompactNow(id_);
  ASSERT_TRUE(pass.ok());
  int failed = 0, merged = 0;
  for (const auto& m : pass->merges) {
    if (!m.error.empty()) {
      failed++;
      EXPECT_NE(m.error.find(live[0].path), std::string::npos) << "reported by file name: " << m.error;
    } else if (m.output) {
      merged++;
    }
  }
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(merged, static_cast<int>(groups.size()) - 1);
  EXPECT_EQ(Metric("failed_compactions"), 1);
  EXPECT_EQ(Live().front().path, live[0].path) << "the corrupt file is left live";
}

// Fail the i-th write, then the i-th publish, of a pass; then "crash" and
// restart. Every failure must leave the rows intact and no orphan behind.
TEST_F(TableServiceTest, ErrorInjectionSweepOverMergesAndGc) {
  // Each round injects one failure into a pass over a fresh table of small
  // files, so every round has something to merge and the failure lands.
  config_.writer.bytes = 3000;  // small target: several groups per pass
  Restart();
  int round = 0;
  for (blob::BlobOp op : {blob::BlobOp::kWrite, blob::BlobOp::kPublish, blob::BlobOp::kRead}) {
    for (int i = 1; i <= 4; ++i) {
      id_ = TableId{"eth", fmt::format("round{}", round++)};
      Create();
      for (uint64_t b = 0; b < 60; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
      auto rows = ReadRows();
      int64_t injected = faulty_->Injected();
      faulty_->FailNth(op, i);
      auto pass = service_->CompactNow(id_);
      faulty_->Reset();
      ASSERT_TRUE(pass.ok()) << pass.status().ToString();
      std::string where = fmt::format("op {} #{}", static_cast<int>(op), i);
      ASSERT_EQ(faulty_->Injected(), injected + 1) << "the failure was injected: " << where;
      ASSERT_GE(pass->merges.size(), 4u) << where;
      int failed = 0;
      for (const auto& m : pass->merges) failed += m.status == MergeStatus::kFailed;
      EXPECT_EQ(failed, 1) << "exactly the merge that hit the failure failed: " << where;
      EXPECT_EQ(ReadRows(), rows) << where;
      ExpectContiguous(Live());
      Restart();
      EXPECT_EQ(Stored(), LiveAndManifest()) << "no orphans after the start-up check: " << where;
      // The next pass merges what the failed one left.
      auto again = service_->CompactNow(id_);
      ASSERT_TRUE(again.ok());
      for (const auto& m : again->merges) EXPECT_EQ(m.status, MergeStatus::kMerged) << m.error << " " << where;
      EXPECT_EQ(ReadRows(), rows) << where;
    }
  }
  id_ = TableId{"eth", "logs"};
  Create();
  for (uint64_t b = 0; b < 60; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  ASSERT_TRUE(service_->CompactNow(id_).ok());
  auto rows = ReadRows();
  // GC: a failed delete keeps the manifest entry and is retried.
  clock_->AdvanceSeconds(3600);
  faulty_->FailNth(blob::BlobOp::kDelete, 1);
  auto gc = service_->RunGc(id_);
  ASSERT_TRUE(gc.ok());
  EXPECT_EQ(gc->failed, 1);
  EXPECT_EQ(Metric("gc_failed_deletions_total"), 1);
  gc = service_->RunGc(id_);
  EXPECT_EQ(gc->failed, 0);
  EXPECT_EQ(Stored(), LiveAndManifest());
  TableRegistry reg(kv_);
  EXPECT_TRUE(reg.ListGc(id_)->empty());
  EXPECT_EQ(ReadRows(), rows);
}

// With a shared database, young unknown files may be another server's work
// in flight, so only old ones were orphans: a crashed server's own files
// stayed an hour. Its stable name marks its files, so it removes them at once.
TEST_F(TableServiceTest, ARestartedServerRemovesItsOwnYoungOrphansAtStart) {
  Create();
  ASSERT_TRUE(Append(0, 9, 0).ok());
  std::string mine = TableRegistry::SegmentPath(id_, NewSegmentId(10, WriterTag("server-a")));
  std::string theirs = TableRegistry::SegmentPath(id_, NewSegmentId(10, WriterTag("server-b")));
  ASSERT_TRUE(faulty_->Put(mine, "merge output of a crashed server-a").ok());
  ASSERT_TRUE(faulty_->Put(theirs, "server-b is about to swap this in").ok());
  service_->Stop();
  service_ = std::make_unique<TableService>(kv_, faulty_, clock_, metrics_.get(), config_.writer, "server-a");
  ASSERT_TRUE(service_->Start(/*background=*/false, std::chrono::hours(1)).ok());
  auto stored = Stored();
  EXPECT_EQ(stored.count(mine), 0u);
  EXPECT_EQ(stored.count(theirs), 1u);
  EXPECT_EQ(ReadRows().size(), 30u);
}

TEST_F(TableServiceTest, OrphansFromACrashAreRemovedAtStart) {
  Create();
  ASSERT_TRUE(Append(0, 9, 0).ok());
  // A merged file published just before a crash, never swapped in.
  std::string orphan = TableRegistry::SegmentPath(id_, NewSegmentId(0));
  ASSERT_TRUE(faulty_->Put(orphan, "partial merge output").ok());
  EXPECT_EQ(Stored().size(), 2u);
  Restart();
  EXPECT_EQ(Stored(), LiveAndManifest());
  EXPECT_EQ(Metric("gc_orphans_deleted_total"), 1);
}

// Seeded random appends, reorgs, passes and GC runs with a manual clock: the
// rows in block order always equal the model of the canonical chain.
TEST_F(TableServiceTest, PropertyRowsSurviveEverything) {
  config_.writer.bytes = 6000;
  config_.writer.compactor.max_eager_bytes = 1500;
  config_.writer.compactor.skip_latest_segments = 2;
  config_.writer.compactor.cooldown_duration = 30;
  config_.writer.overflow = 1.5;
  Restart();
  Create();
  std::mt19937 rng(7);
  std::map<uint64_t, int> model;  // block -> fork of its canonical version
  uint64_t next = 0;
  int fork = 0;
  int reorgs = 0, merges = 0;
  for (int step = 0; step < 150; ++step) {
    int action = static_cast<int>(rng() % 10);
    if (action < 6 || next == 0) {
      uint64_t n = 1 + rng() % 4;
      int parent = next == 0 ? fork : model[next - 1];
      auto r = Append(next, next + n - 1, fork, parent, static_cast<int>(rng() % 4));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      for (uint64_t b = next; b < next + n; ++b) model[b] = fork;
      next += n;
    } else if (action < 7) {
      uint64_t depth = 1 + rng() % std::min<uint64_t>(next, 12);
      uint64_t from = next - depth;
      int new_fork = ++fork;
      uint64_t n = depth + rng() % 3;
      int parent = from == 0 ? 0 : model[from - 1];  // the genesis parent never changes
      auto r = Append(from, from + n - 1, new_fork, parent, 2);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      model.erase(model.lower_bound(from), model.end());
      for (uint64_t b = from; b < from + n; ++b) model[b] = new_fork;
      next = from + n;
      reorgs++;
    } else if (action < 9) {
      auto pass = service_->CompactNow(id_);
      ASSERT_TRUE(pass.ok());
      for (const auto& m : pass->merges) merges += m.output ? 1 : 0;
    } else {
      clock_->AdvanceSeconds(rng() % 40);
      ASSERT_TRUE(service_->RunGc(id_).ok());
    }
    clock_->AdvanceSeconds(1);
    auto live = Live();
    ExpectContiguous(live);
    std::vector<std::pair<uint64_t, int>> want_blocks;
    for (const auto& [b, f] : model) want_blocks.emplace_back(b, f);
    std::vector<std::pair<uint64_t, int>> got_blocks;
    for (const auto& row : ReadRows()) {
      if (got_blocks.empty() || got_blocks.back() != row) got_blocks.push_back(row);
    }
    // Blocks with zero rows have no row: compare the blocks that have rows.
    std::vector<std::pair<uint64_t, int>> want_with_rows;
    std::set<std::pair<uint64_t, int>> got_set(got_blocks.begin(), got_blocks.end());
    for (const auto& wb : want_blocks) {
      if (got_set.count(wb)) want_with_rows.push_back(wb);
    }
    ASSERT_EQ(got_blocks, want_with_rows) << "step " << step;
    ASSERT_EQ(got_set.size(), got_blocks.size()) << "no block doubled";
    if (!live.empty()) {
      EXPECT_EQ(live.front().start, 0u);
      EXPECT_EQ(live.back().end, next - 1);
    }
  }
  EXPECT_GT(reorgs, 5);
  EXPECT_GT(merges, 5);
}

TEST_F(TableServiceTest, OneServerAtATimeCompactsATable) {
  Create();
  for (uint64_t b = 0; b < 20; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  // A second server on the same KV store and storage.
  MetricsRegistry other_metrics;
  TableService other(kv_, faulty_, clock_, &other_metrics, config_.writer);
  ASSERT_TRUE(other.Start(false).ok());
  ASSERT_NE(other.server_id(), service_->server_id());
  ASSERT_TRUE(service_->CompactNow(id_).ok());  // takes the lease
  for (uint64_t b = 20; b < 40; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  auto pass = other.CompactNow(id_);
  ASSERT_FALSE(pass.ok());
  EXPECT_TRUE(IsBusy(pass.status())) << pass.status().ToString();
  EXPECT_NE(pass.status().message().find(service_->server_id()), std::string::npos);
  // The holder stops renewing (it died): after the lease expires the other takes over.
  clock_->Advance(std::chrono::seconds(60) + std::chrono::seconds(1));
  pass = other.CompactNow(id_);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_FALSE(pass->merges.empty());
  EXPECT_TRUE(IsBusy(service_->CompactNow(id_).status()));
  other.Stop();
}

TEST_F(TableServiceTest, AppendHistoryIsKeptForThirtyDays) {
  Create();
  for (uint64_t b = 0; b < 15; b += 5) {
    ASSERT_TRUE(Append(b, b + 4, 0).ok());
    clock_->AdvanceSeconds(12);
  }
  auto history = service_->AppendHistory(id_);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 3u);
  EXPECT_EQ((*history)[1].t_us - (*history)[0].t_us, 12'000'000);
  EXPECT_EQ((*history)[2].start, 10u);
  EXPECT_GT((*history)[0].bytes, 0);
  ASSERT_TRUE(service_->CompactNow(id_).ok());
  EXPECT_EQ(service_->AppendHistory(id_)->size(), 3u) << "merges are not appends";
  clock_->AdvanceSeconds(31 * 86400);
  ASSERT_TRUE(service_->RunGc(id_).ok());
  EXPECT_TRUE(service_->AppendHistory(id_)->empty());
}

// The console's pass history: one record per pass that planned merges, newest
// first, saying what each merge did and what the live set was after it.
TEST_F(TableServiceTest, PassHistoryRecordsWhatEachPassMerged) {
  config_.writer.compactor.max_eager_bytes = 2000;
  Restart();
  Create();
  int64_t appended = 0;
  for (uint64_t b = 0; b < 20; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  for (const auto& s : Live()) appended += s.stored_bytes;
  auto start_us = ToUnixMicros(clock_->Now());
  ASSERT_TRUE(service_->CompactNow(id_).ok());
  clock_->AdvanceSeconds(10);
  ASSERT_TRUE(service_->CompactNow(id_).ok()) << "plans nothing: not recorded";
  for (uint64_t b = 20; b < 30; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  ASSERT_TRUE(service_->CompactNow(id_).ok());

  auto passes = service_->PassHistory(id_);
  ASSERT_TRUE(passes.ok()) << passes.status().ToString();
  ASSERT_EQ(passes->size(), 2u);
  const PassRecord& first = (*passes)[1];  // newest first
  EXPECT_EQ(first.t_us, start_us);
  EXPECT_EQ(first.files_considered, 4);
  EXPECT_EQ(first.files_after, 1);
  ASSERT_EQ(first.merges.size(), 1u);
  EXPECT_EQ(first.merges[0].outcome, "merged");
  EXPECT_EQ(first.merges[0].inputs, 4);
  EXPECT_EQ(first.merges[0].start, 0u);
  EXPECT_EQ(first.merges[0].end, 19u);
  EXPECT_EQ(first.merges[0].bytes_in, appended);
  auto live = Live();  // the first pass's file (too big to be eager now) and the second's
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ((*passes)[0].merges[0].inputs, 2) << "only the two new small files";
  EXPECT_EQ((*passes)[0].merges[0].bytes_out, live[1].stored_bytes);
  EXPECT_EQ((*passes)[0].files_after, 2);
  EXPECT_EQ((*passes)[0].stored_bytes_after, live[0].stored_bytes + live[1].stored_bytes);
  EXPECT_GT((*passes)[0].t_us, first.t_us);

  // Pages and the window.
  bool more = false;
  auto page = service_->PassHistory(id_, 0, "", 1, &more);
  ASSERT_EQ(page->size(), 1u);
  EXPECT_TRUE(more);
  auto rest = service_->PassHistory(id_, 0, (*page)[0].cursor, 10, &more);
  ASSERT_EQ(rest->size(), 1u);
  EXPECT_FALSE(more);
  EXPECT_EQ((*rest)[0].t_us, first.t_us);
  EXPECT_EQ(service_->PassHistory(id_, first.t_us + 1)->size(), 1u) << "since_us leaves the older pass out";

  // A malformed record is an error naming its key, not a wrong chart.
  auto stored = kv_->Scan("t/pass/", "", 1);
  ASSERT_TRUE(stored.ok() && !stored->items.empty());
  std::string key = stored->items[0].key;
  ASSERT_TRUE(kv_->Set(key, "{\"v\":1}").ok());
  auto bad = service_->PassHistory(id_);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(key), std::string::npos) << bad.status().ToString();

  // Kept as long as the append history.
  clock_->AdvanceSeconds(31 * 86400);
  ASSERT_TRUE(service_->RunGc(id_).ok());
  EXPECT_TRUE(service_->PassHistory(id_)->empty());
}

TEST_F(TableServiceTest, APassThatFailsAsAWholeIsRecordedWithItsError) {
  Create();
  for (uint64_t b = 0; b < 10; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  auto stored = kv_->Scan("t/seg/", "", 1);
  ASSERT_TRUE(stored.ok() && !stored->items.empty());
  std::string key = stored->items[0].key;
  ASSERT_TRUE(kv_->Set(key, "not a segment record").ok());
  auto pass = service_->CompactNow(id_);
  ASSERT_FALSE(pass.ok());
  auto passes = service_->PassHistory(id_);
  ASSERT_TRUE(passes.ok()) << passes.status().ToString();
  ASSERT_EQ(passes->size(), 1u);
  EXPECT_EQ((*passes)[0].error, pass.status().message());
  EXPECT_TRUE((*passes)[0].merges.empty());
  // The timer retries it every tick: the same failure is recorded again only after ten minutes.
  clock_->AdvanceSeconds(60);
  EXPECT_FALSE(service_->CompactNow(id_).ok());
  EXPECT_EQ(service_->PassHistory(id_)->size(), 1u);
  clock_->AdvanceSeconds(600);
  EXPECT_FALSE(service_->CompactNow(id_).ok());
  EXPECT_EQ(service_->PassHistory(id_)->size(), 2u);
}

TEST_F(TableServiceTest, GcBacklogCountsFilesWaitingForTheirGrace) {
  config_.writer.compactor.max_eager_bytes = 2000;
  Restart();
  Create();
  EXPECT_EQ(service_->GcBacklogOf(id_)->files, 0);
  for (uint64_t b = 0; b < 15; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  auto before = ToUnixMicros(clock_->Now());
  ASSERT_TRUE(service_->CompactNow(id_).ok());
  auto b = service_->GcBacklogOf(id_);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->files, 3);
  EXPECT_EQ(b->due, 0);
  EXPECT_EQ(b->oldest_removed_us, before);
  clock_->AdvanceSeconds(config_.writer.compactor.gc_manifest_grace_period);
  EXPECT_EQ(service_->GcBacklogOf(id_)->due, 3);
  ASSERT_TRUE(service_->RunGc(id_).ok());
  EXPECT_EQ(service_->GcBacklogOf(id_)->files, 0);
  EXPECT_TRUE(IsNotFound(service_->GcBacklogOf(TableId{"eth", "nope"}).status()));
}

TEST_F(TableServiceTest, BackgroundPassesHonourMinInterval) {
  config_.writer.compactor.min_interval = 10;
  Restart(/*background=*/true);
  Create();
  ASSERT_TRUE(Append(0, 4, 0).ok());
  service_->WaitIdle();  // the pass the first append started has run
  for (uint64_t b = 5; b < 20; b += 5) ASSERT_TRUE(Append(b, b + 4, 0).ok());
  service_->WaitIdle();
  // The first append started a pass; the others came within min_interval.
  auto live = Live();
  EXPECT_EQ(Metric("successful_compactions"), 0) << "a pass after the first append has one file: nothing to merge";
  EXPECT_EQ(live.size(), 4u);
  clock_->AdvanceSeconds(10);
  service_->RequestCompaction(id_);
  service_->WaitIdle();
  EXPECT_EQ(Live().size(), 1u);
}

}  // namespace
}  // namespace sediment::table

namespace sediment::table {
namespace {

TEST_F(TableServiceTest, FilesStoredTheOldWayAreRewrittenWhenNothingIsToMerge) {
  Create();
  ASSERT_TRUE(Append(0, 9, 0).ok());
  auto before = Live();
  ASSERT_EQ(before.size(), 1u);
  auto rows = ReadRows();
  // The file as builds before 2026-12 wrote it: Parquet's UINT_64 for
  // block_num, and no "storage" in its record (decoded as 0).
  SegmentRecord old = before[0];
  old.id = NewSegmentId(0);
  old.path = TableRegistry::SegmentPath(id_, old.id);
  {
    auto sink = *faulty_->OpenWriter(old.path);
    auto table = *arrow::Table::FromRecordBatches({Rows(0, 9, 0)});
    ASSERT_TRUE(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink, 1000).ok());
    ASSERT_TRUE(sink->Close().ok());
  }
  std::string record = EncodeSegmentRecord(old);
  const std::string field = ",\"storage\":1";
  ASSERT_NE(record.find(field), std::string::npos) << record;
  old = *DecodeSegmentRecord(record.erase(record.find(field), field.size()));
  old.stored_bytes = (*faulty_->Stat(old.path)).size;
  LiveSetChange swap;
  swap.remove = before;
  swap.add = {old};
  ASSERT_TRUE(TableRegistry(kv_).Commit(id_, swap, clock_->Now()).ok());
  Restart();
  ASSERT_EQ(Live()[0].storage, 0);
  EXPECT_EQ(ReadRows(), rows) << "an old file reads as before";

  auto pass = service_->CompactNow(id_);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  ASSERT_EQ(pass->merges.size(), 1u);
  ASSERT_TRUE(pass->merges[0].output.has_value()) << pass->merges[0].error;
  auto live = Live();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].storage, kStorageVersion);
  EXPECT_EQ(live[0].parents.get(), std::vector<std::string>{old.id});
  EXPECT_EQ(live[0].end_hash, old.end_hash);
  EXPECT_EQ(ReadRows(), rows);
  auto md = parquet::ParquetFileReader::Open(*faulty_->OpenReader(live[0].path))->metadata();
  EXPECT_EQ(md->schema()->Column(0)->physical_type(), parquet::Type::INT64);
  EXPECT_TRUE(md->schema()->Column(0)->logical_type()->is_none());
  EXPECT_TRUE(service_->CompactNow(id_)->merges.empty()) << "nothing left to rewrite";
}

}  // namespace
}  // namespace sediment::table
