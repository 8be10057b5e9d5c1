#include "base/sigv4.h"

#include <algorithm>

#include "base/crypto.h"

namespace sediment::sigv4 {

std::string Scope::ToString() const { return date + "/" + region + "/" + service + "/aws4_request"; }

std::string SigningKey(std::string_view secret, const Scope& scope) {
  std::string key = HmacSha256("AWS4" + std::string(secret), scope.date);
  key = HmacSha256(key, scope.region);
  key = HmacSha256(key, scope.service);
  return HmacSha256(key, "aws4_request");
}

std::string AmzDate(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char out[32];
  std::strftime(out, sizeof(out), "%Y%m%dT%H%M%SZ", &tm);
  return out;
}

std::string CanonicalUri(std::string_view decoded_path) {
  return PercentEncode(decoded_path, PercentSet::kUnreservedAndSlash);
}

std::string CanonicalQuery(const QueryParams& decoded) {
  QueryParams encoded;
  encoded.reserve(decoded.size());
  for (const auto& [name, value] : decoded) {
    encoded.emplace_back(PercentEncode(name, PercentSet::kUnreserved), PercentEncode(value, PercentSet::kUnreserved));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out.push_back('&');
    out += name + "=" + value;
  }
  return out;
}

std::string CanonicalHeaderValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  bool space = false;
  for (char c : value) {
    if (c == ' ' || c == '\t') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

CanonicalHeaders CanonicalizeHeaders(const std::vector<std::pair<std::string, std::string>>& lower_name_values) {
  CanonicalHeaders out;
  for (const auto& [name, value] : lower_name_values) {
    out.lines += name + ":" + CanonicalHeaderValue(value) + "\n";
    if (!out.signed_headers.empty()) out.signed_headers.push_back(';');
    out.signed_headers += name;
  }
  return out;
}

std::string CanonicalRequest(std::string_view method, std::string_view canonical_uri, std::string_view canonical_query,
                             const CanonicalHeaders& headers, std::string_view payload_hash) {
  std::string out;
  out.reserve(method.size() + canonical_uri.size() + canonical_query.size() + headers.lines.size() +
              headers.signed_headers.size() + payload_hash.size() + 5);
  out.append(method).append("\n");
  out.append(canonical_uri).append("\n");
  out.append(canonical_query).append("\n");
  out.append(headers.lines).append("\n");
  out.append(headers.signed_headers).append("\n");
  out.append(payload_hash);
  return out;
}

std::string StringToSign(std::string_view amz_date, const Scope& scope, std::string_view canonical_request) {
  std::string out(kAlgorithm);
  out.append("\n").append(amz_date).append("\n");
  out += scope.ToString() + "\n" + Sha256Hex(canonical_request);
  return out;
}

std::string Sign(std::string_view signing_key, std::string_view string_to_sign) {
  return Hex(HmacSha256(signing_key, string_to_sign));
}

}  // namespace sediment::sigv4
