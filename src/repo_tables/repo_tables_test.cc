// RepoTables: each test states one rule of tables in repositories
// (docs/iceberg-repositories.md) over a real catalog on local storage.
#include "repo_tables/repo_tables.h"

#include <gtest/gtest.h>

#include "base/test_util.h"
#include "catalog/catalog.h"
#include "catalog/catalog_testing.h"

namespace sediment::repo_tables {
namespace {

using json = nlohmann::json;

const json kSchema = {{"type", "struct"},
                      {"schema-id", 0},
                      {"fields", {{{"id", 1}, {"name", "id"}, {"required", false}, {"type", "long"}}}}};

class RepoTablesTest : public catalog::fixtures::CatalogFixture {
 protected:
  void SetUp() override {
    CatalogFixture::SetUp();
    tables_ = std::make_unique<RepoTables>(catalog_.get(), clock_);
    ASSERT_OK(tables_->CreateNamespace(Ns("main"), {{"owner", "ada"}}));
  }
  static NamespacePath Ns(const std::string& ref, std::vector<std::string> ns = {"inventory"}) {
    return NamespacePath{"repo", ref, std::move(ns)};
  }
  static TablePath Table(const std::string& ref, const std::string& name = "books") { return TablePath{Ns(ref), name}; }
  LoadedTable Create(const std::string& ref = "main", const std::string& name = "books") {
    auto t = tables_->CreateTable(Table(ref, name), {{"name", name}, {"schema", kSchema}});
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : LoadedTable{};
  }
  // An append as clients send it: a snapshot on top of `parent`, guarded by main's snapshot.
  Result<LoadedTable> Append(const LoadedTable& t, int64_t id, std::optional<int64_t> parent,
                             const std::string& ref = "main") {
    json snap = {{"snapshot-id", id},
                 {"sequence-number", t.Metadata().value("last-sequence-number", 0) + 1},
                 {"timestamp-ms", 2000 + id},
                 {"manifest-list", t.location + "/metadata/snap-" + std::to_string(id) + ".avro"},
                 {"summary", {{"operation", "append"}}},
                 {"schema-id", 0}};
    if (parent) snap["parent-snapshot-id"] = *parent;
    TableChange c{Table(ref)};
    c.requirements = json::array({{{"type", "assert-table-uuid"}, {"uuid", t.Metadata()["table-uuid"]}},
                                  {{"type", "assert-ref-snapshot-id"},
                                   {"ref", "main"},
                                   {"snapshot-id", parent ? json(*parent) : json(nullptr)}}});
    c.updates =
        json::array({{{"action", "add-snapshot"}, {"snapshot", snap}},
                     {{"action", "set-snapshot-ref"}, {"ref-name", "main"}, {"type", "branch"}, {"snapshot-id", id}}});
    return tables_->CommitTable(c);
  }
  int64_t MainSnapshot(const std::string& ref) {
    auto t = tables_->LoadTable(Table(ref));
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? t->Metadata().value("current-snapshot-id", -1) : -2;
  }

  std::unique_ptr<RepoTables> tables_;
};

TEST_F(RepoTablesTest, ATableIsAnUncommittedChangeOfItsBranchWithItsFilesUnderManaged) {
  LoadedTable t = Create();
  std::string root = "file://" + dir_.Sub("ns");
  EXPECT_EQ(t.location.rfind(root + "/_managed/iceberg/", 0), 0u) << t.location;
  EXPECT_EQ(t.metadata_location.rfind(t.location + "/metadata/00000-", 0), 0u) << t.metadata_location;
  auto diff = catalog_->DiffUncommitted("repo", "main", {});
  ASSERT_OK(diff.status());
  std::vector<std::string> paths;
  for (const auto& d : diff->items) paths.push_back(d.type + " " + d.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"added _lakefs_tables/iceberg/namespaces/inventory/.namespace",
                                             "added _lakefs_tables/iceberg/namespaces/inventory/tables/books"}));
  auto listed = tables_->ListTables(Ns("main"));
  ASSERT_OK(listed.status());
  EXPECT_EQ(*listed, std::vector<std::string>{"books"});
}

