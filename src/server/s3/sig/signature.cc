#include "server/s3/sig/signature.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <ctime>
#include <set>

#include "base/ascii.h"
#include "base/sigv4.h"

namespace sediment::server::s3 {
namespace {

constexpr std::string_view kAlgorithm = sigv4::kAlgorithm;
constexpr int64_t kMaxSkewSeconds = 15 * 60;
constexpr int64_t kMaxPresignSeconds = 7 * 24 * 3600;

// Subresources V2 includes in the canonical resource.
const std::set<std::string>& V2SubResources() {
  static const std::set<std::string> s = {"acl",
                                          "cors",
                                          "delete",
                                          "lifecycle",
                                          "location",
                                          "logging",
                                          "notification",
                                          "partNumber",
                                          "policy",
                                          "requestPayment",
                                          "response-cache-control",
                                          "response-content-disposition",
                                          "response-content-encoding",
                                          "response-content-language",
                                          "response-content-type",
                                          "response-expires",
                                          "restore",
                                          "tagging",
                                          "torrent",
                                          "uploadId",
                                          "uploads",
                                          "versionId",
                                          "versioning",
                                          "versions",
                                          "website"};
  return s;
}

std::string Header(const WireRequest& req, const std::string& lower_name) {
  auto it = req.headers.find(lower_name);
  return it == req.headers.end() ? "" : it->second;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The raw query as decoded (name, value) pairs; a bad escape is an error.
Result<QueryParams> QueryPairs(std::string_view raw) {
  auto pairs = DecodeQuery(raw);
  if (!pairs) return InvalidArgument(fmt::format("bad percent-escape in the query \"{}\"", raw.substr(0, 200)));
  return std::move(*pairs);
}

sigv4::Scope ScopeOf(const Signature& sig) { return {sig.date, sig.region, sig.service}; }

std::string QueryValue(const QueryParams& q, const std::string& name) {
  for (const auto& [k, v] : q) {
    if (k == name) return v;
  }
  return "";
}

bool HasQuery(const QueryParams& q, const std::string& name) {
  return std::any_of(q.begin(), q.end(), [&](const auto& p) { return p.first == name; });
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) return out;
    start = pos + 1;
  }
}

Status Mismatch(const std::string& what) {
  return Unauthorized(
      "SignatureDoesNotMatch: the request signature we calculated does not match the signature "
      "you provided (" +
      what + "); check your secret access key and signing method");
}

// Credential=AKID/date/region/service/aws4_request into `sig`.
Status ParseCredential(std::string_view cred, Signature* sig) {
  auto parts = Split(cred, '/');
  if (parts.size() < 5 || parts.back() != "aws4_request") {
    return InvalidArgument(
        fmt::format("malformed credential \"{}\": want KEYID/yyyymmdd/region/service/aws4_request", std::string(cred)));
  }
  // The access key id may itself contain '/' in theory; the last four parts are the scope.
  size_t n = parts.size();
  std::string key;
  for (size_t i = 0; i + 4 < n; ++i) key += (i ? "/" : "") + parts[i];
  sig->access_key_id = key;
  sig->date = parts[n - 4];
  sig->region = parts[n - 3];
  sig->service = parts[n - 2];
  sig->scope = ScopeOf(*sig).ToString();
  if (sig->date.size() != 8) return InvalidArgument(fmt::format("malformed credential date \"{}\"", sig->date));
  return Status::OK();
}

Status SetPayload(const std::string& hash, Signature* sig) {
  sig->payload_hash = hash;
  if (hash.empty() || hash == "UNSIGNED-PAYLOAD") {
    sig->payload = PayloadKind::kUnsigned;
    sig->payload_hash = "UNSIGNED-PAYLOAD";
  } else if (hash == "STREAMING-AWS4-HMAC-SHA256-PAYLOAD") {
    sig->payload = PayloadKind::kStreamingSigned;
  } else if (hash == "STREAMING-UNSIGNED-PAYLOAD-TRAILER") {
    sig->payload = PayloadKind::kStreamingUnsignedTrailer;
  } else if (hash.size() == 64 && std::all_of(hash.begin(), hash.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
             })) {
    sig->payload = PayloadKind::kHashed;
  } else {
    return InvalidArgument(
        fmt::format("x-amz-content-sha256 \"{}\" is not supported: send the payload's SHA-256 in lower-case hex, "
                    "UNSIGNED-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD or STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                    hash));
  }
  return Status::OK();
}

}  // namespace

std::optional<int64_t> ParseAmzDate(std::string_view s) {
  if (s.size() != 16 || s[8] != 'T' || s[15] != 'Z') return std::nullopt;
  std::tm tm{};
  std::string str(s);
  if (strptime(str.c_str(), "%Y%m%dT%H%M%SZ", &tm) == nullptr) return std::nullopt;
  return static_cast<int64_t>(timegm(&tm));
}

std::optional<int64_t> ParseHttpDate(std::string_view s) {
  std::string str(s);
  for (const char* fmt : {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %d %H:%M:%S %Y",
                          "%a, %d %b %Y %H:%M:%S +0000"}) {
    std::tm tm{};
    const char* end = strptime(str.c_str(), fmt, &tm);
    if (end != nullptr && *end == '\0') return static_cast<int64_t>(timegm(&tm));
  }
  return std::nullopt;
}

namespace {

// Authorization: AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...
Result<Signature> ParseV4Header(const WireRequest& req, const std::string& auth) {
  Signature sig;
  sig.version = 4;
  // AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...
  std::string_view rest = std::string_view(auth).substr(kAlgorithm.size());
  bool have_cred = false, have_headers = false, have_sig = false;
  for (const auto& field : Split(rest, ',')) {
    std::string_view f = Trim(field);
    size_t eq = f.find('=');
    if (eq == std::string_view::npos) return InvalidArgument(fmt::format("malformed Authorization field \"{}\"", f));
    std::string_view name = f.substr(0, eq), value = f.substr(eq + 1);
    if (name == "Credential") {
      ARROW_RETURN_NOT_OK(ParseCredential(value, &sig));
      have_cred = true;
    } else if (name == "SignedHeaders") {
      sig.signed_headers = Split(value, ';');
      have_headers = true;
    } else if (name == "Signature") {
      sig.signature = std::string(value);
      have_sig = true;
    }
  }
  if (!have_cred || !have_headers || !have_sig) {
    return InvalidArgument("Authorization header lacks Credential, SignedHeaders or Signature");
  }
  sig.amz_date = Header(req, "x-amz-date");
  if (sig.amz_date.empty()) {
    // Clients may sign with Date instead; V4 then wants it in amz form.
    auto t = ParseHttpDate(Header(req, "date"));
    if (!t) return InvalidArgument("a V4-signed request needs an X-Amz-Date or Date header");
    sig.amz_date = sigv4::AmzDate(static_cast<std::time_t>(*t));
  }
  ARROW_RETURN_NOT_OK(SetPayload(Header(req, "x-amz-content-sha256"), &sig));
  if (Header(req, "x-amz-content-sha256").empty()) {
    return InvalidArgument("a V4-signed request needs an x-amz-content-sha256 header");
  }
  return sig;
}

// ?X-Amz-Algorithm=...&X-Amz-Credential=...&X-Amz-Signature=...
Result<Signature> ParseV4Presigned(const WireRequest& req, const QueryParams& query) {
  Signature sig;
  sig.version = 4;
  sig.presigned = true;
  if (QueryValue(query, "X-Amz-Algorithm") != kAlgorithm) {
    return InvalidArgument(fmt::format("X-Amz-Algorithm \"{}\" is not supported (use {})",
                                       QueryValue(query, "X-Amz-Algorithm"), kAlgorithm));
  }
  ARROW_RETURN_NOT_OK(ParseCredential(QueryValue(query, "X-Amz-Credential"), &sig));
  sig.amz_date = QueryValue(query, "X-Amz-Date");
  sig.signed_headers = Split(QueryValue(query, "X-Amz-SignedHeaders"), ';');
  sig.signature = QueryValue(query, "X-Amz-Signature");
  std::string expires = QueryValue(query, "X-Amz-Expires");
  auto [p, ec] = std::from_chars(expires.data(), expires.data() + expires.size(), sig.expires);
  if (ec != std::errc() || p != expires.data() + expires.size() || sig.expires < 0 ||
      sig.expires > kMaxPresignSeconds) {
    return InvalidArgument(
        fmt::format("X-Amz-Expires \"{}\" must be a number of seconds from 0 to {}", expires, kMaxPresignSeconds));
  }
  if (sig.signature.empty()) return InvalidArgument("presigned URL lacks X-Amz-Signature");
  std::string hash = Header(req, "x-amz-content-sha256");
  ARROW_RETURN_NOT_OK(SetPayload(hash.empty() ? "UNSIGNED-PAYLOAD" : hash, &sig));
  return sig;
}

// Authorization: AWS KEY:SIGNATURE
Result<Signature> ParseV2Header(const std::string& auth) {
  Signature sig;
  sig.version = 2;
  std::string_view cred = std::string_view(auth).substr(4);
  size_t colon = cred.rfind(':');
  if (colon == std::string_view::npos) return InvalidArgument("malformed V2 Authorization header: want AWS KEY:SIG");
  sig.access_key_id = std::string(Trim(cred.substr(0, colon)));
  sig.signature = std::string(Trim(cred.substr(colon + 1)));
  return sig;
}

// ?AWSAccessKeyId=...&Expires=...&Signature=...
Result<Signature> ParseV2Presigned(const QueryParams& query) {
  Signature sig;
  sig.version = 2;
  sig.presigned = true;
  sig.access_key_id = QueryValue(query, "AWSAccessKeyId");
  sig.signature = QueryValue(query, "Signature");
  std::string expires = QueryValue(query, "Expires");
  auto [p, ec] = std::from_chars(expires.data(), expires.data() + expires.size(), sig.expires);
  if (ec != std::errc() || p != expires.data() + expires.size()) {
    return InvalidArgument(fmt::format("Expires \"{}\" must be a Unix time in seconds", expires));
  }
  return sig;
}

}  // namespace

Result<Signature> ParseSignature(const WireRequest& req) {
  std::string auth = Header(req, "authorization");
  ARROW_ASSIGN_OR_RAISE(auto query, QueryPairs(req.raw_query));
  if (auth.rfind(kAlgorithm, 0) == 0) return ParseV4Header(req, auth);
  if (HasQuery(query, "X-Amz-Algorithm")) return ParseV4Presigned(req, query);
  if (auth.rfind("AWS ", 0) == 0) return ParseV2Header(auth);
  if (HasQuery(query, "AWSAccessKeyId")) return ParseV2Presigned(query);
  if (!auth.empty()) {
    return InvalidArgument("unsupported Authorization scheme: sign with AWS Signature Version 4 or 2");
  }
  return Unauthorized("AccessDenied: anonymous requests are not allowed; sign the request with an access key");
}

std::string CanonicalRequestV4(const WireRequest& req, const Signature& sig) {
  // The path, decoded and encoded again by AWS's rules: clients differ in
  // which characters they escape, the signature does not.
  auto path = PercentDecode(req.raw_path);
  auto pairs = QueryPairs(req.raw_query);
  QueryParams query;
  if (pairs.ok()) {
    for (auto& [k, v] : *pairs) {
      if (sig.presigned && k == "X-Amz-Signature") continue;
      query.emplace_back(std::move(k), std::move(v));
    }
  }
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& h : sig.signed_headers) headers.emplace_back(h, Header(req, h));
  return sigv4::CanonicalRequest(req.method, sigv4::CanonicalUri(path ? *path : req.raw_path),
                                 sigv4::CanonicalQuery(query), sigv4::CanonicalizeHeaders(headers), sig.payload_hash);
}

