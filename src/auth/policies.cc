// AuthService's policies, their attachments to users, and what a user's
// policies are in effect (their own and their groups'). A policy's deletion
// takes its attachments in the same batch.
#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "auth/auth.h"
#include "auth/auth_internal.h"
#include "auth/keys.h"
#include "base/crypto.h"
#include "kv/kv.h"

namespace sediment::auth {

using nlohmann::json;

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
  ARROW_RETURN_NOT_OK(
      ScanIds(*kv_, PoliciesPrefix(), page, [&](const std::string& id, const std::string& value) -> Status {
        ARROW_ASSIGN_OR_RAISE(auto p, ParsePolicy(id, value));
        out.push_back(std::move(p));
        return Status::OK();
      }));
  return out;
}

Status AuthService::DeleteAttachmentsOf(const std::string& policy, kv::Batch* b) {
  // <user>/<policy> and <group>/<policy> under these; no id contains '/'.
  for (const std::string& base : {AllUserPoliciesPrefix(), AllGroupPoliciesPrefix()}) {
    ARROW_RETURN_NOT_OK(kv_->ScanAll(base, "", [&](const kv::KeyValue& item) -> Result<bool> {
      auto slash = item.key.find('/', base.size());
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
  return Link({UserKey(user), "user", user}, {PolicyKey(policy), "policy", policy}, {UserPolicyKey(user, policy)}, "");
}

Status AuthService::DetachPolicy(const std::string& user, const std::string& policy) {
  ScopedCacheClear clear(this);
  return kv_->Delete(UserPolicyKey(user, policy));
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
  return PoliciesUnder(UserPoliciesPrefix(user), page);
}

Result<std::vector<Policy>> AuthService::EffectivePolicies(const std::string& user) {
  ARROW_ASSIGN_OR_RAISE(auto own, ListUserPolicies(user));
  std::map<std::string, Policy> by_id;
  for (auto& p : own) by_id.emplace(p.id, std::move(p));
  const std::string groups = UserGroupsPrefix(user);
  ARROW_RETURN_NOT_OK(kv_->ScanAll(groups, "", [&](const kv::KeyValue& item) -> Result<bool> {
    ARROW_ASSIGN_OR_RAISE(auto ps, PoliciesUnder(GroupPoliciesPrefix(item.key.substr(groups.size())), {}));
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

}  // namespace sediment::auth
