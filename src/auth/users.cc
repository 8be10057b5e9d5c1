// AuthService's users and their access keys. A user's deletion takes, in the
// same batch, everything hanging off it (keys, attachments, memberships).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "auth/auth.h"
#include "auth/auth_internal.h"
#include "auth/crypt.h"
#include "auth/keys.h"
#include "base/crypto.h"
#include "kv/kv.h"

namespace sediment::auth {

using nlohmann::json;

namespace {

// What generated access key ids and secrets are made of (as AWS's look).
constexpr std::string_view kKeyIdChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
constexpr std::string_view kSecretChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

Result<User> AuthService::CreateUser(const std::string& id) {
  ARROW_RETURN_NOT_OK(ValidateId("user", id));
  User u{id, ToUnixMicros(clock_->Now()) / 1000000};
  kv::Batch b;
  b.Require(kv::Precondition::Absent(UserKey(id)));
  // Keys and attachments an older version left behind a deleted user of this name.
  ARROW_RETURN_NOT_OK(DeleteWhatHangsOffUser(id, &b));
  b.Put(UserKey(id), UserJson(u.creation_date));
  Status st = kv_->Apply(b);
  // lakeFS's words, which lakectl prints and its tests compare.
  if (IsPreconditionFailed(st)) return Conflict("Already exists");
  ARROW_RETURN_NOT_OK(st);
  return u;
}

Result<User> AuthService::GetUser(const std::string& id) {
  auto raw = kv_->Get(UserKey(id));
  if (IsNotFound(raw.status())) return NotFound(fmt::format("user \"{}\" not found", id));
  ARROW_RETURN_NOT_OK(raw.status());
  return User{id, UserCreationDate(*raw)};
}

Result<std::vector<User>> AuthService::ListUsers(const AuthIdPage& page) {
  std::vector<User> out;
  ARROW_RETURN_NOT_OK(
      ScanIds(*kv_, UsersPrefix(), page, [&](const std::string& id, const std::string& value) -> Status {
        out.push_back({id, UserCreationDate(value)});
        return Status::OK();
      }));
  return out;
}

Status AuthService::DeleteWhatHangsOffUser(const std::string& user, kv::Batch* b) {
  const std::string keys = UserAccessKeysPrefix(user);
  ARROW_RETURN_NOT_OK(kv_->ScanAll(keys, "", [&](const kv::KeyValue& item) -> Result<bool> {
    std::string key_id = item.key.substr(keys.size());
    b->Delete(item.key);
    auto raw = kv_->Get(AccessKeyKey(key_id));
    if (IsNotFound(raw.status())) return true;
    ARROW_RETURN_NOT_OK(raw.status());
    auto j = json::parse(*raw, nullptr, false);
    if (!j.is_discarded() && j.value("user", "") == user) b->Delete(AccessKeyKey(key_id));
    return true;
  }));
  ARROW_RETURN_NOT_OK(kv_->ScanAll(UserPoliciesPrefix(user), "", [&](const kv::KeyValue& item) -> Result<bool> {
    b->Delete(item.key);
    return true;
  }));
  const std::string groups = UserGroupsPrefix(user);
  return kv_->ScanAll(groups, "", [&](const kv::KeyValue& item) -> Result<bool> {
    b->Delete(item.key).Delete(GroupMemberKey(item.key.substr(groups.size()), user));
    return true;
  });
}

// One batch that requires the user record as read: a key or attachment added
// since rewrote it (WithNewRev), so the batch fails and is built again with it.
Status AuthService::DeleteUser(const std::string& id) {
  ScopedCacheClear clear(this);
  for (int i = 0; i < kRetries; ++i) {
    auto raw = kv_->Get(UserKey(id));
    if (IsNotFound(raw.status())) return NotFound("user not found");  // lakeFS's words (lakectl prints them)
    ARROW_RETURN_NOT_OK(raw.status());
    kv::Batch b;
    b.Require(kv::Precondition::Equals(UserKey(id), *raw));
    ARROW_RETURN_NOT_OK(DeleteWhatHangsOffUser(id, &b));
    b.Delete(UserKey(id));
    Status st = kv_->Apply(b);
    if (!IsPreconditionFailed(st)) return st;
  }
  return Busy(fmt::format("user \"{}\" kept changing while being deleted; retry", id));
}

Result<std::pair<Credentials, std::string>> AuthService::NewCredentials(const std::string& user,
                                                                        const std::string& key_in,
                                                                        const std::string& secret_in) {
  Credentials c;
  c.user = user;
  c.access_key_id = key_in.empty() ? "AKIAJ" + RandomString(15, kKeyIdChars) : key_in;
  c.secret_access_key = secret_in.empty() ? RandomString(40, kSecretChars) : secret_in;
  if (c.access_key_id.size() < 3 || c.secret_access_key.size() < 8) {
    return InvalidArgument("access key id needs at least 3 characters and the secret at least 8");
  }
  c.creation_date = ToUnixMicros(clock_->Now()) / 1000000;
  std::string salt = RandomHex(16);
  ARROW_ASSIGN_OR_RAISE(auto box, Box());
  ARROW_ASSIGN_OR_RAISE(auto sealed, box->Seal(c.secret_access_key));
  json record = {{"user", user},
                 {"salt", salt},
                 {"hash", SecretHash(salt, c.secret_access_key)},
                 {"enc", sealed},
                 {"creation_date", c.creation_date}};
  return std::make_pair(std::move(c), record.dump());
}

void AuthService::AddCredentials(const std::pair<Credentials, std::string>& creds, kv::Batch* b) {
  const Credentials& c = creds.first;
  b->Require(kv::Precondition::Absent(AccessKeyKey(c.access_key_id)))
      .Put(AccessKeyKey(c.access_key_id), creds.second)
      .Put(UserAccessKeyKey(c.user, c.access_key_id), "");
}

// One batch that requires the user record as read (and rewrites it): a key
// never outlives a user deleted meanwhile.
Result<Credentials> AuthService::CreateCredentials(const std::string& user, const std::string& key_in,
                                                   const std::string& secret_in) {
  auto not_found = [&] { return NotFound(fmt::format("user \"{}\" not found", user)); };
  if (IsNotFound(kv_->Get(UserKey(user)).status())) return not_found();
  ARROW_ASSIGN_OR_RAISE(auto creds, NewCredentials(user, key_in, secret_in));
  for (int i = 0; i < kRetries; ++i) {
    auto raw = kv_->Get(UserKey(user));
    if (IsNotFound(raw.status())) return not_found();
    ARROW_RETURN_NOT_OK(raw.status());
    ARROW_ASSIGN_OR_RAISE(auto bumped, WithNewRev("user", *raw));
    kv::Batch b;
    b.Require(kv::Precondition::Equals(UserKey(user), *raw)).Put(UserKey(user), bumped);
    AddCredentials(creds, &b);
    Status st = kv_->Apply(b);
    if (st.ok()) return creds.first;
    if (!IsPreconditionFailed(st)) return st;
    if (kv_->Get(AccessKeyKey(creds.first.access_key_id)).ok()) {
      return Conflict(fmt::format("access key \"{}\" already exists", creds.first.access_key_id));
    }
  }
  return Busy(fmt::format("user \"{}\" kept changing; retry creating the access key", user));
}

Result<std::vector<Credentials>> AuthService::ListCredentials(const std::string& user, const AuthIdPage& page) {
  ARROW_RETURN_NOT_OK(GetUser(user).status());
  std::vector<Credentials> out;
  const std::string prefix = UserAccessKeysPrefix(user);
  ARROW_RETURN_NOT_OK(ScanIds(*kv_, prefix, page, [&](const std::string& id, const std::string&) -> Status {
    Credentials c;
    c.access_key_id = id;
    c.user = user;
    auto raw = kv_->Get(AccessKeyKey(c.access_key_id));
    if (raw.ok()) {
      auto j = json::parse(*raw, nullptr, false);
      if (!j.is_discarded()) c.creation_date = j.value("creation_date", int64_t{0});
    }
    out.push_back(std::move(c));
    return Status::OK();
  }));
  return out;
}

Status AuthService::DeleteCredentials(const std::string& user, const std::string& key_id) {
  ScopedCacheClear clear(this);
  kv::Batch b;
  b.Require(kv::Precondition::Present(UserAccessKeyKey(user, key_id)))
      .Delete(UserAccessKeyKey(user, key_id))
      .Delete(AccessKeyKey(key_id));
  Status st = kv_->Apply(b);
  if (IsPreconditionFailed(st)) return NotFound(fmt::format("user \"{}\" has no access key \"{}\"", user, key_id));
  return st;
}

}  // namespace sediment::auth
