#include "base/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace sediment {
namespace {

namespace fs = std::filesystem;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sediment_config_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& text) {
    std::string path = (dir_ / "config.toml").string();
    std::ofstream(path) << text;
    return path;
  }

  fs::path dir_;
};

TEST_F(ConfigTest, DefaultsMatchTheSpecs) {
  auto config = Config::Load("", {});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const auto& w = config->writer;
  EXPECT_EQ(w.bytes, 2147483648);
  EXPECT_EQ(w.rows, 0);
  EXPECT_EQ(w.overflow, 1.0);
  EXPECT_EQ(w.compression, "zstd(1)");
  EXPECT_EQ(w.max_row_group_mb, 128);
  EXPECT_EQ(w.max_row_group_rows, 131072);
  EXPECT_EQ(w.bloom_filter_columns.front(), "address");
  EXPECT_TRUE(w.compactor.active);
  EXPECT_EQ(w.compactor.min_interval, 1.0);
  EXPECT_EQ(w.compactor.skip_latest_segments, 3);
  EXPECT_EQ(w.compactor.cooldown_duration, 1024.0);
  EXPECT_EQ(w.compactor.max_eager_bytes, 102400);
  EXPECT_EQ(w.compactor.metadata_concurrency, 2);
  EXPECT_EQ(w.compactor.write_concurrency, 2);
  EXPECT_EQ(w.compactor.gc_manifest_grace_period, 1800.0);
  EXPECT_FALSE(config->graveler.compaction.auto_trigger);
  EXPECT_EQ(config->graveler.compaction.threshold, 50000);
  EXPECT_EQ(config->server.listen, "127.0.0.1:8000");
  EXPECT_EQ(config->database.type, "rocksdb");
  EXPECT_EQ(config->RocksDbPath(), "./data/kv");
  EXPECT_EQ(config->ObjectsUri(), "./data/objects");
}

TEST_F(ConfigTest, FileValuesAndIntegerForFloat) {
  auto path = Write(R"(
[writer]
bytes = 536870912
overflow = 4

[writer.compactor]
metadata_concurrency = 1
write_concurrency = 1
cooldown_duration = 60

[graveler.compaction]
auto_trigger = true
)");
  auto config = Config::Load(path, {});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->writer.bytes, 536870912);
  EXPECT_EQ(config->writer.overflow, 4.0);
  EXPECT_EQ(config->writer.compactor.metadata_concurrency, 1);
  EXPECT_EQ(config->writer.compactor.cooldown_duration, 60.0);
  EXPECT_TRUE(config->graveler.compaction.auto_trigger);
}

TEST_F(ConfigTest, DottedKeysWork) {
  auto config = Config::Load(Write("writer.compactor.active = false\n"), {});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_FALSE(config->writer.compactor.active);
}

struct BadCase {
  std::string toml;
  std::string expect;  // substring of the error
};