TEST_F(RepoTablesTest, ABranchSeesItsSourcesTablesAndWritesApart) {
  LoadedTable t = Create();
  ASSERT_OK(Append(t, 1, std::nullopt).status());
  Commit("tables");
  ASSERT_OK(catalog_->CreateBranch("repo", "dev", "main").status());
  auto dev = tables_->LoadTable(Table("dev"));
  ASSERT_OK(dev.status());
  ASSERT_OK(Append(*dev, 2, 1, "dev").status());
  EXPECT_EQ(MainSnapshot("dev"), 2);
  EXPECT_EQ(MainSnapshot("main"), 1) << "main does not see dev's append";
}

TEST_F(RepoTablesTest, ATagOrCommitReadsTheTableAsItWasAndRefusesWrites) {
  LoadedTable t = Create();
  ASSERT_OK(Append(t, 1, std::nullopt).status());
  Commit("one");
  ASSERT_OK(catalog_->CreateTag("repo", "v1", "main", false).status());
  auto now = tables_->LoadTable(Table("main"));
  ASSERT_OK(now.status());
  ASSERT_OK(Append(*now, 2, 1).status());
  EXPECT_EQ(MainSnapshot("v1"), 1);
  auto tagged = tables_->LoadTable(Table("v1"));
  ASSERT_OK(tagged.status());
  EXPECT_FALSE(tagged->writable);
  Status refused = Append(*tagged, 3, 1, "v1").status();
  EXPECT_TRUE(IsForbidden(refused)) << refused.ToString();
  EXPECT_NE(refused.message().find("read-only"), std::string::npos) << refused.message();
  EXPECT_TRUE(IsForbidden(tables_->CreateNamespace(Ns("v1", {"other"}), {})));
}

TEST_F(RepoTablesTest, OfTwoAppendsFromOneSnapshotOneLandsAndTheOtherIsAConflict) {
  LoadedTable t = Create();
  auto first = Append(t, 1, std::nullopt);
  ASSERT_OK(first.status());
  auto second = Append(t, 2, std::nullopt);  // from the same state: its requirement fails
  EXPECT_TRUE(IsConflict(second.status())) << second.status().ToString();
  EXPECT_EQ(MainSnapshot("main"), 1);
  ASSERT_TRUE(Append(*first, 2, 1).ok()) << "the loser retries from the winner's state";
  EXPECT_EQ(MainSnapshot("main"), 2);
}

TEST_F(RepoTablesTest, AStagedCreateStoresNothingUntilCommittedWithAssertCreate) {
  auto staged = tables_->CreateTable(Table("main"), {{"name", "books"}, {"schema", kSchema}, {"stage-create", true}});
  ASSERT_OK(staged.status());
  EXPECT_EQ(staged->metadata_location, "");
  EXPECT_TRUE(IsNotFound(tables_->LoadTable(Table("main")).status()));
  TableChange c{Table("main")};
  c.requirements = json::array({{{"type", "assert-create"}}});
  c.updates = json::array({{{"action", "assign-uuid"}, {"uuid", staged->Metadata()["table-uuid"]}},
                           {{"action", "add-schema"}, {"schema", kSchema}},
                           {{"action", "set-current-schema"}, {"schema-id", -1}},
                           {{"action", "set-location"}, {"location", staged->location}}});
  ASSERT_OK(tables_->CommitTable(c).status());
  EXPECT_OK(tables_->LoadTable(Table("main")).status());
  EXPECT_TRUE(IsConflict(tables_->CommitTable(c).status())) << "created concurrently";
}

