// Integrity rules of AuthService under concurrency: the racing operation is run
// to completion at the exact moment the other one writes (HookedKv).
#include "auth/auth.h"

#include <gtest/gtest.h>

#include <string>

#include "base/clock.h"
#include "base/crypto.h"
#include "base/test_util.h"
#include "kv/hooked_kv_testing.h"
#include "kv/kv.h"

namespace sediment::auth {
namespace {

using sediment::kv::HookedKv;

std::string Basic(const std::string& key, const std::string& secret) { return "Basic " + Base64(key + ":" + secret); }

class AuthIntegrityTest : public ::testing::Test {
 protected:
  std::vector<std::string> KeysUnder(const std::string& prefix) {
    std::vector<std::string> out;
    EXPECT_TRUE(kv_->ScanAll(prefix, "",
                             [&](const kv::KeyValue& kv) -> Result<bool> {
                               out.push_back(kv.key);
                               return true;
                             })
                    .ok());
    return out;
  }
  bool Granted(const std::string& user, const std::string& policy) {
    auto ps = auth_.ListUserPolicies(user);
    EXPECT_TRUE(ps.ok()) << ps.status().ToString();
    if (!ps.ok()) return false;
    for (const auto& p : *ps) {
      if (p.id == policy) return true;
    }
    return false;
  }
  Policy ReadAll(const std::string& id) { return Policy{id, {{"allow", {"fs:Read*"}, "*"}}, 0}; }

