#include "auth/auth.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>

#include "auth/crypt.h"
#include "base/crypto.h"
#include "kv/kv.h"

namespace sediment::auth {

using nlohmann::json;

namespace {

constexpr const char* kAdminPolicy = "AdminAccess";
// Tries of a change whose batch requires records it read unchanged.
constexpr int kRetries = 20;

std::string UserKey(const std::string& user) { return "a/u/" + user; }
std::string PolicyKey(const std::string& policy) { return "a/p/" + policy; }
std::string KeyKey(const std::string& key_id) { return "a/k/" + key_id; }
std::string UserKeyIndex(const std::string& user, const std::string& key_id) { return "a/uk/" + user + "/" + key_id; }
std::string AttachmentKey(const std::string& user, const std::string& policy) { return "a/up/" + user + "/" + policy; }
std::string GroupKey(const std::string& group) { return "a/g/" + group; }
std::string MemberKey(const std::string& group, const std::string& user) { return "a/gm/" + group + "/" + user; }
std::string UserGroupKey(const std::string& user, const std::string& group) { return "a/ug/" + user + "/" + group; }
std::string GroupPolicyKey(const std::string& group, const std::string& policy) {
  return "a/gp/" + group + "/" + policy;
}
constexpr const char* kBaseGroupsRecord = "a/gsetup";
constexpr const char* kAclPolicyPrefix = "ACL(_-_)";  // lakeFS's name for a group ACL's policy

// The record with a fresh "rev". Every change that adds something hanging off a
// user or policy (a key, an attachment) rewrites its record this way in the
// same batch, so a deletion whose batch requires the record as it read it —
// when it listed what hangs off it — fails and lists again instead of missing it.
Result<std::string> WithNewRev(const std::string& what, const std::string& raw) {
  auto j = json::parse(raw, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::IOError(fmt::format("corrupt {} record", what));
  j["rev"] = RandomHex(8);
  return j.dump();
}

// What generated access key ids and secrets are made of (as AWS's look).
constexpr std::string_view kKeyIdChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
constexpr std::string_view kSecretChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string SecretHash(const std::string& salt, const std::string& secret) { return Sha256Hex(salt + ":" + secret); }

Status ValidateId(const std::string& what, const std::string& id) {
  static const std::regex re("^[\\w+=,.@-]{1,128}$");
  if (!std::regex_match(id, re)) {
    return InvalidArgument(fmt::format("invalid {} id \"{}\": use 1-128 letters, digits and _+=,.@-", what, id));
  }
  return Status::OK();
}

std::string UserJson(int64_t creation_date) { return json{{"creation_date", creation_date}}.dump(); }

json PolicyJson(const Policy& p) {
  json st = json::array();
  for (const auto& s : p.statements)
    st.push_back({{"effect", s.effect}, {"action", s.actions}, {"resource", s.resource}});
  json j = {{"statement", st}, {"creation_date", p.creation_date}};
  if (!p.acl.empty()) j["acl"] = p.acl;
  return j;
}

Result<Policy> ParsePolicy(const std::string& id, const std::string& raw) {
  try {
    auto j = json::parse(raw);
    Policy p{id, {}, j.value("creation_date", int64_t{0}), j.value("acl", "")};
    for (const auto& s : j.at("statement")) {
      p.statements.push_back(
          {s.at("effect").get<std::string>(), s.at("action").get<std::vector<std::string>>(), s.at("resource")});
    }
    return p;
  } catch (const std::exception& e) {
    return Status::IOError(fmt::format("corrupt policy {}: {}", id, e.what()));
  }
}

std::string GroupJson(const Group& g) {
  return json{{"creation_date", g.creation_date}, {"description", g.description}}.dump();
}

Group ParseGroup(const std::string& id, const std::string& raw) {
  auto j = json::parse(raw, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Group{id};
  return Group{id, j.value("description", ""), j.value("creation_date", int64_t{0})};
}

// lakeFS's AuthManageOwnCredentials and RepoManagementReadAll statements.
Statement OwnCredentials() {
  return {"allow",
          {"auth:CreateCredentials", "auth:DeleteCredentials", "auth:ListCredentials", "auth:ReadCredentials"},
          "arn:lakefs:auth:::user/${user}"};
}
Statement RepoManagementRead() {
  return {"allow", {"ci:Read*", "retention:Get*", "branches:Get*", "pr:Read*", "pr:List*", "fs:ReadConfig"}, "*"};
}
const std::vector<std::string> kFsReadWrite = {
    "fs:Read*",        "fs:List*",     "fs:WriteObject",  "fs:DeleteObject", "fs:RevertBranch",
    "fs:CreateBranch", "fs:CreateTag", "fs:DeleteBranch", "fs:DeleteTag",    "fs:CreateCommit"};

// The policies of lakeFS's base groups (ids and statements as lakeFS's), and
// Sediment's two for its tables and jobs APIs.
std::vector<Policy> BasePolicies(int64_t now) {
  auto all = [](std::vector<std::string> actions) { return Statement{"allow", std::move(actions), "*"}; };
  return {
      {"FSFullAccess", {all({"fs:*"})}, now},
      {"FSReadWriteAll", {all(kFsReadWrite)}, now},
      {"FSReadAll", {all({"fs:List*", "fs:Read*"})}, now},
      {"RepoManagementFullAccess", {all({"ci:*", "retention:*", "branches:*", "pr:*", "fs:ReadConfig"})}, now},
      {"RepoManagementReadAll", {RepoManagementRead()}, now},
      {"PRReadWriteAll", {all({"pr:*"})}, now},
      {"CatalogReadAll",
       {all({"catalog:ListNamespaces", "catalog:GetNamespace", "catalog:ListTables", "catalog:ReadTable",
             "catalog:ListViews", "catalog:ReadView"})},
       now},
      {"CatalogReadWriteAll", {all({"catalog:*"})}, now},
      {"AuthFullAccess", {all({"auth:*"})}, now},
      {"AuthManageOwnCredentials", {OwnCredentials()}, now},
      {"TablesFullAccess", {all({"tables:*", "jobs:*"})}, now},
      {"TablesReadAll", {all({"tables:Read*", "tables:List*", "jobs:Read*"})}, now},
  };
}

struct BaseGroup {
  const char* id;
  std::vector<std::string> policies;
};
const std::vector<BaseGroup> kBaseGroups = {
    {"Admins",
     {"FSFullAccess", "CatalogReadWriteAll", "AuthFullAccess", "RepoManagementFullAccess", "TablesFullAccess"}},
    {"SuperUsers",
     {"FSFullAccess", "CatalogReadWriteAll", "AuthManageOwnCredentials", "RepoManagementReadAll", "TablesFullAccess"}},
    {"Developers",
     {"FSReadWriteAll", "PRReadWriteAll", "CatalogReadWriteAll", "AuthManageOwnCredentials", "RepoManagementReadAll",
      "TablesReadAll"}},
    {"Viewers", {"FSReadAll", "CatalogReadAll", "AuthManageOwnCredentials", "TablesReadAll"}},
};

// Adds the base policies and groups that `lookup` (a record's stored value,
// or nullopt) does not find, on the condition that they are still absent;
// the groups' attachments; `admin` (if not empty) in Admins when this creates
// Admins; and the marker. A policy already stored under a base name is
// attached only if its statements are the base ones (on the condition that
// it stays so): a policy someone made under that name grants what they chose,
// and no base group hands it out.
Status PutBaseGroups(kv::Batch* b, int64_t now,
                     const std::function<Result<std::optional<std::string>>(const std::string&)>& lookup,
                     const std::string& admin) {
  std::set<std::string> usable;
  for (const auto& p : BasePolicies(now)) {
    ARROW_ASSIGN_OR_RAISE(auto stored, lookup(PolicyKey(p.id)));
    if (!stored) {
      b->Require(kv::Precondition::Absent(PolicyKey(p.id))).Put(PolicyKey(p.id), PolicyJson(p).dump());
      usable.insert(p.id);
      continue;
    }
    auto existing = ParsePolicy(p.id, *stored);
    auto same = [](const Statement& x, const Statement& y) {
      return x.effect == y.effect && x.actions == y.actions && x.resource == y.resource;
    };
    if (existing.ok() && std::equal(existing->statements.begin(), existing->statements.end(), p.statements.begin(),
                                    p.statements.end(), same)) {
      b->Require(kv::Precondition::Equals(PolicyKey(p.id), *stored));
      usable.insert(p.id);
    } else {
      spdlog::warn("auth: policy \"{}\" exists with statements of its own; the base groups do not get it", p.id);
    }
  }
  for (const auto& g : kBaseGroups) {
    ARROW_ASSIGN_OR_RAISE(auto there, lookup(GroupKey(g.id)));
    if (there) continue;
    b->Require(kv::Precondition::Absent(GroupKey(g.id))).Put(GroupKey(g.id), GroupJson(Group{g.id, "", now}));
    for (const auto& p : g.policies) {
      if (usable.contains(p)) b->Put(GroupPolicyKey(g.id, p), "");
    }
    if (!admin.empty() && std::string_view(g.id) == "Admins") {
      b->Put(MemberKey(g.id, admin), "").Put(UserGroupKey(admin, g.id), "");
    }
  }
  b->Put(kBaseGroupsRecord, "1");
  return Status::OK();
}

// The statements of a group ACL, as lakeFS makes them (and Sediment's tables).
Result<std::vector<Statement>> AclStatements(const std::string& permission) {
  auto all = [](std::vector<std::string> actions) { return Statement{"allow", std::move(actions), "*"}; };
  if (permission == "Read")
    return std::vector<Statement>{all({"fs:List*", "fs:Read*", "tables:Read*", "tables:List*"}), OwnCredentials()};
  if (permission == "Write") {
    auto rw = kFsReadWrite;
    rw.insert(rw.end(), {"tables:Read*", "tables:List*"});
    return std::vector<Statement>{all(rw), OwnCredentials(), RepoManagementRead()};
  }
  if (permission == "Super")
    return std::vector<Statement>{all({"fs:*", "tables:*", "jobs:*"}), OwnCredentials(), RepoManagementRead()};
  if (permission == "Admin") {
    return std::vector<Statement>{
        all({"fs:*", "auth:*", "ci:*", "retention:*", "branches:*", "pr:*", "catalog:*", "tables:*", "jobs:*"})};
  }
  return InvalidArgument(fmt::format("ACL permission \"{}\" must be Read, Write, Super or Admin", permission));
}

}  // namespace

AuthService::AuthService(std::shared_ptr<kv::KvStore> kv, std::shared_ptr<Clock> clock, Duration cache_ttl,
                         std::string encrypt_secret_key)
    : kv_(std::move(kv)),
      clock_(std::move(clock)),
      cache_ttl_(cache_ttl),
      configured_key_(std::move(encrypt_secret_key)) {}

namespace {
constexpr const char* kEncryptionKeyRecord = "a/ek";
}  // namespace

Result<std::string> AuthService::InstallationId() {
  constexpr const char* kRecord = "a/iid";
  auto raw = kv_->Get(kRecord);
  if (IsNotFound(raw.status())) {
    std::string h = RandomHex(16);
    std::string uuid =
        h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20, 12);
    kv::Batch b;
    b.Require(kv::Precondition::Absent(kRecord)).Put(kRecord, uuid);
    Status st = kv_->Apply(b);
    if (!st.ok() && !IsPreconditionFailed(st)) return st;
    raw = kv_->Get(kRecord);
  }
  return raw;
}

Result<std::shared_ptr<const SecretBox>> AuthService::Box() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (box_) return box_;
  }
  std::string material = configured_key_;
  if (material.empty()) {
    auto raw = kv_->Get(kEncryptionKeyRecord);
    if (IsNotFound(raw.status())) {
      kv::Batch b;
      std::string fresh = RandomHex(32);
      b.Require(kv::Precondition::Absent(kEncryptionKeyRecord)).Put(kEncryptionKeyRecord, fresh);
      Status st = kv_->Apply(b);
      if (!st.ok() && !IsPreconditionFailed(st)) return st;
      raw = kv_->Get(kEncryptionKeyRecord);  // ours, or the one a racing server stored first
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

Result<bool> AuthService::IsSetUp() {
  auto v = kv_->Get("a/setup");
  if (IsNotFound(v.status())) return false;
  ARROW_RETURN_NOT_OK(v.status());
  return true;
}

// One batch, on the condition that the set-up marker is absent: of concurrent
// set-ups exactly one creates its admin, and the others write nothing.
Result<Credentials> AuthService::Setup(const std::string& username, const std::string& access_key_id,
                                       const std::string& secret_access_key) {
  ARROW_RETURN_NOT_OK(ValidateId("user", username));
  ARROW_ASSIGN_OR_RAISE(bool done, IsSetUp());
  if (done) return Conflict("Sediment is already set up");
  ARROW_ASSIGN_OR_RAISE(auto creds, NewCredentials(username, access_key_id, secret_access_key));
  Policy admin{kAdminPolicy, {{"allow", {"*"}, "*"}}, creds.first.creation_date};
  kv::Batch b;
  b.Require(kv::Precondition::Absent("a/setup"));
  ARROW_RETURN_NOT_OK(DeleteWhatHangsOffUser(username, &b));  // left by an interrupted older set-up
  b.Put("a/setup", username)
      .Put(PolicyKey(kAdminPolicy), PolicyJson(admin).dump())
      .Put(UserKey(username), UserJson(creds.first.creation_date))
      .Put(AttachmentKey(username, kAdminPolicy), "");
  ARROW_RETURN_NOT_OK(PutBaseGroups(
      &b, creds.first.creation_date,
      [](const std::string&) -> Result<std::optional<std::string>> { return std::nullopt; }, username));
  AddCredentials(creds, &b);
  Status st = kv_->Apply(b);
  if (IsPreconditionFailed(st)) {
    ARROW_ASSIGN_OR_RAISE(done, IsSetUp());
    if (done) return Conflict("Sediment is already set up");
    return Conflict(fmt::format("access key \"{}\" already exists", creds.first.access_key_id));
  }
  ARROW_RETURN_NOT_OK(st);
  return creds.first;
}

Result<AuthService::CachedKey> AuthService::LookupKey(const std::string& key_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = keys_.find(key_id);
    if (it != keys_.end() && it->second.expires > clock_->Now()) return it->second;
  }
  auto raw = kv_->Get(KeyKey(key_id));
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
  auto j = json::parse(*raw, nullptr, false);
  return User{id, j.is_discarded() ? 0 : j.value("creation_date", int64_t{0})};
}

namespace {

// Visits the records under `base` whose ids (the rest of the key) the page
// selects, in order: visit(id, value).
Status ScanIds(kv::KvStore& kv, const std::string& base, const AuthIdPage& page,
               const std::function<Status(const std::string&, const std::string&)>& visit) {
  if (page.has_more) *page.has_more = false;
  size_t n = 0;
  std::string from = page.after.empty() ? "" : base + page.after + std::string(1, '\0');
  return kv.ScanAll(
      base + page.prefix, from,
      [&](const kv::KeyValue& item) -> Result<bool> {
        if (n == page.amount) {
          if (page.has_more) *page.has_more = true;
          return false;
        }
        n++;
        ARROW_RETURN_NOT_OK(visit(item.key.substr(base.size()), item.value));
        return true;
      },
      std::min<size_t>(page.amount + 1, 1024));
}

}  // namespace

Result<std::vector<User>> AuthService::ListUsers(const AuthIdPage& page) {
  std::vector<User> out;
  ARROW_RETURN_NOT_OK(ScanIds(*kv_, "a/u/", page, [&](const std::string& id, const std::string& value) -> Status {
    auto j = json::parse(value, nullptr, false);
    out.push_back({id, j.is_discarded() ? 0 : j.value("creation_date", int64_t{0})});
    return Status::OK();
  }));
  return out;
}

Status AuthService::DeleteWhatHangsOffUser(const std::string& user, kv::Batch* b) {
  std::string keys = "a/uk/" + user + "/";
  ARROW_RETURN_NOT_OK(kv_->ScanAll(keys, "", [&](const kv::KeyValue& item) -> Result<bool> {
    std::string key_id = item.key.substr(keys.size());
    b->Delete(item.key);
    auto raw = kv_->Get(KeyKey(key_id));
    if (IsNotFound(raw.status())) return true;
    ARROW_RETURN_NOT_OK(raw.status());
    auto j = json::parse(*raw, nullptr, false);
    if (!j.is_discarded() && j.value("user", "") == user) b->Delete(KeyKey(key_id));
    return true;
  }));
  ARROW_RETURN_NOT_OK(kv_->ScanAll("a/up/" + user + "/", "", [&](const kv::KeyValue& item) -> Result<bool> {
    b->Delete(item.key);
    return true;
  }));
  const std::string groups = "a/ug/" + user + "/";
  return kv_->ScanAll(groups, "", [&](const kv::KeyValue& item) -> Result<bool> {
    b->Delete(item.key).Delete(MemberKey(item.key.substr(groups.size()), user));
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
  b->Require(kv::Precondition::Absent(KeyKey(c.access_key_id)))
      .Put(KeyKey(c.access_key_id), creds.second)
      .Put(UserKeyIndex(c.user, c.access_key_id), "");
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
    if (kv_->Get(KeyKey(creds.first.access_key_id)).ok()) {
      return Conflict(fmt::format("access key \"{}\" already exists", creds.first.access_key_id));
    }
  }
  return Busy(fmt::format("user \"{}\" kept changing; retry creating the access key", user));
}

Result<std::vector<Credentials>> AuthService::ListCredentials(const std::string& user, const AuthIdPage& page) {
  ARROW_RETURN_NOT_OK(GetUser(user).status());
  std::vector<Credentials> out;
  std::string prefix = "a/uk/" + user + "/";
  ARROW_RETURN_NOT_OK(ScanIds(*kv_, prefix, page, [&](const std::string& id, const std::string&) -> Status {
    Credentials c;
    c.access_key_id = id;
    c.user = user;
    auto raw = kv_->Get(KeyKey(c.access_key_id));
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
  b.Require(kv::Precondition::Present(UserKeyIndex(user, key_id)))
      .Delete(UserKeyIndex(user, key_id))
      .Delete(KeyKey(key_id));
  Status st = kv_->Apply(b);
  if (IsPreconditionFailed(st)) return NotFound(fmt::format("user \"{}\" has no access key \"{}\"", user, key_id));
  return st;
}

Result<Policy> AuthService::CreatePolicy(const Policy& policy_in) {
  ARROW_RETURN_NOT_OK(ValidateId("policy", policy_in.id));
  Policy p = policy_in;
  ARROW_RETURN_NOT_OK(ValidatePolicy(p));
  p.creation_date = ToUnixMicros(clock_->Now()) / 1000000;
  kv::Batch b;
  b.Require(kv::Precondition::Absent(PolicyKey(p.id)));
  // Attachments an older version left behind a deleted policy of this id grant nothing new.
  ARROW_RETURN_NOT_OK(DeleteAttachmentsOf(p.id, &b));
  b.Put(PolicyKey(p.id), PolicyJson(p).dump());
  Status st = kv_->Apply(b);
  if (IsPreconditionFailed(st)) return Conflict(fmt::format("policy \"{}\" already exists", p.id));
  ARROW_RETURN_NOT_OK(st);
  return p;
}

Result<Policy> AuthService::GetPolicy(const std::string& id) {
  auto raw = kv_->Get(PolicyKey(id));
  if (IsNotFound(raw.status())) return NotFound(fmt::format("policy \"{}\" not found", id));
  ARROW_RETURN_NOT_OK(raw.status());
  return ParsePolicy(id, *raw);
}

Result<std::vector<Policy>> AuthService::ListPolicies(const AuthIdPage& page) {
  std::vector<Policy> out;
  ARROW_RETURN_NOT_OK(ScanIds(*kv_, "a/p/", page, [&](const std::string& id, const std::string& value) -> Status {
    ARROW_ASSIGN_OR_RAISE(auto p, ParsePolicy(id, value));
    out.push_back(std::move(p));
    return Status::OK();
  }));
  return out;
}

Status AuthService::DeleteAttachmentsOf(const std::string& policy, kv::Batch* b) {
  // a/up/<user>/<policy> and a/gp/<group>/<policy>; no id contains '/'.
  for (const char* base : {"a/up/", "a/gp/"}) {
    ARROW_RETURN_NOT_OK(kv_->ScanAll(base, "", [&](const kv::KeyValue& item) -> Result<bool> {
      auto slash = item.key.find('/', 5);
      if (slash != std::string::npos && item.key.compare(slash + 1, std::string::npos, policy) == 0) {
        b->Delete(item.key);
      }
      return true;
    }));
  }
  return Status::OK();
}

// One batch with every attachment, requiring the policy record as read: an
// attachment added since rewrote it (WithNewRev), so the batch is built again.
Status AuthService::DeletePolicy(const std::string& id) {
  ScopedCacheClear clear(this);
  for (int i = 0; i < kRetries; ++i) {
    auto raw = kv_->Get(PolicyKey(id));
    if (IsNotFound(raw.status())) return NotFound(fmt::format("policy \"{}\" not found", id));
    ARROW_RETURN_NOT_OK(raw.status());
    kv::Batch b;
    b.Require(kv::Precondition::Equals(PolicyKey(id), *raw)).Delete(PolicyKey(id));
    ARROW_RETURN_NOT_OK(DeleteAttachmentsOf(id, &b));
    Status st = kv_->Apply(b);
    if (!IsPreconditionFailed(st)) return st;
  }
  return Busy(fmt::format("policy \"{}\" kept changing while being deleted; retry", id));
}

// One batch that requires (and rewrites) both records as read: a link never
// outlives either record deleted meanwhile.
Status AuthService::Link(const Linked& a, const Linked& b, const std::vector<std::string>& links,
                         const std::string& conflict) {
  ScopedCacheClear clear(this);
  for (int i = 0; i < kRetries; ++i) {
    std::string raw[2], bumped[2];
    const Linked* records[2] = {&a, &b};
    for (int k = 0; k < 2; ++k) {
      auto got = kv_->Get(records[k]->key);
      if (IsNotFound(got.status()))
        return NotFound(fmt::format("{} \"{}\" not found", records[k]->what, records[k]->id));
      ARROW_RETURN_NOT_OK(got.status());
      raw[k] = std::move(*got);
      ARROW_ASSIGN_OR_RAISE(bumped[k], WithNewRev(records[k]->what, raw[k]));
    }
    kv::Batch batch;
    if (!conflict.empty()) {
      if (kv_->Get(links.front()).ok()) return Conflict(conflict);
      batch.Require(kv::Precondition::Absent(links.front()));
    }
    for (int k = 0; k < 2; ++k) {
      batch.Require(kv::Precondition::Equals(records[k]->key, raw[k])).Put(records[k]->key, bumped[k]);
    }
    for (const auto& l : links) batch.Put(l, "");
    Status st = kv_->Apply(batch);
    if (!IsPreconditionFailed(st)) return st;
  }
  return Busy(fmt::format("{} \"{}\" or {} \"{}\" kept changing; retry", a.what, a.id, b.what, b.id));
}

Status AuthService::AttachPolicy(const std::string& user, const std::string& policy) {
  return Link({UserKey(user), "user", user}, {PolicyKey(policy), "policy", policy}, {AttachmentKey(user, policy)}, "");
}

Status AuthService::DetachPolicy(const std::string& user, const std::string& policy) {
  ScopedCacheClear clear(this);
  return kv_->Delete(AttachmentKey(user, policy));
}

Result<std::vector<Policy>> AuthService::PoliciesUnder(const std::string& prefix, const AuthIdPage& page) {
  std::vector<Policy> out;
  ARROW_RETURN_NOT_OK(ScanIds(*kv_, prefix, page, [&](const std::string& id, const std::string&) -> Status {
    auto p = GetPolicy(id);
    if (p.ok()) out.push_back(std::move(*p));  // a deleted policy grants nothing
    return Status::OK();
  }));
  return out;
}

Result<std::vector<Policy>> AuthService::ListUserPolicies(const std::string& user, const AuthIdPage& page) {
  return PoliciesUnder("a/up/" + user + "/", page);
}

Result<std::vector<Policy>> AuthService::EffectivePolicies(const std::string& user) {
  ARROW_ASSIGN_OR_RAISE(auto own, ListUserPolicies(user));
  std::map<std::string, Policy> by_id;
  for (auto& p : own) by_id.emplace(p.id, std::move(p));
  const std::string groups = "a/ug/" + user + "/";
  ARROW_RETURN_NOT_OK(kv_->ScanAll(groups, "", [&](const kv::KeyValue& item) -> Result<bool> {
    ARROW_ASSIGN_OR_RAISE(auto ps, PoliciesUnder("a/gp/" + item.key.substr(groups.size()) + "/", {}));
    for (auto& p : ps) by_id.emplace(p.id, std::move(p));
    return true;
  }));
  std::vector<Policy> out;
  for (auto& [id, p] : by_id) out.push_back(std::move(p));
  return out;
}

Result<Policy> AuthService::UpdatePolicy(const Policy& policy_in) {
  ARROW_RETURN_NOT_OK(ValidatePolicy(policy_in));
  ScopedCacheClear clear(this);
  for (int i = 0; i < kRetries; ++i) {
    auto raw = kv_->Get(PolicyKey(policy_in.id));
    if (IsNotFound(raw.status())) return NotFound(fmt::format("policy \"{}\" not found", policy_in.id));
    ARROW_RETURN_NOT_OK(raw.status());
    ARROW_ASSIGN_OR_RAISE(auto old, ParsePolicy(policy_in.id, *raw));
    Policy p{policy_in.id, policy_in.statements, old.creation_date};
    json j = PolicyJson(p);
    j["rev"] = RandomHex(8);
    kv::Batch b;
    b.Require(kv::Precondition::Equals(PolicyKey(p.id), *raw)).Put(PolicyKey(p.id), j.dump());
    Status st = kv_->Apply(b);
    if (st.ok()) return p;
    if (!IsPreconditionFailed(st)) return st;
  }
  return Busy(fmt::format("policy \"{}\" kept changing; retry the update", policy_in.id));
}

// --- groups --------------------------------------------------------------------

Result<Group> AuthService::CreateGroup(const std::string& id, const std::string& description) {
  ARROW_RETURN_NOT_OK(ValidateId("group", id));
  if (description.size() > 1024) return InvalidArgument("a group's description has at most 1024 bytes");
  Group g{id, description, ToUnixMicros(clock_->Now()) / 1000000};
  kv::Batch b;
  b.Require(kv::Precondition::Absent(GroupKey(id))).Put(GroupKey(id), GroupJson(g));
  Status st = kv_->Apply(b);
  if (IsPreconditionFailed(st)) return Conflict(fmt::format("group \"{}\" already exists", id));
  ARROW_RETURN_NOT_OK(st);
  return g;
}

Result<Group> AuthService::GetGroup(const std::string& id) {
  auto raw = kv_->Get(GroupKey(id));
  if (IsNotFound(raw.status())) return NotFound(fmt::format("group \"{}\" not found", id));
  ARROW_RETURN_NOT_OK(raw.status());
  return ParseGroup(id, *raw);
}

Result<std::vector<Group>> AuthService::ListGroups(const AuthIdPage& page) {
  std::vector<Group> out;
  ARROW_RETURN_NOT_OK(ScanIds(*kv_, "a/g/", page, [&](const std::string& id, const std::string& value) -> Status {
    out.push_back(ParseGroup(id, value));
    return Status::OK();
  }));
  return out;
}

// One batch that requires the group record as read: a member or attachment
// added since rewrote it, so the batch is built again with it.
Status AuthService::DeleteGroup(const std::string& id) {
  ScopedCacheClear clear(this);
  for (int i = 0; i < kRetries; ++i) {
    auto raw = kv_->Get(GroupKey(id));
    if (IsNotFound(raw.status())) return NotFound(fmt::format("group \"{}\" not found", id));
    ARROW_RETURN_NOT_OK(raw.status());
    kv::Batch b;
    b.Require(kv::Precondition::Equals(GroupKey(id), *raw)).Delete(GroupKey(id));
    const std::string members = "a/gm/" + id + "/";
    ARROW_RETURN_NOT_OK(kv_->ScanAll(members, "", [&](const kv::KeyValue& item) -> Result<bool> {
      b.Delete(item.key).Delete(UserGroupKey(item.key.substr(members.size()), id));
      return true;
    }));
    ARROW_RETURN_NOT_OK(kv_->ScanAll("a/gp/" + id + "/", "", [&](const kv::KeyValue& item) -> Result<bool> {
      b.Delete(item.key);
      return true;
    }));
    // The group's ACL is its own policy: it goes too, with wherever else it was attached.
    const std::string acl = kAclPolicyPrefix + id;
    if (auto raw_acl = kv_->Get(PolicyKey(acl)); raw_acl.ok()) {
      b.Require(kv::Precondition::Equals(PolicyKey(acl), *raw_acl)).Delete(PolicyKey(acl));
      ARROW_RETURN_NOT_OK(DeleteAttachmentsOf(acl, &b));
    }
    Status st = kv_->Apply(b);
    if (!IsPreconditionFailed(st)) return st;
  }
  return Busy(fmt::format("group \"{}\" kept changing while being deleted; retry", id));
}

Status AuthService::AddGroupMember(const std::string& group, const std::string& user) {
  return Link({GroupKey(group), "group", group}, {UserKey(user), "user", user},
              {MemberKey(group, user), UserGroupKey(user, group)},
              fmt::format("user \"{}\" is already in group \"{}\"", user, group));
}

Status AuthService::RemoveGroupMember(const std::string& group, const std::string& user) {
  ARROW_RETURN_NOT_OK(GetGroup(group).status());
  ARROW_RETURN_NOT_OK(GetUser(user).status());
  ScopedCacheClear clear(this);
  kv::Batch b;
  b.Delete(MemberKey(group, user)).Delete(UserGroupKey(user, group));
  return kv_->Apply(b);
}

Result<std::vector<User>> AuthService::ListGroupMembers(const std::string& group, const AuthIdPage& page) {
  ARROW_RETURN_NOT_OK(GetGroup(group).status());
  std::vector<User> out;
  ARROW_RETURN_NOT_OK(
      ScanIds(*kv_, "a/gm/" + group + "/", page, [&](const std::string& id, const std::string&) -> Status {
        auto u = GetUser(id);
        if (u.ok()) out.push_back(std::move(*u));
        return Status::OK();
      }));
  return out;
}

Result<std::vector<Group>> AuthService::ListUserGroups(const std::string& user, const AuthIdPage& page) {
  ARROW_RETURN_NOT_OK(GetUser(user).status());
  std::vector<Group> out;
  ARROW_RETURN_NOT_OK(
      ScanIds(*kv_, "a/ug/" + user + "/", page, [&](const std::string& id, const std::string&) -> Status {
        auto g = GetGroup(id);
        if (g.ok()) out.push_back(std::move(*g));
        return Status::OK();
      }));
  return out;
}

Status AuthService::AttachGroupPolicy(const std::string& group, const std::string& policy) {
  return Link({GroupKey(group), "group", group}, {PolicyKey(policy), "policy", policy}, {GroupPolicyKey(group, policy)},
              "");
}

Status AuthService::DetachGroupPolicy(const std::string& group, const std::string& policy) {
  ARROW_RETURN_NOT_OK(GetGroup(group).status());
  ScopedCacheClear clear(this);
  return kv_->Delete(GroupPolicyKey(group, policy));
}

Result<std::vector<Policy>> AuthService::ListGroupPolicies(const std::string& group, const AuthIdPage& page) {
  ARROW_RETURN_NOT_OK(GetGroup(group).status());
  return PoliciesUnder("a/gp/" + group + "/", page);
}

// One batch: the ACL's policy (re)written, attached, every other attachment
// of the group dropped, on the condition that the group is as read.
Status AuthService::SetGroupAcl(const std::string& group, const std::string& permission) {
  ARROW_ASSIGN_OR_RAISE(auto statements, AclStatements(permission));
  const std::string id = kAclPolicyPrefix + group;
  ScopedCacheClear clear(this);
  for (int i = 0; i < kRetries; ++i) {
    auto raw = kv_->Get(GroupKey(group));
    if (IsNotFound(raw.status())) return NotFound(fmt::format("group \"{}\" not found", group));
    ARROW_RETURN_NOT_OK(raw.status());
    ARROW_ASSIGN_OR_RAISE(auto bumped, WithNewRev("group", *raw));
    Policy p{id, statements, ToUnixMicros(clock_->Now()) / 1000000, permission};
    json j = PolicyJson(p);
    j["rev"] = RandomHex(8);
    kv::Batch b;
    b.Require(kv::Precondition::Equals(GroupKey(group), *raw))
        .Put(GroupKey(group), bumped)
        .Put(PolicyKey(id), j.dump())
        .Put(GroupPolicyKey(group, id), "");
    const std::string attached = "a/gp/" + group + "/";
    ARROW_RETURN_NOT_OK(kv_->ScanAll(attached, "", [&](const kv::KeyValue& item) -> Result<bool> {
      if (item.key.substr(attached.size()) != id) b.Delete(item.key);
      return true;
    }));
    Status st = kv_->Apply(b);
    if (!IsPreconditionFailed(st)) return st;
  }
  return Busy(fmt::format("group \"{}\" kept changing; retry setting its ACL", group));
}

Result<std::string> AuthService::GetGroupAcl(const std::string& group) {
  ARROW_ASSIGN_OR_RAISE(auto ps, ListGroupPolicies(group));
  if (ps.empty()) return std::string();
  if (ps.size() == 1 && !ps[0].acl.empty()) return ps[0].acl;
  return NotFound(fmt::format("group \"{}\" has no ACL (its policies are not one ACL's)", group));
}

Status AuthService::EnsureBaseGroups() {
  for (int i = 0; i < kRetries; ++i) {
    if (kv_->Get(kBaseGroupsRecord).ok()) return Status::OK();
    auto admin = kv_->Get("a/setup");
    if (IsNotFound(admin.status())) return Status::OK();  // set-up creates them
    ARROW_RETURN_NOT_OK(admin.status());
    kv::Batch b;
    b.Require(kv::Precondition::Absent(kBaseGroupsRecord));
    std::string member;
    auto user = kv_->Get(UserKey(*admin));
    if (user.ok() && !kv_->Get(GroupKey("Admins")).ok()) {
      ARROW_ASSIGN_OR_RAISE(auto bumped, WithNewRev("user", *user));
      b.Require(kv::Precondition::Equals(UserKey(*admin), *user)).Put(UserKey(*admin), bumped);
      member = *admin;
    }
    ARROW_RETURN_NOT_OK(PutBaseGroups(
        &b, ToUnixMicros(clock_->Now()) / 1000000,
        [&](const std::string& key) -> Result<std::optional<std::string>> {
          auto got = kv_->Get(key);
          if (IsNotFound(got.status())) return std::nullopt;
          ARROW_RETURN_NOT_OK(got.status());
          return std::optional<std::string>(std::move(*got));
        },
        member));
    ScopedCacheClear clear(this);
    Status st = kv_->Apply(b);
    if (!IsPreconditionFailed(st)) return st;
  }
  return Busy("the base groups kept changing while being created; restart to retry");
}

}  // namespace sediment::auth
