// Storage namespaces (storage_namespace.h; docs/catalog.md "Storage
// namespaces"): the rules one table row each, resolution through symbolic
// links and '..', and CreateRepository refusing a namespace outside the roots,
// inside or around another repository's, or holding files, leaving nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <utility>

#include "base/test_util.h"
#include "blob/blob.h"
#include "catalog/catalog.h"
#include "catalog/catalog_testing.h"
#include "catalog/storage_namespace.h"
#include "kv/kv.h"

namespace sediment::catalog {
namespace {

namespace fs = std::filesystem;

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct RuleRow {
  const char* rule;
  std::string ns;
  NamespaceRules rules;
  std::string expect;  // the location's URI if allowed, else part of the InvalidArgument message
  bool allowed;
};

// Rules 1-3 on paths that need no file system (ParseNamespace, CheckNamespaceAllowed).
TEST(NamespaceRulesTest, OneRowPerRule) {
  const NamespaceRules repos{{"/srv/repos"}, {}, {}, {}};
  const NamespaceRules with_server{{"/srv"}, {}, {"/srv/data/kv", "/srv/data/server-id"}, {}};
  const NamespaceRules two_roots{{"/a", "/b/"}, {}, {}, {}};
  const NamespaceRules buckets{{}, {"s3://lake/repos", "s3://scratch"}, {}, {}};
  const std::vector<RuleRow> rows = {
      {"1: local:// URI", "local:///srv/repos/a", repos, "local:///srv/repos/a", true},
      {"1: plain absolute path", "/srv/repos/a", repos, "local:///srv/repos/a", true},
      {"1: file:// URI", "file:///srv/repos/a/", repos, "local:///srv/repos/a", true},
      {"1: relative path", "srv/repos/a", repos, "must be an absolute path", false},
      {"1: relative local:// URI", "local://srv/repos/a", repos, "must be an absolute path", false},
      {"1: unknown scheme", "gs://lake/a", repos, "unsupported scheme", false},
      {"1: S3 prefix with '..'", "s3://lake/repos/../x", buckets, "is not s3://bucket", false},
      {"1: S3 prefix with an empty part", "s3://lake/repos//x", buckets, "is not s3://bucket", false},
      {"1: S3 without a bucket", "s3:///x", buckets, "is not s3://bucket", false},
      {"2: inside a root", "local:///srv/repos/a/b", repos, "local:///srv/repos/a/b", true},
      {"2: inside the second root", "local:///b/x", two_roots, "local:///b/x", true},
      {"2: the root itself", "local:///srv/repos", repos, "holds local namespaces", false},
      {"2: outside every root", "local:///root/.ssh", repos, "outside the directories allowed", false},
      {"2: a name that only starts like the root", "local:///srv/reposx/a", repos, "outside", false},
      {"2: '..' out of the root", "local:///srv/repos/../etc", repos, "outside", false},
      {"2: no roots at all", "local:///srv/repos/a", NamespaceRules{}, "not allowed on this server", false},
      {"2: around the server's files", "local:///srv/data", with_server, "overlaps the server's own files", false},
      {"2: inside the server's files", "local:///srv/data/kv/x", with_server, "/srv/data/kv", false},
      {"2: beside the server's files", "local:///srv/data/ns", with_server, "local:///srv/data/ns", true},
      {"3: any bucket when no prefix is set", "s3://anything/x", repos, "s3://anything/x", true},
      {"3: under a prefix", "s3://lake/repos/a/", buckets, "s3://lake/repos/a", true},
      {"3: the prefix itself", "s3://lake/repos", buckets, "s3://lake/repos", true},
      {"3: a whole bucket allowed", "s3://scratch/x/y", buckets, "s3://scratch/x/y", true},
      {"3: a name that only starts like the prefix", "s3://lake/reposx/a", buckets, "not under a prefix", false},
      {"3: another part of the bucket", "s3://lake/other", buckets, "s3://lake/repos, s3://scratch", false},
      {"3: another bucket", "s3://other/repos/a", buckets, "not under a prefix", false},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(std::string(row.rule) + ": " + row.ns);
    Status st;
    auto loc = ParseNamespace(row.ns);
    st = loc.ok() ? CheckNamespaceAllowed(row.ns, *loc, row.rules) : loc.status();
    if (row.allowed) {
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(loc->Uri(), row.expect);
    } else {
      ASSERT_TRUE(IsInvalidArgument(st)) << st.ToString();
      EXPECT_TRUE(Contains(st.message(), row.expect)) << st.message();
      EXPECT_TRUE(Contains(st.message(), row.ns)) << "names the namespace: " << st.message();
    }
  }
}

// The server's own files are no namespace (and so no import source): on S3
// its tables' prefix, in and around; locally its data directory, less the
// namespace root carved out of it.
TEST(NamespaceRulesTest, TheServersOwnFilesAreNobodysNamespace) {
  NamespaceRules s3{{}, {}, {}, {"s3://lake/objects/tables"}};
  for (const char* ns :
       {"s3://lake/objects/tables", "s3://lake/objects/tables/eth/logs", "s3://lake/objects", "s3://lake"}) {
    auto loc = ParseNamespace(ns);
    ASSERT_OK(loc.status());
    Status st = CheckNamespaceAllowed(ns, *loc, s3);
    EXPECT_TRUE(IsInvalidArgument(st) && Contains(st.message(), "the server's own files")) << ns << st.ToString();
  }
  auto beside = ParseNamespace("s3://lake/objects/repos/a");
  EXPECT_OK(CheckNamespaceAllowed("s3://lake/objects/repos/a", *beside, s3));
  NamespaceRules local{{"/srv/data/namespaces"}, {}, {"/srv/data", "/srv/sediment.toml"}, {}};
  auto in_root = ParseNamespace("/srv/data/namespaces/a");
  EXPECT_OK(CheckNamespaceAllowed("/srv/data/namespaces/a", *in_root, local));
  NamespaceRules wide{{"/srv"}, {}, {"/srv/data", "/srv/sediment.toml"}, {}};
  for (const char* ns : {"/srv/data/planted", "/srv/data", "/srv/sediment.toml"}) {
    auto loc = ParseNamespace(ns);
    ASSERT_OK(loc.status());
    Status st = CheckNamespaceAllowed(ns, *loc, wide);
    EXPECT_TRUE(IsInvalidArgument(st) && Contains(st.message(), "the server's own files")) << ns << st.ToString();
  }
}

TEST(NamespaceRulesTest, AncestorsAreTheLocationsAroundOne) {
  auto local = ParseNamespace("local:///a/b/c");
  ASSERT_OK(local.status());
  std::vector<std::string> uris;
  for (const auto& a : local->Ancestors()) uris.push_back(a.Uri());
  EXPECT_EQ(uris, (std::vector<std::string>{"local:///a/b", "local:///a"}));
  auto s3 = ParseNamespace("s3://lake/p/q");
  ASSERT_OK(s3.status());
  uris.clear();
  for (const auto& a : s3->Ancestors()) uris.push_back(a.Uri());
  EXPECT_EQ(uris, (std::vector<std::string>{"s3://lake/p", "s3://lake"}));
}

// ResolveNamespace checks where the kernel would put the files, not the text.
TEST(ResolveNamespaceTest, FollowsSymbolicLinksAndDotDotAsTheKernelWould) {
  testing::TempDir dir;
  const std::string roots = dir.Sub("roots"), outside = dir.Sub("outside");
  fs::create_directories(roots + "/real");
  fs::create_directories(outside + "/a/b");
  fs::create_directory_symlink(outside, roots + "/out");
  fs::create_directory_symlink(outside + "/a/b", roots + "/deep");
  fs::create_directory_symlink(roots + "/real", roots + "/alias");
  fs::create_directory_symlink(dir.Sub("nowhere"), roots + "/dangling");
  fs::create_directory_symlink(roots, dir.Sub("roots-link"));
  const NamespaceRules rules{{roots}, {}, {}, {}};
  const std::string real = fs::canonical(roots).string();  // the test directory may lie behind a link

  auto alias = ResolveNamespace("local://" + roots + "/alias/x", rules);
  ASSERT_OK(alias.status());
  EXPECT_EQ(alias->Uri(), "local://" + real + "/real/x") << "a link inside the roots is followed";
  auto through_root_link = ResolveNamespace("local://" + dir.Sub("roots-link") + "/x", rules);
  ASSERT_OK(through_root_link.status());
  EXPECT_EQ(through_root_link->path, real + "/x");
  auto linked_root = ResolveNamespace("local://" + roots + "/x", NamespaceRules{{dir.Sub("roots-link")}, {}, {}, {}});
  ASSERT_TRUE(linked_root.ok()) << "a root that is a link counts where it leads: " << linked_root.status().ToString();

  for (const std::string& bad : {
           roots + "/out/x",                 // a link that leads out
           roots + "/out",                   //
           roots + "/real/../../outside/x",  // '..' out
           roots + "/nope/../../outside",    // '..' out through a part that does not exist
           roots + "/deep/../../x",          // lexically roots/x, but the kernel goes to outside/x
       }) {
    auto r = ResolveNamespace("local://" + bad, rules);
    EXPECT_TRUE(IsInvalidArgument(r.status())) << bad << " resolved to " << (r.ok() ? r->path : r.status().ToString());
    if (!r.ok()) {
      EXPECT_TRUE(Contains(r.status().message(), "outside")) << r.status().message();
    }
  }
  auto dangling = ResolveNamespace("local://" + roots + "/dangling/x", rules);
  ASSERT_TRUE(IsInvalidArgument(dangling.status())) << dangling.status().ToString();
  EXPECT_TRUE(Contains(dangling.status().message(), "leads nowhere")) << dangling.status().message();
  EXPECT_FALSE(fs::exists(dir.Sub("nowhere"))) << "resolving writes nothing";
}

// --- CreateRepository --------------------------------------------------------------------------

// No repository to start with: the tests create them.
class NamespaceCatalogTest : public fixtures::CatalogFixture {
 protected:
  void SetUp() override {
    fs::create_directories(roots_);
    fs::create_directories(outside_);
    std::ofstream(outside_ + "/theirs.txt") << "someone else's";
    catalog_ = MakeCatalog({roots_});
  }

