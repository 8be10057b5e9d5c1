#include "server/query/amp_format.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "server/http/errors.h"

namespace sediment::server {

using nlohmann::json;

namespace {

// 0x followed by lowercase hex (a cursor's hash): the hex, lowercased.
Result<std::string> HashOf(const json& j, const std::string& network) {
  if (!j.is_string()) return InvalidArgument(fmt::format("amp-resume: {}.hash must be a string", network));
  std::string h = j.get<std::string>();
  if (h.rfind("0x", 0) == 0 || h.rfind("0X", 0) == 0) h = h.substr(2);
  if (h.empty() || h.size() > 128 || h.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
    return InvalidArgument(
        fmt::format("amp-resume: {}.hash must be hex (0x…), got \"{}\"", network, j.get<std::string>().substr(0, 80)));
  }
  for (char& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return h;
}

// A hash as Amp's clients read it: 0x-prefixed hex, or null when not known (the parent of block 0).
json Hex0x(const std::string& hex) { return hex.empty() ? json(nullptr) : json("0x" + hex); }

}  // namespace

Result<std::map<std::string, query::StreamCursor>> ParseResume(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument(
        "amp-resume must be a JSON object {\"<network>\": {\"number\": <block>, \"hash\": \"0x…\"}}");
  }
  std::map<std::string, query::StreamCursor> out;
  for (const auto& [network, cursor] : j.items()) {
    if (!cursor.is_object() || !cursor.contains("number") || !cursor["number"].is_number_unsigned() ||
        !cursor.contains("hash")) {
      return InvalidArgument(fmt::format("amp-resume: {} must be {{\"number\": <block>, \"hash\": \"0x…\"}}", network));
    }
    ARROW_ASSIGN_OR_RAISE(std::string hash, HashOf(cursor["hash"], network));
    out[network] = query::StreamCursor{network, cursor["number"].get<uint64_t>(), std::move(hash)};
  }
  return out;
}

Result<std::optional<bool>> ParseStreamHeader(std::string_view text) {
  if (text.empty()) return std::optional<bool>();
  if (text == "true" || text == "1") return std::optional<bool>(true);
  if (text == "false" || text == "0") return std::optional<bool>(false);
  return InvalidArgument(fmt::format("amp-stream must be true, false, 1 or 0, got \"{}\"", text.substr(0, 40)));
}

std::string RangesJson(const query::BlockSpan* span, bool complete, bool reorg) {
  json ranges = json::array();
  if (span != nullptr) {
    ranges.push_back({{"numbers", {{"start", span->start}, {"end", span->end}}},
                      {"network", span->network},
                      {"hash", Hex0x(span->hash)},
                      {"prev_hash", Hex0x(span->prev_hash)}});
  }
  return json{{"ranges", ranges}, {"ranges_complete", complete}, {"reorg", reorg}}.dump();
}

const char* AmpErrorCode(const Status& st, QueryStep step) {
  if (IsUnauthorized(st)) return "UNAUTHENTICATED";
  if (IsForbidden(st)) return "FORBIDDEN";
  if (IsNotFound(st)) return "TABLE_NOT_FOUND_ERROR";
  if (IsBusy(st)) return "EXECUTION_ERROR";
  if (!IsInvalidArgument(st)) return step == QueryStep::kExecute ? "EXECUTION_ERROR" : "PLANNING_ERROR";
  switch (step) {
    case QueryStep::kText:
      return "INVALID_SQL_STRING";
    case QueryStep::kParse:
      return "SQL_PARSE_ERROR";
    case QueryStep::kStreamCheck:
      return "INVALID_QUERY";
    case QueryStep::kPlan:
      return "INVALID_PLAN";
    case QueryStep::kExecute:
      break;
  }
  return "EXECUTION_ERROR";
}

int AmpHttpStatus(const Status& st) { return HttpStatusFor(st); }

std::string AmpErrorJson(const char* code, const std::string& message) {
  return json{{"error_code", code}, {"error_message", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace sediment::server
