#include "server/app.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "actions/actions.h"
#include "auth/auth.h"
#include "base/failpoint.h"
#include "base/version.h"
#include "blob/blob.h"
#include "blob/sts.h"
#include "catalog/catalog.h"
#include "catalog/catalog_gc.h"
#include "catalog/importer.h"
#include "catalog/staging_compactor.h"
#include "catalog/storage_namespace.h"
#include "chain/ingest_job.h"
#include "iceberg_tables/catalog.h"
#include "kv/kv.h"
#include "repo_tables/repo_tables.h"
#include "server/console/console.h"
#include "server/http/errors.h"
#include "server/http/http_server.h"
#include "server/http/principal.h"
#include "server/http/route.h"
#include "server/iceberg/catalog_api.h"
#include "server/lakefs/api.h"
#include "server/query/query_server.h"
#include "server/route_table.h"
#include "server/s3/gateway.h"
#include "server/server_identity.h"
#include "server/tables/jobs_api.h"
#include "server/tables/scan_api.h"
#include "server/tables/tables_api.h"
#include "table/table_service.h"

namespace sediment::server {
namespace {

// Creates `dir` (and parents) and checks we can write there.
Status PrepareDataDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError(fmt::format("cannot create data directory {}: {}", dir, ec.message()));
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return Status::IOError(fmt::format("data directory {} is not writable: {}", dir, std::strerror(errno)));
  }
  return Status::OK();
}

// The server's own files and directories: no storage namespace may be in or around them.
std::vector<std::string> ServerOwnedPaths(const Config& c) {
  // The whole data directory (a namespace root inside it is carved out, see
  // storage_namespace.h), and each of the server's places by name, wherever
  // they were configured to be.
  std::vector<std::string> out = {c.storage.data_dir, c.storage.data_dir + "/server-id", c.RangeCacheDir()};
  if (c.database.type == "rocksdb") out.push_back(c.RocksDbPath());
  std::string objects = c.ObjectsUri();
  if (objects.rfind("s3://", 0) != 0) {
    for (const char* scheme : {"file://", "local://"}) {
      if (objects.rfind(scheme, 0) == 0) objects = objects.substr(std::strlen(scheme));
    }
    out.push_back(objects);
  }
  // And every file it reads: its config, the console's pages, CA bundles.
  for (const std::string& read : {c.source_path, c.console.dir, c.console.chart_js}) {
    if (!read.empty()) out.push_back(read);
  }
  for (const auto& job : c.jobs) {
    if (!job.ca_file.empty()) out.push_back(job.ca_file);
  }
  return out;
}

// The limits of a listener on `listen` (HOST:PORT, validated with the config);
// `gateway`: the gateway's own port, where every refusal is an S3 error.
HttpLimits LimitsOf(const Config& c, const std::string& listen, bool gateway = false) {
  HttpLimits l;
  l.refuse = [gateway](const httplib::Request& req, httplib::Response& res, int status, const std::string& message) {
    if (gateway || IsGatewayRequest(req)) {
      ReplyS3Refusal(req, res, status, message);
    } else if (req.path.rfind("/iceberg/", 0) == 0) {
      ReplyIcebergRefusal(res, status, message);
    } else {
      ReplyError(res, status, message);
    }
  };
  l.max_body_bytes = static_cast<size_t>(c.server.max_body_bytes);
  l.header_timeout = std::chrono::milliseconds(static_cast<int64_t>(c.server.header_timeout_secs * 1000));
  std::string host;
  int port = 0;
  if (ParseHostPort(listen, &host, &port).ok()) {
    l.host_allowed = HostRule(host, c.gateway.domain_names, c.server.allowed_hosts);
  }
  return l;
}

}  // namespace

App::App(Config config, AppDeps deps)
    : config_(std::move(config)),
      clock_(deps.clock ? deps.clock : SystemClock::Default()),
      kv_(std::move(deps.kv)),
      blobs_(std::move(deps.blobs)),
      http_(std::make_unique<HttpServer>(&metrics_, LimitsOf(config_, config_.server.listen))) {}

App::~App() { Stop(); }

int App::port() const { return http_->port(); }
int App::gateway_port() const { return gateway_http_ ? gateway_http_->port() : -1; }
int App::flight_port() const { return query_ ? query_->flight_port() : -1; }
int App::jsonl_port() const { return query_ ? query_->jsonl_port() : -1; }

