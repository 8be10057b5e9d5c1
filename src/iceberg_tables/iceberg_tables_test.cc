#include <arrow/io/interfaces.h>
#include <arrow/util/key_value_metadata.h>
#include <avro.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "iceberg/manifests.h"
#include "iceberg/schema.h"
#include "iceberg_tables/catalog.h"
#include "table/stored_types.h"
#include "table/table_test_fixture_internal.h"

namespace sediment::iceberg {
namespace {

using nlohmann::json;

// Every record of an Avro container file, read back with avro-c's own file reader, as JSON.
std::vector<json> ReadAvro(const std::string& path) {
  std::vector<json> out;
  avro_file_reader_t reader;
  EXPECT_EQ(avro_file_reader(path.c_str(), &reader), 0) << avro_strerror();
  avro_schema_t schema = avro_file_reader_get_writer_schema(reader);
  avro_value_iface_t* iface = avro_generic_class_from_schema(schema);
  avro_value_t value;
  avro_generic_value_new(iface, &value);
  while (avro_file_reader_read_value(reader, &value) == 0) {
    char* text = nullptr;
    avro_value_to_json(&value, 1, &text);
    out.push_back(json::parse(text));
    free(text);
  }
  avro_value_decref(&value);
  avro_value_iface_decref(iface);
  avro_file_reader_close(reader);
  return out;
}

TEST(IcebergSchemaTest, TypesFieldIdsAndNameMapping) {
  auto schema = arrow::schema(
      {arrow::field("block_num", arrow::uint64(), false), arrow::field("tx_index", arrow::uint32(), false),
       arrow::field("hash", arrow::fixed_size_binary(32), false), arrow::field("data", arrow::binary(), true),
       arrow::field("access_list", arrow::list(arrow::struct_({arrow::field("address", arrow::utf8())})))});
  auto s = ToIcebergSchema(*schema);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  json j = json::parse(s->json);
  EXPECT_EQ(j["fields"][0], json::parse(R"({"id":1,"name":"block_num","required":true,"type":"long"})"));
  EXPECT_EQ(j["fields"][1]["type"], "long") << "uint32 does not fit Iceberg's int";
  EXPECT_EQ(j["fields"][2]["type"], "fixed[32]");
  EXPECT_EQ(j["fields"][3]["required"], false);
  EXPECT_EQ(j["fields"][4]["type"]["element-id"], 6);
  EXPECT_EQ(j["fields"][4]["type"]["element"]["fields"][0]["id"], 7);
  EXPECT_EQ(s->last_column_id, 7);
  json mapping = json::parse(s->name_mapping);
  EXPECT_EQ(mapping[4]["fields"][0]["fields"][0], json::parse(R"({"field-id":7,"names":["address"]})"));
  auto bad = ToIcebergSchema(*arrow::schema({arrow::field("x", arrow::null())}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("column x has type null"), std::string::npos) << bad.status().message();
}

TEST(IcebergSchemaTest, AnAddedColumnTakesNewIdsAndNoIdChanges) {
  auto v1 = arrow::schema(
      {arrow::field("block_num", arrow::uint64(), false), arrow::field("tags", arrow::list(arrow::utf8()))});
  auto v2 = arrow::schema({v1->field(0), v1->field(1),
                           arrow::field("t", arrow::timestamp(arrow::TimeUnit::NANO, "+00:00"), true,
                                        arrow::key_value_metadata({"sediment.store_micros"}, {"true"})),
                           arrow::field("keys", arrow::list(arrow::fixed_size_binary(32)))});
  auto one = ToIcebergSchema(*v1);
  auto both = ToIcebergSchema({v1, v2}, std::string(table::kStoreMicrosKey));
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  ASSERT_EQ(both->schemas.size(), 2u);
  EXPECT_EQ(both->schema_id, 1);
  json first = json::parse(both->schemas[0]), second = json::parse(both->schemas[1]);
  EXPECT_EQ(first, json::parse(one->json)) << "version 1's ids are what they were before the change";
  EXPECT_EQ(first["schema-id"], 0);
  EXPECT_EQ(second["schema-id"], 1);
  EXPECT_EQ(second["fields"][1]["type"]["element-id"], 3) << "the nested id stays";
  EXPECT_EQ(second["fields"][2]["id"], 4);
  EXPECT_EQ(second["fields"][2]["type"], "timestamptz") << "nanoseconds are stored as microseconds";
  EXPECT_EQ(second["fields"][3]["id"], 5);
  EXPECT_EQ(second["fields"][3]["type"]["element-id"], 6);
  EXPECT_EQ(both->last_column_id, 6);
  EXPECT_EQ(both->columns[2].bounds, BoundKind::kInt64);
}

TEST(IcebergSchemaTest, FixedBinaryStoredAsBinaryIsBinaryWithBounds) {
  auto marked = arrow::key_value_metadata({std::string(table::kStoreBinaryKey)}, {"true"});
  auto schema = arrow::schema({arrow::field("block_num", arrow::uint64(), false),
                               arrow::field("address", arrow::fixed_size_binary(20), false, marked),
                               arrow::field("raw", arrow::fixed_size_binary(20), false)});
  auto s = ToIcebergSchema({schema}, std::string(table::kStoreMicrosKey), std::string(table::kStoreBinaryKey));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  json fields = json::parse(s->json)["fields"];
  EXPECT_EQ(fields[1]["type"], "binary") << "what the files store (table/stored_types.h)";
  EXPECT_EQ(fields[2]["type"], "fixed[20]") << "unmarked: stored as FIXED_LEN_BYTE_ARRAY";
  EXPECT_EQ(s->columns[1].bounds, BoundKind::kBytes) << "20-byte values: exact bounds";
}

TEST(IcebergManifestTest, ReadsBackWithAvroC) {
  sediment::testing::TempDir dir;
  DataFile f{"tables/a/b/1.parquet", "file:///x/1.parquet", "1", 10, 19, "ab", 30, 1234, {}};
  f.columns[1] = {100, 30, 0, std::string("\x0a\0\0\0\0\0\0\0", 8), std::string("\x13\0\0\0\0\0\0\0", 8)};
  f.columns[2] = {50, 30, -1, std::nullopt, std::nullopt};
  auto bytes = WriteManifest({{EntryStatus::kAdded, 7, 3, f}}, R"({"type":"struct","fields":[]})", 0);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  std::ofstream(dir.Sub("m.avro"), std::ios::binary) << *bytes;
  auto rows = ReadAvro(dir.Sub("m.avro"));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["status"], 1);
  EXPECT_EQ(rows[0]["snapshot_id"]["long"], 7);
  EXPECT_EQ(rows[0]["data_file"]["file_path"], "file:///x/1.parquet");
  EXPECT_EQ(rows[0]["data_file"]["record_count"], 30);
  EXPECT_EQ(rows[0]["data_file"]["null_value_counts"]["array"].size(), 1u) << "an unknown null count is left out";
  EXPECT_NE(bytes->find("\"field-id\":125"), std::string::npos) << "the header keeps Iceberg's field ids";
  EXPECT_NE(bytes->find("format-version"), std::string::npos);

  auto list = WriteManifestList({{"file:///m.avro", 99, 7, 3, 1, 1, 0, 0, 30, 0, 0}}, 7, std::nullopt, 3);
  ASSERT_TRUE(list.ok());
  std::ofstream(dir.Sub("l.avro"), std::ios::binary) << *list;
  auto lrows = ReadAvro(dir.Sub("l.avro"));
  ASSERT_EQ(lrows.size(), 1u);
  EXPECT_EQ(lrows[0]["manifest_length"], 99);
  EXPECT_EQ(lrows[0]["added_rows_count"], 30);
}

class IcebergCatalogTest : public table::TableServiceTest {
 protected:
  void SetUp() override {
    TableServiceTest::SetUp();
    Create();
    NewCatalog(512);
  }
  void NewCatalog(size_t max_manifest_files) {
    IcebergOptions o;
    o.objects_uri = "file://" + dir_.Sub("objects");
    o.retention = std::chrono::seconds(60);
    o.max_manifest_files = max_manifest_files;
    catalog_ = std::make_unique<IcebergCatalog>(service_.get(), kv_, faulty_, clock_, nullptr, o);
  }
  std::string Local(const std::string& uri) { return uri.substr(std::string("file://").size()); }