TEST_F(ConfigTest, BadFilesNameKeyFileAndLine) {
  std::vector<BadCase> cases = {
      {"[writer]\nbytez = 5\n", "config.toml:2: writer.bytez: unknown setting"},
      {"[auth]\nencrypt_secret_key = \"short\"\n",
       "config.toml:2: auth.encrypt_secret_key: must be at least 32 bytes of key material (it has 5)"},
      {"[writr]\nbytes = 5\n", "config.toml:1: writr: unknown setting"},
      {"[writer]\n\nbytes = -5\n", "config.toml:3: writer.bytes: must be at least 1, got -5"},
      {"[writer]\nbytes = \"big\"\n", "config.toml:2: writer.bytes: must be an integer, got \"big\""},
      {"[writer.compactor]\nactive = 1\n", "config.toml:2: writer.compactor.active: must be a boolean"},
      {"[writer]\noverflow = 0.5\n", "writer.overflow: must be at least 1"},
      {"[writer]\ncompression = \"zstd(99)\"\n", "zstd level must be from 1 to 22"},
      {"[writer]\ncompression = \"lzma\"\n", "unknown codec"},
      {"[catalog]\nrange_min_bytes = 0\n", "catalog.range_min_bytes: must be at least 1, got 0"},
      {"[catalog]\nrange_min_bytes = 4096\nrange_max_bytes = 2048\n",
       "config.toml:3: catalog.range_max_bytes: catalog.range_max_bytes (2048) must be at least "
       "catalog.range_min_bytes (4096) (range_max_bytes set at "},
      {"[graveler.compaction]\nworkers = 0\n", "graveler.compaction.workers: must be at least 1, got 0"},
      {"[writer.compactor]\nlease_ttl = 0.5\n", "writer.compactor.lease_ttl: must be at least 1"},
      {"[server]\nlisten = \"localhost\"\n", "config.toml:2: server.listen: \"localhost\" is not HOST:PORT"},
      {"[server]\nlisten = \"127.0.0.1:70000\"\n", "port must be a number from 0 to 65535"},
      {"[database]\ntype = \"mysql\"\n", "database.type: must be one of rocksdb, postgres, mem"},
      {"[writer.compactor]\nmin_interval = -1.0\n", "writer.compactor.min_interval: must be at least 0"},
      {"writer = 5\n", "config.toml:1: writer: must be a table"},
      {"[writer\nbytes = 5\n", "config.toml:1:"},
      {"[storage]\nobjects = \"gs://bucket\"\n", "unsupported scheme \"gs://\""},
      {"[database]\ntype = \"postgres\"\n",
       "config.toml:2: database.type: is \"postgres\" but database.postgres_dsn is empty"},
      {"[database]\npostgres_schema = \"Bad-Name\"\n", "database.postgres_schema: \"Bad-Name\" must be [a-z0-9_]+"},
      {"[writer]\nmax_row_group_rows = 10\n",
       "config.toml:2: writer.max_row_group_rows: must be at least 1024, got 10"},
      {"[writer]\nbloom_filter_columns = [\"address\", \"\"]\n", "writer.bloom_filter_columns: an entry is empty"},
      {"[writer]\nbloom_filter_columns = \"address\"\n", "writer.bloom_filter_columns"},
  };
  for (const auto& c : cases) {
    auto config = Config::Load(Write(c.toml), {});
    ASSERT_FALSE(config.ok()) << c.toml;
    EXPECT_TRUE(IsInvalidArgument(config.status()));
    EXPECT_NE(config.status().message().find(c.expect), std::string::npos)
        << "toml: " << c.toml << "\nerror: " << config.status().message();
  }
}

// [catalog] local_namespace_roots and s3_namespace_prefixes: lists, from TOML
// arrays or comma-separated environment values, checked at start-up.
// A short secrets key stops start-up, from any source (issue 47).
TEST_F(ConfigTest, AShortEncryptSecretKeyIsRefused) {
  auto config = Config::Load("", {{"SEDIMENT_AUTH_ENCRYPT_SECRET_KEY", "x"}});
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("SEDIMENT_AUTH_ENCRYPT_SECRET_KEY"), std::string::npos)
      << config.status().message();
  EXPECT_NE(config.status().message().find("at least 32 bytes"), std::string::npos);
  EXPECT_TRUE(Config::Load("", {{"SEDIMENT_AUTH_ENCRYPT_SECRET_KEY", std::string(32, 'k')}}).ok());
  EXPECT_TRUE(Config::Load("", {}).ok()) << "empty: a key kept in the store";
}

