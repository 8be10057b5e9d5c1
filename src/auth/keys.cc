#include "auth/keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "base/crypto.h"

namespace sediment::auth {
namespace {

constexpr std::string_view kUsers = "a/u/";
constexpr std::string_view kAccessKeys = "a/k/";
constexpr std::string_view kUserAccessKeys = "a/uk/";
constexpr std::string_view kPolicies = "a/p/";
constexpr std::string_view kUserPolicies = "a/up/";
constexpr std::string_view kGroups = "a/g/";
constexpr std::string_view kGroupMembers = "a/gm/";
constexpr std::string_view kUserGroups = "a/ug/";
constexpr std::string_view kGroupPolicies = "a/gp/";
constexpr std::string_view kRevokedSessions = "a/so/";
constexpr std::string_view kSessionExpiries = "a/se/";

// <prefix><a>/<b>
std::string Pair(std::string_view prefix, const std::string& a, const std::string& b) {
  return std::string(prefix).append(a).append("/").append(b);
}
// <prefix><a>/
std::string Under(std::string_view prefix, const std::string& a) { return std::string(prefix).append(a).append("/"); }

}  // namespace

std::string SetupKey() { return "a/setup"; }
std::string BaseGroupsKey() { return "a/gsetup"; }
std::string EncryptionKeyKey() { return "a/ek"; }
std::string InstallationIdKey() { return "a/iid"; }

std::string UserKey(const std::string& user) { return std::string(kUsers) + user; }
std::string UsersPrefix() { return std::string(kUsers); }
std::string AccessKeyKey(const std::string& key_id) { return std::string(kAccessKeys) + key_id; }
std::string UserAccessKeyKey(const std::string& user, const std::string& key_id) {
  return Pair(kUserAccessKeys, user, key_id);
}
std::string UserAccessKeysPrefix(const std::string& user) { return Under(kUserAccessKeys, user); }

std::string PolicyKey(const std::string& policy) { return std::string(kPolicies) + policy; }
std::string PoliciesPrefix() { return std::string(kPolicies); }
std::string UserPolicyKey(const std::string& user, const std::string& policy) {
  return Pair(kUserPolicies, user, policy);
}
std::string UserPoliciesPrefix(const std::string& user) { return Under(kUserPolicies, user); }
std::string AllUserPoliciesPrefix() { return std::string(kUserPolicies); }

std::string GroupKey(const std::string& group) { return std::string(kGroups) + group; }
std::string GroupsPrefix() { return std::string(kGroups); }
std::string GroupMemberKey(const std::string& group, const std::string& user) {
  return Pair(kGroupMembers, group, user);
}
std::string GroupMembersPrefix(const std::string& group) { return Under(kGroupMembers, group); }
std::string UserGroupKey(const std::string& user, const std::string& group) { return Pair(kUserGroups, user, group); }
std::string UserGroupsPrefix(const std::string& user) { return Under(kUserGroups, user); }
std::string GroupPolicyKey(const std::string& group, const std::string& policy) {
  return Pair(kGroupPolicies, group, policy);
}
std::string GroupPoliciesPrefix(const std::string& group) { return Under(kGroupPolicies, group); }
std::string AllGroupPoliciesPrefix() { return std::string(kGroupPolicies); }

// The payload, not the token's spelling: a token has one spelling (lower-case
// hex), and even if it had two, both name one payload.
std::string RevokedSessionKey(std::string_view payload) { return std::string(kRevokedSessions) + Sha256Hex(payload); }
std::string SessionExpiryKey(int64_t expires_unix, std::string_view payload) {
  return fmt::format("{}{:012}/{}", kSessionExpiries, std::max<int64_t>(expires_unix, 0), Sha256Hex(payload));
}
std::string SessionExpiriesPrefix() { return std::string(kSessionExpiries); }

SessionExpiry ParseSessionExpiryKey(std::string_view key) {
  std::string_view rest = key.substr(kSessionExpiries.size());
  SessionExpiry out;
  std::from_chars(rest.data(), rest.data() + std::min<size_t>(rest.size(), 12), out.expires_unix);
  if (rest.size() >= 13) out.revoked_key = std::string(kRevokedSessions).append(rest.substr(13));
  return out;
}

}  // namespace sediment::auth
