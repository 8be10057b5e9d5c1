// The actions key layout, spelled out: these keys are on disk, so a change to
// a builder that alters a spelling must fail here (docs/formats.md).
#include "actions/keys.h"

#include <gtest/gtest.h>

namespace sediment::actions {
namespace {

TEST(ActionsKeyLayoutTest, EveryKeyIsSpelledAsStored) {
  EXPECT_EQ(RunKey("repo", "run1"), "c/ar/repo/r/run1");
  EXPECT_EQ(RunsPrefix("repo"), "c/ar/repo/r/");
  EXPECT_EQ(TaskKey("repo", "run1", "0000_0001"), "c/ar/repo/t/run1/0000_0001");
  EXPECT_EQ(TasksPrefix("repo", "run1"), "c/ar/repo/t/run1/");
  EXPECT_EQ(BranchRunKey("repo", "main", "run1"), "c/ar/repo/b/main/run1");
  EXPECT_EQ(BranchRunsPrefix("repo", "main"), "c/ar/repo/b/main/");
  EXPECT_EQ(CommitRunKey("repo", "c0ffee", "run1"), "c/ar/repo/c/c0ffee/run1");
  EXPECT_EQ(CommitRunsPrefix("repo", "c0ffee"), "c/ar/repo/c/c0ffee/");
}

TEST(ActionsKeyLayoutTest, ARepositorysPrefixesHoldEveryKeyOfIt) {
  const auto prefixes = RepositoryKeyPrefixes("repo");
  ASSERT_EQ(prefixes, std::vector<std::string>{"c/ar/repo/"});
  for (const std::string& key : {RunKey("repo", "r"), TaskKey("repo", "r", "h"), BranchRunKey("repo", "b", "r"),
                                 CommitRunKey("repo", "c", "r")}) {
    EXPECT_EQ(key.rfind(prefixes[0], 0), 0u) << key;
  }
  EXPECT_NE(RunKey("repo2", "r").rfind(prefixes[0], 0), 0u) << "another repository's keys are not under it";
}

}  // namespace
}  // namespace sediment::actions