TEST_F(ConfigTest, NamespaceSettings) {
  auto config = Config::Load("", {{"SEDIMENT_STORAGE_DATA_DIR", "/srv/sediment/"}});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_TRUE(config->catalog.local_namespace_roots.empty());
  EXPECT_EQ(config->LocalNamespaceRoots(), std::vector<std::string>{"/srv/sediment/namespaces"});
  EXPECT_TRUE(config->catalog.s3_namespace_prefixes.empty()) << "empty = any bucket";
  auto relative = Config::Load("", {});
  ASSERT_TRUE(relative.ok());
  EXPECT_EQ(relative->LocalNamespaceRoots(),
            std::vector<std::string>{(fs::current_path() / "data" / "namespaces").lexically_normal().string()})
      << "the default root is absolute even when the data dir is not";

  config = Config::Load(Write("[catalog]\nlocal_namespace_roots = [\"/srv/a\", \"/srv/b/\"]\n"
                              "s3_namespace_prefixes = [\"s3://lake/repos\", \"s3://scratch\"]\n"),
                        {});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->LocalNamespaceRoots(), (std::vector<std::string>{"/srv/a", "/srv/b/"}));
  EXPECT_EQ(config->catalog.s3_namespace_prefixes, (std::vector<std::string>{"s3://lake/repos", "s3://scratch"}));
  EXPECT_NE(config->Dump().find("catalog.local_namespace_roots = [\"/srv/a\", \"/srv/b/\"]"), std::string::npos)
      << config->Dump();

  config = Config::Load(Write("[catalog]\nlocal_namespace_roots = [\"/srv/a\"]\n"),
                        {{"SEDIMENT_CATALOG_LOCAL_NAMESPACE_ROOTS", "/env/a, /env/b"},
                         {"SEDIMENT_CATALOG_S3_NAMESPACE_PREFIXES", "s3://lake"}});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->catalog.local_namespace_roots, (std::vector<std::string>{"/env/a", "/env/b"}));
  EXPECT_EQ(config->catalog.s3_namespace_prefixes, std::vector<std::string>{"s3://lake"});
  config = Config::Load("", {{"SEDIMENT_CATALOG_S3_NAMESPACE_PREFIXES", ""}});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_TRUE(config->catalog.s3_namespace_prefixes.empty());

  std::vector<BadCase> bad_files = {
      {"[catalog]\nlocal_namespace_roots = \"/srv\"\n",
       "config.toml:2: catalog.local_namespace_roots: must be a list of strings, got \"/srv\""},
      {"[catalog]\nlocal_namespace_roots = [\"/srv\", 5]\n",
       "catalog.local_namespace_roots: must be a list of strings"},
      {"[catalog]\nlocal_namespace_roots = [\"repos\"]\n",
       "config.toml:2: catalog.local_namespace_roots: \"repos\" is not an absolute directory"},
      {"[catalog]\nlocal_namespace_roots = [\"local:///srv\"]\n", "\"local:///srv\" is not an absolute directory"},
      {"[catalog]\ns3_namespace_prefixes = [\"gs://lake\"]\n",
       "catalog.s3_namespace_prefixes: \"gs://lake\" is not s3://bucket or s3://bucket/prefix"},
      {"[catalog]\ns3_namespace_prefixes = [\"s3://\"]\n", "\"s3://\" is not s3://bucket or s3://bucket/prefix"},
      {"[catalog]\ns3_namespace_prefixes = [\"s3://lake/a/../b\"]\n", "\"s3://lake/a/../b\" is not s3://bucket"},
      {"[console]\ndir = \"console\"\n", "config.toml:2: console.dir: \"console\" is not an absolute directory"},
      {"[console]\nchart_js = \"chart.js\"\n", "console.chart_js: \"chart.js\" is not an absolute file path"},
      {"[console]\nenabled = \"yes\"\n", "console.enabled"},
  };
  for (const auto& c : bad_files) {
    auto bad = Config::Load(Write(c.toml), {});
    ASSERT_FALSE(bad.ok()) << c.toml;
    EXPECT_TRUE(IsInvalidArgument(bad.status()));
    EXPECT_NE(bad.status().message().find(c.expect), std::string::npos)
        << "toml: " << c.toml << "\nerror: " << bad.status().message();
  }
  std::vector<std::pair<std::map<std::string, std::string>, std::string>> bad_env = {
      {{{"SEDIMENT_CATALOG_LOCAL_NAMESPACE_ROOTS", "relative/dir"}},
       "environment variable SEDIMENT_CATALOG_LOCAL_NAMESPACE_ROOTS: catalog.local_namespace_roots: "
       "\"relative/dir\" is not an absolute directory"},
      {{{"SEDIMENT_CATALOG_LOCAL_NAMESPACE_ROOTS", "/a,,/b"}},
       "environment variable SEDIMENT_CATALOG_LOCAL_NAMESPACE_ROOTS: catalog.local_namespace_roots: an entry is empty"},
      {{{"SEDIMENT_CATALOG_S3_NAMESPACE_PREFIXES", "s3://lake,/srv"}},
       "environment variable SEDIMENT_CATALOG_S3_NAMESPACE_PREFIXES: catalog.s3_namespace_prefixes: \"/srv\" is not "
       "s3://bucket or s3://bucket/prefix"},
  };
  for (const auto& [env, expect] : bad_env) {
    auto bad = Config::Load("", env);
    ASSERT_FALSE(bad.ok()) << expect;
    EXPECT_EQ(bad.status().message(), expect);
  }
}

