// AuthService: lakeFS-style users, access keys and policies in the KV store,
// HTTP basic authentication and per-action authorization.
//
// Secrets are stored as salted SHA-256 hashes (a secret is 40 random
// characters, so a fast hash is enough; the plain secret is shown once, on
// creation) and, for the S3 gateway's request signatures (an HMAC keyed by the
// secret itself), encrypted with AES-256-GCM under a key derived with
// HKDF-SHA256 from the server's key material ([auth] encrypt_secret_key, at
// least 32 bytes; when unset, a random key kept in the store at a/ek — which
// protects nothing against someone who reads the store, so set it on shared
// deployments). Keys created before encryption existed have no
// encrypted copy: they sign basic auth only. A request is allowed when one of the user's attached policies has
// an "allow" statement matching the action and resource ARN and none has a
// matching "deny" (wildcards: '*' any run, '?' one character).
//
// Authentication results and users' policies are cached for `cache_ttl` (5 s;
// every listing would otherwise pay three KV round trips before its own work).
// Changes made through this server clear its cache at once; another server
// sharing the store sees a revoked key or policy change within the TTL.
//
// Groups (lakeFS's RBAC "internal" mode): a user's policies are their own and
// those of every group they are in; set-up creates lakeFS's four groups
// (Admins, SuperUsers, Developers, Viewers) with lakeFS's policies plus
// Sediment's tables and jobs ones, and puts the first admin in Admins. A store
// set up before groups existed gets them on start (EnsureBaseGroups).
//
// KV layout: keys.h builds every key (users, access keys, policies, groups,
// memberships both ways, attachments, sessions, the set-up markers).
//
// Integrity: each change is one atomic KV batch. Set-up requires a/setup absent
// (one admin, whatever races). A key, attachment or membership requires the
// records it links unchanged and rewrites them with a new "rev"; deleting a
// user, group or policy requires its record unchanged and removes, in the same
// batch, everything hanging off it — so nothing survives a racing creation. A key
// whose user record is gone does not authenticate.
//
// Thread-safety: all methods are safe from many threads.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "auth/policy.h"
#include "base/clock.h"
#include "base/status.h"

namespace sediment::kv {
class KvStore;
struct Batch;
}  // namespace sediment::kv

namespace sediment::auth {

class SecretBox;

struct SigningSecret {
  std::string user;
  std::string secret;
};

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;  // only when just created
  std::string user;
  int64_t creation_date = 0;
};

struct User {
  std::string id;
  int64_t creation_date = 0;
};

struct Group {
  std::string id;
  std::string description;
  int64_t creation_date = 0;
};

// The lakeFS auth API's paging of a listing: ids starting with `prefix`,
// after `after`, at most `amount` (read from the KV store a page at a time).
struct AuthIdPage {
  std::string prefix;
  std::string after;
  size_t amount = SIZE_MAX;
  bool* has_more = nullptr;  // set if more ids follow
};

// A login session (the console's): a token naming an access key, signed by
// the server, valid until `expires_unix` or until the key is deleted.
struct SessionToken {
  std::string token;
  int64_t expires_unix = 0;
};

class AuthService {
 public:
  // `encrypt_secret_key`: at least 32 bytes of key material (the AES key and
  // the session-signing key are derived from it with HKDF-SHA256); "" = a
  // random key kept in the store.
  AuthService(std::shared_ptr<kv::KvStore> kv, std::shared_ptr<Clock> clock,
              Duration cache_ttl = std::chrono::seconds(5), std::string encrypt_secret_key = "");

  Result<bool> IsSetUp();
  // Creates the first admin (with the AdminAccess policy). Conflict once set up.
  Result<Credentials> Setup(const std::string& username, const std::string& access_key_id,
                            const std::string& secret_access_key);

  // The user behind an "Authorization: Basic ..." or "Bearer <session token>"
  // header value; Unauthorized otherwise.
  Result<std::string> Authenticate(const std::string& authorization_header);
  // Checks the key's secret, then issues a session token for it, valid for
  // `ttl` on every server sharing the store (it is signed with a key derived
  // from the secrets' encryption key).
  Result<SessionToken> Login(const std::string& access_key_id, const std::string& secret, Duration ttl);
  // Ends a session on every server (log-out); a token that is not valid is
  // left alone. Revocations are kept until the token would have expired.
  Status Revoke(const std::string& token);
  // This installation's id (created once, kept in the store): lakeFS clients
  // show it in usage reports.
  Result<std::string> InstallationId();
  // The user and plain secret of an access key, to check a request signature.
  // Unauthorized for an unknown key, a key of a deleted user, or a key with
  // no encrypted secret (created by an older version).
  Result<SigningSecret> SecretFor(const std::string& access_key_id);
  // Forbidden unless `user`'s policies allow `action` on `resource`.
  Status Authorize(const std::string& user, const std::string& action, const std::string& resource);