namespace {

GatewayOptions GatewayOptionsOf(const Config& c) {
  GatewayOptions o;
  o.domain_names = c.gateway.domain_names;
  o.region = c.gateway.region;
  return o;
}

// The objects root as engines open it: file:///abs/path or s3://bucket/prefix.
std::string EngineUri(const std::string& objects) {
  std::string uri = objects;
  while (uri.size() > 1 && uri.back() == '/') uri.pop_back();
  if (uri.rfind("s3://", 0) == 0) return uri;
  for (const char* scheme : {"local://", "file://"}) {
    if (uri.rfind(scheme, 0) == 0) uri = uri.substr(std::string(scheme).size());
  }
  return "file://" + std::filesystem::absolute(uri).lexically_normal().string();
}

iceberg::IcebergOptions IcebergOptionsOf(const Config& c) {
  iceberg::IcebergOptions o;
  o.objects_uri = EngineUri(c.ObjectsUri());
  o.retention = SecondsToDuration(c.writer.compactor.gc_manifest_grace_period);
  o.max_manifest_files = static_cast<size_t>(c.iceberg.max_manifest_files);
  return o;
}

// What loadTable tells engines about the storage: on S3, where it is and (if
// configured) read-only credentials; locally, nothing.
IcebergApiOptions IcebergApiOptionsOf(const Config& c) {
  IcebergApiOptions o;
  o.token_ttl = SecondsToDuration(c.iceberg.token_ttl_secs);
  if (c.ObjectsUri().rfind("s3://", 0) != 0) return o;
  const S3Config& s3 = c.storage.s3;
  std::string endpoint = c.iceberg.s3_endpoint.empty() ? s3.endpoint : c.iceberg.s3_endpoint;
  if (!endpoint.empty() && endpoint.find("://") == std::string::npos) endpoint = s3.scheme + "://" + endpoint;
  if (!endpoint.empty()) o.table_config["s3.endpoint"] = endpoint;
  o.table_config["s3.path-style-access"] = s3.path_style ? "true" : "false";
  o.table_config["s3.region"] = s3.region;
  o.table_config["client.region"] = s3.region;
  if (!c.iceberg.s3_access_key_id.empty()) {
    o.table_config["s3.access-key-id"] = c.iceberg.s3_access_key_id;
    o.table_config["s3.secret-access-key"] = c.iceberg.s3_secret_access_key;
  }
  return o;
}

// What engines get to reach a repository table's files on S3: the endpoint,
// region and (with repository_credentials = "sts") credentials limited to the
// table's location (docs/iceberg-repositories.md).
RepoCatalogOptions RepoCatalogOptionsOf(const Config& c) {
  RepoCatalogOptions o;
  o.token_ttl = SecondsToDuration(c.iceberg.token_ttl_secs);
  const S3Config s3 = c.storage.s3;
  const IcebergConfig ice = c.iceberg;
  std::string endpoint = ice.s3_endpoint.empty() ? s3.endpoint : ice.s3_endpoint;
  if (!endpoint.empty() && endpoint.find("://") == std::string::npos) endpoint = s3.scheme + "://" + endpoint;
  o.storage_config = [s3, ice, endpoint](const std::string&, const std::string& location,
                                         bool write) -> Result<std::map<std::string, std::string>> {
    std::map<std::string, std::string> config;
    if (location.rfind("s3://", 0) != 0) return config;  // local files: engines open them as they are
    if (!endpoint.empty()) config["s3.endpoint"] = endpoint;
    config["s3.path-style-access"] = s3.path_style ? "true" : "false";
    config["s3.region"] = s3.region;
    config["client.region"] = s3.region;
    if (ice.repository_credentials != "sts") return config;
    ARROW_ASSIGN_OR_RAISE(auto policy, blob::PrefixPolicy(location, write));
    ARROW_ASSIGN_OR_RAISE(
        auto creds, blob::AssumeRole(s3, ice.sts_role_arn, policy, static_cast<int64_t>(ice.vended_credentials_secs)));
    config["s3.access-key-id"] = creds.access_key_id;
    config["s3.secret-access-key"] = creds.secret_access_key;
    config["s3.session-token"] = creds.session_token;
    return config;
  };
  return o;
}

}  // namespace

