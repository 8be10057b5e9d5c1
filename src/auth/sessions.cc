// AuthService's console sessions: log-in, the tokens it issues, and log-out
// (auth.h, "A login session").
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "auth/auth.h"
#include "auth/crypt.h"
#include "auth/keys.h"
#include "base/crypto.h"
#include "kv/kv.h"

namespace sediment::auth {

using nlohmann::json;

// A token is hex(payload) "." hex(HMAC-SHA256(session key, payload)), the
// payload {"k": access key id, "exp": Unix seconds, "n": random}.
Result<SessionToken> AuthService::Login(const std::string& key_id, const std::string& secret, Duration ttl) {
  ARROW_RETURN_NOT_OK(CheckSecret(key_id, secret).status());
  ARROW_ASSIGN_OR_RAISE(auto box, Box());
  const std::string& signing = box->session_key();
  int64_t exp = ToUnixMicros(clock_->Now() + ttl) / 1'000'000;
  std::string payload = json{{"k", key_id}, {"exp", exp}, {"n", RandomHex(16)}}.dump();
  return SessionToken{Hex(payload) + "." + Hex(HmacSha256(signing, payload)), exp};
}

namespace {

// Revocations of expired tokens each log-out drops: more than the one it
// adds, so the backlog shrinks, and the cost of a log-out stays constant.
constexpr size_t kDropsPerLogout = 2;

Status InvalidSession() { return Unauthorized("invalid or expired session: log in again"); }

}  // namespace

Result<AuthService::VerifiedToken> AuthService::VerifyToken(const std::string& token) {
  auto dot = token.find('.');
  if (dot == std::string::npos || dot == 0) return InvalidSession();
  auto payload = HexDecode(std::string_view(token).substr(0, dot));  // lower-case only: one spelling
  if (!payload) return InvalidSession();
  ARROW_ASSIGN_OR_RAISE(auto box, Box());
  const std::string& signing = box->session_key();
  if (!ConstantTimeEquals(Hex(HmacSha256(signing, *payload)), std::string_view(token).substr(dot + 1))) {
    return InvalidSession();
  }
  json j = json::parse(*payload, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("k") || !j["k"].is_string() || !j.contains("exp") ||
      !j["exp"].is_number_integer()) {
    return InvalidSession();
  }
  int64_t exp = j["exp"].get<int64_t>();
  if (exp <= ToUnixMicros(clock_->Now()) / 1'000'000) return InvalidSession();
  return VerifiedToken{j["k"].get<std::string>(), exp, std::move(*payload)};
}

Result<std::string> AuthService::AuthenticateToken(const std::string& token) {
  ARROW_ASSIGN_OR_RAISE(auto verified, VerifyToken(token));
  // Logged out (on any server): one point read.
  auto revoked = kv_->Get(RevokedSessionKey(verified.payload));
  if (revoked.ok()) return InvalidSession();
  if (!IsNotFound(revoked.status())) return revoked.status();
  // A deleted key (or user) ends its sessions.
  auto key = LookupKey(verified.key_id);
  if (!key.ok()) return IsUnauthorized(key.status()) ? InvalidSession() : key.status();
  return key->user;
}

Status AuthService::Revoke(const std::string& token) {
  auto verified = VerifyToken(token);
  if (!verified.ok()) return IsUnauthorized(verified.status()) ? Status::OK() : verified.status();
  kv::Batch revoke;
  revoke.Put(RevokedSessionKey(verified->payload), std::to_string(verified->expires_unix))
      .Put(SessionExpiryKey(verified->expires_unix, verified->payload), "");
  ARROW_RETURN_NOT_OK(kv_->Apply(revoke));
  // The oldest revocations, if their tokens have expired anyway, go: a
  // constant number per log-out, read off the front of the expiry index.
  int64_t now = ToUnixMicros(clock_->Now()) / 1'000'000;
  ARROW_ASSIGN_OR_RAISE(auto oldest, kv_->Scan(SessionExpiriesPrefix(), "", kDropsPerLogout));
  kv::Batch drop;
  for (const auto& item : oldest.items) {
    SessionExpiry expiry = ParseSessionExpiryKey(item.key);
    if (expiry.expires_unix > now || expiry.revoked_key.empty()) break;
    drop.Delete(item.key).Delete(expiry.revoked_key);
  }
  return drop.mutations.empty() ? Status::OK() : kv_->Apply(drop);
}

}  // namespace sediment::auth
