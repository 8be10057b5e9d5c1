#include "auth/policy.h"

#include <gtest/gtest.h>

namespace sediment::auth {
namespace {

// One row per rule of policy evaluation.
TEST(PolicyTest, EvaluateRuleByRule) {
  const std::string obj = "arn:lakefs:fs:::repository/lake/object/public/a";
  Policy read_public{"ReadPublic", {{"allow", {"fs:ReadObject"}, "arn:lakefs:fs:::repository/lake/object/public/*"}}};
  Policy all_fs{"AllFs", {{"allow", {"fs:*"}, "*"}}};
  Policy deny_public{"DenyPublic", {{"deny", {"fs:Read*"}, "arn:lakefs:fs:::repository/lake/object/public/?"}}};
  Policy own_keys{"Own", {{"allow", {"auth:*Credentials"}, "arn:lakefs:auth:::user/${user}"}}};
  struct Case {
    std::vector<Policy> policies;
    std::string action, resource;
    bool allowed;
    const char* rule;
  };
  std::vector<Case> cases = {
      {{}, "fs:ReadObject", obj, false, "no policy allows nothing"},
      {{read_public}, "fs:ReadObject", obj, true, "an allow whose action and resource match"},
      {{read_public}, "fs:WriteObject", obj, false, "the action must match"},
      {{read_public},
       "fs:ReadObject",
       "arn:lakefs:fs:::repository/lake/object/secret/a",
       false,
       "the resource must match"},
      {{all_fs}, "fs:DeleteObject", obj, true, "'*' matches any run"},
      {{all_fs}, "tables:ReadTable", "arn:sediment:tables:::eth/logs", false, "'*' in an action stops at its text"},
      {{all_fs, deny_public}, "fs:ReadObject", obj, false, "a matching deny wins over any allow"},
      {{all_fs, deny_public}, "fs:ReadObject", obj + "b", true, "'?' is one character"},
      {{own_keys}, "auth:CreateCredentials", "arn:lakefs:auth:::user/bob", true, "${user} is the caller"},
      {{own_keys}, "auth:CreateCredentials", "arn:lakefs:auth:::user/alice", false, "${user} is no one else"},
  };
  for (const auto& c : cases) {
    Status st = Evaluate(c.policies, "bob", c.action, c.resource);
    EXPECT_EQ(st.ok(), c.allowed) << c.rule << ": " << st.ToString();
    if (!c.allowed) EXPECT_TRUE(IsForbidden(st)) << c.rule;
  }
  Status denied = Evaluate({all_fs, deny_public}, "bob", "fs:ReadObject", obj);
  EXPECT_NE(denied.message().find("is denied fs:ReadObject"), std::string::npos) << denied.ToString();
}

TEST(PolicyTest, ValidateSaysWhatIsWrong) {
  EXPECT_TRUE(ValidatePolicy({"p", {{"allow", {"fs:*"}, "*"}}}).ok());
  EXPECT_NE(ValidatePolicy({"p", {}}).message().find("at least one statement"), std::string::npos);
  EXPECT_NE(ValidatePolicy({"p", {{"maybe", {"fs:*"}, "*"}}}).message().find("must be allow or deny"),
            std::string::npos);
  EXPECT_NE(ValidatePolicy({"p", {{"allow", {}, "*"}}}).message().find("action and resource"), std::string::npos);
  EXPECT_TRUE(ValidatePolicy({"p", {{"allow", {"*", "tables:Read*", "retention:*"}, "*"}}}).ok());
  for (std::string bad : {"fsx:ReadObject", "ReadObject", "fs:", ":x"}) {
    EXPECT_NE(ValidatePolicy({"p", {{"allow", {bad}, "*"}}}).message().find("\"" + bad + "\" must be"),
              std::string::npos)
        << bad;
  }
}

}  // namespace
}  // namespace sediment::auth
