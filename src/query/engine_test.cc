#include "query/engine.h"

#include "query/query_test_fixture_internal.h"

namespace sediment::query {
namespace {

using table::TableId;

class QueryEngineTest : public QueryTest {
 protected:
  Result<std::shared_ptr<arrow::Table>> Query(const std::string& sql, std::optional<BlockRange> range = {}) {
    ARROW_ASSIGN_OR_RAISE(auto parsed, engine_->Parse(sql));
    ARROW_ASSIGN_OR_RAISE(auto run, engine_->Run(parsed, range));
    ARROW_ASSIGN_OR_RAISE(auto schema, run->Schema());
    std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
    while (true) {
      ARROW_ASSIGN_OR_RAISE(auto b, run->Next());
      if (!b) break;
      batches.push_back(b);
    }
    return arrow::Table::FromRecordBatches(schema, batches);
  }

  int64_t Scalar(const std::string& sql) {
    auto t = Query(sql);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    if (!t.ok() || (*t)->num_rows() != 1) return -1;
    auto s = (*t)->column(0)->GetScalar(0);
    return std::static_pointer_cast<arrow::Int64Scalar>(*(*s)->CastTo(arrow::int64()))->value;
  }
};

TEST_F(QueryEngineTest, ParseNamesTheTablesAndStripsAmpSettings) {
  auto q = engine_->Parse(
      "WITH t AS (SELECT * FROM eth.logs) SELECT * FROM t JOIN eth.blocks b USING (block_num) "
      "JOIN eth.logs l2 USING (block_num)  SETTINGS stream = true;");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_TRUE(q->stream);
  ASSERT_EQ(q->tables.size(), 2u);
  EXPECT_EQ(q->tables[0].ToString(), "eth.logs");
  EXPECT_EQ(q->tables[1].ToString(), "eth.blocks");
  EXPECT_EQ(q->sql.find("SETTINGS"), std::string::npos);
  q = engine_->Parse("WITH T AS (SELECT 1 AS a) SELECT * FROM t settings STREAM=false ;");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_FALSE(q->stream);
  EXPECT_EQ(q->sql, "WITH T AS (SELECT 1 AS a) SELECT * FROM t");
  // A megabyte of spaces: no regex over all of it (libstdc++'s recurses per character).
  q = engine_->Parse("SELECT 1" + std::string(1 << 20, ' ') + "SETTINGS stream = true");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_TRUE(q->stream);
  EXPECT_TRUE(IsInvalidArgument(engine_->Parse(std::string(1 << 20, ' ')).status()));
}

TEST_F(QueryEngineTest, ParseRefusesWhatIsNotOneQueryOverNamedTables) {
  for (const char* bad :
       {"DELETE FROM eth.logs", "CREATE TABLE x (a INT)", "SELECT 1; SELECT 2",
        "SELECT * FROM read_parquet('/etc/passwd')", "SELECT * FROM read_csv('x')", "SELECT * FROM other.main.t",
        "SELEC 1", "", "  ;  ", "COPY eth.logs TO 'x.csv'", "ATTACH 'x.db'", "SELECT * FROM \"eth\".\"../x\"",
        "SELECT * FROM eth.logs, duckdb_views", "SELECT * FROM sqlite_master",
        "SELECT * FROM (WITH duckdb_views AS (SELECT 1) SELECT 1), duckdb_views"}) {
    auto q = engine_->Parse(bad);
    EXPECT_TRUE(IsInvalidArgument(q.status())) << bad << ": " << q.status().ToString();
  }
}

TEST_F(QueryEngineTest, AnswersOverThePinnedSnapshot) {
  EXPECT_EQ(Scalar("SELECT count(*) FROM eth.logs"), 80);
  EXPECT_EQ(Scalar("SELECT sum(value)::BIGINT FROM eth.logs WHERE block_num BETWEEN 10 AND 19"),
            2 * (100 + 190) * 10 / 2 + 10);
  EXPECT_EQ(Scalar("SELECT count(*) FROM eth.logs a JOIN eth.logs b USING (block_num)"), 160);
  // Equality on fixed-size binary (addresses, hashes) pushed down to the files.
  EXPECT_EQ(Scalar("SELECT count(*) FROM eth.logs WHERE addr = from_hex('0101')"), 10);
  EXPECT_EQ(Scalar("SELECT count(*) FROM eth.logs WHERE hex(addr) = '0101'"), 10);
  // The table's types, not the stored ones: block_num is stored as int64.
  auto t = Query("SELECT block_num FROM eth.logs LIMIT 1");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->schema()->field(0)->type()->id(), arrow::Type::UINT64);
}

TEST_F(QueryEngineTest, ARangeRestrictsEveryTableToItsBlocks) {
  auto t = Query("SELECT block_num FROM eth.logs", BlockRange{12, 21});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->num_rows(), 20);
}