std::string SigningKeyV4(const std::string& secret, const Signature& sig) {
  return sigv4::SigningKey(secret, ScopeOf(sig));
}

std::string StringToSignV2(const WireRequest& req, const Signature& sig) {
  std::string out = req.method + "\n";
  out += Header(req, "content-md5") + "\n";
  out += Header(req, "content-type") + "\n";
  if (sig.presigned) {
    out += std::to_string(sig.expires) + "\n";
  } else {
    out += (req.headers.count("x-amz-date") ? std::string() : Header(req, "date")) + "\n";
  }
  for (const auto& [name, value] : req.headers) {  // std::map: sorted by name
    if (name.rfind("x-amz-", 0) == 0) out += name + ":" + std::string(Trim(value)) + "\n";
  }
  std::string resource = req.virtual_host ? "/" + req.bucket : "";
  resource += req.raw_path;
  auto pairs = QueryPairs(req.raw_query);
  std::vector<std::pair<std::string, std::string>> sub;
  if (pairs.ok()) {
    for (const auto& [k, v] : *pairs) {
      if (V2SubResources().count(k)) sub.emplace_back(k, v);
    }
  }
  std::sort(sub.begin(), sub.end());
  for (size_t i = 0; i < sub.size(); ++i) {
    resource += i ? "&" : "?";
    resource += sub[i].first;
    if (!sub[i].second.empty()) resource += "=" + sub[i].second;
  }
  return out + resource;
}