  std::shared_ptr<HookedKv> kv_ = std::make_shared<HookedKv>(kv::NewMemoryStore());
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  AuthService auth_{kv_, clock_, Duration::zero()};
};

// --- 7. setup_lakefs ----------------------------------------------------------------

TEST_F(AuthIntegrityTest, TwoConcurrentSetupsCreateOneAdmin) {
  // The second set-up runs to completion just before the first writes its key.
  kv_->BeforeWrite(HookedKv::Prefix("a/k/"),
                   [&] { ASSERT_OK(auth_.Setup("second", "AKIASECOND", "second-secret").status()); });
  auto first = auth_.Setup("first", "AKIAFIRST", "first-secret");
  EXPECT_TRUE(IsConflict(first.status())) << first.status().ToString();
  EXPECT_TRUE(IsUnauthorized(auth_.Authenticate(Basic("AKIAFIRST", "first-secret")).status()))
      << "the losing set-up left a working admin key";
  EXPECT_EQ(*auth_.Authenticate(Basic("AKIASECOND", "second-secret")), "second");
  auto users = auth_.ListUsers();
  ASSERT_EQ(users->size(), 1u);
  EXPECT_EQ((*users)[0].id, "second");
  EXPECT_EQ(KeysUnder("a/up/"), (std::vector<std::string>{"a/up/second/AdminAccess"}));
  EXPECT_TRUE(IsConflict(auth_.Setup("third", "AKIATHIRD", "third-secret").status()));
}

// --- 8. Deleting a policy ------------------------------------------------------------

TEST_F(AuthIntegrityTest, DeletingAPolicyRevokesItFromEveryHolder) {
  ASSERT_OK(auth_.CreateUser("alice").status());
  ASSERT_OK(auth_.CreateUser("bob").status());
  ASSERT_OK(auth_.CreatePolicy(ReadAll("P")).status());
  ASSERT_OK(auth_.AttachPolicy("alice", "P"));
  // bob's attachment lands between the deletion's look-up and its write.
  kv_->BeforeWrite(HookedKv::Exactly("a/p/P"), [&] { ASSERT_OK(auth_.AttachPolicy("bob", "P")); });
  ASSERT_OK(auth_.DeletePolicy("P"));
  EXPECT_TRUE(KeysUnder("a/up/").empty()) << "attachments outlived their policy";
  // A new policy with the same id is granted to nobody.
  ASSERT_OK(auth_.CreatePolicy(ReadAll("P")).status());
  EXPECT_FALSE(Granted("alice", "P"));
  EXPECT_FALSE(Granted("bob", "P"));
  EXPECT_TRUE(IsForbidden(auth_.Authorize("alice", "fs:ReadObject", "arn:x")));

  // An attachment left by an older version is not inherited by a new policy either.
  ASSERT_OK(auth_.DeletePolicy("P"));
  ASSERT_OK(kv_->Set("a/up/alice/P", ""));
  ASSERT_OK(auth_.CreatePolicy(ReadAll("P")).status());
  EXPECT_FALSE(Granted("alice", "P"));

  // Attaching a policy that is deleted meanwhile fails and leaves nothing.
  kv_->BeforeWrite(HookedKv::Exactly("a/up/bob/P"), [&] { ASSERT_OK(auth_.DeletePolicy("P")); });
  EXPECT_TRUE(IsNotFound(auth_.AttachPolicy("bob", "P")));
  EXPECT_TRUE(KeysUnder("a/up/").empty());
}

// --- 9. Credentials and their user ---------------------------------------------------

TEST_F(AuthIntegrityTest, CredentialsNeverOutliveTheirUser) {
  ASSERT_OK(auth_.CreateUser("carol").status());
  // A key created between the user deletion's look-up and its write.
  kv_->BeforeWrite(HookedKv::Exactly("a/u/carol"),
                   [&] { ASSERT_OK(auth_.CreateCredentials("carol", "AKIACAROL1", "carol-secret").status()); });
  ASSERT_OK(auth_.DeleteUser("carol"));
  EXPECT_TRUE(IsUnauthorized(auth_.Authenticate(Basic("AKIACAROL1", "carol-secret")).status()))
      << "a key of a deleted user still authenticates";
  EXPECT_TRUE(KeysUnder("a/k/").empty());
  EXPECT_TRUE(KeysUnder("a/uk/").empty());

  // A key whose user is deleted between its check and its write is refused.
  ASSERT_OK(auth_.CreateUser("dave").status());
  kv_->BeforeWrite(HookedKv::Exactly("a/k/AKIADAVE1"), [&] { ASSERT_OK(auth_.DeleteUser("dave")); });
  auto creds = auth_.CreateCredentials("dave", "AKIADAVE1", "dave-secret");
  EXPECT_TRUE(IsNotFound(creds.status())) << creds.status().ToString();
  EXPECT_NE(creds.status().message().find("user \"dave\""), std::string::npos) << creds.status().message();
  EXPECT_TRUE(IsUnauthorized(auth_.Authenticate(Basic("AKIADAVE1", "dave-secret")).status()));
  EXPECT_TRUE(KeysUnder("a/k/").empty());

  // A policy attached while its user is deleted does not pass to a new user of that name.
  ASSERT_OK(auth_.CreateUser("erin").status());
  ASSERT_OK(auth_.CreatePolicy(ReadAll("R")).status());
  kv_->BeforeWrite(HookedKv::Exactly("a/u/erin"), [&] { ASSERT_OK(auth_.AttachPolicy("erin", "R")); });
  ASSERT_OK(auth_.DeleteUser("erin"));
  ASSERT_OK(auth_.CreateUser("erin").status());
  EXPECT_FALSE(Granted("erin", "R"));
}

// --- sessions (the console's log-in) --------------------------------------------------

TEST_F(AuthIntegrityTest, SessionTokensNameAKeyUntilTheyExpireOrTheKeyGoes) {
  ASSERT_OK(auth_.Setup("admin", "AKIAADMIN1", "admin-secret").status());
  EXPECT_TRUE(IsUnauthorized(auth_.Login("AKIAADMIN1", "wrong", std::chrono::hours(1)).status()));
  EXPECT_TRUE(IsUnauthorized(auth_.Login("AKIANOSUCH", "admin-secret", std::chrono::hours(1)).status()));
  auto t = auth_.Login("AKIAADMIN1", "admin-secret", std::chrono::hours(1));
  ASSERT_OK(t.status());
  EXPECT_EQ(*auth_.Authenticate("Bearer " + t->token), "admin");
  EXPECT_EQ(t->expires_unix, ToUnixMicros(clock_->Now() + std::chrono::hours(1)) / 1'000'000);
  EXPECT_EQ(t->token.find("admin-secret"), std::string::npos);

  // Any change to the token breaks its signature.
  std::string forged = t->token;
  forged[forged.size() / 4] = forged[forged.size() / 4] == '0' ? '1' : '0';
  EXPECT_TRUE(IsUnauthorized(auth_.Authenticate("Bearer " + forged).status()));
  EXPECT_TRUE(IsUnauthorized(auth_.Authenticate("Bearer " + t->token.substr(0, t->token.find('.'))).status()));
  EXPECT_TRUE(IsUnauthorized(auth_.Authenticate("Bearer not-hex.zz").status()));
  // Another server sharing the store accepts it (the signing key is shared).
  AuthService other{kv_, clock_, Duration::zero()};
  EXPECT_EQ(*other.Authenticate("Bearer " + t->token), "admin");

  // Log-out ends it on every server; other sessions of the key go on.
  auto t3 = auth_.Login("AKIAADMIN1", "admin-secret", std::chrono::hours(1));
  ASSERT_OK(t3.status());
  ASSERT_OK(auth_.Revoke(t3->token));
  EXPECT_TRUE(IsUnauthorized(other.Authenticate("Bearer " + t3->token).status()));
  EXPECT_EQ(*auth_.Authenticate("Bearer " + t->token), "admin");
  ASSERT_OK(auth_.Revoke("not-a-token"));
  EXPECT_EQ(KeysUnder("a/so/").size(), 1u);

  clock_->Advance(std::chrono::hours(1));
  auto expired = auth_.Authenticate("Bearer " + t->token);
  EXPECT_TRUE(IsUnauthorized(expired.status()));
  EXPECT_NE(expired.status().message().find("log in again"), std::string::npos);

  auto second = auth_.CreateCredentials("admin", "AKIAADMIN2", "second-secret");
  ASSERT_OK(second.status());
  auto t2 = auth_.Login("AKIAADMIN2", "second-secret", std::chrono::hours(1));
  ASSERT_OK(t2.status());
  ASSERT_OK(auth_.DeleteCredentials("admin", "AKIAADMIN2"));
  EXPECT_TRUE(IsUnauthorized(auth_.Authenticate("Bearer " + t2->token).status())) << "a deleted key ends its sessions";
  // The next log-out drops revocations of tokens that expired anyway.
  auto t4 = auth_.Login("AKIAADMIN1", "admin-secret", std::chrono::hours(1));
  ASSERT_OK(auth_.Revoke(t4->token));
  EXPECT_EQ(KeysUnder("a/so/").size(), 1u);
}

// A log-out costs the same however many came before it: it drops at most two
// revocations of expired tokens, oldest first, and never scans the rest.
TEST_F(AuthIntegrityTest, ALogOutDoesConstantWork) {
  ASSERT_OK(auth_.Setup("admin", "AKIAADMIN1", "admin-secret").status());
  for (int i = 0; i < 50; ++i) {
    auto t = auth_.Login("AKIAADMIN1", "admin-secret", std::chrono::minutes(1));
    ASSERT_OK(t.status());
    ASSERT_OK(auth_.Revoke(t->token));
  }
  EXPECT_EQ(KeysUnder("a/so/").size(), 50u);
  clock_->Advance(std::chrono::minutes(2));
  auto live = auth_.Login("AKIAADMIN1", "admin-secret", std::chrono::hours(1));
  ASSERT_OK(auth_.Revoke(live->token));
  EXPECT_EQ(KeysUnder("a/so/").size(), 49u) << "two expired revocations dropped, one added";
  EXPECT_TRUE(IsUnauthorized(auth_.Authenticate("Bearer " + live->token).status()));
  for (int i = 0; i < 30; ++i) {
    auto t = auth_.Login("AKIAADMIN1", "admin-secret", std::chrono::hours(1));
    ASSERT_OK(auth_.Revoke(t->token));
  }
  EXPECT_EQ(KeysUnder("a/so/").size(), 31u) << "the expired backlog is gone; the live revocations stay";
  EXPECT_EQ(KeysUnder("a/se/").size(), 31u);
}

// A token has one spelling: the same payload in upper-case hex is no token,
// so a log-out cannot be sidestepped by re-spelling the token.
TEST_F(AuthIntegrityTest, ATokenHasOneSpellingAndLogOutEndsIt) {
  ASSERT_OK(auth_.Setup("admin", "AKIAADMIN1", "admin-secret").status());
  auto t = auth_.Login("AKIAADMIN1", "admin-secret", std::chrono::hours(1));
  ASSERT_OK(t.status());
  std::string upper = t->token;
  for (size_t i = 0; i < upper.find('.'); ++i) upper[i] = static_cast<char>(std::toupper(upper[i]));
  ASSERT_NE(upper, t->token);
  EXPECT_TRUE(IsUnauthorized(auth_.Authenticate("Bearer " + upper).status())) << "before log-out";
  ASSERT_OK(auth_.Revoke(upper));  // not a token: changes nothing
  EXPECT_EQ(*auth_.Authenticate("Bearer " + t->token), "admin");
  ASSERT_OK(auth_.Revoke(t->token));
  EXPECT_TRUE(IsUnauthorized(auth_.Authenticate("Bearer " + t->token).status()));
  EXPECT_TRUE(IsUnauthorized(auth_.Authenticate("Bearer " + upper).status())) << "after log-out";
}

// --- groups (RBAC "internal") ---------------------------------------------------------

TEST_F(AuthIntegrityTest, GroupsGrantTheirPoliciesToTheirMembers) {
  ASSERT_OK(auth_.Setup("admin", "AKIAADMIN", "admin-secret").status());
  auto admins = auth_.ListUserGroups("admin");
  ASSERT_OK(admins.status());
  ASSERT_EQ(admins->size(), 1u);
  EXPECT_EQ((*admins)[0].id, "Admins") << "set-up puts the first admin in Admins";
  const std::string obj = "arn:lakefs:fs:::repository/lake/object/a";
  ASSERT_OK(auth_.CreateUser("dev").status());
  EXPECT_TRUE(IsForbidden(auth_.Authorize("dev", "fs:ReadObject", obj))) << "no group, no policy";
  ASSERT_OK(auth_.AddGroupMember("Developers", "dev"));
  EXPECT_TRUE(IsConflict(auth_.AddGroupMember("Developers", "dev")));
  EXPECT_TRUE(IsNotFound(auth_.AddGroupMember("Developers", "nobody")));
  EXPECT_TRUE(IsNotFound(auth_.AddGroupMember("Nope", "dev")));
  EXPECT_OK(auth_.Authorize("dev", "fs:WriteObject", obj));
  EXPECT_OK(auth_.Authorize("dev", "tables:ReadTable", "arn:sediment:tables:::eth/logs"));
  EXPECT_TRUE(IsForbidden(auth_.Authorize("dev", "tables:WriteTable", "arn:sediment:tables:::eth/logs")));
  EXPECT_TRUE(IsForbidden(auth_.Authorize("dev", "fs:DeleteRepository", "arn:lakefs:fs:::repository/lake")));
  EXPECT_TRUE(IsForbidden(auth_.Authorize("dev", "auth:ListUsers", "*")));
  EXPECT_OK(auth_.Authorize("dev", "auth:CreateCredentials", "arn:lakefs:auth:::user/dev"));  // its own keys
  EXPECT_TRUE(IsForbidden(auth_.Authorize("dev", "auth:CreateCredentials", "arn:lakefs:auth:::user/admin")));
  // A policy of its own and its group's add up; a deny in either wins.
  ASSERT_OK(auth_.CreatePolicy({"NoDelete", {{"deny", {"fs:DeleteObject"}, "*"}}}).status());
  ASSERT_OK(auth_.AttachPolicy("dev", "NoDelete"));
  EXPECT_TRUE(IsForbidden(auth_.Authorize("dev", "fs:DeleteObject", obj)));
  EXPECT_OK(auth_.Authorize("dev", "fs:WriteObject", obj));
  ASSERT_OK(auth_.RemoveGroupMember("Developers", "dev"));
  EXPECT_TRUE(IsForbidden(auth_.Authorize("dev", "fs:WriteObject", obj))) << "leaving the group revokes at once";
  auto members = auth_.ListGroupMembers("Developers");
  ASSERT_OK(members.status());
  EXPECT_TRUE(members->empty());
  // Viewers read and write nothing.
  ASSERT_OK(auth_.AddGroupMember("Viewers", "dev"));
  EXPECT_OK(auth_.Authorize("dev", "fs:ReadObject", obj));
  EXPECT_TRUE(IsForbidden(auth_.Authorize("dev", "fs:CreateBranch", "arn:lakefs:fs:::repository/lake/branch/b")));
}

TEST_F(AuthIntegrityTest, MembershipsNeverOutliveTheirGroupOrUser) {
  ASSERT_OK(auth_.CreateUser("ann").status());
  ASSERT_OK(auth_.CreateUser("ben").status());
  ASSERT_OK(auth_.CreateGroup("G").status());
  EXPECT_TRUE(IsConflict(auth_.CreateGroup("G").status()));
  ASSERT_OK(auth_.CreatePolicy(ReadAll("P")).status());
  ASSERT_OK(auth_.AttachGroupPolicy("G", "P"));
  ASSERT_OK(auth_.AddGroupMember("G", "ann"));
  // ben joins between the group deletion's look-up and its write.
  kv_->BeforeWrite(HookedKv::Exactly("a/g/G"), [&] { ASSERT_OK(auth_.AddGroupMember("G", "ben")); });
  ASSERT_OK(auth_.DeleteGroup("G"));
  EXPECT_TRUE(KeysUnder("a/gm/").empty());
  EXPECT_TRUE(KeysUnder("a/ug/").empty());
  EXPECT_TRUE(KeysUnder("a/gp/").empty());
  ASSERT_OK(auth_.CreateGroup("G").status());
  EXPECT_TRUE(IsForbidden(auth_.Authorize("ben", "fs:ReadObject", "arn:x")))
      << "a new group of that name grants nothing";

  // A user deleted while joining a group leaves no membership behind.
  ASSERT_OK(auth_.AttachGroupPolicy("G", "P"));
  kv_->BeforeWrite(HookedKv::Exactly("a/u/ann"), [&] { ASSERT_OK(auth_.AddGroupMember("G", "ann")); });
  ASSERT_OK(auth_.DeleteUser("ann"));
  EXPECT_TRUE(KeysUnder("a/gm/").empty());
  EXPECT_TRUE(KeysUnder("a/ug/").empty());

  // Deleting a policy detaches it from groups too.
  ASSERT_OK(auth_.AddGroupMember("G", "ben"));
  ASSERT_OK(auth_.DeletePolicy("P"));
  EXPECT_TRUE(KeysUnder("a/gp/").empty());
  EXPECT_TRUE(IsForbidden(auth_.Authorize("ben", "fs:ReadObject", "arn:x")));
}

TEST_F(AuthIntegrityTest, AGroupAclIsTheGroupsOnlyPolicy) {
  ASSERT_OK(auth_.CreateUser("w").status());
  ASSERT_OK(auth_.CreateGroup("Team").status());
  ASSERT_OK(auth_.CreatePolicy(ReadAll("Extra")).status());
  ASSERT_OK(auth_.AttachGroupPolicy("Team", "Extra"));
  EXPECT_TRUE(IsNotFound(auth_.GetGroupAcl("Team").status())) << "a plain policy is not an ACL";
  ASSERT_OK(auth_.AddGroupMember("Team", "w"));
  EXPECT_TRUE(IsInvalidArgument(auth_.SetGroupAcl("Team", "Owner")));
  ASSERT_OK(auth_.SetGroupAcl("Team", "Write"));
  EXPECT_EQ(*auth_.GetGroupAcl("Team"), "Write");
  auto ps = auth_.ListGroupPolicies("Team");
  ASSERT_EQ(ps->size(), 1u);
  EXPECT_EQ((*ps)[0].id, "ACL(_-_)Team");
  EXPECT_OK(auth_.Authorize("w", "fs:CreateCommit", "arn:lakefs:fs:::repository/r/branch/main"));
  EXPECT_TRUE(IsForbidden(auth_.Authorize("w", "fs:DeleteRepository", "arn:lakefs:fs:::repository/r")));
  ASSERT_OK(auth_.SetGroupAcl("Team", "Read"));
  EXPECT_TRUE(IsForbidden(auth_.Authorize("w", "fs:CreateCommit", "arn:lakefs:fs:::repository/r/branch/main")));
  EXPECT_TRUE(IsNotFound(auth_.SetGroupAcl("Nobody", "Read")));
}

TEST_F(AuthIntegrityTest, AStoreSetUpBeforeGroupsGetsThemOnce) {
  ASSERT_OK(auth_.Setup("admin", "AKIAADMIN", "admin-secret").status());
  // What a set-up of the version before left: no groups, no base policies.
  for (const char* prefix : {"a/g/", "a/gm/", "a/ug/", "a/gp/", "a/gsetup"}) {
    for (const auto& k : KeysUnder(prefix)) ASSERT_OK(kv_->Delete(k));
  }
  for (const auto& k : KeysUnder("a/p/")) {
    if (k != "a/p/AdminAccess") ASSERT_OK(kv_->Delete(k));
  }
  // A policy of that time under a base policy's name stays as it was.
  ASSERT_OK(auth_.CreatePolicy({"FSReadAll", {{"allow", {"fs:ReadObject"}, "arn:only-this"}}}).status());
  ASSERT_OK(auth_.EnsureBaseGroups());
  auto groups = auth_.ListGroups();
  ASSERT_OK(groups.status());
  std::vector<std::string> ids;
  for (const auto& g : *groups) ids.push_back(g.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"Admins", "Developers", "SuperUsers", "Viewers"}));
  EXPECT_EQ((*auth_.ListUserGroups("admin"))[0].id, "Admins");
  EXPECT_EQ(auth_.GetPolicy("FSReadAll")->statements[0].resource, "arn:only-this");
  for (const auto& p : *auth_.ListGroupPolicies("Viewers")) {
    EXPECT_NE(p.id, "FSReadAll") << "a policy someone made under a base name is handed out by no base group";
  }
  EXPECT_EQ(auth_.ListGroupPolicies("Viewers")->size(), 3u);
  ASSERT_OK(auth_.DeleteGroup("Viewers"));
  ASSERT_OK(auth_.EnsureBaseGroups());
  EXPECT_TRUE(IsNotFound(auth_.GetGroup("Viewers").status())) << "once: a deleted base group stays deleted";
}

