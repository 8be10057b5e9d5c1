// The S3 gateway's front: which requests are its, what they name, who sent
// them, which operation runs, and how errors and bodies look on the wire.
#include "server/s3/gateway.h"

#include <arrow/io/interfaces.h>
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <ctime>

#include "auth/auth.h"
#include "base/ascii.h"
#include "server/http/errors.h"
#include "server/http/http_server.h"
#include "server/lakefs/api_internal.h"
#include "server/s3/gateway_internal.h"

namespace sediment::server::s3 {
namespace {

// --- S3 error detail ------------------------------------------------------------

class S3Detail : public arrow::StatusDetail {
 public:
  S3Detail(int http, std::string code) : http_(http), code_(std::move(code)) {}
  const char* type_id() const override { return "sediment::s3"; }
  std::string ToString() const override { return code_; }
  int http() const { return http_; }
  const std::string& code() const { return code_; }

 private:
  int http_;
  std::string code_;
};

// --- what a request names -----------------------------------------------------

// The bucket named by a virtual-host Host header, if any.
std::optional<std::string> VirtualHostBucket(const GatewayOptions& o, const std::string& host_header) {
  std::string host = AsciiLower(host_header);
  if (auto colon = host.rfind(':'); colon != std::string::npos && host.find(']') == std::string::npos) {
    host = host.substr(0, colon);
  }
  for (const auto& d : o.domain_names) {
    std::string dom = AsciiLower(d);
    if (host.size() > dom.size() + 1 && host.ends_with("." + dom)) {
      std::string bucket = host.substr(0, host.size() - dom.size() - 1);
      if (bucket.find('.') == std::string::npos) return bucket;
    }
  }
  return std::nullopt;
}

Result<Target> ParseTarget(const GatewayOptions& o, const httplib::Request& req) {
  Target t;
  std::string raw = req.target;
  std::string raw_query;
  if (auto q = raw.find('?'); q != std::string::npos) {
    raw_query = raw.substr(q + 1);
    raw = raw.substr(0, q);
  }
  auto decoded = PercentDecode(raw);
  if (!decoded) return InvalidArgument(fmt::format("bad percent-escape in \"{}\"", raw));
  const std::string path = std::move(*decoded);
  // The query as the signature check reads it ('+' is a plus: base/codec.h).
  auto query = DecodeQuery(raw_query);
  if (!query) return InvalidArgument(fmt::format("bad percent-escape in the query \"{}\"", raw_query));
  for (auto& [k, v] : *query) {
    if (!k.empty()) t.query.emplace_back(std::move(k), std::move(v));
  }
  if (path.empty() || path[0] != '/') return InvalidArgument("request path must start with '/'");
  std::string rest = path.substr(1);
  if (auto vb = VirtualHostBucket(o, req.get_header_value("Host"))) {
    t.bucket = *vb;
    t.virtual_host = true;
    t.key = rest;
  } else {
    size_t slash = rest.find('/');
    t.bucket = rest.substr(0, slash);
    t.key = slash == std::string::npos ? "" : rest.substr(slash + 1);
  }
  if (!t.key.empty()) {
    size_t slash = t.key.find('/');
    t.ref = t.key.substr(0, slash);
    t.path = slash == std::string::npos ? "" : t.key.substr(slash + 1);
  }
  return t;
}

WireRequest Wire(const httplib::Request& req, const Target& t) {
  WireRequest w;
  w.method = req.method;
  std::string raw = req.target;
  if (auto q = raw.find('?'); q != std::string::npos) {
    w.raw_query = raw.substr(q + 1);
    raw = raw.substr(0, q);
  }
  w.raw_path = raw;
  for (const auto& [k, v] : req.headers) {
    std::string name = AsciiLower(k);
    // httplib adds these itself; they were never sent.
    if (name == "remote_addr" || name == "remote_port" || name == "local_addr" || name == "local_port") continue;
    auto [it, fresh] = w.headers.emplace(name, v);
    if (!fresh) it->second += "," + v;
  }
  w.bucket = t.bucket;
  w.virtual_host = t.virtual_host;
  return w;
}

Result<Caller> Authenticate(const Gateway& gw, const httplib::Request& req, const Target& t) {
  std::string auth = req.get_header_value("Authorization");
  Caller c;
  if (auth.rfind("Basic ", 0) == 0) {  // lakeFS clients' own credentials work too
    ARROW_ASSIGN_OR_RAISE(c.user, gw.auth->Authenticate(auth));
    return c;
  }
  WireRequest w = Wire(req, t);
  auto sig = ParseSignature(w);
  if (!sig.ok()) {
    if (IsUnauthorized(sig.status())) return S3Error(403, "AccessDenied", sig.status().message());
    return S3Error(400, "AuthorizationHeaderMalformed", sig.status().message());
  }
  c.sig = *sig;
  auto secret = gw.auth->SecretFor(c.sig.access_key_id);
  if (!secret.ok()) {
    if (IsUnauthorized(secret.status()) || IsNotFound(secret.status())) {
      return S3Error(403, "InvalidAccessKeyId",
                     fmt::format("The access key id \"{}\" does not exist in our records ({})", c.sig.access_key_id,
                                 secret.status().message()));
    }
    return secret.status();
  }
  c.user = secret->user;
  c.secret = secret->secret;
  Status st = VerifySignature(w, c.sig, c.secret, static_cast<int64_t>(std::time(nullptr)));
  if (!st.ok()) {
    const std::string& m = st.message();
    if (m.rfind("SignatureDoesNotMatch", 0) == 0) return S3Error(403, "SignatureDoesNotMatch", m);
    if (m.rfind("RequestTimeTooSkewed", 0) == 0) return S3Error(403, "RequestTimeTooSkewed", m);
    if (IsUnauthorized(st)) return S3Error(403, "AccessDenied", m);
    return S3Error(400, "AuthorizationQueryParametersError", m);
  }
  return c;
}

// --- dispatch -----------------------------------------------------------------

// A browser opening the server's address: a GET of the service that asks for
// HTML and carries no credentials or query. Every S3 client sends credentials
// (or no Accept: text/html, when anonymous) and keeps ListBuckets.
bool IsBrowserPageRequest(const Req& req) {
  return (req.method == "GET" || req.method == "HEAD") && req.params.empty() && !req.has_header("Authorization") &&
         !IsAwsSigned(req) && req.get_header_value("Accept").find("text/html") != std::string::npos;
}

Status Dispatch(const Gateway& gw, const Req& req, Res& res, const Reader* body) {
  ARROW_ASSIGN_OR_RAISE(Target t, ParseTarget(gw.options, req));
  if (t.bucket.empty() && gw.options.browser_page && IsBrowserPageRequest(req)) {
    gw.options.browser_page(req, res);
    return Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(Caller c, Authenticate(gw, req, t));
  // What is stored as text (keys, metadata, content type) must be text.
  if (!IsUtf8(t.key)) return S3Error(400, "InvalidArgument", "the object key is not valid UTF-8");
  for (const auto& [name, value] : req.headers) {
    std::string lower = AsciiLower(name);
    if ((lower == "content-type" || lower.rfind("x-amz-meta-", 0) == 0) && (!IsUtf8(value) || !IsUtf8(name))) {
      return S3Error(400, "InvalidArgument", fmt::format("header {} is not valid UTF-8", lower));
    }
  }
  return RunOperation(gw, t, req, res, body, c);
}

void Serve(const Gateway& gw, const Req& req, Res& res, const Reader* body) {
  Status st = Dispatch(gw, req, res, body);
  if (!st.ok()) {
    std::string resource = req.path;
    ReplyS3Error(res, st, resource);
    if (req.method == "HEAD") res.body.clear();
  }
  if (!res.has_header("x-amz-request-id")) res.set_header("x-amz-request-id", RandomHex(8));
  res.set_header("Server", "Sediment");
}

}  // namespace

// --- Target, Gateway ------------------------------------------------------------

bool Target::Has(const std::string& name) const {
  return std::any_of(query.begin(), query.end(), [&](const auto& p) { return p.first == name; });
}

std::string Target::Get(const std::string& name) const {
  for (const auto& [k, v] : query) {
    if (k == name) return v;
  }
  return "";
}

Status Gateway::Allow(const std::string& user, const std::string& action, const std::string& resource) const {
  Status st = auth->Authorize(user, action, resource);
  if (IsForbidden(st)) return S3Error(403, "AccessDenied", st.message());
  return st;
}

// --- errors and XML ---------------------------------------------------------------

Status S3Error(int http, std::string code, std::string message) {
  return Status(arrow::StatusCode::Invalid, std::move(message), std::make_shared<S3Detail>(http, std::move(code)));
}

std::pair<int, std::string> S3CodeFor(const Status& st) {
  if (auto d = st.detail(); d && std::string(d->type_id()) == "sediment::s3") {
    auto* s3 = static_cast<const S3Detail*>(d.get());
    return {s3->http(), s3->code()};
  }
  int http = HttpStatusFor(st);
  switch (http) {
    case 400:
      return {400, "InvalidArgument"};
    case 401:
    case 403:
      return {403, "AccessDenied"};
    case 404:
      return {404, "NoSuchKey"};
    case 409:
      return {409, "OperationAborted"};
    case 412:
      return {412, "PreconditionFailed"};
    case 503:
      return {503, "SlowDown"};
    default:
      return {500, "InternalError"};
  }
}

void ReplyS3Error(httplib::Response& res, const Status& st, const std::string& resource) {
  auto [http, code] = S3CodeFor(st);
  // The same id in the header and the body, as S3 gives it.
  std::string id = RandomHex(8);
  res.headers.erase("x-amz-request-id");  // set_header adds: an answer replaced after an error keeps one
  res.set_header("x-amz-request-id", id);
  ReplyXml(res, http,
           fmt::format("<Error><Code>{}</Code><Message>{}</Message><Resource>{}</Resource><RequestId>{}</RequestId>"
                       "</Error>",
                       code, XmlEscape(st.message()), XmlEscape(resource), id));
}

Status KeyNotFound(const Status& st, const std::string& key) {
  if (IsNotFound(st)) return NoSuchKey(key);
  return st;
}

void ReplyXml(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(R"(<?xml version="1.0" encoding="UTF-8"?>)"
                  "\n" +
                      body,
                  "application/xml");
}

std::string IsoTime(int64_t unix_seconds) {
  std::time_t t = unix_seconds;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S.000Z", &tm);
  return buf;
}

// --- shared helpers -----------------------------------------------------------------

Result<catalog::Repository> LoadBucket(const Gateway& gw, const std::string& bucket) {
  auto repo = gw.cat->GetRepository(bucket);
  if (IsNotFound(repo.status()) || IsInvalidArgument(repo.status())) return NoSuchBucket(bucket);
  return repo;
}

Result<catalog::Repository> WritableBranch(const Gateway& gw, const Target& t) {
  ARROW_ASSIGN_OR_RAISE(auto repo, LoadBucket(gw, t.bucket));
  if (repo.read_only) {
    return S3Error(403, "ReadOnlyRepository", fmt::format("repository \"{}\" is read-only", t.bucket));
  }
  auto branch = gw.cat->GetBranch(t.bucket, t.ref);
  if (IsNotFound(branch.status()) || IsInvalidArgument(branch.status())) {
    return S3Error(
        404, "NoSuchBucket",
        fmt::format("\"{}\" is not a branch of \"{}\": objects are written to branches only", t.ref, t.bucket));
  }
  ARROW_RETURN_NOT_OK(branch.status());
  return repo;
}

namespace {

// Metadata keys as lakeFS stores them from the gateway: "X-Amz-Meta-" and
// the name in lower case.
std::string MetadataKey(const std::string& lower_header) { return "X-Amz-Meta-" + lower_header.substr(11); }

// Decodes RFC 2047 encoded-words (=?charset?Q|B?text?=), as clients send
// non-ASCII metadata; text outside them is kept.
std::string DecodeEncodedWords(const std::string& v) {
  std::string out;
  size_t i = 0;
  bool last_was_word = false;
  while (i < v.size()) {
    size_t start = v.find("=?", i);
    if (start == std::string::npos) {
      out += v.substr(i);
      break;
    }
    size_t q1 = v.find('?', start + 2);
    size_t q2 = q1 == std::string::npos ? q1 : v.find('?', q1 + 1);
    size_t end = q2 == std::string::npos ? q2 : v.find("?=", q2 + 1);
    if (end == std::string::npos || q2 != q1 + 2) {
      out += v.substr(i);
      break;
    }
    std::string between = v.substr(i, start - i);
    // Whitespace between two encoded-words is dropped.
    if (!(last_was_word && between.find_first_not_of(" \t\r\n") == std::string::npos)) out += between;
    char enc = static_cast<char>(std::tolower(static_cast<unsigned char>(v[q1 + 1])));
    std::string text = v.substr(q2 + 1, end - q2 - 1);
    if (enc == 'b') {
      out += Base64Decode(text).value_or(text);
    } else {
      for (size_t k = 0; k < text.size(); ++k) {
        if (text[k] == '_') {
          out.push_back(' ');
        } else if (text[k] == '=' && k + 2 < text.size() && HexDigitValue(text[k + 1]) >= 0 &&
                   HexDigitValue(text[k + 2]) >= 0) {
          out.push_back(static_cast<char>(HexDigitValue(text[k + 1]) << 4 | HexDigitValue(text[k + 2])));
          k += 2;
        } else {
          out.push_back(text[k]);
        }
      }
    }
    last_was_word = true;
    i = end + 2;
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> AmzMetadata(const httplib::Request& req) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : req.headers) {
    std::string lower = AsciiLower(k);
    if (lower.rfind("x-amz-meta-", 0) == 0) {
      std::string value = v;
      try {
        value = DecodeEncodedWords(v);
      } catch (const std::exception&) {
        // not an encoded word after all: keep it as sent
      }
      if (!IsUtf8(value)) value = v;  // encoded words that decode to no text: kept as sent
      out[MetadataKey(lower)] = value;
    }
  }
  return out;
}

void MetadataHeaders(httplib::Response& res, const std::map<std::string, std::string>& metadata) {
  for (const auto& [k, v] : metadata) {
    std::string name = AsciiLower(k).rfind("x-amz-meta-", 0) == 0 ? k : "X-Amz-Meta-" + k;
    bool ascii = std::all_of(v.begin(), v.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    if (ascii) {
      res.set_header(name, v);
      continue;
    }
    // RFC 2047 Q-words of at most 75 characters, never splitting a UTF-8
    // character: what Go's mime.QEncoding writes, so clients that compare
    // the raw header (lakeFS's own tests do) see the same text.
    constexpr size_t kMaxContent = 75 - std::string_view("=?utf-8?q?").size() - 2;
    std::string out, word;
    auto flush = [&] {
      if (!out.empty()) out += ' ';
      out += "=?utf-8?q?" + word + "?=";
      word.clear();
    };
    for (size_t i = 0; i < v.size();) {
      auto lead = static_cast<unsigned char>(v[i]);
      size_t len = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
      std::string enc;
      for (size_t k = i; k < i + len && k < v.size(); ++k) {
        auto c = static_cast<unsigned char>(v[k]);
        if (c == ' ') {
          enc += '_';
        } else if (c >= '!' && c <= '~' && c != '=' && c != '?' && c != '_') {
          enc += static_cast<char>(c);
        } else {
          enc += fmt::format("={:02X}", c);
        }
      }
      if (word.size() + enc.size() > kMaxContent) flush();
      word += enc;
      i += len;
    }
    flush();
    res.set_header(name, out);
  }
}

Result<Target> CopySource(const httplib::Request& req) {
  std::string raw = req.get_header_value("x-amz-copy-source");
  if (auto q = raw.find('?'); q != std::string::npos) {
    std::string rest = raw.substr(q + 1);
    if (rest.rfind("versionId=", 0) == 0) {
      return S3Error(400, "InvalidArgument", "x-amz-copy-source: object versions are not supported");
    }
    raw = raw.substr(0, q);
  }
  auto decoded = PercentDecode(raw);
  if (!decoded) return InvalidArgument(fmt::format("bad percent-escape in \"{}\"", raw));
  std::string src = std::move(*decoded);
  if (!src.empty() && src[0] == '/') src = src.substr(1);
  Target t;
  size_t a = src.find('/');
  size_t b = a == std::string::npos ? a : src.find('/', a + 1);
  if (b == std::string::npos || b + 1 >= src.size()) {
    return S3Error(400, "InvalidArgument",
                   fmt::format("x-amz-copy-source \"{}\" must be <repository>/<ref>/<path>", raw));
  }
  t.bucket = src.substr(0, a);
  t.ref = src.substr(a + 1, b - a - 1);
  t.path = src.substr(b + 1);
  t.key = t.ref + "/" + t.path;
  return t;
}

}  // namespace sediment::server::s3

namespace sediment::server {

bool IsAwsSigned(const httplib::Request& req) {
  std::string auth = req.get_header_value("Authorization");
  return auth.rfind("AWS4-", 0) == 0 || auth.rfind("AWS ", 0) == 0 || req.has_header("X-Amz-Signature") ||
         req.has_param("X-Amz-Credential") || req.has_param("AWSAccessKeyId");
}

void ReplyApiPathToS3Client(const httplib::Request& req, httplib::Response& res) {
  s3::ReplyS3Error(res,
                   s3::S3Error(404, "NoSuchBucket",
                               "ErrNoSuchBucketPossibleAPIEndpoint: this S3 request went to the lakeFS API path "
                               "(/api/...); point the S3 client at the server's root URL instead"),
                   req.path);
}

void RegisterS3Gateway(HttpServer* http, catalog::Catalog* catalog, AuthService* auth, const GatewayOptions& options) {
  auto gw = std::make_shared<s3::Gateway>(s3::Gateway{catalog, auth, options});
  // Everything but the API, the Iceberg catalog and /metrics (registered
  // earlier; GET routes match first, but body routes would not): a bucket
  // named "iceberg" is reached with keys under v1/, api/ and relative_to/
  // only on a [gateway] port.
  const std::string all = R"(/(?!api/|iceberg/(?:v1|api|relative_to)/|metrics$).*|/)";
  for (const char* method : {"GET", "DELETE"}) {
    http->Handle(method, all, "s3",
                 [gw](const httplib::Request& req, httplib::Response& res) { s3::Serve(*gw, req, res, nullptr); });
  }
  for (const char* method : {"PUT", "POST"}) {
    http->HandleStream(method, all, "s3",
                       [gw](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& body) {
                         s3::Serve(*gw, req, res, &body);
                       });
  }
}

bool IsGatewayRequest(const httplib::Request& req) {
  if (IsAwsSigned(req)) return true;
  const std::string& p = req.path;
  // The paths RegisterS3Gateway leaves to the other APIs, and the console's.
  for (const char* api : {"/api/", "/iceberg/v1/", "/iceberg/api/", "/iceberg/relative_to/", "/_console/"}) {
    if (p.rfind(api, 0) == 0) return false;
  }
  return p != "/" && p != "/metrics";
}

void ReplyS3Refusal(const httplib::Request& req, httplib::Response& res, int status, const std::string& message) {
  const char* code = status == 413   ? "EntityTooLarge"
                     : status == 421 ? "MisdirectedRequest"
                     : status == 400 ? "InvalidRequest"
                                     : "InternalError";
  s3::ReplyS3Error(res, s3::S3Error(status, code, message), req.path);
}

}  // namespace sediment::server