TEST_F(RepoTablesTest, ALocationOutsideTheManagedPlaceIsRefusedAndNothingIsStored) {
  const std::string ns = "file://" + dir_.Sub("ns");
  for (const std::string& where :
       std::vector<std::string>{"file:///etc", "s3://other-bucket/t", ns + "/data/t", ns + "/_managed/../x",
                                ns + "/_managed/iceberg", ns + "/_managed/iceberg/x", ns + "/_managed"}) {
    auto t = tables_->CreateTable(Table("main"), {{"name", "books"}, {"schema", kSchema}, {"location", where}});
    EXPECT_TRUE(IsInvalidArgument(t.status())) << where << ": " << t.status().ToString();
  }
  EXPECT_TRUE(IsNotFound(tables_->LoadTable(Table("main")).status()));
  LoadedTable t = Create();
  TableChange move{Table("main")};
  move.updates = json::array({{{"action", "set-location"}, {"location", t.location + "-elsewhere"}}});
  EXPECT_TRUE(IsInvalidArgument(tables_->CommitTable(move).status()));
}

TEST_F(RepoTablesTest, APointerObjectWrittenThroughTheObjectsApiIsNoTable) {
  ASSERT_OK(
      catalog_->PutEntry("repo", "main", TablePointer({"inventory"}, "planted"), catalog::fixtures::MakeEntry("x")));
  auto t = tables_->LoadTable(Table("main", "planted"));
  EXPECT_TRUE(IsInvalidArgument(t.status()) || IsNotFound(t.status())) << t.status().ToString();
}

TEST_F(RepoTablesTest, ANamespaceWithATableIsNotDroppedAndPropertiesUpdateAtomically) {
  Create();
  EXPECT_TRUE(IsConflict(tables_->DropNamespace(Ns("main"))));
  EXPECT_TRUE(IsConflict(tables_->CreateNamespace(Ns("main"), {})));
  auto change = tables_->UpdateNamespace(Ns("main"), {{"team", "x"}}, {"owner", "absent"});
  ASSERT_OK(change.status());
  EXPECT_EQ(change->removed, std::vector<std::string>{"owner"});
  EXPECT_EQ(change->missing, std::vector<std::string>{"absent"});
  auto props = tables_->LoadNamespace(Ns("main"));
  ASSERT_OK(props.status());
  EXPECT_EQ(*props, (std::map<std::string, std::string>{{"team", "x"}}));
  EXPECT_TRUE(IsInvalidArgument(tables_->UpdateNamespace(Ns("main"), {{"a", "1"}}, {"a"}).status()));
  ASSERT_OK(tables_->DropTable(Table("main")));
  ASSERT_OK(tables_->DropNamespace(Ns("main")));
  EXPECT_TRUE(IsNotFound(tables_->LoadNamespace(Ns("main")).status()));
}

TEST_F(RepoTablesTest, NestedNamespacesListOneLevelAtATime) {
  ASSERT_OK(tables_->CreateNamespace(Ns("main", {"inventory", "books"}), {}));
  ASSERT_OK(tables_->CreateNamespace(Ns("main", {"sales"}), {}));
  auto top = tables_->ListNamespaces(Ns("main", {}));
  ASSERT_OK(top.status());
  EXPECT_EQ(*top, (std::vector<std::vector<std::string>>{{"inventory"}, {"sales"}}));
  auto under = tables_->ListNamespaces(Ns("main", {"inventory"}));
  ASSERT_OK(under.status());
  EXPECT_EQ(*under, (std::vector<std::vector<std::string>>{{"inventory", "books"}}));
  EXPECT_TRUE(IsConflict(tables_->DropNamespace(Ns("main"))));
}