  std::unique_ptr<Catalog> MakeCatalog(std::vector<std::string> roots) {
    CatalogOptions opts = Options();
    opts.cache_dir = roots_ + "/cache";  // inside the root: reserved all the same
    opts.namespaces.local_roots = std::move(roots);
    opts.namespaces.reserved_paths = {dir_.Sub("data")};
    return NewCatalog(std::move(opts));
  }

  // Every path under `d`, relative and sorted.
  static std::vector<std::string> Tree(const std::string& d) {
    std::vector<std::string> out;
    if (!fs::exists(d)) return out;
    for (const auto& e : fs::recursive_directory_iterator(d)) out.push_back(e.path().lexically_relative(d).string());
    std::sort(out.begin(), out.end());
    return out;
  }

  std::vector<std::string> CatalogKeys() {
    std::vector<std::string> keys;
    auto page = kv_->Scan("c/", "", 1000);
    EXPECT_TRUE(page.ok());
    if (page.ok()) {
      for (const auto& item : page->items) keys.push_back(item.key);
    }
    return keys;
  }

  Status Create(const std::string& id, const std::string& ns) {
    return catalog_->CreateRepository(id, ns, "main", false).status();
  }

  const std::string roots_ = dir_.Sub("roots");
  const std::string outside_ = dir_.Sub("outside");
};

TEST_F(NamespaceCatalogTest, NamespacesOutsideTheRootsAreRefusedAndNothingIsWritten) {
  fs::create_directory_symlink(outside_, roots_ + "/link");
  fs::create_directories(dir_.Sub("data"));
  const auto roots_before = Tree(roots_);
  for (const std::string& ns : {
           "local://" + outside_ + "/repo",
           "local://" + outside_,
           outside_ + "/plain",
           "file://" + outside_ + "/uri",
           "local://" + roots_ + "/../outside/dotdot",
           "local://" + roots_ + "/link/through",
           "local://" + roots_,
           "local://" + roots_ + "/cache/x",  // the range cache
           "local://" + dir_.Sub("data") + "/x",
           std::string("local://relative/path"),
       }) {
    Status st = Create("repo", ns);
    EXPECT_TRUE(IsInvalidArgument(st)) << ns << ": " << st.ToString();
    EXPECT_TRUE(Contains(st.message(), ns)) << st.message();
  }
  EXPECT_TRUE(CatalogKeys().empty());
  EXPECT_EQ(Tree(outside_), std::vector<std::string>{"theirs.txt"});
  EXPECT_EQ(Tree(roots_), roots_before);
  EXPECT_EQ(Tree(dir_.Sub("data")), std::vector<std::string>{});
  EXPECT_FALSE(fs::exists("relative"));
  ASSERT_OK(Create("repo", "local://" + roots_ + "/good"));  // the name is free
}

TEST_F(NamespaceCatalogTest, TheDefaultOptionsAllowNoLocalNamespace) {
  CatalogOptions opts;
  opts.cache_dir = dir_.Sub("cache2");
  Catalog catalog(kv_, std::make_shared<ManualClock>(), opts);
  ASSERT_OK(catalog.Start(false));
  Status st = catalog.CreateRepository("repo", roots_ + "/a", "main", false).status();
  EXPECT_TRUE(IsInvalidArgument(st)) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "not allowed on this server")) << st.message();
  EXPECT_FALSE(fs::exists(roots_ + "/a"));
}

