// Config: Sediment's settings as typed structs with defaults.
//
// Sources, later ones winning: built-in defaults < TOML file < environment
// (SEDIMENT_<SECTION>_<KEY>, e.g. SEDIMENT_WRITER_COMPACTOR_ACTIVE=false) <
// command-line flags (applied by the caller with Config::Set). Every value is
// validated where it is read, so an error names the key and where it came
// from (file and line, environment variable, or flag). Loading has no side
// effects: nothing is created on disk.
//
// Names and defaults of [writer], [writer.compactor] and [graveler.compaction]
// are exactly those of the specs in ../shared/spec.
//
// Thread-safety: a Config is a value; load it once, then share it read-only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace sediment {

struct ServerConfig {
  std::string listen = "127.0.0.1:8000";  // HOST:PORT
  // A request body that is not a streamed upload may hold at most this many
  // bytes: 413 before it is read (docs/security.md).
  int64_t max_body_bytes = 1 << 20;
  // A request's line and headers must arrive within this many seconds of its
  // first byte (of the connection, for the first request); else it is cut off.
  double header_timeout_secs = 10.0;
  // Host names (and IPs) requests may name besides loopback ones, the listen
  // address and the gateway's domain names; '*' wildcards. Empty on a
  // non-loopback listen address = any.
  std::vector<std::string> allowed_hosts;
};

// The S3 gateway (lakeFS's S3 protocol; src/server/s3_gateway.h). It always
// serves on server.listen; `listen` adds a port of its own.
struct GatewayConfig {
  std::string listen;  // HOST:PORT, or "" for none
  // Virtual-host addressing: <bucket>.<domain_name>.
  std::vector<std::string> domain_names = {"s3.local.lakefs.io"};
  std::string region = "us-east-1";
};

// The web console (src/server/console/console.h, docs/console.md), served at / on
// server.listen.
struct ConsoleConfig {
  bool enabled = true;
  // Its pages; "" = <dir of the sediment binary>/console, then ../console
  // (a build tree beside the source's console/).
  std::string dir;
  // Chart.js, served to the pages as /_console/vendor/chart.js (Debian's
  // libjs-chart.js by default).
  std::string chart_js = "/usr/share/javascript/chart.js/chart.min.js";
};

struct AuthConfig {
  // Encrypts stored access-key secrets (the S3 gateway needs them to check
  // signatures). "" = a random key kept in the database.
  std::string encrypt_secret_key;
};

struct S3Config {
  std::string endpoint;  // host:port or URL; empty = AWS
  std::string region = "us-east-1";
  std::string access_key_id;  // empty = AWS_ACCESS_KEY_ID / default chain
  std::string secret_access_key;
  std::string scheme = "https";  // "http" for a local MinIO
  bool path_style = true;        // bucket in the path, as MinIO wants
};

struct StorageConfig {
  std::string data_dir = "./data";
  // Where objects live: a local path, file:// or local:// URI, or s3://bucket/prefix.
  // Empty = <data_dir>/objects.
  std::string objects;
  S3Config s3;
};

struct DatabaseConfig {
  std::string type = "rocksdb";  // rocksdb | postgres | mem
  std::string rocksdb_path;      // empty = <data_dir>/kv
  bool rocksdb_sync = false;     // fsync the WAL on every write
  std::string postgres_dsn;
  std::string postgres_schema = "sediment";  // the PostgreSQL schema that holds Sediment's tables
};

struct LogConfig {
  std::string level = "info";   // trace | debug | info | warn | error | off
  std::string format = "text";  // text | json
};

// [writer.compactor], spec parquet-compaction.md "Settings".
struct CompactorConfig {
  bool active = true;
  double min_interval = 1.0;  // seconds
  int64_t skip_latest_segments = 3;
  double cooldown_duration = 1024.0;  // seconds
  int64_t max_eager_bytes = 102400;
  int64_t metadata_concurrency = 2;
  int64_t write_concurrency = 2;
  double gc_manifest_grace_period = 1800.0;  // seconds
  // Not in the spec: "adjacent" is exactly the spec's rules; "tiered" adds a
  // size-ratio rule that bounds write amplification (docs/compaction.md).
  std::string policy = "adjacent";
  double size_ratio = 8.0;  // tiered: a file merges only with newer neighbours of at least its size / size_ratio
  // Not in the spec: how long a server's claim to compact (and GC) a table lasts
  // without renewal; another server takes over a dead one's tables after this.
  double lease_ttl = 60.0;  // seconds
};

