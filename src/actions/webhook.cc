// The webhook hook: POSTs the event (lakeFS's EventInfo JSON) to a URL; any
// 2xx answer passes. The request and the answer (its body cut at 64 KiB) are
// the hook's output, with secrets ({{ ENV.X }}) shown as "*******".
#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <regex>
#include <thread>

#include "actions/action.h"
#include "base/clock.h"

namespace sediment::actions {
namespace {

constexpr size_t kResponseBodyLimit = 64 << 10;
constexpr const char* kMasked = "*******";

struct Param {
  std::string name, value;
  bool secret = false;
};

std::string Escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace

Status RunWebhook(const Hook& hook, const HookRecord& record, const HookEnv& env, OutputLog* log) {
  const auto& p = hook.properties;
  const std::string url = p["url"].get<std::string>();
  int64_t timeout_ms = env.options->hook_timeout_ms;
  if (p.contains("timeout") && p["timeout"].is_string()) {
    ARROW_ASSIGN_OR_RAISE(timeout_ms, ParseGoDuration(p["timeout"].get<std::string>()));
  }
  std::vector<Param> query, headers;
  if (p.contains("query_params") && !p["query_params"].is_null()) {
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
        ARROW_ASSIGN_OR_RAISE(q.value, ExpandEnv(value, env.options->env_prefix, &q.secret));
        query.push_back(std::move(q));
      }
    }
  }
  if (p.contains("headers") && !p["headers"].is_null()) {
    if (!p["headers"].is_object()) return InvalidArgument("unsupported headers: webhook wrong format");
    for (const auto& [k, v] : p["headers"].items()) {
      if (!v.is_string()) return InvalidArgument("headers array should contains only strings");
      Param h{k, "", false};
      ARROW_ASSIGN_OR_RAISE(h.value, ExpandEnv(v.get<std::string>(), env.options->env_prefix, &h.secret));
      if (h.name.find_first_of("\r\n:") != std::string::npos || h.value.find_first_of("\r\n") != std::string::npos) {
        return InvalidArgument(fmt::format("webhook header \"{}\" holds a line break or colon", k));
      }
      headers.push_back(std::move(h));
    }
  }
  if (url.size() > 8192) return InvalidArgument("webhook url is longer than 8192 bytes");
  static const std::regex kUrl(R"(^(https?://[^/?#]+)([^?#]*)(\?[^#]*)?$)");
  std::smatch m;
  if (!std::regex_match(url, m, kUrl)) {
    return InvalidArgument(fmt::format("webhook url \"{}\" must be an http:// or https:// URL", url));
  }
  std::string path = m[2].str().empty() ? "/" : m[2].str();
  std::string qs = m[3].matched ? m[3].str().substr(1) : "";
  std::sort(query.begin(), query.end(), [](const Param& a, const Param& b) { return a.name < b.name; });
  for (const auto& q : query) qs += (qs.empty() ? "" : "&") + Escape(q.name) + "=" + Escape(q.value);
  if (!qs.empty()) path += "?" + qs;

  const std::string body = EventJson(record, env.action_name, hook.id, ToUnixMicros(SystemClock().Now()));
  log->Append(fmt::format("Request:\nPOST {}\nQuery Params:\n", url));
  for (const auto& q : query) log->Append(fmt::format("{}: {}\n", q.name, q.secret ? kMasked : q.value));
  log->Append("Headers:\n");
  httplib::Headers h;
  for (const auto& x : headers) {
    h.emplace(x.name, x.value);
    log->Append(fmt::format("{}: {}\n", x.name, x.secret ? kMasked : x.value));
  }
  log->Append("Content-Type: application/json\n");
  log->Append(fmt::format("Request Body:\n{}\n\n", body));

  // The hook's deadline bounds the whole exchange (connect, send, wait).
  int64_t left_ms = std::min<int64_t>(timeout_ms, (env.deadline_micros - SteadyMicros()) / 1000);
  if (left_ms <= 0) left_ms = 1;
  httplib::Client client(m[1].str());
  auto secs = left_ms / 1000;
  auto usecs = (left_ms % 1000) * 1000;
  client.set_connection_timeout(secs, usecs);
  client.set_read_timeout(secs, usecs);
  client.set_write_timeout(secs, usecs);
  client.set_follow_location(false);
  // The answer's body is read through a receiver that keeps its first 64 KiB
  // and stops there: a webhook cannot make the server hold more.
  std::string answer;
  bool cut = false, late = false;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.headers = h;
  req.headers.emplace("Content-Type", "application/json");
  req.body = body;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    size_t room = kResponseBodyLimit - answer.size();
    answer.append(data, std::min(n, room));
    if (n > room) cut = true;
    // A body that trickles in is cut off at the hook's deadline too.
    if (SteadyMicros() > env.deadline_micros) late = true;
    return !cut && !late;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  int64_t started = SteadyMicros();
  // A watchdog ends the exchange at the deadline, whatever stage it is in (a
  // peer that trickles headers would outlast the per-read timeouts).
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  std::atomic<bool> stopped{false};
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(left_ms);
    if (!cv.wait_until(lock, deadline, [&] { return finished; })) {
      stopped = true;
      client.stop();
    }
  });
  bool sent = client.send(req, res, error);
  {
    std::lock_guard<std::mutex> lock(mu);
    finished = true;
  }
  cv.notify_all();
  watchdog.join();
  if (stopped) late = true;
  log->Append(fmt::format("\nRequest duration: {}ms\n", (SteadyMicros() - started) / 1000));
  if (late)
    return Status::IOError(fmt::format("Post \"{}\": the answer took longer than the timeout ({}ms)", url, timeout_ms));
  if (!sent && !(cut && res.status > 0)) {
    return Status::IOError(fmt::format("Post \"{}\": {}", url,
                                       error == httplib::Error::Read
                                           ? fmt::format("no answer within the timeout ({}ms)", timeout_ms)
                                           : httplib::to_string(error)));
  }
  const httplib::Response* result = &res;
  log->Append(fmt::format("\nResponse:\nHTTP/1.1 {} {}\n", result->status, result->reason));
  for (const auto& [k, v] : result->headers) log->Append(fmt::format("{}: {}\n", k, v));
  log->Append("\n" + answer + (cut ? "\n[response body cut]\n" : "\n"));
  if (result->status < 200 || result->status > 299) {
    return Status::IOError(fmt::format("webhook request failed (status code: {})", result->status));
  }
  return Status::OK();
}

}  // namespace sediment::actions