Status App::Start() {
  std::string host;
  int port = 0;
  ARROW_RETURN_NOT_OK(BindListeners(&host, &port));
  ARROW_RETURN_NOT_OK(OpenStores());
  // A stable name, so after a crash this server takes its own leases back at once.
  std::error_code ignored;
  std::filesystem::create_directories(config_.storage.data_dir, ignored);
  identity_ = ServerIdentity::Claim(config_.storage.data_dir);
  tables_ = std::make_unique<table::TableService>(kv_, blobs_, clock_, &metrics_, config_.writer, identity_->id());
  query_->Attach(tables_.get());  // before the tables start: it hears every change
  if (config_.iceberg.enabled) {  // before the tables start: it hears every change
    iceberg_ = std::make_unique<iceberg::IcebergCatalog>(tables_.get(), kv_, blobs_, clock_, &metrics_,
                                                         IcebergOptionsOf(config_));
    iceberg_->Start();
  }
  // A shared database means other servers may be publishing files right now:
  // only files older than an hour (far longer than any merge) are orphans then.
  bool shared = config_.database.type == "postgres";
  ARROW_RETURN_NOT_OK(tables_->Start(/*background=*/true, shared ? std::chrono::hours(1) : Duration::zero()));
  SEDIMENT_FAILPOINT("server.start.after_sweep");
  ARROW_RETURN_NOT_OK(StartCatalog(fmt::format("{}:{}", host, http_->port())));
  auth_ = std::make_unique<AuthService>(kv_, clock_, std::chrono::seconds(5), config_.auth.encrypt_secret_key);
  // A store set up before groups existed gets lakeFS's base groups (once).
  ARROW_RETURN_NOT_OK(auth_->EnsureBaseGroups());
  jobs_ = std::make_unique<chain::JobManager>(config_, tables_.get(), kv_, clock_, &metrics_);

  metrics_.Gauge("sediment_build_info", "Always 1; labels say which build runs.", {"version", "arrow_version"})
      .With({kVersion, kArrowVersion})
      .Set(1);
  metrics_.Gauge("process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds.")
      .With({})
      .Set(static_cast<double>(ToUnixMicros(clock_->Now())) / 1e6);

  if (config_.console.enabled) {
    auto dir = FindConsoleDir(config_.console.dir);
    if (!dir.ok() && !config_.console.dir.empty()) return dir.status();  // asked for, and wrong
    if (!dir.ok()) spdlog::warn("console off: {}", dir.status().message());
    console_dir_ = dir.ok() ? *dir : "";
  }
  ARROW_RETURN_NOT_OK(RegisterRoutes());
  http_->Start();
  if (gateway_http_) {
    RegisterS3Gateway(gateway_http_.get(), catalog_.get(), auth_.get(), GatewayOptionsOf(config_));
    gateway_http_->Start();
    spdlog::info("S3 gateway also listening on http://{}", config_.gateway.listen);
  }
  started_ = true;
  ARROW_RETURN_NOT_OK(query_->Start(auth_.get()));
  ARROW_RETURN_NOT_OK(jobs_->Start());
  spdlog::info("sediment {} listening on http://{}:{} (kv: {}, objects: {})", kVersion, host, http_->port(),
               kv_->Describe(), blobs_->Describe());
  if (!console_dir_.empty()) spdlog::info("console: http://{}:{}/", host, http_->port());
  return Status::OK();
}

// First, so a port in use fails before anything is created.
Status App::BindListeners(std::string* host, int* port) {
  ARROW_RETURN_NOT_OK(ParseHostPort(config_.server.listen, host, port));
  ARROW_RETURN_NOT_OK(http_->Bind(*host, *port));
  if (!LimitsOf(config_, config_.server.listen).host_allowed) {
    spdlog::warn(
        "listening on {} with [server] allowed_hosts empty: requests naming any Host are served; set it to the "
        "names clients use (docs/security.md)",
        config_.server.listen);
  }
  if (!config_.gateway.listen.empty()) {
    std::string ghost;
    int gport = 0;
    ARROW_RETURN_NOT_OK(ParseHostPort(config_.gateway.listen, &ghost, &gport));
    gateway_http_ =
        std::make_unique<HttpServer>(&metrics_, LimitsOf(config_, config_.gateway.listen, /*gateway=*/true));
    ARROW_RETURN_NOT_OK(gateway_http_->Bind(ghost, gport));
  }
  query_ = std::make_unique<QueryServer>(config_, &metrics_);
  return query_->Bind();
}