// [writer]: how every Parquet file is written, merged ones included.
struct WriterConfig {
  int64_t bytes = 2147483648;  // target size, uncompressed
  int64_t rows = 0;            // 0 = no limit
  double overflow = 1.0;
  std::string compression = "zstd(1)";
  int64_t max_row_group_mb = 128;
  // Not in the spec: rows per row group at most, whatever their size, and
  // the columns that get a bloom filter (those the table has; the default
  // names the columns chain queries look up by equality). docs/compaction.md.
  int64_t max_row_group_rows = 131072;
  // Whether a final file stores a column chunk that the codec shrinks by
  // less than 1/8 uncompressed (data pages v2, is_compressed false).
  bool store_incompressible = true;
  std::vector<std::string> bloom_filter_columns = {"address", "topic0",  "topic1",           "topic2", "topic3",
                                                   "hash",    "tx_hash", "transaction_hash", "from",   "to"};
  // How many of a table's newest blocks keep their hashes, so an append that
  // replaces them (a reorg) is proven against the stored hash of the block
  // before it. A deeper reorg is refused unless the request says force.
  int64_t max_reorg_depth = 1024;
  CompactorConfig compactor;
};

// [catalog]: the versioned object store (lakeFS API).
struct CatalogConfig {
  std::string cache_dir;                   // empty = <data_dir>/range-cache
  int64_t cache_bytes = int64_t{1} << 30;  // local disk budget for range files
  int64_t range_min_bytes = 256 << 10;     // content-defined split: not below this...
  int64_t range_max_bytes = 8 << 20;       // ...and always at this size
  int64_t range_split_modulus = 512;       // split after a key whose hash is 0 mod this
  double dropped_token_grace = 60.0;       // seconds retired staging tokens stay readable
  double gc_interval = 86400.0;            // seconds between garbage collections (0 = on demand only)
  double gc_retention_days = 21.0;         // commits younger than this keep their objects
  double gc_grace = 21600.0;               // seconds an unreferenced file is kept after it was written
  double link_address_ttl_secs = 3600.0;   // how long an address from GET .../staging/backing can be linked
  // Where repositories' storage namespaces may be (docs/catalog.md, "Storage namespaces").
  std::vector<std::string> local_namespace_roots;  // absolute directories; empty = <data_dir>/namespaces
  std::vector<std::string> s3_namespace_prefixes;  // s3://bucket[/prefix]; empty = anywhere
};

// [iceberg]: the Iceberg REST catalog over the tables (docs/iceberg.md). Snapshots
// stay listed for [writer.compactor] gc_manifest_grace_period: one policy with GC.
struct IcebergConfig {
  bool enabled = true;
  double token_ttl_secs = 86400.0;   // OAuth tokens from /iceberg/v1/oauth/tokens (engines do not all refresh)
  int64_t max_manifest_files = 512;  // a manifest splits past this many files
  // S3 storage: what loadTable tells engines (their own credentials otherwise).
  std::string s3_endpoint;       // empty = [storage.s3] endpoint
  std::string s3_access_key_id;  // read-only credentials to vend; empty = none
  std::string s3_secret_access_key;
  // Tables in repositories (docs/iceberg-repositories.md): how engines reach
  // their files on S3. "sts": credentials from the storage's STS (AssumeRole)
  // limited to the table's location, read-only unless the caller may write
  // it; "none": engines bring their own.
  std::string repository_credentials = "sts";
  std::string sts_role_arn = "arn:aws:iam::000000000000:role/sediment-iceberg";  // AWS: a role the key may assume
  double vended_credentials_secs = 3600;
};