// Secrets sealed under the HKDF-derived key open on every server with the same
// key material, and not under other material; secrets sealed by the version
// before the KDF (plain SHA-256 of the material, no "2:" prefix) still open.
TEST(AuthKeysTest, SealedSecretsOpenOnlyUnderTheirKeyMaterial) {
  auto kv = kv::NewMemoryStore();
  auto clock = std::make_shared<ManualClock>();
  const std::string material(40, 'k');
  AuthService a{kv, clock, Duration::zero(), material};
  ASSERT_OK(a.Setup("admin", "AKIAADMIN1", "admin-secret").status());
  auto record = kv->Get("a/k/AKIAADMIN1");
  ASSERT_OK(record.status());
  EXPECT_NE(record->find("\"enc\":\"2:"), std::string::npos) << *record;
  AuthService b{kv, clock, Duration::zero(), material};
  EXPECT_EQ(b.SecretFor("AKIAADMIN1")->secret, "admin-secret");
  AuthService other{kv, clock, Duration::zero(), std::string(40, 'x')};
  EXPECT_TRUE(IsUnauthorized(other.SecretFor("AKIAADMIN1").status()));
  EXPECT_EQ(*other.Authenticate(Basic("AKIAADMIN1", "admin-secret")), "admin") << "basic auth needs no decryption";
}

}  // namespace
}  // namespace sediment::auth