  Result<User> CreateUser(const std::string& id);
  Result<User> GetUser(const std::string& id);
  Result<std::vector<User>> ListUsers(const AuthIdPage& page = {});
  Status DeleteUser(const std::string& id);
  Result<Credentials> CreateCredentials(const std::string& user, const std::string& access_key_id = "",
                                        const std::string& secret_access_key = "");
  Result<std::vector<Credentials>> ListCredentials(const std::string& user, const AuthIdPage& page = {});
  Status DeleteCredentials(const std::string& user, const std::string& access_key_id);
  Result<Policy> CreatePolicy(const Policy& policy);
  Result<Policy> GetPolicy(const std::string& id);
  Result<std::vector<Policy>> ListPolicies(const AuthIdPage& page = {});
  Status DeletePolicy(const std::string& id);
  Status AttachPolicy(const std::string& user, const std::string& policy);
  Status DetachPolicy(const std::string& user, const std::string& policy);
  Result<std::vector<Policy>> ListUserPolicies(const std::string& user, const AuthIdPage& page = {});
  // Replaces a policy's statements (NotFound if it does not exist).
  Result<Policy> UpdatePolicy(const Policy& policy);
  // The user's own policies and their groups', each once, by id.
  Result<std::vector<Policy>> EffectivePolicies(const std::string& user);

  Result<Group> CreateGroup(const std::string& id, const std::string& description = "");
  Result<Group> GetGroup(const std::string& id);
  Result<std::vector<Group>> ListGroups(const AuthIdPage& page = {});
  // Removes the group with its memberships and attachments (the policies stay).
  Status DeleteGroup(const std::string& id);
  // Conflict if already a member.
  Status AddGroupMember(const std::string& group, const std::string& user);
  Status RemoveGroupMember(const std::string& group, const std::string& user);
  Result<std::vector<User>> ListGroupMembers(const std::string& group, const AuthIdPage& page = {});
  Result<std::vector<Group>> ListUserGroups(const std::string& user, const AuthIdPage& page = {});
  Status AttachGroupPolicy(const std::string& group, const std::string& policy);
  Status DetachGroupPolicy(const std::string& group, const std::string& policy);
  Result<std::vector<Policy>> ListGroupPolicies(const std::string& group, const AuthIdPage& page = {});
  // lakeFS's group ACLs: the group's only policy becomes "ACL(_-_)<group>",
  // made from `permission` (Read, Write, Super or Admin).
  Status SetGroupAcl(const std::string& group, const std::string& permission);
  // The permission of the group's ACL; "" with no policy; NotFound when its
  // policies are not one ACL.
  Result<std::string> GetGroupAcl(const std::string& group);
  // Creates the base groups and policies a store set up before groups lacks
  // (once; what exists under their names is left alone).
  Status EnsureBaseGroups();

 private:
  class ScopedCacheClear;  // clears the cache on entry and on exit of a change

  void ClearCache();
  struct CachedKey;
  // The record of an access key (cached), Unauthorized if unknown or its user is gone.
  Result<CachedKey> LookupKey(const std::string& key_id);
  // The user of a valid, unexpired, unrevoked session token whose key still exists.
  Result<std::string> AuthenticateToken(const std::string& token);
  struct VerifiedToken {
    std::string key_id;
    int64_t expires_unix;
    std::string payload;  // what the token signs, decoded
  };
  // What a token says if its signature holds and it has not expired; Unauthorized otherwise.
  Result<VerifiedToken> VerifyToken(const std::string& token);
  // The user of key `key_id` if `secret` is its secret.
  Result<std::string> CheckSecret(const std::string& key_id, const std::string& secret);
  // What seals secrets and signs sessions, from the configured key material or
  // the one kept in the store (created once).
  Result<std::shared_ptr<const SecretBox>> Box();
  // A new key for `user` (given or random id and secret, validated) and its AccessKeyKey record.
  Result<std::pair<Credentials, std::string>> NewCredentials(const std::string& user, const std::string& key_id,
                                                             const std::string& secret);
  // Adds the key's records to `b`, on the condition that the key id is free.
  void AddCredentials(const std::pair<Credentials, std::string>& creds, kv::Batch* b);
  // Adds deletes of the user's keys and policy attachments to `b`.
  Status DeleteWhatHangsOffUser(const std::string& user, kv::Batch* b);
  // Adds deletes of every attachment of the policy to `b`.
  Status DeleteAttachmentsOf(const std::string& policy, kv::Batch* b);
  // Puts `link` keys on the condition that records `a` and `b` exist as read
  // (and rewrites both with a new rev); NotFound naming the missing one,
  // Conflict (`conflict`) if the first link exists and `conflict` is set.
  struct Linked {
    std::string key, what, id;
  };
  Status Link(const Linked& a, const Linked& b, const std::vector<std::string>& links, const std::string& conflict);
  Result<std::vector<Policy>> PoliciesUnder(const std::string& prefix, const AuthIdPage& page);

  std::shared_ptr<kv::KvStore> kv_;
  std::shared_ptr<Clock> clock_;
  const Duration cache_ttl_;

  const std::string configured_key_;
  std::shared_ptr<const SecretBox> box_;  // GUARDED_BY(mu_); null until loaded

  struct CachedKey {
    std::string user, salt, hash, sealed;  // sealed: the encrypted secret ("" for old keys)
    TimePoint expires;
  };
  struct CachedPolicies {
    std::vector<Policy> policies;
    TimePoint expires;
  };
  std::mutex mu_;
  std::map<std::string, CachedKey> keys_;           // GUARDED_BY(mu_)
  std::map<std::string, CachedPolicies> policies_;  // GUARDED_BY(mu_), by user
  uint64_t generation_ = 0;                         // GUARDED_BY(mu_): ClearCache calls
};

}  // namespace sediment::auth
