// The query server (docs/query.md): SQL over the chain tables as Amp's query
// server serves it. Owns the engine (query::QueryEngine), the watch that wakes
// streams when a table changes, the JSON lines port ([query] jsonl_listen) and
// the Flight SQL port ([query] flight_listen); the API port's JSON lines row
// comes from ApiRoutes().
//
// Life: Bind (the ports, before anything is created, so a port in use fails
// first), Attach (the tables, before they start: it hears every change),
// ApiRoutes, Start (after the auth service exists), Stop (first: open streams end).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "base/config.h"
#include "server/http/route.h"
#include "server/query/query_api.h"

namespace sediment {
class MetricsRegistry;
namespace auth {
class AuthService;
}
namespace table {
class TableService;
}
}  // namespace sediment

namespace sediment::server {

class HttpServer;
class QueryFlightServer;

class QueryServer {
 public:
  QueryServer(const Config& config, MetricsRegistry* metrics);
  ~QueryServer();

  Status Bind();
  void Attach(table::TableService* tables);
  std::vector<Route> ApiRoutes();
  Status Start(auth::AuthService* auth);
  void Stop();

  int flight_port() const;  // -1 when not listening
  int jsonl_port() const;

 private:
  const Config& config_;
  MetricsRegistry* metrics_;
  std::unique_ptr<query::QueryEngine> engine_;
  std::unique_ptr<query::TableWatch> watch_;
  QueryServices services_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> api_port_streams_{0};
  std::atomic<int> jsonl_port_streams_{0};
  std::unique_ptr<HttpServer> jsonl_http_;
  std::unique_ptr<Router> router_;  // the JSON lines port's rows; Flight SQL calls are admitted by them
  std::unique_ptr<QueryFlightServer> flight_;
};

}  // namespace sediment::server
