// App: one Sediment server — its stores, background services and HTTP API —
// built from a Config. `sediment serve` runs one; tests run several in one
// process (sharing an in-memory KV to stand for a shared database).
//
// Start-up order matters for "bad input loses nothing": the listening socket
// is bound before anything is created on disk, so a port in use fails clean.
//
// Thread-safety: Start() and Stop() from one thread; Stop() may run while
// requests are in flight and returns after they and every background thread
// have finished.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "base/clock.h"
#include "base/config.h"
#include "base/metrics.h"
#include "base/status.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace sediment {
namespace kv {
class KvStore;
}
namespace blob {
class BlobStore;
}
namespace table {
class TableService;
}
namespace chain {
class JobManager;
}
namespace repo_tables {
class RepoTables;
}
namespace catalog {
class Catalog;
class StagingCompactor;
class CatalogCollector;
class Importer;
}  // namespace catalog
namespace actions {
class ActionsService;
}  // namespace actions

namespace auth {
class AuthService;
}  // namespace auth

namespace iceberg {
class IcebergCatalog;
}  // namespace iceberg

namespace server {

using auth::AuthService;
class HttpServer;
class QueryServer;
class Router;
class ServerIdentity;

struct AppDeps {
  // Each left null is created from the config.
  std::shared_ptr<Clock> clock;
  std::shared_ptr<kv::KvStore> kv;
  std::shared_ptr<blob::BlobStore> blobs;
};

class App {
 public:
  App(Config config, AppDeps deps = {});
  ~App();  // Stop()
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  Status Start();
  void Stop();

  int port() const;
  // The S3 gateway's own port ([gateway] listen), or -1.
  int gateway_port() const;
  // The query server's ports ([query] flight_listen, jsonl_listen), or -1.
  int flight_port() const;
  int jsonl_port() const;
  const Config& config() const { return config_; }
  MetricsRegistry& metrics() { return metrics_; }
  kv::KvStore& kv() { return *kv_; }
  blob::BlobStore& blobs() { return *blobs_; }
  table::TableService& tables() { return *tables_; }
  chain::JobManager& jobs() { return *jobs_; }
  catalog::Catalog& catalog() { return *catalog_; }
  catalog::StagingCompactor& staging_compactor() { return *staging_compactor_; }
  AuthService& auth() { return *auth_; }

 private:
  // The steps of Start().
  Status BindListeners(std::string* host, int* port);
  Status OpenStores();
  Status StartCatalog(const std::string& owner);
  Status RegisterRoutes();
  bool Guard(const httplib::Request& req, httplib::Response& res);

  Config config_;
  std::shared_ptr<Clock> clock_;
  MetricsRegistry metrics_;
  std::shared_ptr<kv::KvStore> kv_;
  std::shared_ptr<blob::BlobStore> blobs_;
  std::unique_ptr<ServerIdentity> identity_;
  std::unique_ptr<table::TableService> tables_;
  std::unique_ptr<iceberg::IcebergCatalog> iceberg_;      // null with [iceberg] enabled = false
  std::unique_ptr<repo_tables::RepoTables> repo_tables_;  // Iceberg tables in repositories
  std::unique_ptr<Router> router_;                        // the route table of the API port
  std::unique_ptr<chain::JobManager> jobs_;
  std::unique_ptr<catalog::Catalog> catalog_;
  std::unique_ptr<catalog::StagingCompactor> staging_compactor_;
  std::unique_ptr<catalog::CatalogCollector> catalog_collector_;
  std::unique_ptr<catalog::Importer> importer_;
  std::unique_ptr<actions::ActionsService> actions_;  // hooks; Stop() ends its post-event runs before the catalog's
  std::unique_ptr<AuthService> auth_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<HttpServer> gateway_http_;  // only with [gateway] listen
  std::unique_ptr<QueryServer> query_;        // SQL over the tables ([query])
  bool started_ = false;
  std::string console_dir_;  // "" = no console
};

}  // namespace server
}  // namespace sediment