  // Segment ids of the data files the current snapshot reads, from its manifest list and manifests.
  std::set<std::string> FilesOfCurrent() {
    auto loaded = catalog_->Load(id_);
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    json m = json::parse(loaded->metadata);
    std::set<std::string> out;
    for (const auto& s : m["snapshots"]) {
      if (s["snapshot-id"] != m["current-snapshot-id"]) continue;
      for (const auto& mf : ReadAvro(Local(s["manifest-list"]))) {
        for (const auto& e : ReadAvro(Local(mf["manifest_path"]))) {
          if (e["status"] == 2) continue;
          std::string path = e["data_file"]["file_path"];
          out.insert(path.substr(path.rfind('/') + 1, path.size() - path.rfind('/') - 9));
        }
      }
    }
    return out;
  }
  std::set<std::string> LiveIds() {
    std::set<std::string> out;
    for (const auto& s : Live()) out.insert(s.id);
    return out;
  }

  std::unique_ptr<IcebergCatalog> catalog_;
};

TEST_F(IcebergCatalogTest, EachChangeIsASnapshotWithItsOperation) {
  auto empty = catalog_->Load(id_);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(json::parse(empty->metadata)["current-snapshot-id"], -1) << "a table with no file has no snapshot";

  ASSERT_TRUE(Append(0, 9, 0).ok());
  auto p = catalog_->Publish(id_);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->operation, "append");
  EXPECT_FALSE(catalog_->Publish(id_)->published) << "nothing changed, no snapshot";
  ASSERT_TRUE(Append(10, 19, 0).ok());
  EXPECT_EQ(catalog_->Publish(id_)->operation, "append");
  EXPECT_EQ(FilesOfCurrent(), LiveIds());

