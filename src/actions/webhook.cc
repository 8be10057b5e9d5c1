// The webhook hook: POSTs the event (lakeFS's EventInfo JSON) to a URL; any
// 2xx answer passes. The request and the answer (its body cut at 4 KiB) are
// the hook's output, with secrets ({{ ENV.X }}) shown as "*******". Where it
// may connect and how much of the answer it holds: webhook_client_internal.h.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "actions/action.h"
#include "actions/webhook_client_internal.h"
#include "base/ascii.h"
#include "base/clock.h"
#include "base/codec.h"

namespace sediment::actions {
namespace {

constexpr const char* kMasked = "*******";

struct Param {
  std::string name, value;
  bool secret = false;
};

// query_params: names to a string or a list of strings, {{ ENV.X }} expanded.
Status QueryParams(const nlohmann::json& p, const ActionsOptions& options, std::vector<Param>* out) {
  if (!p.contains("query_params") || p["query_params"].is_null()) return Status::OK();
  if (!p["query_params"].is_object()) return InvalidArgument("unsupported query params: webhook wrong format");
  for (const auto& [k, v] : p["query_params"].items()) {
    std::vector<std::string> values;
    if (v.is_string()) {
      values.push_back(v.get<std::string>());
    } else if (v.is_array()) {
      for (const auto& x : v) {
        if (!x.is_string()) return InvalidArgument("query params array should contains only strings");
        values.push_back(x.get<std::string>());
      }
    } else {
      return InvalidArgument("query params single value should be of type string");
    }
    for (const auto& value : values) {
      Param q{k, "", false};
      ARROW_ASSIGN_OR_RAISE(q.value, ExpandEnv(value, options.env_prefix, &q.secret));
      out->push_back(std::move(q));
    }
  }
  std::sort(out->begin(), out->end(), [](const Param& a, const Param& b) { return a.name < b.name; });
  return Status::OK();
}

// headers: names (tokens; not the ones that frame the request) to strings.
Status Headers(const nlohmann::json& p, const ActionsOptions& options, std::vector<Param>* out) {
  if (!p.contains("headers") || p["headers"].is_null()) return Status::OK();
  if (!p["headers"].is_object()) return InvalidArgument("unsupported headers: webhook wrong format");
  for (const auto& [k, v] : p["headers"].items()) {
    if (!v.is_string()) return InvalidArgument("headers array should contains only strings");
    Param h{k, "", false};
    ARROW_ASSIGN_OR_RAISE(h.value, ExpandEnv(v.get<std::string>(), options.env_prefix, &h.secret));
    bool token = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) ||
             std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    });
    if (!token || h.value.find_first_of("\r\n") != std::string::npos || h.value.find('\0') != std::string::npos) {
      return InvalidArgument(
          fmt::format("webhook header \"{}\" is not a header name, or its value holds a line break", k));
    }
    std::string lower = AsciiLower(k);
    for (const char* framing : {"host", "content-length", "transfer-encoding", "connection", "content-type"}) {
      if (lower == framing) return InvalidArgument(fmt::format("webhook header \"{}\" is set by the server", k));
    }
    out->push_back(std::move(h));
  }
  return Status::OK();
}

}  // namespace

Status RunWebhook(const Hook& hook, const HookRecord& record, const HookEnv& env, OutputLog* log) {
  const auto& p = hook.properties;
  const std::string url = p["url"].get<std::string>();
  std::vector<Param> query, headers;
  ARROW_RETURN_NOT_OK(QueryParams(p, *env.options, &query));
  ARROW_RETURN_NOT_OK(Headers(p, *env.options, &headers));
  ARROW_ASSIGN_OR_RAISE(WebhookTarget to, ParseWebhookUrl(url));
  std::string qs;
  for (const auto& q : query) {
    qs += (qs.empty() ? "" : "&") + PercentEncode(q.name, PercentSet::kUnreserved) + "=" +
          PercentEncode(q.value, PercentSet::kUnreserved);
  }
  if (!qs.empty()) to.target += (to.target.find('?') == std::string::npos ? "?" : "&") + qs;

  const std::string body = EventJson(record, env.action_name, hook.id, ToUnixMicros(env.clock->Now()));
  log->Append(fmt::format("Request:\nPOST {}\nQuery Params:\n", url));
  for (const auto& q : query) log->Append(fmt::format("{}: {}\n", q.name, q.secret ? kMasked : q.value));
  log->Append("Headers:\n");
  std::vector<std::pair<std::string, std::string>> sent;
  for (const auto& x : headers) {
    sent.emplace_back(x.name, x.value);
    log->Append(fmt::format("{}: {}\n", x.name, x.secret ? kMasked : x.value));
  }
  log->Append("Content-Type: application/json\n");
  log->Append(fmt::format("Request Body:\n{}\n\n", body));

  int64_t started = SteadyMicros();
  auto answer = PostJson(to, sent, body, env.deadline_micros, *env.address_policy);
  log->Append(fmt::format("\nRequest duration: {}ms\n", (SteadyMicros() - started) / 1000));
  if (!answer.ok()) return Status::IOError(fmt::format("Post \"{}\": {}", url, answer.status().message()));
  log->Append(fmt::format("\nResponse:\nHTTP/1.1 {} {}\n", answer->status, answer->reason));
  for (const auto& [k, v] : answer->headers) log->Append(fmt::format("{}: {}\n", k, v));
  log->Append("\n" + answer->body + (answer->cut ? "\n[response body cut]\n" : "\n"));
  if (answer->status < 200 || answer->status > 299) {
    return Status::IOError(fmt::format("webhook request failed (status code: {})", answer->status));
  }
  return Status::OK();
}

}  // namespace sediment::actions