Status VerifySignature(const WireRequest& req, const Signature& sig, const std::string& secret, int64_t now_unix) {
  if (sig.version == 2) {
    if (sig.presigned && now_unix > sig.expires) return Unauthorized("AccessDenied: the presigned URL has expired");
    if (!sig.presigned) {
      std::string date = Header(req, "x-amz-date");
      if (date.empty()) date = Header(req, "date");
      auto t = ParseHttpDate(date);
      if (!t) t = ParseAmzDate(date);
      if (!t) return InvalidArgument("a V2-signed request needs a Date or X-Amz-Date header");
      if (std::abs(*t - now_unix) > kMaxSkewSeconds) {
        return Unauthorized(
            "RequestTimeTooSkewed: the difference between the request time and the server's time "
            "is too large");
      }
    }
    std::string want = Base64(HmacSha1(secret, StringToSignV2(req, sig)));
    if (!ConstantTimeEquals(want, sig.signature)) return Mismatch("V2");
    return Status::OK();
  }
  auto t = ParseAmzDate(sig.amz_date);
  if (!t) return InvalidArgument(fmt::format("malformed X-Amz-Date \"{}\": want yyyymmddThhmmssZ", sig.amz_date));
  if (sig.amz_date.substr(0, 8) != sig.date) return Mismatch("the credential's date is not the request's date");
  if (sig.presigned) {
    if (now_unix > *t + sig.expires) return Unauthorized("AccessDenied: the presigned URL has expired");
    if (*t > now_unix + kMaxSkewSeconds) return Unauthorized("AccessDenied: the presigned URL is not valid yet");
  } else if (std::abs(*t - now_unix) > kMaxSkewSeconds) {
    return Unauthorized(
        "RequestTimeTooSkewed: the difference between the request time and the server's time is "
        "too large");
  }
  if (std::find(sig.signed_headers.begin(), sig.signed_headers.end(), "host") == sig.signed_headers.end()) {
    return Mismatch("the host header must be signed");
  }
  // As AWS: every x-amz-* header the request carries is signed, or the request
  // is refused (an unsigned x-amz-copy-source would turn a presigned PUT into
  // a copy of anything the signer may read).
  for (const auto& [name, value] : req.headers) {  // lower-case names
    if (name.rfind("x-amz-", 0) == 0 &&
        std::find(sig.signed_headers.begin(), sig.signed_headers.end(), name) == sig.signed_headers.end()) {
      return Unauthorized(
          fmt::format("AccessDenied: There were headers present in the request which were not signed "
                      "(HeadersNotSigned: {})",
                      name));
    }
  }
  const std::string sts = sigv4::StringToSign(sig.amz_date, ScopeOf(sig), CanonicalRequestV4(req, sig));
  const std::string want = sigv4::Sign(SigningKeyV4(secret, sig), sts);
  if (!ConstantTimeEquals(want, sig.signature)) return Mismatch("V4");
  return Status::OK();
}

