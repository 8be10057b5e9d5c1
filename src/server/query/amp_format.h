// What Amp's query server says on the wire, beside the rows (docs/query.md):
// the `amp-resume` cursor, the `amp-stream` header, the block ranges a batch
// covers (Flight's app_metadata, JSON lines' marker lines), and errors as
// {"error_code", "error_message"}. Shared by the JSON lines and Flight SQL
// transports; no HTTP, no gRPC.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "query/stream.h"

namespace sediment::server {

// `amp-resume`: {"<network>": {"number": <u64>, "hash": "0x<64 hex>"}, ...}.
// InvalidArgument naming what is wrong.
Result<std::map<std::string, query::StreamCursor>> ParseResume(std::string_view text);

// `amp-stream`: true/1 or false/0; nullopt when absent ("").
Result<std::optional<bool>> ParseStreamHeader(std::string_view text);

// {"ranges": [<span>], "ranges_complete": <complete>, "reorg": <reorg>}, a
// span as {"numbers": {"start", "end"}, "network", "hash": "0x…", "prev_hash": "0x…"};
// no span: "ranges": [] (a batch query, a keep-alive before the first range).
// An unknown hash is null.
std::string RangesJson(const query::BlockSpan* span, bool complete, bool reorg);

// Amp's error codes: what a failure at `step` of a query is called, and its HTTP status.
enum class QueryStep { kText, kParse, kStreamCheck, kPlan, kExecute };
const char* AmpErrorCode(const Status& st, QueryStep step);
int AmpHttpStatus(const Status& st);
std::string AmpErrorJson(const char* code, const std::string& message);

}  // namespace sediment::server