TEST(ParseS3UriTest, SplitsBucketAndPrefix) {
  auto loc = ParseS3Uri("s3://lake/repos/a/");
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  EXPECT_EQ(loc->bucket, "lake");
  EXPECT_EQ(loc->prefix, "repos/a");
  loc = ParseS3Uri("s3://lake");
  ASSERT_TRUE(loc.ok());
  EXPECT_EQ(loc->bucket, "lake");
  EXPECT_EQ(loc->prefix, "");
  for (const std::string& bad :
       std::vector<std::string>{"s3://", "s3:///x", "lake/x", "s3://lake//x", "s3://lake/./x", "s3://lake/x/..",
                                "local:///x", std::string("s3://la\0ke", 10), "s3://w", "s3://UPPER/x", "s3://a..b/x",
                                "s3://-x-/y", "s3://" + std::string(64, 'b'), "s3://\xc8\xbe"}) {
    EXPECT_FALSE(ParseS3Uri(bad).ok()) << bad;
  }
}

TEST_F(ConfigTest, UnreadableFile) {
  auto config = Config::Load((dir_ / "missing.toml").string(), {});
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("missing.toml"), std::string::npos) << config.status().message();
}

TEST_F(ConfigTest, EnvironmentOverridesFile) {
  auto path = Write("[writer.compactor]\nactive = true\nmin_interval = 5.0\n");
  auto config = Config::Load(path, {{"SEDIMENT_WRITER_COMPACTOR_ACTIVE", "false"},
                                    {"SEDIMENT_WRITER_COMPACTOR_MIN_INTERVAL", "2.5"},
                                    {"SEDIMENT_SERVER_LISTEN", "0.0.0.0:9000"},
                                    {"SEDIMENT_TEST_TMP", "/tmp/ignored"}});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_FALSE(config->writer.compactor.active);
  EXPECT_EQ(config->writer.compactor.min_interval, 2.5);
  EXPECT_EQ(config->server.listen, "0.0.0.0:9000");
}

TEST_F(ConfigTest, LakefsAliasesAndPrecedence) {
  auto config = Config::Load(
      "", {{"LAKEFS_GRAVELER_COMPACTION_AUTO_TRIGGER", "true"}, {"LAKEFS_GRAVELER_COMPACTION_THRESHOLD", "100"}});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_TRUE(config->graveler.compaction.auto_trigger);
  EXPECT_EQ(config->graveler.compaction.threshold, 100);

  config = Config::Load(
      "", {{"LAKEFS_GRAVELER_COMPACTION_THRESHOLD", "100"}, {"SEDIMENT_GRAVELER_COMPACTION_THRESHOLD", "7"}});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->graveler.compaction.threshold, 7);
}

TEST_F(ConfigTest, BadEnvironmentNamesVariable) {
  auto config = Config::Load("", {{"SEDIMENT_WRITER_BYTES", "lots"}});
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("environment variable SEDIMENT_WRITER_BYTES: writer.bytes"),
            std::string::npos)
      << config.status().message();

  config = Config::Load("", {{"SEDIMENT_WRITER_BYTEZ", "5"}});
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("SEDIMENT_WRITER_BYTEZ: unknown setting"), std::string::npos);
}

TEST_F(ConfigTest, SetFromFlag) {
  auto config = Config::Load("", {});
  ASSERT_TRUE(config.ok());
  ASSERT_TRUE(config->Set("storage.data_dir", "/tmp/x", "flag --data-dir").ok());
  EXPECT_EQ(config->RocksDbPath(), "/tmp/x/kv");
  Status st = config->Set("server.listen", "nope", "flag --listen");
  EXPECT_NE(st.message().find("flag --listen: server.listen"), std::string::npos) << st.message();
}

