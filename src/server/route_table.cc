// The API port's route table, in the order its rows match (route_table.h).
#include "server/route_table.h"

#include <fmt/format.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "base/metrics.h"
#include "server/http/errors.h"
#include "server/iceberg/repo_catalog_api.h"
#include "server/query/query_server.h"
#include "server/s3/gateway.h"
#include "server/tables/jobs_api.h"
#include "server/tables/scan_api.h"
#include "server/tables/tables_api.h"

namespace sediment::server {
namespace {

// The server's own rows: health, metrics, and the answers for paths no row
// serves (404 before any handler, in the format of the API the path is under).
std::vector<Route> ServerRoutes(MetricsRegistry* metrics) {
  static const Protocol kServer{"server", ReplyError};
  static const Protocol kIcebergPaths{"iceberg", ReplyIcebergError};
  auto not_found = [](const Call& c) { return NotFound(fmt::format("no route for {} {}", c.req.method, c.req.path)); };
  std::vector<Route> rows = {
      {"GET",
       "/api/v1/healthcheck",
       "server Healthcheck",
       Access::kPublic,
       {},
       [](const Call& c) {
         c.res.status = 204;
         return Status::OK();
       },
       &kServer},
      {"GET",
       "/metrics",
       "server Metrics",
       Access::kPublic,
       {},
       [metrics](const Call& c) {
         c.res.set_content(metrics->RenderPrometheus(), "text/plain; version=0.0.4; charset=utf-8");
         return Status::OK();
       },
       &kServer},
  };
  // Only under /api/v1/: another /api/ path (an endpoint URL with a typo) keeps
  // the server's plain-text 404, which lakectl doctor reads as "wrong endpoint".
  for (const char* method : {"GET", "POST", "PUT", "DELETE", "PATCH"}) {
    rows.push_back({method, "/api/v1/{rest:.*}", "server NotFound", Access::kPublic, {}, not_found, &kServer});
    for (const char* root : {"/iceberg/v1/{rest:.*}", "/iceberg/api/{rest:.*}", "/iceberg/relative_to/{rest:.*}"}) {
      rows.push_back({method, root, "iceberg NotFound", Access::kPublic, {}, not_found, &kIcebergPaths});
    }
  }
  return rows;
}

}  // namespace

// Every row of the API port's route table, in the order they match.
std::vector<Route> RouteTable(const RouteServices& s) {
  std::vector<Route> all;
  auto add = [&all](std::vector<Route> rows) {
    for (Route& r : rows) all.push_back(std::move(r));
  };
  add(TablesRoutes(s.tables));
  add(ScanRoutes(s.tables));
  add(JobsRoutes(s.jobs));
  if (s.iceberg) add(IcebergRoutes(s.iceberg_catalog, s.tables, s.lakefs.auth, s.iceberg_options));
  add(RepoCatalogRoutes(s.repo_tables, s.lakefs.auth, s.repo_catalog_options));
  add(LakeFsRoutes(s.lakefs));
  if (s.query) add(s.query->ApiRoutes());
  if (s.describing) add(QueryRoutes(nullptr, /*own_port=*/false));
  if (s.console) add(ConsoleRoutes(*s.console));
  add(ServerRoutes(s.metrics));
  return all;
}

nlohmann::json DescribeRouteTable() {
  RouteServices s;
  s.iceberg = true;
  ConsoleFiles console;
  s.console = &console;
  s.describing = true;
  Router router(nullptr);
  router.Add(RouteTable(s));
  Router query_port(nullptr);
  query_port.Add(QueryRoutes(nullptr, /*own_port=*/true));
  return {{"routes", router.Describe()},
          {"query_port_routes", query_port.Describe()},
          {"s3_operations", DescribeS3Operations()}};
}

}  // namespace sediment::server