// --- aws-chunked --------------------------------------------------------------

ChunkedDecoder::ChunkedDecoder(PayloadKind kind, std::string signing_key, const Signature& sig)
    : kind_(kind),
      signing_key_(std::move(signing_key)),
      amz_date_(sig.amz_date),
      scope_(sig.scope),
      prev_signature_(sig.signature) {}

Status ChunkedDecoder::ParseHeaderLine(const std::string& line) {
  // hex-size[;chunk-signature=sig]
  std::string_view l(line);
  size_t semi = l.find(';');
  std::string_view size = l.substr(0, semi);
  auto [p, ec] = std::from_chars(size.data(), size.data() + size.size(), remaining_, 16);
  if (ec != std::errc() || p != size.data() + size.size() || size.empty()) {
    return InvalidArgument(fmt::format("malformed aws-chunked chunk header \"{}\"", line.substr(0, 100)));
  }
  chunk_signature_.clear();
  if (semi != std::string_view::npos) {
    std::string_view ext = l.substr(semi + 1);
    constexpr std::string_view kSig = "chunk-signature=";
    if (ext.rfind(kSig, 0) == 0) chunk_signature_ = std::string(ext.substr(kSig.size()));
  }
  if (kind_ == PayloadKind::kStreamingSigned) {
    if (chunk_signature_.empty()) return InvalidArgument("aws-chunked chunk without a chunk-signature");
    chunk_hash_ = std::make_unique<Digest>(DigestKind::kSha256);
  }
  last_chunk_ = remaining_ == 0;
  return Status::OK();
}

