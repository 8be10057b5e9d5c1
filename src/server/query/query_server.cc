#include "server/query/query_server.h"

#include <spdlog/spdlog.h>

#include "base/net_address.h"
#include "server/http/http_server.h"
#include "server/query/flight_server.h"
#include "table/table_service.h"

namespace sediment::server {

namespace {

query::QueryLimits LimitsOf(const QueryConfig& q) {
  query::QueryLimits l;
  l.memory_bytes = q.memory_limit_mib << 20;
  l.timeout_secs = q.timeout_secs;
  l.threads = static_cast<int>(q.threads);
  l.max_concurrent = static_cast<int>(q.max_concurrent);
  l.max_streams = static_cast<int>(q.max_streams);
  return l;
}

std::chrono::milliseconds Millis(double secs) { return std::chrono::milliseconds(static_cast<int64_t>(secs * 1000)); }

}  // namespace

QueryServer::QueryServer(const Config& config, MetricsRegistry* metrics) : config_(config), metrics_(metrics) {
  services_.stream.max_blocks = static_cast<uint64_t>(config.query.microbatch_max_blocks);
  services_.stream.keep_alive = Millis(config.query.keep_alive_secs);
  services_.stream.poll = Millis(config.query.poll_interval_secs);
  services_.stopping = &stopping_;
  services_.api_port_streams = &api_port_streams_;
  services_.jsonl_port_streams = &jsonl_port_streams_;
}

QueryServer::~QueryServer() { Stop(); }

Status QueryServer::Bind() {
  if (!config_.query.enabled || config_.query.jsonl_listen.empty()) return Status::OK();
  std::string host;
  int port = 0;
  ARROW_RETURN_NOT_OK(ParseHostPort(config_.query.jsonl_listen, &host, &port));
  HttpLimits limits;
  limits.max_body_bytes = static_cast<size_t>(config_.server.max_body_bytes);
  limits.header_timeout = Millis(config_.server.header_timeout_secs);
  limits.host_allowed = HostRule(host, {}, config_.server.allowed_hosts);
  jsonl_http_ = std::make_unique<HttpServer>(metrics_, limits);
  return jsonl_http_->Bind(host, port);
}

void QueryServer::Attach(table::TableService* tables) {
  if (!config_.query.enabled) return;
  engine_ = std::make_unique<query::QueryEngine>(tables, LimitsOf(config_.query), metrics_);
  watch_ = std::make_unique<query::TableWatch>();
  tables->AddChangeListener([w = watch_.get()](const table::TableId&) { w->Changed(); });
  services_.engine = engine_.get();
  services_.tables = tables;
  services_.watch = watch_.get();
}

std::vector<Route> QueryServer::ApiRoutes() {
  if (!config_.query.enabled) return {};
  return QueryRoutes(&services_, /*own_port=*/false);
}

Status QueryServer::Start(auth::AuthService* auth) {
  if (!config_.query.enabled) return Status::OK();
  router_ = std::make_unique<Router>(auth);
  router_->Add(QueryRoutes(&services_, /*own_port=*/true));
  if (jsonl_http_) {
    ARROW_RETURN_NOT_OK(router_->Register(jsonl_http_.get()));
    jsonl_http_->Start();
    std::string host;
    int port = 0;
    ARROW_RETURN_NOT_OK(ParseHostPort(config_.query.jsonl_listen, &host, &port));
    // Not "listening on http://": that line names the API port.
    spdlog::info("query server: JSON lines at http://{}:{}/", host, jsonl_http_->port());
  }
  if (!config_.query.flight_listen.empty()) {
    std::string host;
    int port = 0;
    ARROW_RETURN_NOT_OK(ParseHostPort(config_.query.flight_listen, &host, &port));
    flight_ = std::make_unique<QueryFlightServer>(&services_, router_.get(), auth,
                                                  static_cast<size_t>(config_.server.max_body_bytes));
    ARROW_RETURN_NOT_OK(flight_->Start(host, port));
    spdlog::info("query server: Flight SQL at grpc://{}:{}", host, flight_->port());
  }
  return Status::OK();
}

void QueryServer::Stop() {
  stopping_ = true;
  if (flight_) flight_->Stop();
  if (jsonl_http_) jsonl_http_->Stop();
}

int QueryServer::flight_port() const { return flight_ ? flight_->port() : -1; }
int QueryServer::jsonl_port() const { return jsonl_http_ ? jsonl_http_->port() : -1; }

}  // namespace sediment::server
