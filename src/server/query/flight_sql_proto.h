// The few Flight SQL protobuf messages the query server reads, decoded by hand
// (the wheel's Arrow has no Flight SQL library; the wire format is small):
// google.protobuf.Any { string type_url = 1; bytes value = 2; } wrapping
// arrow.flight.protocol.sql.CommandStatementQuery { string query = 1; bytes transaction_id = 2; }.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace sediment::server {

inline constexpr std::string_view kStatementQueryType =
    "type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery";

// The SQL of a Flight descriptor's command: InvalidArgument for malformed
// protobuf, another command (named, as Amp's UNSUPPORTED_FLIGHT_DESCRIPTOR_COMMAND),
// a transaction, or SQL longer than `max_bytes`.
Result<std::string> StatementQueryOf(std::string_view cmd, size_t max_bytes);

// The command a Flight SQL client sends for `sql` (tests).
std::string EncodeStatementQuery(std::string_view sql);

}  // namespace sediment::server