TEST_F(NamespaceCatalogTest, ANamespaceThatHoldsFilesIsRefusedAndLeftUntouched) {
  fs::create_directories(roots_ + "/taken/sub");
  std::ofstream(roots_ + "/taken/sub/report.csv") << "a,b\n";
  fs::create_directories(roots_ + "/linked");
  fs::create_symlink(outside_ + "/theirs.txt", roots_ + "/linked/l");
  const auto before = Tree(roots_);
  Status st = Create("repo", "local://" + roots_ + "/taken");
  EXPECT_TRUE(IsConflict(st)) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "already holds data") && Contains(st.message(), "sub/report.csv")) << st.message();
  st = Create("repo", roots_ + "/linked");
  EXPECT_TRUE(IsConflict(st)) << "a link is something stored: " << st.ToString();
  EXPECT_EQ(Tree(roots_), before) << "no _lakefs, no temp directory";
  EXPECT_TRUE(CatalogKeys().empty());
  // Empty directories are no data; a namespace that does not exist yet is created.
  fs::create_directories(roots_ + "/empty/a/b");
  ASSERT_OK(Create("repo", "local://" + roots_ + "/empty"));
  ASSERT_OK(Create("fresh", "local://" + roots_ + "/new/deeper"));
  EXPECT_TRUE(fs::exists(roots_ + "/new/deeper/_lakefs/dummy"));
}

