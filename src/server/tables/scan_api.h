// GET /api/v1/datasets/{ds}/tables/{t}/scan: a table snapshot's rows, streamed
// as an Arrow IPC stream (format=arrow) or JSON lines (format=jsonl).
#pragma once

#include <string>
#include <vector>

#include "server/http/route.h"

namespace arrow {
class RecordBatch;
}
namespace sediment::table {
class TableService;
}

namespace sediment::server {

// The scan API's row of the route table.
std::vector<Route> ScanRoutes(table::TableService* tables);

}  // namespace sediment::server
