// lakeFS's form of committed metadata: SST files of the table format pebble
// reads, values wrapped as graveler wraps them. (That pebble itself reads
// them is checked by lakeFS's own system tests, TestDownloadMetadataObject.)
#include "catalog/lakefs_sstable.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/table_properties.h>

#include <fstream>

#include "base/crypto.h"
#include "base/test_util.h"
#include "catalog/catalog_testing.h"

namespace sediment::catalog {
namespace {

// Reads back what was made: the records, and the table's properties.
struct ReadBack {
  std::vector<std::pair<std::string, std::string>> records;
  std::shared_ptr<const rocksdb::TableProperties> props;
};

ReadBack Read(const std::string& bytes, const std::string& dir) {
  const std::string path = dir + "/read.sst";
  std::ofstream(path, std::ios::binary) << bytes;
  rocksdb::Options o;
  rocksdb::SstFileReader reader(o);
  EXPECT_TRUE(reader.Open(path).ok());
  EXPECT_TRUE(reader.VerifyChecksum().ok());
  ReadBack out;
  out.props = reader.GetTableProperties();
  std::unique_ptr<rocksdb::Iterator> it(reader.NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next())
    out.records.emplace_back(it->key().ToString(), it->value().ToString());
  return out;
}

// graveler's unwrapping: zig-zag varint lengths.
std::pair<std::string, std::string> Unwrap(std::string_view v) {
  auto part = [&v]() {
    uint64_t n = 0;
    int shift = 0;
    while (!v.empty()) {
      const auto b = static_cast<unsigned char>(v.front());
      v.remove_prefix(1);
      n |= static_cast<uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if (b < 0x80) break;
    }
    EXPECT_EQ(n % 2, 0u) << "a length is never negative";
    std::string out(v.substr(0, n / 2));
    v.remove_prefix(std::min<size_t>(n / 2, v.size()));
    return out;
  };
  std::string identity = part();
  std::string data = part();
  EXPECT_TRUE(v.empty());
  return {identity, data};
}

class LakeFsSstableTest : public fixtures::CatalogFixture {
 protected:
  Namespace Ns() { return *catalog_->RepositoryNamespace(*catalog_->GetRepository("repo")); }
  Result<std::string> Object(const std::string& kind, const std::string& id) {
    return LakeFsMetadataObject(catalog_->ranges(), Ns(), kind, id, dir_.Sub("tmp"));
  }
};

TEST_F(LakeFsSstableTest, AMetaRangeListsItsRangesAndEachRangeItsEntries) {
  for (int i = 0; i < 300; ++i) Put(fmt::format("k/{:04}", i), fmt::format("sum{}", i));
  Commit("many");
  auto head = catalog_->GetCommit("repo", catalog_->GetBranch("repo", "main")->commit_id);
  ASSERT_OK(head.status());
  auto mr = catalog_->ranges().LoadMetaRange(Ns(), head->meta_range_id);
  ASSERT_OK(mr.status());
  ASSERT_GT((*mr)->ranges.size(), 2u) << "small ranges: several";

  auto bytes = Object("meta_range", head->meta_range_id);
  ASSERT_OK(bytes.status());
  auto meta = Read(*bytes, dir_.Sub("tmp"));
  // The table pebble opens: the bytewise comparator; a RocksDB footer (53
  // bytes: checksum type, handles, version, magic) of version 2 with CRC32c.
  EXPECT_EQ(meta.props->comparator_name, "leveldb.BytewiseComparator");
  EXPECT_EQ(meta.props->user_collected_properties.at("type"), "metaranges");
  const std::string& b = *bytes;
  ASSERT_GT(b.size(), 53u);
  EXPECT_EQ(b.substr(b.size() - 8), std::string("\xf7\xcf\xf4\x85\xb7\x41\xe2\x88", 8)) << "RocksDB's magic";
  EXPECT_EQ(b.substr(b.size() - 12, 4), std::string("\x02\x00\x00\x00", 4)) << "footer version 2";
  EXPECT_EQ(b[b.size() - 53], 1) << "CRC32c";
  ASSERT_EQ(meta.records.size(), (*mr)->ranges.size());
  int64_t total = 0;
  for (size_t i = 0; i < meta.records.size(); ++i) {
    const auto& r = (*mr)->ranges[i];
    EXPECT_EQ(meta.records[i].first, r.max_key);
    auto [identity, data] = Unwrap(meta.records[i].second);
    EXPECT_EQ(identity, r.id);
    // RangeData: min_key (1), max_key (2), estimated_size (3), count (4).
    EXPECT_EQ(data.substr(0, 2), std::string("\x0a") + static_cast<char>(r.min_key.size()));
    EXPECT_NE(data.find(r.max_key), std::string::npos);
    total += r.count;

    auto range = Object("range", identity);
    ASSERT_OK(range.status());
    auto rows = Read(*range, dir_.Sub("tmp"));
    EXPECT_EQ(rows.props->user_collected_properties.at("type"), "ranges");
    ASSERT_EQ(static_cast<int64_t>(rows.records.size()), r.count);
    EXPECT_EQ(rows.records.front().first, r.min_key);
    EXPECT_EQ(rows.records.back().first, r.max_key);
    auto [entry_identity, entry] = Unwrap(rows.records.front().second);
    auto stored = catalog_->GetEntry("repo", "main", r.min_key);
    ASSERT_OK(stored.status());
    EXPECT_EQ(entry_identity, LakeFsEntryIdentity(*stored));
    // Entry: address (1) first, the e_tag (4) inside, address_type RELATIVE (6 = 1).
    EXPECT_EQ(entry.substr(2, stored->address.size()), stored->address);
    EXPECT_NE(entry.find(stored->checksum), std::string::npos);
    EXPECT_NE(entry.find(std::string("\x30\x01", 2)), std::string::npos);
  }
  EXPECT_EQ(total, 300);
}

TEST(LakeFsEntryIdentityTest, IsLakeFsTypedSha256) {
  // Computed by hand from lakeFS's pkg/ident: typed fields, int64s big-endian.
  Entry e;
  e.size = 42;
  e.checksum = "etag1";
  e.metadata = {{"b", "2"}, {"a", "1"}};
  e.content_type = "text/csv";
  e.address = "data/ignored";
  e.mtime = 7;
  EXPECT_EQ(Hex(LakeFsEntryIdentity(e)), "60f988142d9a15b8270e293180e0ec85c29b6af4161f275d5fc691d143246be8");
  Entry bare;
  bare.checksum = "x";  // no content type: left out, as lakeFS's old entries
  EXPECT_EQ(Hex(LakeFsEntryIdentity(bare)), "340fdefeeb5fa7b89d0586470ff58dcb3180fa810169a6bcde912e7904662060");
}

TEST_F(LakeFsSstableTest, AnotherRepositorysFilesAreNotServedThroughThisOne) {
  // Repository "other" in a namespace of its own; its meta-range read once
  // (so the shared range cache holds it) is still not this repository's.
  Put("a", "x");
  Commit("one");
  ASSERT_OK(catalog_->CreateRepository("other", dir_.Sub("ns-other"), "main", false).status());
  ASSERT_OK(catalog_->PutEntry("other", "main", "secret", fixtures::MakeEntry("s")));
  CommitParams p;
  p.message = "theirs";
  auto theirs = catalog_->CommitBranch("other", "main", p);
  ASSERT_OK(theirs.status());
  auto other_ns = *catalog_->RepositoryNamespace(*catalog_->GetRepository("other"));
  ASSERT_OK(LakeFsMetadataObject(catalog_->ranges(), other_ns, "meta_range", theirs->meta_range_id, dir_.Sub("tmp"))
                .status());
  auto through_mine = Object("meta_range", theirs->meta_range_id);
  EXPECT_TRUE(IsNotFound(through_mine.status())) << through_mine.status().ToString();
}

TEST_F(LakeFsSstableTest, ABadKindOrIdIsRefusedAndTheOtherKindIsNotFound) {
  Put("a", "x");
  Commit("one");
  auto head = catalog_->GetCommit("repo", catalog_->GetBranch("repo", "main")->commit_id);
  ASSERT_OK(head.status());
  EXPECT_TRUE(IsInvalidArgument(Object("tree", head->meta_range_id).status()));
  EXPECT_TRUE(IsInvalidArgument(Object("range", "../../etc/passwd").status()));
  EXPECT_TRUE(IsInvalidArgument(Object("range", std::string(64, 'G')).status()));
  EXPECT_TRUE(IsNotFound(Object("meta_range", std::string(64, 'a')).status()));
  auto mr = catalog_->ranges().LoadMetaRange(Ns(), head->meta_range_id);
  ASSERT_OK(mr.status());
  auto as_range = Object("range", head->meta_range_id);
  EXPECT_TRUE(IsNotFound(as_range.status())) << as_range.status().ToString();
  auto as_meta = Object("meta_range", (*mr)->ranges.front().id);
  EXPECT_TRUE(IsNotFound(as_meta.status())) << as_meta.status().ToString();
}

}  // namespace
}  // namespace sediment::catalog
