#include "kv/kv.h"

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>

#include "base/failpoint.h"
#include "base/test_util.h"
#include "kv/kv_conformance.h"

namespace sediment::kv {
namespace {

// Each store opened by the factory gets its own directory, removed at exit.
std::shared_ptr<KvStore> OpenFreshRocksDb() {
  static auto* dirs = new std::vector<std::unique_ptr<testing::TempDir>>();
  dirs->push_back(std::make_unique<testing::TempDir>());
  auto store = OpenRocksDb(dirs->back()->Sub("kv"), /*sync=*/false);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? *store : nullptr;
}

INSTANTIATE_TEST_SUITE_P(Mem, KvConformanceTest, ::testing::Values(KvDriver{"mem", [] { return NewMemoryStore(); }}),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(RocksDb, KvConformanceTest, ::testing::Values(KvDriver{"rocksdb", OpenFreshRocksDb}),
                         [](const auto& info) { return info.param.name; });

// PostgreSQL runs when scripts/test.sh started one (SEDIMENT_TEST_POSTGRES_DSN);
// each store gets its own schema, so every test starts empty.
std::shared_ptr<KvStore> OpenFreshPostgres() {
  const char* dsn = std::getenv("SEDIMENT_TEST_POSTGRES_DSN");
  if (dsn == nullptr) return nullptr;
  static std::atomic<int> n{0};
  std::string schema = "t" + std::to_string(::getpid()) + "_" + std::to_string(n++);
  auto store = OpenPostgres(dsn, schema);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? *store : nullptr;
}

INSTANTIATE_TEST_SUITE_P(Postgres, KvConformanceTest, ::testing::Values(KvDriver{"postgres", OpenFreshPostgres}),
                         [](const auto& info) { return info.param.name; });

TEST(PostgresTest, RefusesANewerSchema) {
  const char* dsn = std::getenv("SEDIMENT_TEST_POSTGRES_DSN");
  if (dsn == nullptr) GTEST_SKIP() << "no PostgreSQL (scripts/test.sh starts one)";
  std::string schema = "newer" + std::to_string(::getpid());
  ASSERT_TRUE(OpenPostgres(dsn, schema).ok());
  auto admin = OpenPostgres(dsn, schema);
  ASSERT_TRUE(admin.ok());
  // Pretend a later build migrated the database.
  PGconn* c = PQconnectdb(dsn);
  PQclear(PQexec(c, ("INSERT INTO " + schema + ".sediment_schema VALUES (99)").c_str()));
  PQfinish(c);
  auto again = OpenPostgres(dsn, schema);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("schema is version 99, newer than this build knows"), std::string::npos)
      << again.status().ToString();
}

// A COMMIT that lands but whose answer is lost (the connection drops) is
// retried; the retry must learn that the first attempt landed rather than
// re-run the batch, fail its preconditions and report a failure.
TEST(PostgresTest, ABatchWhoseCommitAnswerIsLostReportsThatItLanded) {
  auto store = OpenFreshPostgres();
  if (!store) GTEST_SKIP() << "no PostgreSQL (scripts/test.sh starts one)";
  ASSERT_TRUE(failpoint::Arm("kv.postgres.commit_lost", failpoint::Action::kError).ok());
  Batch b;
  b.Require(Precondition::Absent("k")).Put("k", "v1");
  Status st = store->Apply(b);
  EXPECT_EQ(failpoint::Hits("kv.postgres.commit_lost"), 1) << "the first COMMIT's answer was lost";
  failpoint::DisarmAll();
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(*store->Get("k"), "v1");
  // And a batch that really fails its precondition still fails.
  Batch again;
  again.Require(Precondition::Absent("k")).Put("k", "v2");
  EXPECT_TRUE(IsPreconditionFailed(store->Apply(again)));
  EXPECT_EQ(*store->Get("k"), "v1");
}

TEST(PostgresTest, UnreachableDatabaseIsUnavailable) {
  auto store = OpenPostgres("host=127.0.0.1 port=1 user=x dbname=x connect_timeout=1", "s");
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(IsUnavailable(store.status())) << store.status().ToString();
}

TEST(RocksDbTest, DataSurvivesReopen) {
  testing::TempDir dir;
  {
    auto store = OpenRocksDb(dir.Sub("kv"), true);
    ASSERT_TRUE(store.ok());
    Batch b;
    b.Put("a", "1").Put("b", "2");
    ASSERT_TRUE((*store)->Apply(b).ok());
  }
  auto store = OpenRocksDb(dir.Sub("kv"), false);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(*(*store)->Get("a"), "1");
  EXPECT_EQ(*(*store)->Get("b"), "2");
}

TEST(RocksDbTest, SecondOpenOfSamePathIsBusy) {
  testing::TempDir dir;
  auto first = OpenRocksDb(dir.Sub("kv"), false);
  ASSERT_TRUE(first.ok());
  auto second = OpenRocksDb(dir.Sub("kv"), false);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(IsBusy(second.status())) << second.status().ToString();
  EXPECT_NE(second.status().message().find(dir.Sub("kv")), std::string::npos);
}

TEST(RocksDbTest, UnwritablePathIsAClearError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root can write anywhere";
  testing::TempDir dir;
  ::chmod(dir.path().c_str(), 0500);
  auto store = OpenRocksDb(dir.Sub("kv"), false);
  ::chmod(dir.path().c_str(), 0700);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find(dir.Sub("kv")), std::string::npos) << store.status().message();
}

TEST(KvTest, PrefixEnd) {
  EXPECT_EQ(PrefixEnd("abc"), "abd");
  EXPECT_EQ(PrefixEnd(std::string("a\xff", 2)), "b");
  EXPECT_EQ(PrefixEnd(std::string("\xff\xff", 2)), "");
  EXPECT_EQ(PrefixEnd(""), "");
}

TEST(KvTest, OpenByType) {
  OpenOptions opts;
  opts.type = "mem";
  EXPECT_TRUE(Open(opts).ok());
  opts.type = "cassandra";
  EXPECT_TRUE(IsInvalidArgument(Open(opts).status()));
}

}  // namespace
}  // namespace sediment::kv