// [query]: SQL over the chain tables as Amp's query server serves it (docs/query.md).
struct QueryConfig {
  bool enabled = true;
  std::string flight_listen = "127.0.0.1:1602";  // Arrow Flight SQL (gRPC); "" = none
  std::string jsonl_listen = "127.0.0.1:1603";   // JSON lines over HTTP (POST /); "" = none
  int64_t memory_limit_mib = 1024;               // per query
  double timeout_secs = 300;                     // per batch query, and per microbatch of a stream
  int64_t threads = 1;                           // engine threads per query
  int64_t max_concurrent = 4;                    // queries (and microbatches) running at once
  int64_t max_streams = 256;                     // streaming queries open at once
  int64_t microbatch_max_blocks = 1000;          // blocks in one microbatch of a stream at most
  double keep_alive_secs = 30;                   // an empty batch this often on a quiet stream
  double poll_interval_secs = 1;                 // how often a stream looks for blocks another server appended
};

// [actions]: lakeFS's actions (hooks on repository events, docs/actions.md).
struct ActionsConfig {
  bool enabled = true;
  std::string env_prefix = "LAKEFSACTION_";  // {{ ENV.X }} in hooks reads only names with this prefix
  double hook_timeout_secs = 60;             // a hook's time limit; a hook's `timeout` may only lower it
  int64_t lua_memory_mib = 64;               // a Lua hook's allocation cap
  int64_t hook_workers = 4;                  // hook runs at once on this server (each on a thread of its own)
  int64_t hook_runs_per_repository = 2;      // hook runs at once for one repository
  // Where a webhook may go beyond public addresses: host names ("hooks.internal",
  // "*.corp") and CIDR blocks ("10.0.0.0/8", "127.0.0.1"). Empty: public only.
  std::vector<std::string> webhook_allowed_hosts;
  std::string lua_sandbox;  // the sediment-lua program; "" = beside the server's binary
};

// [graveler.compaction], spec staging-compaction.md.
struct GravelerCompactionConfig {
  bool auto_trigger = false;
  int64_t threshold = 50000;
  int64_t workers = 2;  // background compactions at once (per server)
};

struct GravelerConfig {
  GravelerCompactionConfig compaction;
};

// [worker]: settings of the jobs that write tables (spec: worker.poll_interval_secs).
struct WorkerConfig {
  double poll_interval_secs = 1.0;
};

// One [[jobs]] entry: a raw dataset job that follows a chain and writes its
// tables. The only source today is a deterministic synthetic EVM-like chain.
struct JobConfig {
  std::string dataset;  // required; also the job's name
  std::string source = "synthetic";
  int64_t seed = 1;
  int64_t start_block = 0;        // the chain's first block
  int64_t history_blocks = 1000;  // blocks that already exist when the job first starts
  double block_time = 12.0;       // seconds between new blocks at the head
  int64_t txs_per_block = 150;
  double logs_per_tx = 2.0;
  double reorg_probability = 0.0;  // per new block
  int64_t max_reorg_depth = 3;
  bool autostart = true;
  // source = "evm-rpc": an Ethereum node's JSON-RPC (docs/configuration.md).
  std::string url;                   // http[s]://[user:password@]host[:port][/path]
  std::string ca_file;               // https: a PEM file of the CAs to trust instead of the system's
  std::vector<std::string> headers;  // "Name: value" sent with every request (a provider's API key)
  std::string finality = "latest";   // latest | safe | finalized | a number of confirmations
  int64_t batch_size = 50;           // blocks per batch request
  int64_t concurrency = 4;           // batch requests in flight
  double rate_limit = 0;             // requests per second, 0 = no limit
  double timeout = 10;               // seconds per request
  std::vector<std::string> tables = {"blocks", "transactions", "logs"};  // which tables the job writes
  std::string logs_from = "auto";                                        // auto | receipts | eth_getLogs
  int64_t logs_range = 2000;  // blocks per eth_getLogs call (halved when the node says too many)
  std::string origin;         // "file:line", for messages
};