TEST(CompressionTest, Forms) {
  EXPECT_EQ(ParseCompression("zstd(1)")->codec, "zstd");
  EXPECT_EQ(*ParseCompression("zstd(1)")->level, 1);
  EXPECT_FALSE(ParseCompression("zstd")->level.has_value());
  EXPECT_EQ(*ParseCompression("gzip(6)")->level, 6);
  EXPECT_TRUE(ParseCompression("snappy").ok());
  EXPECT_TRUE(ParseCompression("lz4").ok());
  EXPECT_TRUE(ParseCompression("none").ok());
  EXPECT_FALSE(ParseCompression("snappy(3)").ok());
  EXPECT_FALSE(ParseCompression("gzip(10)").ok());
  EXPECT_FALSE(ParseCompression("zstd(x)").ok());
  EXPECT_FALSE(ParseCompression("zstd(1").ok());
}

TEST(HostPortTest, Forms) {
  std::string host;
  int port;
  ASSERT_TRUE(ParseHostPort("127.0.0.1:8000", &host, &port).ok());
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 8000);
  ASSERT_TRUE(ParseHostPort("[::1]:0", &host, &port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_FALSE(ParseHostPort(":80", &host, &port).ok());
  EXPECT_FALSE(ParseHostPort("host:", &host, &port).ok());
  EXPECT_FALSE(ParseHostPort("host:-1", &host, &port).ok());
}

}  // namespace
}  // namespace sediment

