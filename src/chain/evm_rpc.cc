#include "chain/evm_rpc.h"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <regex>
#include <thread>

#include "base/crypto.h"

namespace sediment::chain {

using nlohmann::json;

Result<std::unique_ptr<JsonRpcClient>> JsonRpcClient::Make(RpcOptions options) {
  static const std::regex kUrl(R"(^http://([A-Za-z0-9.\-]+|\[[0-9a-fA-F:]+\])(?::(\d{1,5}))?(/.*)?$)");
  std::smatch m;
  if (!std::regex_match(options.url, m, kUrl)) {
    return InvalidArgument(
        fmt::format("url \"{}\" is not http://host[:port][/path] (https is not supported yet)", options.url));
  }
  int port = m[2].matched ? std::stoi(m[2].str()) : 80;
  if (port < 1 || port > 65535) return InvalidArgument(fmt::format("url \"{}\": bad port", options.url));
  if (options.timeout_seconds <= 0 || options.max_attempts < 1 || options.rate_limit < 0) {
    return InvalidArgument("timeout_seconds and max_attempts must be positive, rate_limit not negative");
  }
  std::string path = m[3].matched ? m[3].str() : "/";
  return std::unique_ptr<JsonRpcClient>(new JsonRpcClient(std::move(options), m[1].str(), port, std::move(path)));
}

JsonRpcClient::JsonRpcClient(RpcOptions options, std::string host, int port, std::string path)
    : options_(std::move(options)), host_(std::move(host)), path_(std::move(path)), port_(port) {}

JsonRpcClient::~JsonRpcClient() = default;

std::string JsonRpcClient::last_error() const {
  std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(mu_));
  return last_error_;
}

void JsonRpcClient::NoteError(const std::string& e) {
  std::lock_guard<std::mutex> lock(mu_);
  last_error_ = e;
}

std::unique_ptr<httplib::Client> JsonRpcClient::TakeConnection() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  auto c = std::make_unique<httplib::Client>(host_, port_);
  auto t = std::chrono::duration<double>(options_.timeout_seconds);
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(t);
  c->set_connection_timeout(us);
  c->set_read_timeout(us);
  c->set_write_timeout(us);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  return c;
}

void JsonRpcClient::GiveBack(std::unique_ptr<httplib::Client> c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < 64) idle_.push_back(std::move(c));
}

void JsonRpcClient::WaitForRate(size_t calls) {
  if (options_.rate_limit <= 0) return;
  std::chrono::steady_clock::time_point at;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = std::chrono::steady_clock::now();
    if (next_slot_ < now) next_slot_ = now;
    at = next_slot_;
    next_slot_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(static_cast<double>(calls) / options_.rate_limit));
  }
  std::this_thread::sleep_until(at);
}

Result<std::vector<Result<json>>> JsonRpcClient::Batch(const std::vector<RpcCall>& calls) {
  // Nodes cap a batch (geth: 1,000 calls, 25 MB of answer): larger lists go as several requests.
  constexpr size_t kMaxCalls = 200;
  if (calls.size() <= kMaxCalls) return BatchOnce(calls);
  std::vector<Result<json>> out;
  for (size_t i = 0; i < calls.size(); i += kMaxCalls) {
    std::vector<RpcCall> part(calls.begin() + static_cast<std::ptrdiff_t>(i),
                              calls.begin() + static_cast<std::ptrdiff_t>(std::min(calls.size(), i + kMaxCalls)));
    ARROW_ASSIGN_OR_RAISE(auto answers, BatchOnce(part));
    for (auto& a : answers) out.push_back(std::move(a));
  }
  return out;
}

Result<std::vector<Result<json>>> JsonRpcClient::BatchOnce(const std::vector<RpcCall>& calls) {
  if (calls.empty()) return std::vector<Result<json>>{};
  int64_t first_id = next_id_.fetch_add(static_cast<int64_t>(calls.size()));
  json body = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    body.push_back({{"jsonrpc", "2.0"},
                    {"id", first_id + static_cast<int64_t>(i)},
                    {"method", calls[i].method},
                    {"params", calls[i].params.is_null() ? json::array() : calls[i].params}});
  }
  const std::string text = body.dump();
  double backoff = options_.backoff_initial;
  std::string error;
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    if (attempt > 1) {
      retries_++;
      double jittered = backoff * RandomUniform(0.5, 1.0);
      std::this_thread::sleep_for(std::chrono::duration<double>(jittered));
      backoff = std::min(backoff * 2, options_.backoff_max);
    }
    WaitForRate(calls.size());
    auto conn = TakeConnection();
    auto res = conn->Post(path_, text, "application/json");
    if (!res) {
      error = fmt::format("{}: {}", options_.url, httplib::to_string(res.error()));
      NoteError(error);
      continue;  // the connection is dropped with `conn`
    }
    if (res->status == 429 || res->status >= 500) {
      error = fmt::format("{}: HTTP {} {}", options_.url, res->status, res->body.substr(0, 200));
      NoteError(error);
      continue;
    }
    GiveBack(std::move(conn));
    if (res->status != 200) {
      return Status::IOError(fmt::format("{}: HTTP {} {}", options_.url, res->status, res->body.substr(0, 200)));
    }
    json answer = json::parse(res->body, nullptr, false);
    if (answer.is_object() && answer.contains("error")) {
      // A node that refuses batches answers with one error object.
      return Status::IOError(fmt::format("{}: {}", options_.url, answer["error"].dump()));
    }
    if (!answer.is_array()) {
      return Status::IOError(
          fmt::format("{}: the answer is not a JSON-RPC batch: {}", options_.url, res->body.substr(0, 200)));
    }
    std::vector<Result<json>> out(calls.size(), Result<json>(Status::IOError("no answer to this call in the batch")));
    for (auto& item : answer) {
      if (!item.is_object() || !item.contains("id") || !item["id"].is_number_integer()) continue;
      int64_t i = item["id"].get<int64_t>() - first_id;
      if (i < 0 || i >= static_cast<int64_t>(calls.size())) continue;
      const auto& call = calls[static_cast<size_t>(i)];
      if (item.contains("error")) {
        const json& e = item["error"];
        std::string code = e.is_object() && e.contains("code") ? e["code"].dump() : "?";
        std::string message = e.is_object() && e.contains("message") && e["message"].is_string()
                                  ? e["message"].get<std::string>()
                                  : e.dump();
        out[static_cast<size_t>(i)] =
            Status::IOError(fmt::format("{} {}: node error {}: {}", call.method, call.params.dump(), code, message));
      } else if (!item.contains("result")) {
        out[static_cast<size_t>(i)] =
            Status::IOError(fmt::format("{}: an answer with neither result nor error", call.method));
      } else {
        out[static_cast<size_t>(i)] = std::move(item["result"]);
      }
    }
    return out;
  }
  return Unavailable(fmt::format("{} (after {} attempts)", error, options_.max_attempts));
}

Result<json> JsonRpcClient::Call(const std::string& method, json params) {
  ARROW_ASSIGN_OR_RAISE(auto results, Batch({RpcCall{method, std::move(params)}}));
  return std::move(results[0]);
}

}  // namespace sediment::chain