struct Config {
  ServerConfig server;
  GatewayConfig gateway;
  ConsoleConfig console;
  AuthConfig auth;
  StorageConfig storage;
  DatabaseConfig database;
  LogConfig log;
  WriterConfig writer;
  GravelerConfig graveler;
  CatalogConfig catalog;
  IcebergConfig iceberg;
  QueryConfig query;
  ActionsConfig actions;
  WorkerConfig worker;
  std::vector<JobConfig> jobs;
  std::string source_path;  // the config file read (absolute), "" if none
  // Where each setting not left at its default was set: "file:line",
  // "environment variable NAME" or "flag --name" (for messages).
  std::map<std::string, std::string> origins;

  // Defaults, then `path` (if not empty), then the environment `env`
  // (a snapshot of environ; pass CurrentEnvironment()).
  static Result<Config> Load(const std::string& path, const std::map<std::string, std::string>& env);

  // Sets one setting from its text form, e.g. Set("server.listen", "0.0.0.0:9000", "flag --listen").
  Status Set(const std::string& key, const std::string& value, const std::string& origin);

  // Checks rules that span settings. Load calls it; call it again after Set.
  Status Validate() const;

  // Checks what the settings name on this machine (directories that are
  // files, a console directory without index.html, a Chart.js that is not
  // there), before the server creates anything. Returns warnings for what
  // only turns a feature off (a default path that is missing).
  Result<std::vector<std::string>> CheckPaths() const;

  // "file:line" (or the variable or flag) that set `key`, "built-in default" if none did.
  std::string OriginOf(const std::string& key) const;

  // Derived locations.
  std::string ObjectsUri() const;
  std::string RocksDbPath() const;
  std::string RangeCacheDir() const;
  // actions.lua_sandbox, or the sediment-lua beside the running binary if it is empty.
  std::string LuaSandboxPath() const;
  // catalog.local_namespace_roots, or <data_dir>/namespaces (made absolute) if it is empty.
  std::vector<std::string> LocalNamespaceRoots() const;

  // Every setting as "key = value" lines in TOML-ish form (secrets masked).
  std::string Dump() const;
};

std::map<std::string, std::string> CurrentEnvironment();

// How many threads serve HTTP requests (at least 16; four per core).
size_t HttpWorkerCount();

// One setting as `sediment options` prints it (from the table the server
// validates with; tests/test_docs.py holds docs/configuration.md to it).
struct OptionInfo {
  std::string key;                   // "writer.bytes"; [[jobs]] keys as "jobs.<key>"
  std::string type;                  // bool | int | number | string | list
  std::string default_value;         // TOML
  std::string bound;                 // "≥ 1", "> 0", "16 to 1073741824", or ""
  std::vector<std::string> choices;  // a setting that is one of a few
  std::vector<std::string> env;      // its environment variables ([[jobs]]: none)
};
std::vector<OptionInfo> DescribeOptions();

// "HOST:PORT" -> parts; the port must be 0..65535.
Status ParseHostPort(const std::string& text, std::string* host, int* port);

// A [writer] compression value: "zstd(1)", "zstd", "snappy", "lz4", "gzip(6)",
// "gzip", "brotli(5)", "none".
struct CompressionSetting {
  std::string codec;         // zstd | snappy | lz4 | gzip | brotli | none
  std::optional<int> level;  // only zstd, gzip and brotli take one
};
Result<CompressionSetting> ParseCompression(const std::string& text);

// "s3://bucket" or "s3://bucket/prefix" (trailing '/' ignored). InvalidArgument
// if the bucket is empty or the prefix has an empty, '.' or '..' part, since
// those would not name the place a prefix check seems to allow.
struct S3Uri {
  std::string bucket;
  std::string prefix;  // "" = the whole bucket; no leading or trailing '/'
};
Result<S3Uri> ParseS3Uri(const std::string& text);
// S3's rules for a bucket's name: 3-63 of [a-z0-9.-], starting and ending with
// a letter or digit, no "..". A name that breaks them names no bucket anywhere.
bool IsS3BucketName(std::string_view name);

}  // namespace sediment
