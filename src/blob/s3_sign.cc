#include <arrow/buffer.h>
#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "base/ascii.h"
#include "base/crypto.h"
#include "base/sigv4.h"
#include "base/xml.h"
#include "blob/s3_sign_internal.h"

namespace sediment::blob {
namespace {

struct SigningTime {
  std::string stamp;  // 20261203T081500Z
  sigv4::Scope scope;
};

SigningTime TimeOf(const S3Presigner& p, std::time_t now) {
  std::string stamp = sigv4::AmzDate(now);
  std::string day = stamp.substr(0, 8);
  return {std::move(stamp), {std::move(day), p.region, "s3"}};
}

// The signature of `canonical` (a canonical request) at time `t`.
std::string Sign(const S3Presigner& p, const SigningTime& t, const std::string& canonical) {
  return sigv4::Sign(sigv4::SigningKey(p.secret, t.scope), sigv4::StringToSign(t.stamp, t.scope, canonical));
}

// The host a request for `bucket` goes to, and the path of `key` there:
// encoded as signature V4 wants it, so the path sent is the one signed.
std::pair<std::string, std::string> HostAndPath(const S3Presigner& p, const std::string& bucket,
                                                const std::string& key) {
  const std::string endpoint = p.endpoint.empty() ? fmt::format("s3.{}.amazonaws.com", p.region) : p.endpoint;
  if (p.path_style) return {endpoint, sigv4::CanonicalUri("/" + bucket + "/" + key)};
  return {bucket + "." + endpoint, sigv4::CanonicalUri("/" + key)};
}

std::unique_ptr<httplib::Client> NewClient(const std::string& origin) {
  auto c = std::make_unique<httplib::Client>(origin);
  // As the evm-rpc client: the system's CAs named explicitly (OpenSSL's
  // default paths crash beside the OpenSSL bundled with Arrow's libraries).
  c->set_ca_cert_path(SystemCaBundle());
  c->enable_server_certificate_verification(true);
  c->set_connection_timeout(std::chrono::seconds(5));  // as the Arrow S3 options (blob.cc)
  c->set_read_timeout(std::chrono::seconds(30));
  c->set_write_timeout(std::chrono::seconds(30));
  c->set_tcp_nodelay(true);
  c->set_url_encode(false);  // the path is encoded as it was signed
  c->set_decompress(false);
  return c;
}

// The code in an S3 error document (<Code>NoSuchKey</Code>), or empty.
std::string ErrorCode(const std::string& body) {
  const auto a = body.find("<Code>");
  const auto b = body.find("</Code>");
  if (a == std::string::npos || b == std::string::npos || b < a) return "";
  return body.substr(a + 6, std::min<size_t>(b - a - 6, 64));
}

}  // namespace

std::string Presign(const S3Presigner& p, const std::string& bucket, const std::string& key, const std::string& method,
                    int64_t expires, std::time_t now, const Query& extra) {
  const SigningTime t = TimeOf(p, now);
  const auto [host, path] = HostAndPath(p, bucket, key);
  Query q = extra;
  q.insert(q.end(), {
                        {"X-Amz-Algorithm", std::string(sigv4::kAlgorithm)},
                        {"X-Amz-Credential", p.key + "/" + t.scope.ToString()},
                        {"X-Amz-Date", t.stamp},
                        {"X-Amz-Expires", std::to_string(expires)},
                        {"X-Amz-SignedHeaders", "host"},
                    });
  if (!p.session_token.empty()) q.emplace_back("X-Amz-Security-Token", p.session_token);
  const std::string query = sigv4::CanonicalQuery(q);
  const std::string canonical = sigv4::CanonicalRequest(
      method, path, query, sigv4::CanonicalizeHeaders({{"host", host}}), sigv4::kUnsignedPayload);
  return fmt::format("{}://{}{}?{}&X-Amz-Signature={}", p.scheme, host, path, query, Sign(p, t, canonical));
}

S3Getter::S3Getter(S3Presigner signer, std::string bucket) : signer_(std::move(signer)), bucket_(std::move(bucket)) {
  host_ = HostAndPath(signer_, bucket_, "").first;
  origin_ = signer_.scheme + "://" + host_;
}

S3Getter::~S3Getter() = default;

std::unique_ptr<httplib::Client> S3Getter::TakeConnection(bool* reused) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    while (!idle_.empty()) {
      Idle c = std::move(idle_.back());
      idle_.pop_back();
      // Servers close idle connections (S3 after some seconds): an old one is
      // likely closed, and on https cpp-httplib 0.11 cannot tell before using it.
      if (now - c.since > kMaxIdle) continue;
      *reused = true;
      return std::move(c.client);
    }
  }
  *reused = false;
  auto c = NewClient(origin_);
  c->set_keep_alive(true);
  return c;
}