// A creation cut off after it proved the namespace writable left only the
// marker: that namespace is still usable. Anything more is someone's data.
TEST_F(NamespaceCatalogTest, OnlyTheMarkerOfACutOffCreationMayBeThere) {
  fs::create_directories(roots_ + "/left/_lakefs");
  std::ofstream(roots_ + "/left/_lakefs/dummy") << "";
  ASSERT_OK(Create("repo", "local://" + roots_ + "/left"));
  fs::create_directories(roots_ + "/more/_lakefs");
  std::ofstream(roots_ + "/more/_lakefs/dummy") << "";
  std::ofstream(roots_ + "/more/_lakefs/range") << "x";
  Status st = Create("other", "local://" + roots_ + "/more");
  EXPECT_TRUE(IsConflict(st)) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "_lakefs/range")) << st.message();
}

TEST_F(NamespaceCatalogTest, NamespacesInsideOrAroundAnotherRepositorysAreRefused) {
  ASSERT_OK(Create("outer", "local://" + roots_ + "/a"));
  Status st = Create("inner", "local://" + roots_ + "/a/data");
  EXPECT_TRUE(IsConflict(st)) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "inside") && Contains(st.message(), "\"outer\"")) << st.message();
  EXPECT_FALSE(fs::exists(roots_ + "/a/data"));
  ASSERT_OK(Create("deep", "local://" + roots_ + "/x/y/z"));
  st = Create("around", "local://" + roots_ + "/x");
  EXPECT_TRUE(IsConflict(st)) << st.ToString();
  EXPECT_TRUE(Contains(st.message(), "\"deep\"")) << st.message();
  EXPECT_TRUE(IsNotFound(catalog_->GetRepository("inner").status()));
  EXPECT_TRUE(IsNotFound(catalog_->GetRepository("around").status()));
}

// The race its comment once admitted: a repository created inside another's
// namespace at the very moment that one is created. Planted: just before the
// outer creation writes, the inner one runs to completion. Only one survives.
TEST_F(NamespaceCatalogTest, ARepositoryCreatedInsideAnotherAtTheSameMomentIsRefused) {
  Status inner = Status::OK();
  kv_->BeforeWrite(kv::HookedKv::Exactly("c/r/outer"),
                   [&] { inner = Create("inner", "local://" + roots_ + "/a/data"); });
  Status outer = Create("outer", "local://" + roots_ + "/a");
  ASSERT_OK(inner);
  EXPECT_TRUE(IsConflict(outer)) << outer.ToString();
  EXPECT_TRUE(Contains(outer.message(), "\"inner\"")) << outer.message();
  EXPECT_TRUE(IsNotFound(catalog_->GetRepository("outer").status()));
  // Unrelated creations at the same moment both succeed (the loser retries).
  kv_->BeforeWrite(kv::HookedKv::Exactly("c/r/one"), [&] { inner = Create("two", roots_ + "/two"); });
  ASSERT_OK(Create("one", roots_ + "/one"));
  ASSERT_OK(inner);
}