  ASSERT_TRUE(service_->CompactNow(id_).ok());
  ASSERT_EQ(Live().size(), 1u) << "the two files merged";
  auto replace = catalog_->Publish(id_);
  EXPECT_EQ(replace->operation, "replace") << "same rows, other files";
  EXPECT_EQ(FilesOfCurrent(), LiveIds());

  ASSERT_TRUE(Append(15, 25, 1, 0).ok());  // a reorg from block 15
  EXPECT_EQ(catalog_->Publish(id_)->operation, "overwrite");
  EXPECT_EQ(FilesOfCurrent(), LiveIds());

  json m = json::parse(catalog_->Load(id_)->metadata);
  ASSERT_EQ(m["snapshots"].size(), 4u);
  EXPECT_EQ(m["snapshots"][2]["summary"]["deleted-data-files"], "2");
  EXPECT_EQ(m["snapshots"][2]["summary"]["total-records"], "60");
  EXPECT_EQ(m["snapshots"][3]["parent-snapshot-id"], m["snapshots"][2]["snapshot-id"]);
  EXPECT_EQ(m["refs"]["main"]["snapshot-id"], m["current-snapshot-id"]);
}

TEST_F(IcebergCatalogTest, AnAppendRewritesOnlyTheManifestThatOwnsItsBlocks) {
  NewCatalog(8);
  for (uint64_t b = 0; b < 40; ++b) ASSERT_TRUE(Append(b, b, 0).ok());
  ASSERT_TRUE(catalog_->Publish(id_).ok());
  ASSERT_TRUE(Append(40, 40, 0).ok());
  auto p = catalog_->Publish(id_);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->manifests_written, 1);
  EXPECT_GE(p->manifests_kept, 8) << "40 files in manifests of at most 8: the others are reused";
  EXPECT_EQ(FilesOfCurrent(), LiveIds());
}

TEST_F(IcebergCatalogTest, ASnapshotIsListedUntilGcMayDeleteItsFiles) {
  ASSERT_TRUE(Append(0, 9, 0).ok());
  ASSERT_TRUE(Append(10, 19, 0).ok());
  ASSERT_TRUE(catalog_->Publish(id_).ok());
  json before = json::parse(catalog_->Load(id_)->metadata);
  ASSERT_TRUE(service_->CompactNow(id_).ok());
  ASSERT_TRUE(catalog_->Publish(id_).ok());
  clock_->Advance(std::chrono::seconds(59));
  EXPECT_EQ(json::parse(catalog_->Load(id_)->metadata)["snapshots"].size(), 2u) << "within the grace period";
  ASSERT_TRUE(catalog_->Collect(id_).ok());
  for (const auto& mf : ReadAvro(Local(before["snapshots"][0]["manifest-list"]))) {
    EXPECT_TRUE(std::filesystem::exists(Local(mf["manifest_path"]))) << "the old snapshot still reads";
  }
  clock_->Advance(std::chrono::seconds(2));
  json after = json::parse(catalog_->Load(id_)->metadata);
  ASSERT_EQ(after["snapshots"].size(), 1u) << "past it, only the current snapshot is listed";
  auto deleted = catalog_->Collect(id_);
  ASSERT_TRUE(deleted.ok());
  EXPECT_GE(*deleted, 2) << "the old manifest list and its replaced manifest";
  EXPECT_FALSE(std::filesystem::exists(Local(before["snapshots"][0]["manifest-list"])));
  EXPECT_EQ(FilesOfCurrent(), LiveIds());
}

