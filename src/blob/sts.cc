// AssumeRole (sts.h): one form POST signed with signature V4 for service
// "sts", its answer's Credentials read from the XML.
#include "blob/sts.h"

#include <fmt/format.h>
#include <httplib.h>

#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "base/codec.h"
#include "base/crypto.h"
#include "base/sigv4.h"
#include "base/xml.h"

namespace sediment::blob {
namespace {

std::string EnvOr(const std::string& v, const char* name) {
  if (!v.empty()) return v;
  const char* e = std::getenv(name);
  return e ? e : "";
}

}  // namespace

Result<TemporaryCredentials> AssumeRole(const S3Config& s3, const std::string& role_arn, const std::string& policy_json,
                                        int64_t duration_s) {
  std::string key = EnvOr(s3.access_key_id, "AWS_ACCESS_KEY_ID");
  std::string secret = EnvOr(s3.secret_access_key, "AWS_SECRET_ACCESS_KEY");
  if (key.empty() || secret.empty()) return InvalidArgument("STS: the server has no S3 access key to sign with");
  std::string host = s3.endpoint;
  std::string scheme = s3.scheme;
  if (auto at = host.find("://"); at != std::string::npos) {
    scheme = host.substr(0, at);
    host = host.substr(at + 3);
  }
  if (host.empty()) {
    host = fmt::format("sts.{}.amazonaws.com", s3.region);
    scheme = "https";
  }
  while (!host.empty() && host.back() == '/') host.pop_back();
  auto enc = [](const std::string& v) { return PercentEncode(v, PercentSet::kUnreserved); };
  const std::string body = fmt::format(
      "Action=AssumeRole&Version=2011-06-15&DurationSeconds={}&RoleArn={}&RoleSessionName=sediment-iceberg&Policy={}",
      duration_s, enc(role_arn), enc(policy_json));
  const std::string stamp = sigv4::AmzDate(std::time(nullptr));
  const sigv4::Scope scope{stamp.substr(0, 8), s3.region, "sts"};
  const std::string payload = Sha256Hex(body);
  std::vector<std::pair<std::string, std::string>> signed_headers = {
      {"content-type", "application/x-www-form-urlencoded"},
      {"host", host},
      {"x-amz-content-sha256", payload},
      {"x-amz-date", stamp}};
  const auto canonical_headers = sigv4::CanonicalizeHeaders(signed_headers);
  const std::string canonical = sigv4::CanonicalRequest("POST", "/", "", canonical_headers, payload);
  const std::string signature =
      sigv4::Sign(sigv4::SigningKey(secret, scope), sigv4::StringToSign(stamp, scope, canonical));
  httplib::Headers headers = {
      {"x-amz-content-sha256", payload},
      {"x-amz-date", stamp},
      {"Authorization", fmt::format("{} Credential={}/{},SignedHeaders={},Signature={}", sigv4::kAlgorithm, key,
                                    scope.ToString(), canonical_headers.signed_headers, signature)}};
  httplib::Client client(scheme + "://" + host);
  client.set_connection_timeout(10);
  client.set_read_timeout(30);
  auto res = client.Post("/", headers, body, "application/x-www-form-urlencoded");
  if (!res) return Status::IOError(fmt::format("STS AssumeRole at {}: {}", host, httplib::to_string(res.error())));
  if (res->status != 200) {
    return Status::IOError(fmt::format("STS AssumeRole at {}: HTTP {} {}: {}", host, res->status,
                                       XmlText(res->body, "Code"), XmlText(res->body, "Message").substr(0, 300)));
  }
  TemporaryCredentials c{XmlText(res->body, "AccessKeyId"), XmlText(res->body, "SecretAccessKey"),
                         XmlText(res->body, "SessionToken"), XmlText(res->body, "Expiration")};
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return Status::IOError(fmt::format("STS AssumeRole at {}: no credentials in the answer", host));
  }
  return c;
}

Result<std::string> PrefixPolicy(const std::string& s3_uri, bool write) {
  if (s3_uri.find_first_of("*?$") != std::string::npos) {
    return InvalidArgument(fmt::format("{}: no credentials for a location with '*', '?' or '$'", s3_uri));
  }
  std::string rest = s3_uri.substr(s3_uri.find("://") + 3);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  size_t slash = rest.find('/');
  std::string bucket = rest.substr(0, slash);
  std::string prefix = slash == std::string::npos ? "" : rest.substr(slash + 1) + "/";
  const std::string objects = "arn:aws:s3:::" + bucket + "/" + prefix;
  nlohmann::json statements = nlohmann::json::array();
  statements.push_back({{"Effect", "Allow"}, {"Action", {"s3:GetObject"}}, {"Resource", {objects + "*"}}});
  statements.push_back({{"Effect", "Allow"},
                        {"Action", {"s3:ListBucket"}},
                        {"Resource", {"arn:aws:s3:::" + bucket}},
                        {"Condition", {{"StringLike", {{"s3:prefix", {prefix + "*"}}}}}}});
  statements.push_back(
      {{"Effect", "Allow"}, {"Action", {"s3:GetBucketLocation"}}, {"Resource", {"arn:aws:s3:::" + bucket}}});
  if (write) {
    statements.push_back({{"Effect", "Allow"},
                          {"Action", {"s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"}},
                          {"Resource", {objects + "data/*", objects + "metadata/*"}}});
  }
  return nlohmann::json{{"Version", "2012-10-17"}, {"Statement", statements}}.dump();
}

}  // namespace sediment::blob
