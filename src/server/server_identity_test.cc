#include "server/server_identity.h"

#include <gtest/gtest.h>

#include <fstream>

#include "base/test_util.h"

namespace sediment::server {
namespace {

TEST(ServerIdentityTest, TheSameDataDirectoryGivesTheSameNameAfterARestart) {
  testing::TempDir dir;
  auto first = ServerIdentity::Claim(dir.path());
  ASSERT_TRUE(first->stable());
  std::string id = first->id();
  first.reset();  // the process ends (a crash releases the lock too)
  auto again = ServerIdentity::Claim(dir.path());
  EXPECT_TRUE(again->stable());
  EXPECT_EQ(again->id(), id);
}

TEST(ServerIdentityTest, ASecondLiveProcessGetsANameOfItsOwn) {
  testing::TempDir dir;
  auto first = ServerIdentity::Claim(dir.path());
  auto second = ServerIdentity::Claim(dir.path());  // another open file: the lock is taken
  EXPECT_TRUE(first->stable());
  EXPECT_FALSE(second->stable());
  EXPECT_NE(second->id(), first->id());
}

TEST(ServerIdentityTest, AGarbledFileIsReplacedAndAMissingDirectoryStillGivesAName) {
  testing::TempDir dir;
  { std::ofstream(dir.Sub("server-id")) << "  \n"; }
  auto a = ServerIdentity::Claim(dir.path());
  EXPECT_TRUE(a->stable());
  EXPECT_FALSE(a->id().empty());
  EXPECT_EQ(a->id().find(' '), std::string::npos);
  auto b = ServerIdentity::Claim(dir.Sub("missing/dir"));
  EXPECT_FALSE(b->stable());
  EXPECT_FALSE(b->id().empty());
}

}  // namespace
}  // namespace sediment::server
