// Private to auth/: what AuthService's files share — the JSON of its records
// (records.cc), paging over ids, and the cache clearing every change does.
// The keys these records live under are in keys.h.
//
// Thread-safety: the functions are pure or touch only the KV store given;
// ScopedCacheClear is used by the thread making a change.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "auth/auth.h"
#include "auth/policy.h"
#include "base/status.h"

namespace sediment::kv {
class KvStore;
}  // namespace sediment::kv

namespace sediment::auth {

// Tries of a change whose batch requires records it read unchanged.
inline constexpr int kRetries = 20;

// InvalidArgument unless `id` (of a user, group or policy: `what`) is 1-128
// of letters, digits and _+=,.@- (so never '/').
Status ValidateId(const std::string& what, const std::string& id);

// The record with a fresh "rev". Every change that adds something hanging off a
// user or policy (a key, an attachment) rewrites its record this way in the
// same batch, so a deletion whose batch requires the record as it read it —
// when it listed what hangs off it — fails and lists again instead of missing it.
Result<std::string> WithNewRev(const std::string& what, const std::string& raw);

// The stored hash of an access key's secret.
std::string SecretHash(const std::string& salt, const std::string& secret);

// Records' values (keys.h says where each lives).
std::string UserJson(int64_t creation_date);
int64_t UserCreationDate(const std::string& raw);  // 0 when unreadable
nlohmann::json PolicyJson(const Policy& p);
Result<Policy> ParsePolicy(const std::string& id, const std::string& raw);
std::string GroupJson(const Group& g);
Group ParseGroup(const std::string& id, const std::string& raw);

// Visits the records under `base` whose ids (the rest of the key) the page
// selects, in order: visit(id, value).
Status ScanIds(kv::KvStore& kv, const std::string& base, const AuthIdPage& page,
               const std::function<Status(const std::string&, const std::string&)>& visit);

// Clears the cache now and again once the change is stored: a request that
// reads the old keys or policies meanwhile cannot leave them cached.
class AuthService::ScopedCacheClear {
 public:
  explicit ScopedCacheClear(AuthService* auth) : auth_(auth) { auth_->ClearCache(); }
  ~ScopedCacheClear() { auth_->ClearCache(); }
  ScopedCacheClear(const ScopedCacheClear&) = delete;
  ScopedCacheClear& operator=(const ScopedCacheClear&) = delete;

 private:
  AuthService* auth_;
};

}  // namespace sediment::auth
