// The API port's route table: every API's rows (http/route.h) in the order
// they match, and the table as `sediment routes` prints it (the route walk,
// tests/security/test_route_table.py, reads that).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <vector>

#include "server/console/console.h"
#include "server/http/route.h"
#include "server/iceberg/catalog_api.h"
#include "server/iceberg/repo_catalog_api.h"
#include "server/lakefs/api.h"

namespace sediment {
class MetricsRegistry;
namespace table {
class TableService;
}
namespace chain {
class JobManager;
}
namespace iceberg {
class IcebergCatalog;
}
namespace repo_tables {
class RepoTables;
}
}  // namespace sediment

namespace sediment::server {

class QueryServer;

// What the rows' handlers use (null when only describing the table).
struct RouteServices {
  table::TableService* tables = nullptr;
  chain::JobManager* jobs = nullptr;
  bool iceberg = false;  // [iceberg] enabled
  iceberg::IcebergCatalog* iceberg_catalog = nullptr;
  IcebergApiOptions iceberg_options;
  repo_tables::RepoTables* repo_tables = nullptr;
  RepoCatalogOptions repo_catalog_options;
  LakeFsServices lakefs{};
  const ConsoleFiles* console = nullptr;  // null: no console
  QueryServer* query = nullptr;           // null: no query server
  bool describing = false;                // only describing: every API's rows, the query server's too
  MetricsRegistry* metrics = nullptr;
};

std::vector<Route> RouteTable(const RouteServices& services);

// {"routes": [...], "query_port_routes": [...], "s3_operations": [...]}: every
// row, its access and the permissions it needs.
nlohmann::json DescribeRouteTable();

}  // namespace sediment::server
