// S3 requests signed with signature V4 by Sediment itself, for what Arrow's
// S3 filesystem does not offer or does at too high a cost: presigned URLs
// (query authentication) and small ranged GETs. A GET through the AWS SDK
// costs about 0.8 ms of CPU (endpoint rules, header maps, iostreams,
// copies), more than a head file's bytes; a merge of hundreds of head files
// on object storage paid it per file (bench/RESULTS.md, issue 28). Here a
// GET is one signed request on a kept-alive cpp-httplib connection.
//
// Private to the blob module. Thread-safety: S3Getter is safe to share; its
// connections are pooled.
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace arrow {
class Buffer;
}  // namespace arrow
namespace httplib {
class Client;
}  // namespace httplib

namespace sediment::blob {

// One S3 store's endpoint and static key.
struct S3Presigner {
  std::string scheme = "https";
  std::string endpoint;  // host[:port]; empty = AWS
  std::string region = "us-east-1";
  std::string key, secret, session_token;
  bool path_style = true;
};

// Name-value pairs: a query's parameters, or headers.
using Query = std::vector<std::pair<std::string, std::string>>;

// A signature-V4 presigned URL (query authentication) for `method` on
// bucket/key, valid `expires` seconds from `now`; `extra` parameters
// (partNumber, uploadId) are signed with it.
std::string Presign(const S3Presigner& p, const std::string& bucket, const std::string& key, const std::string& method,
                    int64_t expires, std::time_t now, const Query& extra = {});

// The headers of `method` on bucket/key?query with `headers` (names in any
// case; x-amz-* ones must be among them) at `now`, signed in the
// Authorization header with host, x-amz-content-sha256, x-amz-date and the
// session token if any.
Query SignedHeaders(const S3Presigner& p, const std::string& method, const std::string& bucket, const std::string& key,
                    const Query& query, const Query& headers, std::string_view payload_sha256, std::time_t now);

// The same for a GET of bucket/key with `range` ("bytes=a-b").
Query SignedGetHeaders(const S3Presigner& p, const std::string& bucket, const std::string& key,
                       const std::string& range, std::time_t now);

// What S3 answered a request.
struct S3Answer {
  int status = 0;
  std::string body;
  std::string etag;  // the ETag header, as sent (quoted)
};

// One request signed in headers, its body's SHA-256 signed too, on a new
// connection; transport failures are tried 3 times, except a POST's. An error answer (also
// an error document in a 200, as CompleteMultipartUpload may send) is a
// Status naming the request, S3's code and message: NotFound for
// NoSuchUpload/NoSuchKey/NoSuchBucket, InvalidArgument for InvalidPart,
// InvalidPartOrder, EntityTooSmall, InvalidRange and malformed requests.
Result<S3Answer> S3Call(const S3Presigner& p, const std::string& method, const std::string& bucket,
                        const std::string& key, const Query& query, const Query& headers, const std::string& body);

// Ranged GETs of one bucket's objects, signed in headers.
class S3Getter {
 public:
  S3Getter(S3Presigner signer, std::string bucket);
  ~S3Getter();

  // Bytes [offset, offset + length) of `key`, an object of `object_size`
  // bytes: exactly those, or an error naming the object and what S3 said
  // (NotFound for NoSuchKey; an object of another size is an error).
  Result<std::shared_ptr<arrow::Buffer>> Get(const std::string& key, int64_t offset, int64_t length,
                                             int64_t object_size);

 private:
  static constexpr int kAttempts = 3;
  static constexpr std::chrono::seconds kMaxIdle{4};
  struct Idle {
    std::unique_ptr<httplib::Client> client;
    std::chrono::steady_clock::time_point since;
  };
  // A kept-alive connection idle for less than kMaxIdle (*reused), else a new one.
  std::unique_ptr<httplib::Client> TakeConnection(bool* reused);
  void GiveBack(std::unique_ptr<httplib::Client> c);

  const S3Presigner signer_;
  const std::string bucket_;
  std::string host_, origin_;
  std::mutex mu_;
  std::vector<Idle> idle_;  // GUARDED_BY(mu_), the most recently used last
};

}  // namespace sediment::blob
