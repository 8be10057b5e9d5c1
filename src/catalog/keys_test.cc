// The catalog key layout, spelled out: these keys are on disk, so a change to
// a builder that alters a spelling must fail here (docs/formats.md).
#include "catalog/keys.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sediment::catalog {
namespace {

TEST(CatalogKeyLayoutTest, EveryKeyIsSpelledAsStored) {
  EXPECT_EQ(RepoKey("repo"), "c/r/repo");
  EXPECT_EQ(RepositoriesPrefix(), "c/r/");
  EXPECT_EQ(RepoDeletionKey("repo"), "c/rd/repo");
  EXPECT_EQ(RepoDeletionsPrefix(), "c/rd/");
  EXPECT_EQ(NamespaceKey("local:///data/ns"), "c/n/local:///data/ns");
  EXPECT_EQ(NamespaceKey("s3://bucket/p/"), "c/n/s3://bucket/p/");
  EXPECT_EQ(RetiredNamespaceKey("s3://bucket/p"), "c/nr/s3://bucket/p");
  EXPECT_EQ(NamespaceEpochKey(), "c/ne");

  EXPECT_EQ(BranchKey("repo", "main"), "c/b/repo/main");
  EXPECT_EQ(BranchesPrefix("repo"), "c/b/repo/");
  EXPECT_EQ(CommitKey("repo", "c0ffee"), "c/c/repo/c0ffee");
  EXPECT_EQ(CommitsPrefix("repo"), "c/c/repo/");
  EXPECT_EQ(TagKey("repo", "v1"), "c/t/repo/v1");
  EXPECT_EQ(TagsPrefix("repo"), "c/t/repo/");

  EXPECT_EQ(StagedEntryKey("tok", "a/b.parquet"), "c/s/tok/a/b.parquet");
  EXPECT_EQ(StagingPrefix("tok"), "c/s/tok/");
  EXPECT_EQ(DropKey("tok"), "c/d/tok");
  EXPECT_EQ(DropsPrefix(), "c/d/");

  EXPECT_EQ(MutationCounterKey("repo", "main"), "c/m/repo/main");
  EXPECT_EQ(MutationCountersPrefix(), "c/m/");
  EXPECT_EQ(CompactionStatusKey("repo", "main"), "c/cs/repo/main");
  EXPECT_EQ(CompactionLeaseKey("repo", "main"), "c/cl/repo/main");

  EXPECT_EQ(UploadKey("repo", "u1"), "c/mp/repo/u1");
  EXPECT_EQ(UploadsPrefix("repo"), "c/mp/repo/");
  EXPECT_EQ(UploadPartKey("repo", "u1", 7), "c/mp/repo/u1/00007");
  EXPECT_EQ(UploadPartKey("repo", "u1", 10000), "c/mp/repo/u1/10000");
  EXPECT_EQ(UploadPartsPrefix("repo", "u1"), "c/mp/repo/u1/");

  EXPECT_EQ(LinkAddressKey("repo", "data/g0/x1"), "c/la/repo/data/g0/x1");
  EXPECT_EQ(LinkAddressesPrefix("repo"), "c/la/repo/");

  EXPECT_EQ(ImportKey("repo", "i1"), "c/imp/repo/i1");
  EXPECT_EQ(ImportEndKey("repo", "i1"), "c/imp/repo/i1/end");
  EXPECT_EQ(ImportsPrefix("repo"), "c/imp/repo/");

  EXPECT_EQ(GcLeaseKey("repo"), "c/gcl/repo");
}

// A key of one record stands under the prefix that lists its kind: the code
// that lists them strips the prefix to find the name.
TEST(CatalogKeyLayoutTest, EachKeyStandsUnderItsListingPrefix) {
  EXPECT_EQ(RepoKey("repo"), RepositoriesPrefix() + "repo");
  EXPECT_EQ(RepoDeletionKey("repo"), RepoDeletionsPrefix() + "repo");
  EXPECT_EQ(NamespaceKey(""), "c/n/");
  EXPECT_EQ(RetiredNamespaceKey(""), "c/nr/");
  EXPECT_EQ(BranchKey("repo", "main"), BranchesPrefix("repo") + "main");
  EXPECT_EQ(CommitKey("repo", "c0ffee"), CommitsPrefix("repo") + "c0ffee");
  EXPECT_EQ(TagKey("repo", "v1"), TagsPrefix("repo") + "v1");
  EXPECT_EQ(StagedEntryKey("tok", "p"), StagingPrefix("tok") + "p");
  EXPECT_EQ(DropKey("tok"), DropsPrefix() + "tok");
  EXPECT_EQ(MutationCounterKey("repo", "main"), MutationCountersPrefix() + "repo/main");
  EXPECT_EQ(UploadPartKey("repo", "u1", 1).rfind(UploadPartsPrefix("repo", "u1"), 0), 0u);
  EXPECT_EQ(UploadPartsPrefix("repo", "u1").rfind(UploadsPrefix("repo"), 0), 0u);
  EXPECT_EQ(ImportEndKey("repo", "i1").rfind(ImportsPrefix("repo"), 0), 0u);
}

TEST(CatalogKeyLayoutTest, ARepositorysDeletionPrefixesHoldItsBulkRecords) {
  const std::vector<std::string> prefixes = RepositoryKeyPrefixes("repo");
  EXPECT_EQ(prefixes, (std::vector<std::string>{"c/t/repo/", "c/c/repo/", "c/m/repo/", "c/cs/repo/", "c/cl/repo/",
                                                "c/mp/repo/", "c/la/repo/", "c/imp/repo/"}));
  auto covered = [&](const std::string& key) {
    for (const auto& p : prefixes) {
      if (key.rfind(p, 0) == 0) return true;
    }
    return false;
  };
  for (const std::string& key :
       {TagKey("repo", "v1"), CommitKey("repo", "c0ffee"), MutationCounterKey("repo", "main"),
        CompactionStatusKey("repo", "main"), CompactionLeaseKey("repo", "main"), UploadKey("repo", "u1"),
        UploadPartKey("repo", "u1", 1), LinkAddressKey("repo", "data/g0/x1"), ImportKey("repo", "i1"),
        ImportEndKey("repo", "i1")}) {
    EXPECT_TRUE(covered(key)) << key;
  }
  // Not in bulk: the branches (their tokens are queued first), the records
  // keyed by the repository itself, and nothing of another repository.
  for (const std::string& key :
       {BranchKey("repo", "main"), RepoKey("repo"), RepoDeletionKey("repo"), GcLeaseKey("repo"), TagKey("repo2", "v1"),
        CommitKey("repo2", "c0ffee"), ImportKey("repo2", "i1"), StagedEntryKey("tok", "p"), DropKey("tok")}) {
    EXPECT_FALSE(covered(key)) << key;
  }
}

}  // namespace
}  // namespace sediment::catalog
