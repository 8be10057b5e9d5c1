// AWS request signatures, as the S3 gateway checks them: Signature Version 4
// (Authorization header or presigned query, with a hex payload hash,
// UNSIGNED-PAYLOAD, or an aws-chunked streaming payload) and Version 2
// (header or presigned query). Pure functions over the request as it came
// off the wire, so they can be tested against AWS's published examples.
//
// The flow: ParseSignature() says who claims to sign and how, the caller
// looks up that access key's secret, VerifySignature() checks the claim. For a
// streaming payload, ChunkedDecoder then checks every chunk's signature as the
// body arrives.
//
// Thread-safety: all functions are pure; a ChunkedDecoder is used by one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/crypto.h"
#include "base/status.h"

namespace sediment::server::s3 {

// A request as the client signed it.
struct WireRequest {
  std::string method;
  std::string raw_path;   // percent-encoded, as in the request line, without the query
  std::string raw_query;  // after '?', as sent
  // Lower-case header names; repeated headers are joined with ','.
  std::map<std::string, std::string> headers;
  std::string bucket;  // for V2's canonical resource under virtual-host addressing ("" otherwise)
  bool virtual_host = false;
};

enum class PayloadKind {
  kHashed,                    // x-amz-content-sha256 is the body's SHA-256 (hex)
  kUnsigned,                  // UNSIGNED-PAYLOAD (or V2, which signs no body)
  kStreamingSigned,           // STREAMING-AWS4-HMAC-SHA256-PAYLOAD: aws-chunked, each chunk signed
  kStreamingUnsignedTrailer,  // STREAMING-UNSIGNED-PAYLOAD-TRAILER: aws-chunked, unsigned
};

struct Signature {
  int version = 4;
  bool presigned = false;
  std::string access_key_id;
  std::string signature;  // hex (V4) or base64 (V2)
  // V4 only.
  std::string amz_date;  // yyyymmddThhmmssZ
  std::string scope;     // yyyymmdd/region/service/aws4_request
  std::string date, region, service;
  std::vector<std::string> signed_headers;
  PayloadKind payload = PayloadKind::kUnsigned;
  std::string payload_hash;  // the value signed as the payload hash
  int64_t expires = 0;       // presigned: seconds after amz_date (V4), or absolute Unix time (V2)
};

// The request's signature claim. Unauthorized when it carries none;
// InvalidArgument naming the part that is malformed.
Result<Signature> ParseSignature(const WireRequest& req);

// OK when `sig` is `secret`'s signature of `req` and is current at `now_unix`
// (V4 headers within 15 minutes; presigned URLs until they expire), and (V4)
// every x-amz-* header of the request is among the signed ones.
// Unauthorized with "SignatureDoesNotMatch" / "RequestTimeTooSkewed" /
// "expired" in the message otherwise.
Status VerifySignature(const WireRequest& req, const Signature& sig, const std::string& secret, int64_t now_unix);

// Pieces, exposed for tests and for ChunkedDecoder. The parts SigV4 signers
// share (key derivation, canonical forms) are base/sigv4.h's.
std::string CanonicalRequestV4(const WireRequest& req, const Signature& sig);
std::string StringToSignV2(const WireRequest& req, const Signature& sig);
std::string SigningKeyV4(const std::string& secret, const Signature& sig);
// "yyyymmddThhmmssZ" as Unix seconds; nullopt if malformed.
std::optional<int64_t> ParseAmzDate(std::string_view s);
// An RFC 1123 HTTP date as Unix seconds; nullopt if malformed.
std::optional<int64_t> ParseHttpDate(std::string_view s);

// Decodes an aws-chunked body, checking each chunk's signature (signed form)
// and collecting trailing headers (trailer form). Data is passed on as it is
// decoded; the caller must discard it if Feed() or Finish() fail.
class ChunkedDecoder {
 public:
  // `signing_key` and `sig` are needed for the signed form only.
  ChunkedDecoder(PayloadKind kind, std::string signing_key, const Signature& sig);

  Status Feed(const char* data, size_t n, const std::function<Status(const char*, size_t)>& out);
  // InvalidArgument unless the final chunk (and trailer, if any) arrived.
  Status Finish() const;
  const std::map<std::string, std::string>& trailers() const { return trailers_; }

 private:
  enum class State { kSize, kData, kDataEnd, kTrailer, kDone };
  Status EndChunk();
  Status ParseHeaderLine(const std::string& line);

  PayloadKind kind_;
  std::string signing_key_;
  std::string amz_date_, scope_;
  std::string prev_signature_;
  State state_ = State::kSize;
  std::string line_;  // a header or trailer line being assembled
  uint64_t remaining_ = 0;
  std::string chunk_signature_;
  std::unique_ptr<Digest> chunk_hash_;  // the chunk being received (signed form)
  bool last_chunk_ = false;
  std::map<std::string, std::string> trailers_;
};

}  // namespace sediment::server::s3
