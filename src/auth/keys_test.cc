// The auth key layout, spelled out: these keys are on disk, so a change to a
// builder that alters a spelling must fail here (docs/formats.md).
#include "auth/keys.h"

#include <gtest/gtest.h>

#include "base/crypto.h"

namespace sediment::auth {
namespace {

TEST(AuthKeyLayoutTest, EveryKeyIsSpelledAsStored) {
  EXPECT_EQ(SetupKey(), "a/setup");
  EXPECT_EQ(BaseGroupsKey(), "a/gsetup");
  EXPECT_EQ(EncryptionKeyKey(), "a/ek");
  EXPECT_EQ(InstallationIdKey(), "a/iid");
  EXPECT_EQ(UserKey("ann"), "a/u/ann");
  EXPECT_EQ(UsersPrefix(), "a/u/");
  EXPECT_EQ(AccessKeyKey("AKIA1"), "a/k/AKIA1");
  EXPECT_EQ(UserAccessKeyKey("ann", "AKIA1"), "a/uk/ann/AKIA1");
  EXPECT_EQ(UserAccessKeysPrefix("ann"), "a/uk/ann/");
  EXPECT_EQ(PolicyKey("P"), "a/p/P");
  EXPECT_EQ(PoliciesPrefix(), "a/p/");
  EXPECT_EQ(UserPolicyKey("ann", "P"), "a/up/ann/P");
  EXPECT_EQ(UserPoliciesPrefix("ann"), "a/up/ann/");
  EXPECT_EQ(AllUserPoliciesPrefix(), "a/up/");
  EXPECT_EQ(GroupKey("G"), "a/g/G");
  EXPECT_EQ(GroupsPrefix(), "a/g/");
  EXPECT_EQ(GroupMemberKey("G", "ann"), "a/gm/G/ann");
  EXPECT_EQ(GroupMembersPrefix("G"), "a/gm/G/");
  EXPECT_EQ(UserGroupKey("ann", "G"), "a/ug/ann/G");
  EXPECT_EQ(UserGroupsPrefix("ann"), "a/ug/ann/");
  EXPECT_EQ(GroupPolicyKey("G", "P"), "a/gp/G/P");
  EXPECT_EQ(GroupPoliciesPrefix("G"), "a/gp/G/");
  EXPECT_EQ(AllGroupPoliciesPrefix(), "a/gp/");
  EXPECT_EQ(RevokedSessionKey("payload"), "a/so/" + Sha256Hex("payload"));
  EXPECT_EQ(SessionExpiryKey(1700000000, "payload"), "a/se/001700000000/" + Sha256Hex("payload"));
  EXPECT_EQ(SessionExpiryKey(-5, "payload"), "a/se/000000000000/" + Sha256Hex("payload"));
  EXPECT_EQ(SessionExpiriesPrefix(), "a/se/");
}

TEST(AuthKeyLayoutTest, AnExpiryKeyNamesItsRevocation) {
  SessionExpiry e = ParseSessionExpiryKey(SessionExpiryKey(1700000000, "payload"));
  EXPECT_EQ(e.expires_unix, 1700000000);
  EXPECT_EQ(e.revoked_key, RevokedSessionKey("payload"));
  e = ParseSessionExpiryKey("a/se/000000000042");
  EXPECT_EQ(e.expires_unix, 42);
  EXPECT_EQ(e.revoked_key, "") << "too short to name a revocation";
  EXPECT_EQ(ParseSessionExpiryKey("a/se/x").expires_unix, 0);
}

}  // namespace
}  // namespace sediment::auth
