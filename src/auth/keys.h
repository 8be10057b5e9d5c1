// The auth module's KV key layout, in one place: every key and prefix that
// AuthService reads or writes is built here (keys.cc) and nowhere else. Each
// builder says what its record holds; docs/formats.md describes the same
// layout for operators. Keys are on disk: changing a spelling here orphans
// every stored record of it.
//
// Ids (users, groups, policies, access keys) never contain '/' (ValidateId),
// so "<prefix><id>/" selects exactly one id's records.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sediment::auth {

// --- installation -------------------------------------------------------------

// a/setup -> the first admin's user id; present once set-up ran.
std::string SetupKey();
// a/gsetup -> "1": the base groups and their policies were created.
std::string BaseGroupsKey();
// a/ek -> the key material (hex) secrets are sealed with when the config gives
// none ([auth] encrypt_secret_key); written once.
std::string EncryptionKeyKey();
// a/iid -> this installation's id (a UUID's spelling); written once.
std::string InstallationIdKey();

// --- users and access keys ----------------------------------------------------

// a/u/<user> -> JSON {creation_date (Unix seconds), rev}: a user. `rev` is
// rewritten whenever something is linked to the user.
std::string UserKey(const std::string& user);
// a/u/: every user.
std::string UsersPrefix();
// a/k/<key id> -> JSON {user, salt, hash (SHA-256 hex of "salt:secret"), enc
// (the secret sealed by SecretBox; absent on old keys), creation_date}.
std::string AccessKeyKey(const std::string& key_id);
// a/uk/<user>/<key id> -> "": the user's access keys, by id.
std::string UserAccessKeyKey(const std::string& user, const std::string& key_id);
std::string UserAccessKeysPrefix(const std::string& user);

// --- policies and their attachments -----------------------------------------

// a/p/<policy> -> JSON {statement: [{effect, action, resource}], creation_date,
// acl (group ACLs only), rev}: a policy.
std::string PolicyKey(const std::string& policy);
// a/p/: every policy.
std::string PoliciesPrefix();
// a/up/<user>/<policy> -> "": a policy attached to a user.
std::string UserPolicyKey(const std::string& user, const std::string& policy);
std::string UserPoliciesPrefix(const std::string& user);
// a/up/: every user's attachments (for a policy's, scanned: no reverse index).
std::string AllUserPoliciesPrefix();

// --- groups -------------------------------------------------------------------

// a/g/<group> -> JSON {creation_date, description, rev}: a group.
std::string GroupKey(const std::string& group);
// a/g/: every group.
std::string GroupsPrefix();
// a/gm/<group>/<user> -> "": a member of the group (kept both ways, with
// UserGroupKey, in one batch).
std::string GroupMemberKey(const std::string& group, const std::string& user);
std::string GroupMembersPrefix(const std::string& group);
// a/ug/<user>/<group> -> "": a group the user is in.
std::string UserGroupKey(const std::string& user, const std::string& group);
std::string UserGroupsPrefix(const std::string& user);
// a/gp/<group>/<policy> -> "": a policy attached to a group.
std::string GroupPolicyKey(const std::string& group, const std::string& policy);
std::string GroupPoliciesPrefix(const std::string& group);
// a/gp/: every group's attachments (for a policy's, scanned: no reverse index).
std::string AllGroupPoliciesPrefix();

// --- console sessions ---------------------------------------------------------

// a/so/<SHA-256 hex of a token's payload> -> the token's expiry (Unix seconds,
// decimal): a session logged out before it expired.
std::string RevokedSessionKey(std::string_view payload);
// a/se/<expiry, 12 digits>/<SHA-256 hex of the payload> -> "": the same
// revocations in expiry order (negative expiries as 0).
std::string SessionExpiryKey(int64_t expires_unix, std::string_view payload);
// a/se/: the expiry index, oldest first.
std::string SessionExpiriesPrefix();
// What a key of the expiry index names: the expiry (0 when unreadable) and the
// revocation record it indexes ("" when the key is too short to name one).
struct SessionExpiry {
  int64_t expires_unix = 0;
  std::string revoked_key;
};
SessionExpiry ParseSessionExpiryKey(std::string_view key);

}  // namespace sediment::auth
