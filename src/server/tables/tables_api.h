// The tables HTTP API, under /api/v1/datasets/{dataset}/tables (and
// /api/v1/tables for every dataset). Arrow IPC streams in, JSON out.
#pragma once

namespace sediment::table {
class TableService;
}

namespace sediment::server {

class HttpServer;

void RegisterTablesApi(HttpServer* http, table::TableService* tables);

}  // namespace sediment::server