TEST_F(IcebergCatalogTest, AReorgOfAsManyBlocksAndRowsIsNoReplace) {
  ASSERT_TRUE(Append(0, 9, 0).ok());
  ASSERT_TRUE(catalog_->Publish(id_).ok());
  ASSERT_TRUE(Append(5, 9, 1, 0).ok());  // blocks 5..9 again, another fork: same rows, same ends
  auto p = catalog_->Publish(id_);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->operation, "overwrite") << "readers of changes must not skip a reorg as a mere swap";
}

TEST_F(IcebergCatalogTest, TheTableUuidIsFixedFromTheStart) {
  json empty = json::parse(catalog_->Load(id_)->metadata);
  ASSERT_TRUE(Append(0, 9, 0).ok());
  json first = json::parse(catalog_->Load(id_)->metadata);
  EXPECT_EQ(empty["table-uuid"], first["table-uuid"]) << "Spark refuses a table whose uuid changed";
  EXPECT_EQ(std::string(first["table-uuid"]).size(), 36u);
}

TEST_F(IcebergCatalogTest, PublishingLateNeverListsASnapshotWhoseFilesAreGone) {
  ASSERT_TRUE(Append(0, 9, 0).ok());
  ASSERT_TRUE(Append(10, 19, 0).ok());
  ASSERT_TRUE(catalog_->Publish(id_).ok());
  ASSERT_TRUE(service_->CompactNow(id_).ok());
  // Nobody publishes for longer than the grace period, and GC deletes the merged-away files.
  clock_->Advance(std::chrono::seconds(61));
  ASSERT_TRUE(service_->RunGc(id_).ok());
  ASSERT_TRUE(catalog_->Publish(id_).ok());
  json m = json::parse(catalog_->Load(id_)->metadata);
  ASSERT_EQ(m["snapshots"].size(), 1u) << "the snapshot that named the deleted files is not listed";
  EXPECT_EQ(FilesOfCurrent(), LiveIds());
  ASSERT_TRUE(catalog_->Collect(id_).ok());
  EXPECT_EQ(json::parse(catalog_->Load(id_)->metadata)["snapshots"].size(), 1u);
}

TEST_F(IcebergCatalogTest, TheSweepDeletesOnlyMetadataFilesNothingNames) {
  ASSERT_TRUE(Append(0, 9, 0).ok());
  ASSERT_TRUE(Append(10, 19, 0).ok());
  ASSERT_TRUE(catalog_->Publish(id_).ok());
  ASSERT_TRUE(service_->CompactNow(id_).ok());
  ASSERT_TRUE(catalog_->Publish(id_).ok());
  auto stray = faulty_->OpenWriter(IcebergCatalog::MetadataPrefix(id_) + "000009-0-dead-m.avro");
  ASSERT_TRUE(stray.ok());
  ASSERT_TRUE((*stray)->Write("x", 1).ok());
  ASSERT_TRUE((*stray)->Close().ok());
  std::set<std::string> before = FilesOfCurrent();
  auto swept = catalog_->SweepOrphans(id_, TimePoint::max());  // however old
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  EXPECT_EQ(*swept, 1) << "the stray file only: the superseded snapshot's list and manifest are still named";
  EXPECT_EQ(FilesOfCurrent(), before);
  json m = json::parse(catalog_->Load(id_)->metadata);
  for (const auto& s : m["snapshots"]) EXPECT_TRUE(std::filesystem::exists(Local(s["manifest-list"])));
}

}  // namespace
}  // namespace sediment::iceberg