void S3Getter::GiveBack(std::unique_ptr<httplib::Client> c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < 64) idle_.push_back(Idle{std::move(c), std::chrono::steady_clock::now()});
}

Query SignedHeaders(const S3Presigner& p, const std::string& method, const std::string& bucket, const std::string& key,
                    const Query& query, const Query& headers, std::string_view payload_sha256, std::time_t now) {
  const SigningTime t = TimeOf(p, now);
  const auto [host, path] = HostAndPath(p, bucket, key);
  Query all = {{"host", host}, {"x-amz-content-sha256", std::string(payload_sha256)}, {"x-amz-date", t.stamp}};
  for (const auto& [k, v] : headers) all.emplace_back(AsciiLower(k), v);
  if (!p.session_token.empty()) all.emplace_back("x-amz-security-token", p.session_token);
  std::sort(all.begin(), all.end());
  const sigv4::CanonicalHeaders headers_signed = sigv4::CanonicalizeHeaders(all);
  const std::string canonical =
      sigv4::CanonicalRequest(method, path, sigv4::CanonicalQuery(query), headers_signed, payload_sha256);
  all.emplace_back("Authorization",
                   fmt::format("{} Credential={}/{},SignedHeaders={},Signature={}", sigv4::kAlgorithm, p.key,
                               t.scope.ToString(), headers_signed.signed_headers, Sign(p, t, canonical)));
  return all;
}

Query SignedGetHeaders(const S3Presigner& p, const std::string& bucket, const std::string& key,
                       const std::string& range, std::time_t now) {
  return SignedHeaders(p, "GET", bucket, key, {}, {{"range", range}}, sigv4::kEmptySha256, now);
}

Result<S3Answer> S3Call(const S3Presigner& p, const std::string& method, const std::string& bucket,
                        const std::string& key, const Query& query, const Query& headers, const std::string& body) {
  const auto [host, path] = HostAndPath(p, bucket, key);
  httplib::Request req;
  req.method = method;
  const std::string q = sigv4::CanonicalQuery(query);
  req.path = q.empty() ? path : path + "?" + q;
  for (auto& [k, v] : SignedHeaders(p, method, bucket, key, query, headers, Sha256Hex(body), std::time(nullptr))) {
    if (k != "host") req.headers.emplace(k, v);
  }
  req.body = body;
  if (!body.empty()) req.headers.emplace("Content-Type", "application/xml");
  const std::string what = fmt::format("{} s3://{}/{}", method, bucket, key);
  // A transport failure is tried again, as the GETs are, unless the request
  // is a POST: a second CreateMultipartUpload makes a second upload, and a
  // CompleteMultipartUpload that did complete would answer NoSuchUpload.
  const int attempts = method == "POST" ? 1 : 3;
  for (int attempt = 1;; ++attempt) {
    auto client = NewClient(p.scheme + "://" + host);
    auto res = client->send(req);
    if (!res) {
      if (attempt < attempts) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100 << (2 * (attempt - 1))));
        continue;
      }
      return Status::IOError(fmt::format("{}: {} ({} attempts)", what, httplib::to_string(res.error()), attempt));
    }
    S3Answer a{res->status, res->body, res->get_header_value("ETag")};
    // S3 may answer 200 with an error document (CompleteMultipartUpload does).
    const std::string code =
        a.status / 100 == 2 && a.body.find("<Error>") == std::string::npos ? "" : ErrorCode(a.body);
    if (a.status / 100 == 2 && code.empty()) return a;
    const std::string message = XmlText(a.body, "Message");
    const std::string said = fmt::format("{}: {} {}", what, code.empty() ? "HTTP " + std::to_string(a.status) : code,
                                         message.substr(0, 200));
    if (code == "NoSuchUpload" || code == "NoSuchKey" || code == "NoSuchBucket" || a.status == 404) {
      return NotFound(said);
    }
    if (code == "InvalidPart" || code == "InvalidPartOrder" || code == "EntityTooSmall" || code == "InvalidRange" ||
        code == "InvalidArgument" || code == "InvalidRequest" || code == "MalformedXML") {
      return InvalidArgument(said);
    }
    return Status::IOError(said);
  }
}

