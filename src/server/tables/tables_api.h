// The tables HTTP API, under /api/v1/datasets/{dataset}/tables (and
// /api/v1/tables for every dataset). Arrow IPC streams in, JSON out.
#pragma once

#include <vector>

#include "server/http/route.h"

namespace sediment::table {
class TableService;
}

namespace sediment::server {

// The tables API's rows of the route table.
std::vector<Route> TablesRoutes(table::TableService* tables);

}  // namespace sediment::server
