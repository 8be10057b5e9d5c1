// AuthService's core: who a request is (access keys, with their cache), what
// they may do (their policies, with their cache), and the secret material
// keys are sealed with. Users, policies, groups, set-up and sessions are in
// files of their own (users.cc, policies.cc, groups.cc, setup.cc, sessions.cc).
#include "auth/auth.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "auth/auth_internal.h"
#include "auth/crypt.h"
#include "auth/keys.h"
#include "base/crypto.h"
#include "kv/kv.h"

namespace sediment::auth {

using nlohmann::json;

AuthService::AuthService(std::shared_ptr<kv::KvStore> kv, std::shared_ptr<Clock> clock, Duration cache_ttl,
                         std::string encrypt_secret_key)
    : kv_(std::move(kv)),
      clock_(std::move(clock)),
      cache_ttl_(cache_ttl),
      configured_key_(std::move(encrypt_secret_key)) {}

Result<std::shared_ptr<const SecretBox>> AuthService::Box() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (box_) return box_;
  }
  std::string material = configured_key_;
  if (material.empty()) {
    const std::string record = EncryptionKeyKey();
    auto raw = kv_->Get(record);
    if (IsNotFound(raw.status())) {
      kv::Batch b;
      std::string fresh = RandomHex(32);
      b.Require(kv::Precondition::Absent(record)).Put(record, fresh);
      Status st = kv_->Apply(b);
      if (!st.ok() && !IsPreconditionFailed(st)) return st;
      raw = kv_->Get(record);  // ours, or the one a racing server stored first
    }
    ARROW_RETURN_NOT_OK(raw.status());
    material = *raw;
  }
  auto box = std::make_shared<const SecretBox>(std::move(material));
  std::lock_guard<std::mutex> lock(mu_);
  box_ = box;
  return box_;
}

void AuthService::ClearCache() {
  std::lock_guard<std::mutex> lock(mu_);
  keys_.clear();
  policies_.clear();
  ++generation_;
}

Result<AuthService::CachedKey> AuthService::LookupKey(const std::string& key_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = keys_.find(key_id);
    if (it != keys_.end() && it->second.expires > clock_->Now()) return it->second;
  }
  auto raw = kv_->Get(AccessKeyKey(key_id));
  if (IsNotFound(raw.status())) return Unauthorized("invalid access key id or secret");
  ARROW_RETURN_NOT_OK(raw.status());
  auto j = json::parse(*raw, nullptr, false);
  if (j.is_discarded()) return Status::IOError("corrupt credentials record");
  CachedKey key{j.value("user", ""), j.value("salt", ""), j.value("hash", ""), j.value("enc", ""),
                clock_->Now() + cache_ttl_};
  // A key is only as alive as its user (older versions could leave keys of deleted users behind).
  auto user = kv_->Get(UserKey(key.user));
  if (IsNotFound(user.status())) return Unauthorized("invalid access key id or secret");
  ARROW_RETURN_NOT_OK(user.status());
  std::lock_guard<std::mutex> lock(mu_);
  if (keys_.size() > 10000) keys_.clear();
  keys_[key_id] = key;
  return key;
}

Result<std::string> AuthService::Authenticate(const std::string& header) {
  if (header.empty()) return Unauthorized("authentication required: send HTTP basic auth with an access key");
  if (header.rfind("Bearer ", 0) == 0) return AuthenticateToken(header.substr(7));
  if (header.rfind("Basic ", 0) != 0) return Unauthorized("unsupported Authorization scheme (use Basic)");
  auto decoded = Base64Decode(header.substr(6));
  auto colon = decoded ? decoded->find(':') : std::string::npos;
  if (colon == std::string::npos) return Unauthorized("malformed basic auth credentials");
  return CheckSecret(decoded->substr(0, colon), decoded->substr(colon + 1));
}

Result<std::string> AuthService::CheckSecret(const std::string& key_id, const std::string& secret) {
  ARROW_ASSIGN_OR_RAISE(CachedKey key, LookupKey(key_id));
  if (!ConstantTimeEquals(key.hash, SecretHash(key.salt, secret))) {
    return Unauthorized("invalid access key id or secret");
  }
  return key.user;
}

Result<SigningSecret> AuthService::SecretFor(const std::string& access_key_id) {
  ARROW_ASSIGN_OR_RAISE(CachedKey key, LookupKey(access_key_id));
  if (key.sealed.empty()) {
    return Unauthorized(
        fmt::format("access key \"{}\" was created before request signing was supported (only a "
                    "hash of its secret is stored): create a new key for S3 clients",
                    access_key_id));
  }
  ARROW_ASSIGN_OR_RAISE(auto box, Box());
  ARROW_ASSIGN_OR_RAISE(auto secret, box->Open(key.sealed));
  return SigningSecret{key.user, std::move(secret)};
}

Status AuthService::Authorize(const std::string& user, const std::string& action, const std::string& resource) {
  std::vector<Policy> policies;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = policies_.find(user);
    if (it != policies_.end() && it->second.expires > clock_->Now()) {
      policies = it->second.policies;
      cached = true;
    }
  }
  if (!cached) {
    uint64_t generation;
    {
      std::lock_guard<std::mutex> lock(mu_);
      generation = generation_;
    }
    ARROW_ASSIGN_OR_RAISE(policies, EffectivePolicies(user));
    std::lock_guard<std::mutex> lock(mu_);
    // Read before a change cleared the cache: good for this request, not for the next ones.
    if (generation == generation_) {
      if (policies_.size() > 10000) policies_.clear();
      policies_[user] = {policies, clock_->Now() + cache_ttl_};
    }
  }
  return Evaluate(policies, user, action, resource);
}

}  // namespace sediment::auth
