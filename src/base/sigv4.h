// AWS Signature Version 4, the parts a signer and a verifier share: the
// signing key (an HMAC chain over the credential scope), the canonical
// request (canonical URI, query and headers), the string to sign and the
// signature. Sediment signs with it (blob/s3_sign.cc: presigned URLs and its
// own S3 calls) and checks with it (server/s3/sig/signature.cc), so the two
// cannot drift apart; sigv4_test.cc holds them to AWS's published vectors.
//
// The canonical URI follows S3's rules, the one service Sediment speaks: the
// path is percent-encoded once and not normalized (other AWS services encode
// it twice and remove "." and ".." segments).
//
// Thread-safety: pure functions, safe from any thread.
#pragma once

#include <ctime>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/codec.h"

namespace sediment::sigv4 {

inline constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
// The payload hash of a request without a body: the SHA-256 of no bytes.
inline constexpr std::string_view kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";

// The credential scope: what a signing key is for.
struct Scope {
  std::string date;  // yyyymmdd
  std::string region;
  std::string service;

  std::string ToString() const;  // yyyymmdd/region/service/aws4_request
};

// HMAC-SHA256 of "aws4_request" under the key chained from "AWS4" + secret
// through the scope's date, region and service (raw bytes).
std::string SigningKey(std::string_view secret, const Scope& scope);

// A Unix time as "yyyymmddThhmmssZ" (UTC), the form of X-Amz-Date.
std::string AmzDate(std::time_t t);

// The canonical URI of a path as decoded ("/bucket/a b"): every byte but the
// unreserved ones and '/' percent-encoded, once.
std::string CanonicalUri(std::string_view decoded_path);

// The canonical query of decoded (name, value) pairs: each side percent-
// encoded (unreserved bytes kept; a space is %20), the pairs sorted by
// encoded name and then value, joined as "name=value" with '&' (a name
// without a value is "name=").
std::string CanonicalQuery(const QueryParams& decoded);

// A header value as signed: without leading and trailing spaces and tabs,
// each inner run of them one space.
std::string CanonicalHeaderValue(std::string_view value);

// The canonical headers block ("name:value\n" per header) and the signed
// headers ("a;b;c") of (lower-case name, value) pairs, in the order given:
// a signer sorts them by name first, a verifier passes them in the order the
// client named them.
struct CanonicalHeaders {
  std::string lines;
  std::string signed_headers;
};
CanonicalHeaders CanonicalizeHeaders(const std::vector<std::pair<std::string, std::string>>& lower_name_values);

// method \n canonical URI \n canonical query \n canonical headers \n signed
// headers \n payload hash.
std::string CanonicalRequest(std::string_view method, std::string_view canonical_uri, std::string_view canonical_query,
                             const CanonicalHeaders& headers, std::string_view payload_hash);

// "AWS4-HMAC-SHA256\n<amz date>\n<scope>\n<hex SHA-256 of the canonical request>".
std::string StringToSign(std::string_view amz_date, const Scope& scope, std::string_view canonical_request);

// The signature: lower-case hex of HMAC-SHA256(signing key, string to sign).
std::string Sign(std::string_view signing_key, std::string_view string_to_sign);

}  // namespace sediment::sigv4
