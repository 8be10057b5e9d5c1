#include "server/query/flight_sql_proto.h"

#include <fmt/format.h>

#include <map>

namespace sediment::server {
namespace {

// The length-delimited fields of a message (the last of each number wins, as
// protobuf's own parsers do); fields of other wire types are skipped.
Result<std::map<uint64_t, std::string_view>> LengthDelimited(std::string_view msg, const char* what) {
  std::map<uint64_t, std::string_view> out;
  size_t pos = 0;
  auto varint = [&](uint64_t* v) -> bool {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= msg.size()) return false;
      uint8_t b = static_cast<uint8_t>(msg[pos++]);
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  };
  auto malformed = [&] { return InvalidArgument(fmt::format("PB_DECODE_ERROR: {} is not valid protobuf", what)); };
  while (pos < msg.size()) {
    uint64_t key = 0, n = 0;
    if (!varint(&key) || (key >> 3) == 0) return malformed();
    switch (key & 7) {
      case 0:
        if (!varint(&n)) return malformed();
        break;
      case 1:
        if (msg.size() - pos < 8) return malformed();
        pos += 8;
        break;
      case 2:
        if (!varint(&n) || n > msg.size() - pos) return malformed();
        out[key >> 3] = msg.substr(pos, n);
        pos += n;
        break;
      case 5:
        if (msg.size() - pos < 4) return malformed();
        pos += 4;
        break;
      default:
        return malformed();
    }
  }
  return out;
}

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutField(uint64_t number, std::string_view value, std::string* out) {
  PutVarint(number << 3 | 2, out);
  PutVarint(value.size(), out);
  out->append(value);
}

}  // namespace

Result<std::string> StatementQueryOf(std::string_view cmd, size_t max_bytes) {
  ARROW_ASSIGN_OR_RAISE(auto any, LengthDelimited(cmd, "the descriptor's command"));
  std::string_view type = any.count(1) ? any[1] : std::string_view();
  if (type != kStatementQueryType) {
    size_t slash = type.rfind('/');
    return InvalidArgument(
        fmt::format("UNSUPPORTED_FLIGHT_DESCRIPTOR_COMMAND: {} is not served; the query server runs statement queries "
                    "(CommandStatementQuery)",
                    type.empty() ? std::string("a command without a type") : std::string(type.substr(slash + 1, 120))));
  }
  ARROW_ASSIGN_OR_RAISE(auto statement, LengthDelimited(any.count(2) ? any[2] : std::string_view(), "the statement"));
  if (statement.count(2) && !statement[2].empty()) {
    return InvalidArgument("transactions are not served: every query reads one snapshot of its tables");
  }
  std::string_view sql = statement.count(1) ? statement[1] : std::string_view();
  if (sql.size() > max_bytes) {
    return InvalidArgument(fmt::format(
        "the query is {} bytes, more than the {} a request may have ([server] max_body_bytes)", sql.size(), max_bytes));
  }
  return std::string(sql);
}

std::string EncodeStatementQuery(std::string_view sql) {
  std::string statement, any;
  PutField(1, sql, &statement);
  PutField(1, kStatementQueryType, &any);
  PutField(2, statement, &any);
  return any;
}

}  // namespace sediment::server