Status App::OpenStores() {
  bool needs_data_dir = (!kv_ && config_.database.type == "rocksdb" && config_.database.rocksdb_path.empty()) ||
                        (!blobs_ && config_.storage.objects.empty());
  if (needs_data_dir) ARROW_RETURN_NOT_OK(PrepareDataDir(config_.storage.data_dir));
  if (!kv_) {
    kv::OpenOptions opts;
    opts.type = config_.database.type;
    opts.rocksdb_path = config_.RocksDbPath();
    opts.rocksdb_sync = config_.database.rocksdb_sync;
    opts.postgres_dsn = config_.database.postgres_dsn;
    opts.postgres_schema = config_.database.postgres_schema;
    ARROW_ASSIGN_OR_RAISE(kv_, kv::Open(opts));
  }
  if (!blobs_) {
    ARROW_ASSIGN_OR_RAISE(blobs_, blob::OpenBlobStore(config_.ObjectsUri(), config_.storage.s3));
  }
  return Status::OK();
}

Status App::StartCatalog(const std::string& owner) {
  catalog::CatalogOptions copts;
  copts.cache_dir = config_.RangeCacheDir();
  copts.cache_bytes = config_.catalog.cache_bytes;
  copts.dropped_token_grace = SecondsToDuration(config_.catalog.dropped_token_grace);
  copts.link_address_ttl = SecondsToDuration(config_.catalog.link_address_ttl_secs);
  copts.ranges = {config_.catalog.range_min_bytes, config_.catalog.range_max_bytes,
                  static_cast<uint64_t>(config_.catalog.range_split_modulus)};
  copts.s3 = config_.storage.s3;
  copts.namespaces.local_roots = config_.LocalNamespaceRoots();
  copts.namespaces.s3_prefixes = config_.catalog.s3_namespace_prefixes;
  copts.namespaces.reserved_paths = ServerOwnedPaths(config_);
  // On S3 the tables (and their Iceberg files) live under <objects>/tables/;
  // repositories' namespaces may sit beside them under the same prefix.
  if (config_.ObjectsUri().rfind("s3://", 0) == 0) {
    // In canonical form ("s3://b/objects/" and "s3://b/objects" are one place).
    ARROW_ASSIGN_OR_RAISE(auto objects, catalog::ParseNamespace(config_.ObjectsUri()));
    copts.namespaces.reserved_s3 = {objects.Uri() + "/tables"};
  }
  copts.drop_passes = &metrics_
                           .Counter("catalog_token_drop_passes_total",
                                    "Passes of the background drop of retired staging tokens, failed or not.")
                           .With({});
  catalog_ = std::make_unique<catalog::Catalog>(kv_, clock_, copts);
  repo_tables_ = std::make_unique<repo_tables::RepoTables>(catalog_.get(), clock_);
  catalog_->SetMergeResolver(repo_tables_.get());    // tables both sides appended to merge
  catalog_->SetReferenceWalker(repo_tables_.get());  // GC keeps what a table names, takes the rest
  actions::ActionsOptions aopts;
  aopts.clock = clock_;
  aopts.enabled = config_.actions.enabled;
  aopts.env_prefix = config_.actions.env_prefix;
  aopts.hook_timeout_ms = static_cast<int64_t>(config_.actions.hook_timeout_secs * 1000);
  aopts.lua_memory_bytes = config_.actions.lua_memory_mib << 20;
  aopts.hook_workers = config_.actions.hook_workers;
  aopts.hook_runs_per_repository = config_.actions.hook_runs_per_repository;
  aopts.webhook_allowed_hosts = config_.actions.webhook_allowed_hosts;
  // hook_workers is at most half the HTTP workers, and the sandbox runs (Config::CheckPaths, at start-up).
  aopts.lua_sandbox = config_.LuaSandboxPath();
  // Before the catalog starts: the actions name their keys for repository deletion, whose cleanup may run at once.
  ARROW_ASSIGN_OR_RAISE(actions_, actions::ActionsService::Make(catalog_.get(), kv_.get(), aopts));
  // Every hooked catalog operation, from any API, runs the repository's actions.
  catalog_->SetHooks(actions_.get());
  ARROW_RETURN_NOT_OK(catalog_->Start());
  catalog::StagingCompactorOptions sopts;
  sopts.auto_trigger = config_.graveler.compaction.auto_trigger;
  sopts.threshold = config_.graveler.compaction.threshold;
  sopts.workers = static_cast<int>(config_.graveler.compaction.workers);
  sopts.owner = owner;
  staging_compactor_ = std::make_unique<catalog::StagingCompactor>(catalog_.get(), kv_, clock_, &metrics_, sopts);
  ARROW_RETURN_NOT_OK(staging_compactor_->Start());
  catalog_collector_ =
      std::make_unique<catalog::CatalogCollector>(catalog_.get(), kv_, clock_, &metrics_, identity_->id());
  catalog::GcOptions gc;
  gc.retention = SecondsToDuration(config_.catalog.gc_retention_days * 86400);
  gc.grace = SecondsToDuration(config_.catalog.gc_grace);
  catalog_collector_->Start(SecondsToDuration(config_.catalog.gc_interval), gc);
  importer_ = std::make_unique<catalog::Importer>(catalog_.get(), kv_, clock_);
  return Status::OK();
}