// Two spellings of one directory are one namespace, and the repository keeps
// its files where the check looked.
TEST_F(NamespaceCatalogTest, ARepositoryUsesTheResolvedLocation) {
  fs::create_directories(roots_ + "/real");
  fs::create_directory_symlink(roots_ + "/real", roots_ + "/alias");
  auto repo = catalog_->CreateRepository("repo", "local://" + roots_ + "/alias/ns/", "main", false);
  ASSERT_OK(repo.status());
  const std::string location = "local://" + fs::canonical(roots_).string() + "/real/ns";
  EXPECT_EQ(repo->storage_namespace, "local://" + roots_ + "/alias/ns") << "as written";
  EXPECT_EQ(repo->location, location);
  EXPECT_EQ(catalog_->GetRepository("repo")->location, location);
  Status st = Create("other", roots_ + "/real/ns");
  EXPECT_TRUE(IsConflict(st) && Contains(st.message(), "already used by repository \"repo\"")) << st.ToString();
  Entry e;
  e.address = "data/x";
  e.checksum = "c";
  ASSERT_OK(catalog_->PutEntry("repo", "main", "k", e));
  CommitParams p;
  p.message = "one";
  ASSERT_OK(catalog_->CommitBranch("repo", "main", p).status());
  // The symlink now leads elsewhere: the repository still reads and writes the checked directory.
  fs::remove(roots_ + "/alias");
  fs::create_directory_symlink(outside_, roots_ + "/alias");
  auto fresh = MakeCatalog({roots_});
  ASSERT_OK(fresh->GetEntry("repo", "main", "k").status());
  ASSERT_OK(fresh->PutEntry("repo", "main", "k2", e));
  ASSERT_OK(fresh->CommitBranch("repo", "main", p).status());
  EXPECT_EQ(Tree(outside_), std::vector<std::string>{"theirs.txt"});
  EXPECT_TRUE(fs::exists(roots_ + "/real/ns/_lakefs/dummy"));
}

TEST_F(NamespaceCatalogTest, ADeletedRepositorysNamespaceIsNotReused) {
  ASSERT_OK(Create("repo", "local://" + roots_ + "/ns"));
  Entry e;
  e.address = "data/x";
  e.checksum = "c";
  ASSERT_OK(catalog_->PutEntry("repo", "main", "k", e));
  CommitParams p;
  p.message = "one";
  ASSERT_OK(catalog_->CommitBranch("repo", "main", p).status());
  ASSERT_OK(catalog_->DeleteRepository("repo"));
  EXPECT_TRUE(kv_->Scan("c/n/", "", 10)->items.empty()) << "the namespace key is freed";
  Status st = Create("repo", "local://" + roots_ + "/ns");
  EXPECT_TRUE(IsConflict(st) && Contains(st.message(), "already holds data")) << st.ToString();
  ASSERT_OK(Create("repo", "local://" + roots_ + "/ns2"));
}

// Records written before repositories had a location open and delete by the
// namespace as written.
TEST_F(NamespaceCatalogTest, RecordsWithoutALocationStillWork) {
  const std::string ns = roots_ + "/old";
  ASSERT_OK(kv_->Set("c/r/old", R"({"version":1,"storage_namespace":")" + ns +
                                    R"(","default_branch":"main","creation_date":1,"read_only":false})"));
  ASSERT_OK(kv_->Set("c/n/" + ns, "old"));
  auto repo = catalog_->GetRepository("old");
  ASSERT_OK(repo.status());
  EXPECT_EQ(repo->location, ns);
  auto store = catalog_->RepositoryNamespace(*repo);
  ASSERT_OK(store.status());
  EXPECT_EQ((*store)->Describe(), "local:" + ns);
  ASSERT_OK(catalog_->DeleteRepository("old"));
  EXPECT_TRUE(IsNotFound(kv_->Get("c/n/" + ns).status()));
}

}  // namespace
}  // namespace sediment::catalog