TEST_F(QueryEngineTest, ASnapshotHoldsItsFilesWhileCompactionSwapsThem) {
  auto parsed = *engine_->Parse("SELECT count(*) FROM eth.logs");
  auto run = *engine_->Run(parsed);
  ASSERT_TRUE(service_->CompactNow(logs_).ok());
  Append(40, 49);
  auto batch = run->Next();
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_NE(*batch, nullptr);
  EXPECT_EQ(std::static_pointer_cast<arrow::Int64Array>((*batch)->column(0))->Value(0), 80);
  EXPECT_EQ(Scalar("SELECT count(*) FROM eth.logs"), 100);
}

TEST_F(QueryEngineTest, AQueryReadsNoFileOutsideItsTables) {
  auto t = Query("SELECT * FROM eth.logs UNION ALL SELECT * FROM read_parquet('" + dir_.path() + "/x.parquet')");
  EXPECT_TRUE(IsInvalidArgument(t.status())) << t.status().ToString();
  // Names that are not tables are NotFound before anything runs.
  t = Query("SELECT * FROM eth.nope");
  EXPECT_TRUE(IsNotFound(t.status())) << t.status().ToString();
}

TEST_F(QueryEngineTest, StreamingRefusesOperatorsThatNeedEveryRow) {
  struct Case {
    const char* sql;
    const char* names;
  };
  for (const Case& c :
       {Case{"SELECT count(*) FROM eth.logs", "Aggregate"},
        Case{"SELECT block_num, count(*) FROM eth.logs GROUP BY 1", "Aggregate"},
        Case{"SELECT DISTINCT addr FROM eth.logs", "DISTINCT"}, Case{"SELECT * FROM eth.logs LIMIT 3", "Limit"},
        Case{"SELECT * FROM eth.logs ORDER BY value", "ORDER BY"},
        Case{"SELECT sum(value) OVER () FROM eth.logs", "Window"},
        Case{"SELECT * FROM eth.logs a LEFT JOIN eth.logs b USING (block_num)", "Join(Left)"},
        Case{"SELECT * FROM eth.logs WHERE block_num IN (SELECT block_num FROM eth.logs)", "Join(Mark)"}}) {
    Status st = engine_->CheckIncremental(*engine_->Parse(c.sql));
    EXPECT_TRUE(IsInvalidArgument(st)) << c.sql;
    EXPECT_NE(st.message().find(c.names), std::string::npos) << c.sql << ": " << st.message();
  }
  EXPECT_TRUE(
      engine_->CheckIncremental(*engine_->Parse("SELECT block_num, value * 2 FROM eth.logs WHERE value > 3")).ok());
}

TEST_F(QueryEngineTest, LimitsStopAQuery) {
  QueryLimits tight;
  tight.timeout_secs = 0.3;
  tight.max_concurrent = 1;
  tight.memory_bytes = 64 << 20;
  engine_ = std::make_unique<QueryEngine>(service_.get(), tight, &metrics_);
  auto hostile = *engine_->Parse(
      "SELECT sum(a.value * b.value + c.value) FROM eth.logs a, eth.logs b, eth.logs c, range(100000) r");
  auto run = *engine_->Run(hostile);
  // The one slot is taken.
  EXPECT_TRUE(IsBusy(engine_->Run(hostile).status()));
  auto batch = run->Next();
  EXPECT_FALSE(batch.ok());
  EXPECT_NE(batch.status().message().find("time limit"), std::string::npos) << batch.status().ToString();
  run.reset();
  EXPECT_EQ(engine_->running(), 0);
  // Memory: a sort of more than the limit fails instead of spilling.
  auto big = Query("SELECT string_agg(repeat('x', 1000) || r::VARCHAR, ',') FROM range(200000) t(r)");
  EXPECT_FALSE(big.ok());
}

TEST_F(QueryEngineTest, CancelStopsARunAtOnce) {
  auto run = *engine_->Run(*engine_->Parse("SELECT count(*) FROM eth.logs a, eth.logs b, range(10000000) r"));
  run->Cancel();
  auto batch = run->Next();
  EXPECT_TRUE(batch.status().IsCancelled()) << batch.status().ToString();
}

}  // namespace
}  // namespace sediment::query