// An S3 client pointed at the API path (/api/...) is told where the gateway is.
bool App::Guard(const httplib::Request& req, httplib::Response& res) {
  if (req.path.rfind("/api/", 0) == 0 && IsAwsSigned(req)) {
    ReplyApiPathToS3Client(req, res);
    return false;
  }
  return true;
}

Status App::RegisterRoutes() {
  http_->SetGuard([this](const httplib::Request& req, httplib::Response& res) { return Guard(req, res); });
  RouteServices s;
  s.tables = tables_.get();
  s.jobs = jobs_.get();
  s.iceberg = iceberg_ != nullptr;
  s.iceberg_catalog = iceberg_.get();
  s.iceberg_options = IcebergApiOptionsOf(config_);
  s.repo_tables = repo_tables_.get();
  s.repo_catalog_options = RepoCatalogOptionsOf(config_);
  s.lakefs = LakeFsServices{catalog_.get(),
                            staging_compactor_.get(),
                            catalog_collector_.get(),
                            importer_.get(),
                            auth_.get(),
                            config_.ObjectsUri().rfind("s3://", 0) == 0 ? "s3" : "local",
                            actions_.get()};
  s.metrics = &metrics_;
  s.query = query_.get();
  GatewayOptions gateway = GatewayOptionsOf(config_);
  ConsoleFiles files{console_dir_, config_.console.chart_js};
  if (!console_dir_.empty()) {
    s.console = &files;
    gateway.browser_page = [files](const httplib::Request& req, httplib::Response& res) {
      ServeConsolePage(files, req, res);
    };
  }
  router_ = std::make_unique<Router>(auth_.get());
  router_->Add(RouteTable(s));
  ARROW_RETURN_NOT_OK(router_->Register(http_.get()));
  ConnectHooksToApi(actions_.get(), router_.get());
  // Last: it takes every path the routes above do not.
  RegisterS3Gateway(http_.get(), catalog_.get(), auth_.get(), gateway);
  return Status::OK();
}

void App::Stop() {
  if (!started_) return;
  started_ = false;
  spdlog::info("sediment stopping: finishing in-flight requests");
  if (query_) query_->Stop();  // first: open streams end
  if (jobs_) jobs_->Stop();
  http_->Stop();
  if (gateway_http_) gateway_http_->Stop();
  if (tables_) tables_->Stop();
  if (iceberg_) iceberg_->Stop();
  if (importer_) importer_->Stop();
  if (catalog_) catalog_->SetHooks(nullptr);  // before the actions stop
  if (actions_) actions_->Stop();
  if (catalog_collector_) catalog_collector_->Stop();
  if (staging_compactor_) staging_compactor_->Stop();
  if (catalog_) catalog_->Stop();
  spdlog::info("sediment stopped");
}

}  // namespace sediment::server
