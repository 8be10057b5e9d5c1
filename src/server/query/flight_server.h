// The query server's Arrow Flight SQL transport, as Amp's (docs/query.md):
// GetFlightInfo with a CommandStatementQuery (the SQL; the amp-stream and
// amp-resume headers), then DoGet of the one endpoint's ticket, whose stream
// carries the rows with Amp's block ranges as each batch's app_metadata. A
// streaming query's DoGet never ends: each microbatch's batches, then an
// empty batch whose metadata says ranges_complete, and keep-alives (empty
// batches, no ranges) on a quiet chain.
//
// Authentication: HTTP basic credentials (an access key) on the Handshake
// answer a bearer token (a session, as the console's log-in) in its
// `authorization` header, which every later call sends; or either on each
// call. Every call is admitted by the JSON lines transport's row of the route
// table (Router::AdmitOperation: tables:ReadTable on each table the SQL
// names), so both transports let in exactly the same callers.
//
// Thread-safety: Start/Stop from one thread; gRPC serves calls on its own.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"

namespace sediment::auth {
class AuthService;
}

namespace sediment::server {

class Router;
struct QueryServices;

class QueryFlightServer {
 public:
  // `router` holds the row labelled kQueryOperation; `max_query_bytes` caps a statement's SQL.
  QueryFlightServer(const QueryServices* services, Router* router, auth::AuthService* auth, size_t max_query_bytes);
  ~QueryFlightServer();

  // Listens on host:port (0: any free port) and serves on a thread of its own.
  Status Start(const std::string& host, int port);
  void Stop();
  int port() const;

 private:
  class Service;
  std::unique_ptr<Service> service_;
  auth::AuthService* auth_;
  bool started_ = false;
};

}  // namespace sediment::server
