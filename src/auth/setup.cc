// AuthService's set-up: the first admin, lakeFS's base groups and their
// policies (made at set-up, or on the first start of a store set up before
// groups existed), and the installation's id.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "auth/auth.h"
#include "auth/auth_internal.h"
#include "auth/builtin_policies_internal.h"
#include "auth/keys.h"
#include "base/crypto.h"
#include "kv/kv.h"

namespace sediment::auth {
namespace {

// A record's stored value, or nullopt when absent.
using RecordLookup = std::function<Result<std::optional<std::string>>(const std::string&)>;

bool SameStatements(const std::vector<Statement>& a, const std::vector<Statement>& b) {
  auto same = [](const Statement& x, const Statement& y) {
    return x.effect == y.effect && x.actions == y.actions && x.resource == y.resource;
  };
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), same);
}

// Adds the base policies and groups that `lookup` does not find, on the
// condition that they are still absent; the groups' attachments; `admin` (if
// not empty) in Admins when this creates Admins; and the marker. A policy
// already stored under a base name is attached only if its statements are the
// base ones (on the condition that it stays so): a policy someone made under
// that name grants what they chose, and no base group hands it out.
Status PutBaseGroups(kv::Batch* b, int64_t now, const RecordLookup& lookup, const std::string& admin) {
  std::set<std::string> usable;
  for (const auto& p : BasePolicies(now)) {
    ARROW_ASSIGN_OR_RAISE(auto stored, lookup(PolicyKey(p.id)));
    if (!stored) {
      b->Require(kv::Precondition::Absent(PolicyKey(p.id))).Put(PolicyKey(p.id), PolicyJson(p).dump());
      usable.insert(p.id);
      continue;
    }
    auto existing = ParsePolicy(p.id, *stored);
    if (existing.ok() && SameStatements(existing->statements, p.statements)) {
      b->Require(kv::Precondition::Equals(PolicyKey(p.id), *stored));
      usable.insert(p.id);
    } else {
      spdlog::warn("auth: policy \"{}\" exists with statements of its own; the base groups do not get it", p.id);
    }
  }
  for (const auto& g : BaseGroups()) {
    ARROW_ASSIGN_OR_RAISE(auto there, lookup(GroupKey(g.id)));
    if (there) continue;
    b->Require(kv::Precondition::Absent(GroupKey(g.id))).Put(GroupKey(g.id), GroupJson(Group{g.id, "", now}));
    for (const auto& p : g.policies) {
      if (usable.contains(p)) b->Put(GroupPolicyKey(g.id, p), "");
    }
    if (!admin.empty() && std::string_view(g.id) == "Admins") {
      b->Put(GroupMemberKey(g.id, admin), "").Put(UserGroupKey(admin, g.id), "");
    }
  }
  b->Put(BaseGroupsKey(), "1");
  return Status::OK();
}

}  // namespace

Result<std::string> AuthService::InstallationId() {
  const std::string record = InstallationIdKey();
  auto raw = kv_->Get(record);
  if (IsNotFound(raw.status())) {
    std::string h = RandomHex(16);
    std::string uuid =
        h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20, 12);
    kv::Batch b;
    b.Require(kv::Precondition::Absent(record)).Put(record, uuid);
    Status st = kv_->Apply(b);
    if (!st.ok() && !IsPreconditionFailed(st)) return st;
    raw = kv_->Get(record);
  }
  return raw;
}

Result<bool> AuthService::IsSetUp() {
  auto v = kv_->Get(SetupKey());
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
  Policy admin{kAdminPolicy, {{"allow", {"*"}, "*"}}, creds.first.creation_date, ""};
  kv::Batch b;
  b.Require(kv::Precondition::Absent(SetupKey()));
  ARROW_RETURN_NOT_OK(DeleteWhatHangsOffUser(username, &b));  // left by an interrupted older set-up
  b.Put(SetupKey(), username)
      .Put(PolicyKey(kAdminPolicy), PolicyJson(admin).dump())
      .Put(UserKey(username), UserJson(creds.first.creation_date))
      .Put(UserPolicyKey(username, kAdminPolicy), "");
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

Status AuthService::EnsureBaseGroups() {
  for (int i = 0; i < kRetries; ++i) {
    if (kv_->Get(BaseGroupsKey()).ok()) return Status::OK();
    auto admin = kv_->Get(SetupKey());
    if (IsNotFound(admin.status())) return Status::OK();  // set-up creates them
    ARROW_RETURN_NOT_OK(admin.status());
    kv::Batch b;
    b.Require(kv::Precondition::Absent(BaseGroupsKey()));
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