Result<std::shared_ptr<arrow::Buffer>> S3Getter::Get(const std::string& key, int64_t offset, int64_t length,
                                                     int64_t object_size) {
  if (offset < 0 || length <= 0 || offset + length > object_size) {
    return InvalidArgument(fmt::format("GET of {}: bad range", key));
  }
  const std::string path = HostAndPath(signer_, bucket_, key).second;
  const std::string range = fmt::format("bytes={}-{}", offset, offset + length - 1);
  const std::string what = fmt::format("GET s3://{}/{} [{}, {})", bucket_, key, offset, offset + length);
  // A transport failure is tried again (AWS SDKs do too): on a new connection
  // at once if a kept-alive one failed (the server may have closed it), else
  // after 0.1 and then 0.4 s. An answer, whatever its status, is not.
  for (int attempt = 1;; ++attempt) {
    httplib::Headers headers;
    for (auto& [k, v] : SignedGetHeaders(signer_, bucket_, key, range, std::time(nullptr))) headers.emplace(k, v);
    bool reused = false;
    auto client = TakeConnection(&reused);
    // At most `length` bytes are kept: a server that sends more is refused, not buffered.
    std::string body;
    body.reserve(static_cast<size_t>(length));
    bool too_long = false;
    auto res = client->Get(path.c_str(), headers, [&](const char* data, size_t n) {
      if (body.size() + n > static_cast<size_t>(length) + 4096) {
        too_long = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    if (!res) {
      if (too_long) return Status::IOError(fmt::format("{}: the answer is longer than the range", what));
      if (attempt < kAttempts) {
        if (!reused) std::this_thread::sleep_for(std::chrono::milliseconds(100 << (2 * (attempt - 1))));
        continue;
      }
      return Status::IOError(fmt::format("{}: {} ({} attempts)", what, httplib::to_string(res.error()), attempt));
    }
    const int status = res->status;
    if (status == 404) return NotFound(fmt::format("{}: {}", what, ErrorCode(body)));
    if (status != 206 && status != 200) {
      return Status::IOError(fmt::format("{}: HTTP {} {}", what, status, ErrorCode(body)));
    }
    if (static_cast<int64_t>(body.size()) != length) {
      return Status::IOError(fmt::format("{}: {} bytes in the answer", what, body.size()));
    }
    // The object must have the size the caller knows (a record that names
    // another object's size would otherwise get a part of it).
    const std::string content_range = res->get_header_value("Content-Range");
    const auto slash = content_range.rfind('/');
    const std::string total = status == 200                ? std::to_string(body.size())
                              : slash == std::string::npos ? std::string("?")
                                                           : content_range.substr(slash + 1);
    if (total != std::to_string(object_size)) {
      return Status::IOError(fmt::format("{}: the object has {} bytes, {} expected", what, total, object_size));
    }
    GiveBack(std::move(client));
    return std::shared_ptr<arrow::Buffer>(arrow::Buffer::FromString(std::move(body)));
  }
}

}  // namespace sediment::blob
