// The query server's JSON lines transport, as Amp's (docs/query.md): the SQL
// as the body of a POST, one JSON object per row back (application/x-ndjson),
// errors as {"error_code", "error_message"}. On the API port at
// POST /api/v1/query, and on [query] jsonl_listen at POST / (with GET /health).
// A streaming query (SETTINGS stream = true, or the amp-stream header) answers
// its microbatches' rows, each microbatch between marker lines
// {"@metadata": {"ranges": [...], "ranges_complete": false|true, "reorg": ...}}.
//
// Who may run a query: tables:ReadTable on every table it names (the rows'
// `{@table}`, from the parsed SQL); a query that names none needs it on every
// table (arn:sediment:tables:::*/*). Before set-up, anyone (as the tables API).
#pragma once

#include <atomic>
#include <vector>

#include "query/stream.h"
#include "server/http/route.h"

namespace sediment::table {
class TableService;
}

namespace sediment::server {

struct QueryServices {
  query::QueryEngine* engine = nullptr;
  table::TableService* tables = nullptr;
  const query::TableWatch* watch = nullptr;
  query::StreamOptions stream;
  const std::atomic<bool>* stopping = nullptr;     // set: open streams end (the server stops)
  std::atomic<int>* api_port_streams = nullptr;    // streams open on the API port, whose workers the APIs share
  std::atomic<int>* jsonl_port_streams = nullptr;  // streams open on [query] jsonl_listen
};

// The JSON lines rows: on the API port, or (own_port) on [query] jsonl_listen.
std::vector<Route> QueryRoutes(const QueryServices* services, bool own_port);

// The label of the row that runs a query, which the Flight SQL transport
// admits its calls by (Router::AdmitOperation).
inline constexpr const char* kQueryOperation = "query Query";

// Streaming queries an HTTP port keeps open at once (each holds one of its
// workers): 4 on the API port, half the workers on the JSON lines port (its
// health and batch queries keep the rest; Flight SQL has no such bound).
int StreamsAllowed(bool own_port);

}  // namespace sediment::server
