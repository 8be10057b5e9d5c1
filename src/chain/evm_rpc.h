// JsonRpcClient: JSON-RPC 2.0 over HTTP to an Ethereum node, as the evm-rpc
// source needs it: batch requests, a requests-per-second limit shared by the
// callers (each call in a batch counts), timeouts, and retries with
// exponential back-off (and jitter) of what a node does when it is busy or
// restarting: a timeout, a refused or dropped connection, HTTP 429 or 5xx. A
// JSON-RPC error in an answer is the node's answer and is not retried.
//
// Thread-safety: Batch and Call are safe from many threads at once (each
// takes a connection of its own from a small pool).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace httplib {
class Client;
}

namespace sediment::chain {

struct RpcOptions {
  // http[s]://[user:password@]host[:port][/path]; a user and password go as HTTP Basic.
  std::string url;
  std::string ca_file;               // https: trust these CAs (PEM) instead of the system's store
  std::vector<std::string> headers;  // "Name: value", sent with every request (providers' API keys)
  double timeout_seconds = 10;       // per HTTP request
  double rate_limit = 0;             // calls per second; 0 = no limit
  int max_attempts = 8;              // per batch, the first included
  double backoff_initial = 0.2;      // seconds, doubled after each failure
  double backoff_max = 10;           // seconds
};

struct RpcCall {
  std::string method;
  nlohmann::json params;
};

class JsonRpcClient {
 public:
  // InvalidArgument if the URL is not http[s]://[user:password@]host[:port][/path] or a header
  // is not "Name: value".
  static Result<std::unique_ptr<JsonRpcClient>> Make(RpcOptions options);
  ~JsonRpcClient();

  // One batch request: the results in call order; a call the node answered
  // with a JSON-RPC error is that error (Status with the node's message).
  // Unavailable once every attempt failed.
  Result<std::vector<Result<nlohmann::json>>> Batch(const std::vector<RpcCall>& calls);
  // One call (an error answer is an error).
  Result<nlohmann::json> Call(const std::string& method, nlohmann::json params);

  int64_t retries() const { return retries_.load(); }
  std::string last_error() const;

 private:
  JsonRpcClient(RpcOptions options, std::string origin, std::string path);
  Result<std::vector<Result<nlohmann::json>>> BatchOnce(const std::vector<RpcCall>& calls);
  std::unique_ptr<httplib::Client> TakeConnection();
  void GiveBack(std::unique_ptr<httplib::Client> c);
  void WaitForRate(size_t calls);
  void NoteError(const std::string& e);

  const RpcOptions options_;
  const std::string origin_;  // scheme://host:port
  const std::string path_;
  std::string shown_url_;  // the URL as messages show it: no password
  std::string user_, password_;
  std::vector<std::pair<std::string, std::string>> headers_;
  std::atomic<int64_t> next_id_{1};
  std::atomic<int64_t> retries_{0};
  std::mutex mu_;
  std::vector<std::unique_ptr<httplib::Client>> idle_;  // GUARDED_BY(mu_)
  std::chrono::steady_clock::time_point next_slot_;     // GUARDED_BY(mu_): rate limit
  std::string last_error_;                              // GUARDED_BY(mu_)
};

}  // namespace sediment::chain