TEST_F(RepoTablesTest, RenameAndTransactionsLandWhole) {
  LoadedTable books = Create();
  Create("main", "authors");
  EXPECT_TRUE(IsConflict(tables_->RenameTable(Table("main"), Table("main", "authors"))));
  ASSERT_OK(tables_->RenameTable(Table("main"), Table("main", "novels")));
  EXPECT_TRUE(IsNotFound(tables_->LoadTable(Table("main")).status()));
  auto novels = tables_->LoadTable(Table("main", "novels"));
  ASSERT_OK(novels.status());
  EXPECT_EQ(novels->metadata_location, books.metadata_location);

  auto authors = tables_->LoadTable(Table("main", "authors"));
  ASSERT_OK(authors.status());
  auto props = [](const TablePath& t, const std::string& v) {
    TableChange c{t};
    c.updates = json::array({{{"action", "set-properties"}, {"updates", {{"k", v}}}}});
    return c;
  };
  TableChange stale = props(Table("main", "authors"), "2");
  stale.requirements = json::array({{{"type", "assert-table-uuid"}, {"uuid", "00000000-0000-4000-8000-000000000000"}}});
  Status refused = tables_->CommitTransaction({props(Table("main", "novels"), "1"), stale});
  EXPECT_TRUE(IsConflict(refused)) << refused.ToString();
  EXPECT_FALSE(tables_->LoadTable(Table("main", "novels"))->Metadata()["properties"].contains("k")) << "none landed";
  ASSERT_OK(tables_->CommitTransaction({props(Table("main", "novels"), "1"), props(Table("main", "authors"), "2")}));
  EXPECT_EQ(tables_->LoadTable(Table("main", "authors"))->Metadata()["properties"]["k"], "2");
  EXPECT_TRUE(IsInvalidArgument(
      tables_->CommitTransaction({props(Table("main", "novels"), "1"), props(Table("dev", "authors"), "2")})));
}

TEST_F(RepoTablesTest, RegisterAdoptsMetadataInsideTheNamespaceOnly) {
  LoadedTable books = Create();
  EXPECT_TRUE(IsConflict(tables_->RegisterTable(Table("main", "copy"), books.metadata_location, false).status()))
      << "a second name for a table another name holds";
  ASSERT_OK(tables_->DropTable(Table("main")));
  auto again = tables_->RegisterTable(Table("main", "copy"), books.metadata_location, false);
  ASSERT_OK(again.status());
  EXPECT_EQ(again->Metadata()["table-uuid"], books.Metadata()["table-uuid"]);
  EXPECT_TRUE(IsConflict(tables_->RegisterTable(Table("main", "copy"), books.metadata_location, false).status()));
  EXPECT_TRUE(IsInvalidArgument(tables_->RegisterTable(Table("main", "x"), "file:///etc/passwd", false).status()));
}

TEST_F(RepoTablesTest, IdentifiersSplitIntoRepositoryRefAndNamespace) {
  auto parts = SplitNamespace({}, std::string("repo\x1fmain\x1f"
                                              "a\x1f"
                                              "b"));
  ASSERT_OK(parts.status());
  EXPECT_EQ(*parts, (std::vector<std::string>{"repo", "main", "a", "b"}));
  auto scoped = SplitNamespace({"repo", "main"}, "a.b");
  ASSERT_OK(scoped.status());
  EXPECT_EQ(*scoped, (std::vector<std::string>{"repo", "main", "a", "b"}));
  EXPECT_TRUE(IsInvalidArgument(SplitNamespace({},
                                               "repo\x1fmain\x1f"
                                               "a/b")
                                    .status()));
  EXPECT_TRUE(IsInvalidArgument(SplitNamespace({}, std::string("repo\x1fmain\x1f\x1f"
                                                               "b"))
                                    .status()));
  EXPECT_TRUE(IsInvalidArgument(SplitNamespace({}, "../etc").status()));
  EXPECT_TRUE(IsInvalidArgument(ToNamespacePath({"repo"}, false).status()));
  EXPECT_TRUE(IsNotFound(ToNamespacePath({"repo", "main"}, true).status())) << "a ref holds no tables";
  EXPECT_TRUE(IsInvalidArgument(SplitScope("a.b.c").status()));
}

}  // namespace
}  // namespace sediment::repo_tables