namespace sediment {
namespace {

class JobsConfigTest : public ConfigTest {};

TEST_F(JobsConfigTest, ParsesJobs) {
  auto config = Config::Load(Write(R"(
[worker]
poll_interval_secs = 0.5

[[jobs]]
dataset = "demo"
block_time = 0.5
reorg_probability = 0.05

[[jobs]]
dataset = "other"
autostart = false
)"),
                             {});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->worker.poll_interval_secs, 0.5);
  ASSERT_EQ(config->jobs.size(), 2u);
  EXPECT_EQ(config->jobs[0].dataset, "demo");
  EXPECT_EQ(config->jobs[0].block_time, 0.5);
  EXPECT_EQ(config->jobs[0].reorg_probability, 0.05);
  EXPECT_EQ(config->jobs[0].txs_per_block, 150);
  EXPECT_FALSE(config->jobs[1].autostart);
}

TEST_F(JobsConfigTest, BadJobsNameTheSetting) {
  std::vector<std::pair<std::string, std::string>> cases = {
      {"[[jobs]]\ndataset = \"d\"\nblok_time = 1\n", "config.toml:3: jobs.blok_time: unknown job setting"},
      {"[[jobs]]\ndataset = \"d\"\nreorg_probability = 2.0\n", "jobs.reorg_probability: must be from 0 to 1"},
      {"[[jobs]]\nblock_time = 1\n", "config.toml:1: jobs: an entry has no dataset"},
      {"[[jobs]]\ndataset = \"Bad\"\n", "is not a dataset name"},
      {"[[jobs]]\ndataset = \"d\"\n[[jobs]]\ndataset = \"d\"\n", "dataset \"d\" has two jobs"},
      {"jobs = 5\n", "jobs: must be an array of tables"},
  };
  for (const auto& [toml, expect] : cases) {
    auto config = Config::Load(Write(toml), {});
    ASSERT_FALSE(config.ok()) << toml;
    EXPECT_NE(config.status().message().find(expect), std::string::npos) << config.status().message();
  }
}

// What a setting names on disk is checked before anything is created, naming where it was set.
TEST_F(ConfigTest, PathsThatCannotWorkStopStartUpNamingTheirOrigin) {
  std::ofstream(dir_ / "a-file") << "x";
  const std::string file = (dir_ / "a-file").string(), here = dir_.string();
  struct Case {
    std::string toml, expect;
  };
  const Case cases[] = {
      {"[catalog]\ncache_dir = \"" + file + "\"\n", "config.toml:2: catalog.cache_dir: " + file + " exists and is not"},
      {"[storage]\ndata_dir = \"" + file + "\"\n", "config.toml:2: storage.data_dir: " + file + " exists and is not"},
      {"[console]\ndir = \"" + here + "\"\n", "config.toml:2: console.dir: " + here + " has no index.html"},
      {"[console]\nchart_js = \"" + here + "/nope.js\"\n",
       "config.toml:2: console.chart_js: " + here + "/nope.js is not"},
  };
  const std::map<std::string, std::string> no_actions = {{"SEDIMENT_ACTIONS_ENABLED", "false"}};
  for (const auto& c : cases) {
    auto config = Config::Load(Write(c.toml), no_actions);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    auto checked = config->CheckPaths();
    ASSERT_FALSE(checked.ok()) << c.toml;
    EXPECT_NE(checked.status().message().find(c.expect), std::string::npos) << checked.status().message();
  }
  // The built-in Chart.js path, missing, turns the charts off with a warning; from the environment it is an error.
  auto config = Config::Load("", {{"SEDIMENT_STORAGE_DATA_DIR", here}, {"SEDIMENT_ACTIONS_ENABLED", "false"}});
  ASSERT_TRUE(config.ok());
  config->console.chart_js = here + "/missing.js";
  auto warned = config->CheckPaths();
  ASSERT_TRUE(warned.ok()) << warned.status().ToString();
  ASSERT_EQ(warned->size(), 1u);
  EXPECT_NE(warned->front().find("the console shows no charts"), std::string::npos);
  config = Config::Load("", {{"SEDIMENT_CONSOLE_CHART_JS", here + "/missing.js"}, {"SEDIMENT_ACTIONS_ENABLED", "0"}});
  ASSERT_TRUE(config.ok());
  EXPECT_NE(config->CheckPaths().status().message().find("environment variable SEDIMENT_CONSOLE_CHART_JS"),
            std::string::npos);
  // With actions on: a sandbox that cannot be run, and more hook workers than half the HTTP workers.
  config = Config::Load(Write("[actions]\nlua_sandbox = \"" + file + "\"\n"), {});
  ASSERT_TRUE(config.ok());
  EXPECT_NE(config->CheckPaths().status().message().find("config.toml:2: actions.lua_sandbox: the Lua sandbox program"),
            std::string::npos)
      << config->CheckPaths().status().ToString();
  config = Config::Load(Write("[actions]\nhook_workers = 100000\n"), {});
  ASSERT_TRUE(config.ok());
  EXPECT_NE(config->CheckPaths().status().message().find("config.toml:2: actions.hook_workers: 100000 is more than"),
            std::string::npos)
      << config->CheckPaths().status().ToString();
}

TEST_F(ConfigTest, OptionsDescribeTheirDefaultsAndBounds) {
  std::map<std::string, OptionInfo> by_key;
  for (auto& o : DescribeOptions()) by_key[o.key] = o;
  EXPECT_EQ(by_key["writer.max_row_group_rows"].bound, "≥ 1024");
  EXPECT_EQ(by_key["writer.max_row_group_rows"].default_value, "131072");
  EXPECT_EQ(by_key["query.memory_limit_mib"].bound, "16 to 1073741824");
  EXPECT_EQ(by_key["server.header_timeout_secs"].bound, "> 0");
  EXPECT_EQ(by_key["worker.poll_interval_secs"].bound, "≥ 0.01");
  EXPECT_EQ(by_key["database.type"].choices, (std::vector<std::string>{"rocksdb", "postgres", "mem"}));
  EXPECT_EQ(by_key["actions.enabled"].env,
            (std::vector<std::string>{"SEDIMENT_ACTIONS_ENABLED", "LAKEFS_ACTIONS_ENABLED"}));
  EXPECT_EQ(by_key["jobs.reorg_probability"].bound, "0 to 1");
  EXPECT_EQ(by_key["console.chart_js"].default_value, "\"/usr/share/javascript/chart.js/chart.min.js\"");
}

}  // namespace
}  // namespace sediment
