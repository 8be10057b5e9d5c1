// AuthService's groups (lakeFS's RBAC "internal" mode): groups, their
// members (kept both ways), their policies, and lakeFS's group ACLs (a
// group's one policy, made from a permission). A group's deletion takes its
// memberships, attachments and ACL policy in the same batch.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "auth/auth.h"
#include "auth/auth_internal.h"
#include "auth/builtin_policies_internal.h"
#include "auth/keys.h"
#include "base/crypto.h"
#include "kv/kv.h"

namespace sediment::auth {

using nlohmann::json;

namespace {

constexpr const char* kAclPolicyPrefix = "ACL(_-_)";  // lakeFS's name for a group ACL's policy

}  // namespace

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
  ARROW_RETURN_NOT_OK(
      ScanIds(*kv_, GroupsPrefix(), page, [&](const std::string& id, const std::string& value) -> Status {
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
    const std::string members = GroupMembersPrefix(id);
    ARROW_RETURN_NOT_OK(kv_->ScanAll(members, "", [&](const kv::KeyValue& item) -> Result<bool> {
      b.Delete(item.key).Delete(UserGroupKey(item.key.substr(members.size()), id));
      return true;
    }));
    ARROW_RETURN_NOT_OK(kv_->ScanAll(GroupPoliciesPrefix(id), "", [&](const kv::KeyValue& item) -> Result<bool> {
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
              {GroupMemberKey(group, user), UserGroupKey(user, group)},
              fmt::format("user \"{}\" is already in group \"{}\"", user, group));
}

Status AuthService::RemoveGroupMember(const std::string& group, const std::string& user) {
  ARROW_RETURN_NOT_OK(GetGroup(group).status());
  ARROW_RETURN_NOT_OK(GetUser(user).status());
  ScopedCacheClear clear(this);
  kv::Batch b;
  b.Delete(GroupMemberKey(group, user)).Delete(UserGroupKey(user, group));
  return kv_->Apply(b);
}

Result<std::vector<User>> AuthService::ListGroupMembers(const std::string& group, const AuthIdPage& page) {
  ARROW_RETURN_NOT_OK(GetGroup(group).status());
  std::vector<User> out;
  ARROW_RETURN_NOT_OK(
      ScanIds(*kv_, GroupMembersPrefix(group), page, [&](const std::string& id, const std::string&) -> Status {
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
      ScanIds(*kv_, UserGroupsPrefix(user), page, [&](const std::string& id, const std::string&) -> Status {
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
  return PoliciesUnder(GroupPoliciesPrefix(group), page);
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
    const std::string attached = GroupPoliciesPrefix(group);
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

}  // namespace sediment::auth
