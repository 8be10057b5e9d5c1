#include "chain/evm_rpc.h"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <regex>
#include <thread>

#include "base/ascii.h"
#include "base/crypto.h"

namespace sediment::chain {

using nlohmann::json;

namespace {

// httplib's words for a failed request, with the certificate's fault when that was it.
std::string DescribeError(httplib::Client& c, httplib::Error e) {
  std::string out = httplib::to_string(e);
  if (e == httplib::Error::SSLServerVerification) {
    long v = c.get_openssl_verify_result();
    out += v == X509_V_OK ? " (the node's certificate does not name this host)"
                          : fmt::format(" (the node's certificate: {}; set ca_file to the CA that issued it)",
                                        X509_verify_cert_error_string(v));
  }
  return out;
}

// Headers httplib sets itself: not for [[jobs]] headers.
bool ReservedHeader(const std::string& header) {
  std::string name = AsciiLower(header);
  return name == "host" || name == "content-length" || name == "transfer-encoding" || name == "connection" ||
         name == "content-type";
}

}  // namespace

Result<std::unique_ptr<JsonRpcClient>> JsonRpcClient::Make(RpcOptions options) {
  static const std::regex kUrl(
      R"(^(https?)://(?:([^:@/]*)(?::([^@/]*))?@)?([A-Za-z0-9.\-]+|\[[0-9a-fA-F:]+\])(?::(\d{1,5}))?(/.*)?$)");
  std::smatch m;
  // Messages never echo the URL past its host and port: a password or an API key may be in it.
  if (!std::regex_match(options.url, m, kUrl)) {
    return InvalidArgument(
        "the node url is not http[s]://[user:password@]host[:port][/path] (escape '@', ':' and '/' in a password "
        "as %40, %3A, %2F)");
  }
  const bool tls_scheme = m[1].str() == "https";
  std::string shown =
      fmt::format("{}://{}:{}", m[1].str(), m[4].str(), m[5].matched ? m[5].str() : (tls_scheme ? "443" : "80"));
  const bool tls = m[1].str() == "https";
  int port = m[5].matched ? std::stoi(m[5].str()) : tls ? 443 : 80;
  if (port < 1 || port > 65535) return InvalidArgument(fmt::format("url \"{}\": bad port", shown));
  if (options.timeout_seconds <= 0 || options.max_attempts < 1 || options.rate_limit < 0) {
    return InvalidArgument("timeout_seconds and max_attempts must be positive, rate_limit not negative");
  }
  if (!options.ca_file.empty() && !tls) {
    return InvalidArgument(fmt::format("ca_file is for https node URLs; \"{}\" is http", shown));
  }
  std::vector<std::pair<std::string, std::string>> headers;
  static const std::regex kHeader(R"(^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*([^\r\n]*)$)");
  for (const auto& h : options.headers) {
    std::smatch hm;
    if (!std::regex_match(h, hm, kHeader)) {
      return InvalidArgument(
          fmt::format("header \"{}…\" is not \"Name: value\"", h.substr(0, h.find_first_of(":= \t"))));
    }
    if (ReservedHeader(hm[1].str())) {
      return InvalidArgument(fmt::format("header {} is the client's own, not a setting", hm[1].str()));
    }
    if (m[2].matched && AsciiLower(hm[1].str()) == "authorization") {
      return InvalidArgument("an Authorization header and a user:password in the url: choose one");
    }
    headers.emplace_back(hm[1].str(), hm[2].str());
  }
  // A user or password with '@', ':' or '/' is written escaped in a URL (RFC 3986 userinfo).
  auto user = PercentDecode(m[2].str()), password = PercentDecode(m[3].str());
  if (!user || !password) {
    return InvalidArgument(fmt::format(
        "the node url {} has a user or password with a '%' not followed by two hex digits (write '%' as %25)", shown));
  }
  std::string origin = fmt::format("{}://{}:{}", m[1].str(), m[4].str(), port);
  std::string path = m[6].matched ? m[6].str() : "/";
  std::unique_ptr<JsonRpcClient> c(new JsonRpcClient(std::move(options), std::move(origin), std::move(path)));
  c->shown_url_ = std::move(shown);
  c->user_ = std::move(*user);
  c->password_ = std::move(*password);
  c->headers_ = std::move(headers);
  return c;
}

JsonRpcClient::JsonRpcClient(RpcOptions options, std::string origin, std::string path)
    : options_(std::move(options)), origin_(std::move(origin)), path_(std::move(path)) {}

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
  auto c = std::make_unique<httplib::Client>(origin_);  // https: OpenSSL, verifying the node's certificate
  // The CAs to trust: the configured file, else the system's bundle, named explicitly: OpenSSL's
  // "default paths" go through its OSSL_STORE loaders, which crash in a process that also loads
  // the OpenSSL bundled with the Arrow libraries.
  c->set_ca_cert_path(options_.ca_file.empty() ? SystemCaBundle() : options_.ca_file);
  c->enable_server_certificate_verification(true);
  if (!user_.empty() || !password_.empty()) c->set_basic_auth(user_, password_);
  httplib::Headers headers;
  for (const auto& [k, v] : headers_) headers.emplace(k, v);
  c->set_default_headers(std::move(headers));
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
      error = fmt::format("{}: {}", shown_url_, DescribeError(*conn, res.error()));
      NoteError(error);
      continue;  // the connection is dropped with `conn`
    }
    if (res->status == 429 || res->status >= 500) {
      error = fmt::format("{}: HTTP {} {}", shown_url_, res->status, res->body.substr(0, 200));
      NoteError(error);
      continue;
    }
    GiveBack(std::move(conn));
    if (res->status != 200) {
      return Status::IOError(fmt::format("{}: HTTP {} {}", shown_url_, res->status, res->body.substr(0, 200)));
    }
    json answer = json::parse(res->body, nullptr, false);
    if (answer.is_object() && answer.contains("error")) {
      // A node that refuses batches answers with one error object.
      return Status::IOError(fmt::format("{}: {}", shown_url_, answer["error"].dump()));
    }
    if (!answer.is_array()) {
      return Status::IOError(
          fmt::format("{}: the answer is not a JSON-RPC batch: {}", shown_url_, res->body.substr(0, 200)));
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
