#include "base/failpoint.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sediment::failpoint {
namespace {

class FailpointTest : public ::testing::Test {
 protected:
  void TearDown() override { DisarmAll(); }
};

TEST_F(FailpointTest, InertUntilArmed) {
  EXPECT_TRUE(Hit("table.append.after_write").ok());
  EXPECT_EQ(Hits("table.append.after_write"), 0);
}

TEST_F(FailpointTest, ErrorOnTheNthHitForTimesHits) {
  ASSERT_TRUE(ArmFromSpec("table.append.after_write=error@2*2").ok());
  EXPECT_TRUE(Hit("table.append.after_write").ok());
  Status st = Hit("table.append.after_write");
  EXPECT_TRUE(st.IsIOError());
  EXPECT_NE(st.message().find("table.append.after_write"), std::string::npos);
  EXPECT_FALSE(Hit("table.append.after_write").ok());
  EXPECT_TRUE(Hit("table.append.after_write").ok());
  EXPECT_EQ(Hits("table.append.after_write"), 4);
  EXPECT_TRUE(Hit("table.gc.after_delete").ok()) << "others stay inert";
}

TEST_F(FailpointTest, StarZeroFiresForever) {
  ASSERT_TRUE(ArmFromSpec("table.gc.after_delete=error*0").ok());
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(Hit("table.gc.after_delete").ok());
}

TEST_F(FailpointTest, CrashKillsTheProcessAsSigkillWould) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    (void)Arm("table.merge.after_swap", Action::kCrash);
    (void)Hit("table.merge.after_swap");
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

TEST_F(FailpointTest, BadSpecsAreRefusedWithTheReason) {
  EXPECT_NE(ArmFromSpec("nope=crash").message().find("unknown failpoint \"nope\""), std::string::npos);
  EXPECT_NE(ArmFromSpec("table.gc.after_delete").message().find("name=crash|error"), std::string::npos);
  EXPECT_NE(ArmFromSpec("table.gc.after_delete=explode").message().find("crash or error"), std::string::npos);
  EXPECT_NE(ArmFromSpec("table.gc.after_delete=crash@x").message().find("not a count"), std::string::npos);
}

}  // namespace
}  // namespace sediment::failpoint
