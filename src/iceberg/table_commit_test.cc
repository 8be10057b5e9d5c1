// ApplyTableCommit (table_commit.h), rule by rule: each test states one rule
// of the REST spec's updateTable and the table spec's commit duties.
#include "iceberg/table_commit.h"

#include <gtest/gtest.h>

#include "base/test_util.h"

namespace sediment::iceberg {
namespace {

using json = nlohmann::json;

const json kSchema = {
    {"type", "struct"},
    {"fields",
     {{{"id", 1}, {"name", "id"}, {"required", true}, {"type", "long"}},
      {{"id", 2},
       {"name", "tags"},
       {"required", false},
       {"type", {{"type", "list"}, {"element-id", 3}, {"element", "string"}, {"element-required", false}}}}}}};

// The updates a client sends to create a table (as Java's stage-create commit does).
json CreateUpdates(const std::string& location = "s3://b/ns/_managed/t") {
  return json::array({{{"action", "assign-uuid"}, {"uuid", "9c12d441-03fe-4693-9a96-a0705ddf69c1"}},
                      {{"action", "upgrade-format-version"}, {"format-version", 2}},
                      {{"action", "add-schema"}, {"schema", kSchema}},
                      {{"action", "set-current-schema"}, {"schema-id", -1}},
                      {{"action", "set-location"}, {"location", location}},
                      {{"action", "set-properties"}, {"updates", {{"owner", "alice"}}}}});
}

json Created() {
  TableCommit c;
  c.requirements = json::array({{{"type", "assert-create"}}});
  c.updates = CreateUpdates();
  c.now_ms = 1000;
  auto m = ApplyTableCommit(c);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? *m : json();
}

json Snapshot(int64_t id, int64_t seq, std::optional<int64_t> parent, int64_t ts = 2000,
              const std::string& list = "s3://b/ns/_managed/t/metadata/snap.avro") {
  json s = {{"snapshot-id", id},
            {"sequence-number", seq},
            {"timestamp-ms", ts},
            {"manifest-list", list},
            {"summary", {{"operation", "append"}}},
            {"schema-id", 0}};
  if (parent) s["parent-snapshot-id"] = *parent;
  return s;
}

// An append: add the snapshot and move main to it, guarded as clients guard it.
Result<json> Append(const json& current, int64_t id, int64_t seq, std::optional<int64_t> parent) {
  TableCommit c;
  c.current = current;
  c.current_location = "s3://b/ns/_managed/t/metadata/v1.metadata.json";
  c.requirements = json::array(
      {{{"type", "assert-table-uuid"}, {"uuid", current["table-uuid"]}},
       {{"type", "assert-ref-snapshot-id"}, {"ref", "main"}, {"snapshot-id", parent ? json(*parent) : json(nullptr)}}});
  c.updates =
      json::array({{{"action", "add-snapshot"}, {"snapshot", Snapshot(id, seq, parent)}},
                   {{"action", "set-snapshot-ref"}, {"ref-name", "main"}, {"type", "branch"}, {"snapshot-id", id}}});
  c.now_ms = 3000;
  return ApplyTableCommit(c);
}

TEST(TableCommitTest, ACreateAssignsIdsAndFillsTheDefaults) {
  json m = Created();
  EXPECT_EQ(m["format-version"], 2);
  EXPECT_EQ(m["current-schema-id"], 0);
  EXPECT_EQ(m["schemas"][0]["schema-id"], 0);
  EXPECT_EQ(m["last-column-id"], 3) << "nested ids count";
  EXPECT_EQ(m["default-spec-id"], 0);
  EXPECT_EQ(m["partition-specs"][0]["fields"], json::array()) << "unpartitioned unless the request says";
  EXPECT_EQ(m["default-sort-order-id"], 0);
  EXPECT_EQ(m["location"], "s3://b/ns/_managed/t");
  EXPECT_EQ(m["properties"]["owner"], "alice");
  EXPECT_EQ(m["current-snapshot-id"], -1);
  EXPECT_EQ(m["metadata-log"], json::array()) << "a create replaces no file";
}

TEST(TableCommitTest, ACreateNeedsAssertCreateAndItsEssentials) {
  TableCommit c;
  c.updates = CreateUpdates();
  EXPECT_TRUE(IsInvalidArgument(ApplyTableCommit(c).status())) << "no assert-create";
  c.requirements = json::array({{{"type", "assert-create"}}});
  c.updates.erase(4);  // no set-location
  auto m = ApplyTableCommit(c);
  EXPECT_TRUE(IsInvalidArgument(m.status()));
  EXPECT_NE(m.status().message().find("set-location"), std::string::npos) << m.status().message();
}

TEST(TableCommitTest, AssertCreateFailsOnAnExistingTableWithAConflict) {
  TableCommit c;
  c.current = Created();
  c.requirements = json::array({{{"type", "assert-create"}}});
  c.updates = CreateUpdates();
  auto m = ApplyTableCommit(c);
  EXPECT_TRUE(IsConflict(m.status())) << m.status().ToString();
  EXPECT_EQ(m.status().message().rfind("Requirement failed: ", 0), 0u) << m.status().message();
}

TEST(TableCommitTest, AnAppendMovesMainAndLogsTheSnapshotAndThePreviousFile) {
  ASSERT_OK_AND_ASSIGN(json m, Append(Created(), 11, 1, std::nullopt));
  EXPECT_EQ(m["current-snapshot-id"], 11);
  EXPECT_EQ(m["refs"]["main"], json({{"snapshot-id", 11}, {"type", "branch"}}));
  EXPECT_EQ(m["last-sequence-number"], 1);
  ASSERT_EQ(m["snapshot-log"].size(), 1u);
  EXPECT_EQ(m["snapshot-log"][0]["snapshot-id"], 11);
  ASSERT_EQ(m["metadata-log"].size(), 1u);
  EXPECT_EQ(m["metadata-log"][0]["metadata-file"], "s3://b/ns/_managed/t/metadata/v1.metadata.json");
  EXPECT_EQ(m["metadata-log"][0]["timestamp-ms"], 1000);
  EXPECT_EQ(m["last-updated-ms"], 3000);
  ASSERT_OK_AND_ASSIGN(json next, Append(m, 12, 2, 11));
  EXPECT_EQ(next["current-snapshot-id"], 12);
  EXPECT_EQ(next["snapshots"].size(), 2u);
}

TEST(TableCommitTest, TwoAppendsFromOneBaseTheSecondFailsItsRefRequirement) {
  json base = Created();
  ASSERT_OK_AND_ASSIGN(json first, Append(base, 11, 1, std::nullopt));
  auto second = Append(first, 21, 1, std::nullopt);  // also built on the empty table
  EXPECT_TRUE(IsConflict(second.status())) << second.status().ToString();
  EXPECT_NE(second.status().message().find("reference \"main\" was created concurrently"), std::string::npos)
      << second.status().message();
  ASSERT_OK_AND_ASSIGN(json after, Append(first, 12, 2, 11));
  auto stale = Append(after, 13, 3, 11);
  EXPECT_TRUE(IsConflict(stale.status()));
  EXPECT_NE(stale.status().message().find("is at snapshot 12, not 11"), std::string::npos) << stale.status().message();
}

TEST(TableCommitTest, EveryIntegerRequirementComparesItsField) {
  json m = Created();
  struct Row {
    const char* type;
    const char* field;
    int64_t right;
  };
  for (const Row& r : {Row{"assert-current-schema-id", "current-schema-id", 0},
                       Row{"assert-last-assigned-field-id", "last-assigned-field-id", 3},
                       Row{"assert-last-assigned-partition-id", "last-assigned-partition-id", 999},
                       Row{"assert-default-spec-id", "default-spec-id", 0},
                       Row{"assert-default-sort-order-id", "default-sort-order-id", 0}}) {
    TableCommit c;
    c.current = m;
    c.requirements = json::array({{{"type", r.type}, {r.field, r.right}}});
    EXPECT_TRUE(ApplyTableCommit(c).ok()) << r.type;
    c.requirements[0][r.field] = r.right + 1;
    EXPECT_TRUE(IsConflict(ApplyTableCommit(c).status())) << r.type;
  }
  TableCommit c;
  c.current = m;
  c.requirements = json::array({{{"type", "assert-table-uuid"}, {"uuid", "9C12D441-03FE-4693-9A96-A0705DDF69C1"}}});
  EXPECT_TRUE(ApplyTableCommit(c).ok()) << "uuids compare without case";
  c.requirements[0]["uuid"] = "00000000-0000-0000-0000-000000000000";
  EXPECT_TRUE(IsConflict(ApplyTableCommit(c).status()));
}

TEST(TableCommitTest, UnknownOrMalformedRequirementsAndUpdatesAre400sNamingWhere) {
  json m = Created();
  struct Row {
    json requirements, updates;
    const char* says;
  };
  for (const Row& r : std::vector<Row>{
           {json::array({{{"type", "assert-everything"}}}), json::array(), "requirements[0] (assert-everything)"},
           {json::array({{{"type", "assert-current-schema-id"}}}), json::array(), "missing \"current-schema-id\""},
           {json::array(), json::array({{{"action", "drop-everything"}}}), "updates[0] (drop-everything)"},
           {json::array(), json::array({{{"action", "set-location"}, {"location", 7}}}), "has the wrong type"},
           {json::array(), json::array({{{"action", "upgrade-format-version"}, {"format-version", 3}}}),
            "format version 3 is not supported"},
           {json::array(), json::array({{{"action", "add-encryption-key"}, {"encryption-key", json::object()}}}),
            "not supported by this catalog"},
           {json::array(), json::array({{{"action", "set-current-schema"}, {"schema-id", -1}}}),
            "-1 names no schema added by this request"},
       }) {
    TableCommit c;
    c.current = m;
    c.requirements = r.requirements;
    c.updates = r.updates;
    auto out = ApplyTableCommit(c);
    EXPECT_TRUE(IsInvalidArgument(out.status())) << r.says << ": " << out.status().ToString();
    EXPECT_NE(out.status().message().find(r.says), std::string::npos) << out.status().message();
  }
}

TEST(TableCommitTest, ASnapshotMustBeNewAboveTheLastSequenceAndInsideTheTable) {
  ASSERT_OK_AND_ASSIGN(json m, Append(Created(), 11, 1, std::nullopt));
  auto again = Append(m, 11, 2, 11);
  EXPECT_TRUE(IsInvalidArgument(again.status()));
  EXPECT_NE(again.status().message().find("snapshot 11 already exists"), std::string::npos);
  auto old = Append(m, 12, 1, 11);
  EXPECT_NE(old.status().message().find("sequence number 1 is not above the table's last, 1"), std::string::npos)
      << old.status().message();
  for (const char* outside : {"s3://b/other-repo/data/list.avro", "s3://b/ns/_managed/t2/list.avro",
                              "s3://b/ns/_managed/t/../t2/list.avro", "s3://b/ns/_managed/t"}) {
    TableCommit c;
    c.current = m;
    c.updates = json::array({{{"action", "add-snapshot"}, {"snapshot", Snapshot(12, 2, 11, 2000, outside)}}});
    auto out = ApplyTableCommit(c);
    EXPECT_TRUE(IsInvalidArgument(out.status())) << outside;
    EXPECT_NE(out.status().message().find("not inside the table's location"), std::string::npos) << outside;
  }
}

TEST(TableCommitTest, EqualSchemasSpecsAndOrdersAreReusedAndMinusOneIsTheLastAdded) {
  json m = Created();
  json wider = kSchema;
  wider["fields"].push_back({{"id", 4}, {"name", "note"}, {"required", false}, {"type", "string"}});
  TableCommit c;
  c.current = m;
  c.updates = json::array(
      {{{"action", "add-schema"}, {"schema", kSchema}},
       {{"action", "add-schema"}, {"schema", wider}},
       {{"action", "set-current-schema"}, {"schema-id", -1}},
       {{"action", "add-spec"},
        {"spec", {{"fields", {{{"source-id", 1}, {"transform", "bucket[16]"}, {"name", "id_bucket"}}}}}}},
       {{"action", "set-default-spec"}, {"spec-id", -1}},
       {{"action", "add-sort-order"},
        {"sort-order",
         {{"fields",
           {{{"source-id", 1}, {"transform", "identity"}, {"direction", "asc"}, {"null-order", "nulls-first"}}}}}}},
       {{"action", "set-default-sort-order"}, {"sort-order-id", -1}}});
  ASSERT_OK_AND_ASSIGN(json out, ApplyTableCommit(c));
  EXPECT_EQ(out["schemas"].size(), 2u) << "the equal schema was reused";
  EXPECT_EQ(out["current-schema-id"], 1);
  EXPECT_EQ(out["last-column-id"], 4);
  EXPECT_EQ(out["default-spec-id"], 1);
  EXPECT_EQ(out["partition-specs"][1]["fields"][0]["field-id"], 1000) << "fresh partition field ids from 1000";
  EXPECT_EQ(out["last-partition-id"], 1000);
  EXPECT_EQ(out["default-sort-order-id"], 1) << "a sorted order never takes 0";
}

TEST(TableCommitTest, NoChangeIsTheSameMetadataAndNothingLogged) {
  json m = Created();
  TableCommit c;
  c.current = m;
  c.current_location = "s3://b/ns/_managed/t/metadata/v1.metadata.json";
  c.updates = json::array({{{"action", "set-properties"}, {"updates", {{"owner", "alice"}}}}});
  ASSERT_OK_AND_ASSIGN(json out, ApplyTableCommit(c));
  EXPECT_EQ(out, m);
}

TEST(TableCommitTest, RemovingSnapshotsTakesTheirRefsLogAndStatistics) {
  ASSERT_OK_AND_ASSIGN(json m, Append(Created(), 11, 1, std::nullopt));
  ASSERT_OK_AND_ASSIGN(m, Append(m, 12, 2, 11));
  TableCommit c;
  c.current = m;
  c.updates = json::array({{{"action", "set-snapshot-ref"}, {"ref-name", "old"}, {"type", "tag"}, {"snapshot-id", 11}},
                           {{"action", "set-statistics"},
                            {"statistics",
                             {{"snapshot-id", 11},
                              {"statistics-path", "s3://b/ns/_managed/t/s.puffin"},
                              {"file-size-in-bytes", 1},
                              {"file-footer-size-in-bytes", 1},
                              {"blob-metadata", json::array()}}}},
                           {{"action", "remove-snapshots"}, {"snapshot-ids", {11}}}});
  ASSERT_OK_AND_ASSIGN(json out, ApplyTableCommit(c));
  EXPECT_EQ(out["snapshots"].size(), 1u);
  EXPECT_FALSE(out["refs"].contains("old"));
  EXPECT_EQ(out["statistics"], json::array());
  EXPECT_EQ(out["snapshot-log"].size(), 1u);
  EXPECT_EQ(out["current-snapshot-id"], 12);
  c.current = out;
  c.updates = json::array({{{"action", "remove-schemas"}, {"schema-ids", {0}}}});
  EXPECT_NE(ApplyTableCommit(c).status().message().find("the schema in use (0) cannot be removed"), std::string::npos);
}

TEST(TableCommitTest, TheMetadataLogKeepsTheNewestPreviousVersionsMax) {
  json m = Created();
  m["properties"]["write.metadata.previous-versions-max"] = "2";
  for (int i = 0; i < 4; ++i) {
    TableCommit c;
    c.current = m;
    c.current_location = "s3://b/ns/_managed/t/metadata/v" + std::to_string(i) + ".metadata.json";
    c.updates = json::array({{{"action", "set-properties"}, {"updates", {{"n", std::to_string(i)}}}}});
    c.now_ms = 5000 + i;
    ASSERT_OK_AND_ASSIGN(m, ApplyTableCommit(c));
  }
  ASSERT_EQ(m["metadata-log"].size(), 2u);
  EXPECT_EQ(m["metadata-log"][1]["metadata-file"], "s3://b/ns/_managed/t/metadata/v3.metadata.json");
}

}  // namespace
}  // namespace sediment::iceberg

namespace sediment::iceberg {
namespace {

TEST(TableCommitLocalTest, HadoopsFileSlashFormIsInsideTheTablesFileUriLocation) {
  TableCommit create;
  create.requirements = json::array({{{"type", "assert-create"}}});
  create.updates = CreateUpdates("file:///lake/_managed/t");
  auto m = ApplyTableCommit(create);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  for (const char* list : {"file:/lake/_managed/t/metadata/s.avro", "file:///lake/_managed/t/metadata/s.avro"}) {
    TableCommit c;
    c.current = *m;
    c.updates = json::array({{{"action", "add-snapshot"}, {"snapshot", Snapshot(1, 1, std::nullopt, 2000, list)}}});
    EXPECT_TRUE(ApplyTableCommit(c).ok()) << list;
  }
  TableCommit outside;
  outside.current = *m;
  outside.updates = json::array(
      {{{"action", "add-snapshot"}, {"snapshot", Snapshot(1, 1, std::nullopt, 2000, "file:/lake/_managed/u/s.avro")}}});
  EXPECT_TRUE(IsInvalidArgument(ApplyTableCommit(outside).status()));
}

}  // namespace
}  // namespace sediment::iceberg