Status ChunkedDecoder::EndChunk() {
  if (kind_ != PayloadKind::kStreamingSigned) return Status::OK();
  std::string sts = fmt::format("AWS4-HMAC-SHA256-PAYLOAD\n{}\n{}\n{}\n{}\n{}", amz_date_, scope_, prev_signature_,
                                sigv4::kEmptySha256, chunk_hash_->FinalHex());
  std::string want = Hex(HmacSha256(signing_key_, sts));
  if (!ConstantTimeEquals(want, chunk_signature_)) {
    return Unauthorized("SignatureDoesNotMatch: an aws-chunked chunk's signature does not match its data");
  }
  prev_signature_ = chunk_signature_;
  return Status::OK();
}

Status ChunkedDecoder::Feed(const char* data, size_t n, const std::function<Status(const char*, size_t)>& out) {
  size_t i = 0;
  while (i < n) {
    switch (state_) {
      case State::kSize:
      case State::kTrailer: {
        const char* nl = static_cast<const char*>(std::memchr(data + i, '\n', n - i));
        size_t take = nl ? static_cast<size_t>(nl - (data + i)) : n - i;
        line_.append(data + i, take);
        if (line_.size() > 4096) return InvalidArgument("aws-chunked header line longer than 4 KiB");
        i += take;
        if (!nl) break;
        ++i;  // the '\n'
        if (!line_.empty() && line_.back() == '\r') line_.pop_back();
        std::string line = std::move(line_);
        line_.clear();
        if (state_ == State::kSize) {
          ARROW_RETURN_NOT_OK(ParseHeaderLine(line));
          state_ = remaining_ > 0 ? State::kData : State::kDataEnd;
          if (last_chunk_) {
            ARROW_RETURN_NOT_OK(EndChunk());
            state_ = State::kTrailer;
          }
        } else {  // a trailer line, or the empty line that ends the body
          if (line.empty()) {
            state_ = State::kDone;
            break;
          }
          size_t colon = line.find(':');
          if (colon == std::string::npos)
            return InvalidArgument(fmt::format("malformed aws-chunked trailer \"{}\"", line));
          std::string name = line.substr(0, colon);
          name = AsciiLower(name);
          if (trailers_.size() >= 16) return InvalidArgument("an aws-chunked body with more than 16 trailers");
          trailers_[name] = std::string(Trim(std::string_view(line).substr(colon + 1)));
        }
        break;
      }
      case State::kData: {
        size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, n - i));
        if (chunk_hash_) chunk_hash_->Update(data + i, take);
        ARROW_RETURN_NOT_OK(out(data + i, take));
        remaining_ -= take;
        i += take;
        if (remaining_ == 0) {
          ARROW_RETURN_NOT_OK(EndChunk());
          state_ = State::kDataEnd;
        }
        break;
      }
      case State::kDataEnd: {  // the CRLF after a chunk's data
        char c = data[i++];
        if (c == '\r') break;
        if (c != '\n') return InvalidArgument("aws-chunked chunk data is longer than its declared size");
        state_ = State::kSize;
        break;
      }
      case State::kDone:
        // Bytes after the end (a stray CRLF) are ignored.
        i = n;
        break;
    }
  }
  return Status::OK();
}

Status ChunkedDecoder::Finish() const {
  // Signed streams end after the final chunk's CRLF; a body that stops right
  // after the last chunk's header (no trailer section) is complete too.
  if (state_ == State::kDone) return Status::OK();
  if (state_ == State::kTrailer && line_.empty() && last_chunk_) return Status::OK();
  return InvalidArgument("aws-chunked body ended before its final chunk; nothing was stored");
}

}  // namespace sediment::server::s3
