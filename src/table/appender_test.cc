// The rules of appends (appender.h): a segment continues the head or is a
// reorg proven against a stored block hash within max_reorg_depth; anything
// else is refused and changes nothing.
#include "table/appender.h"

#include <gtest/gtest.h>

#include "table/table_test_fixture_internal.h"

namespace sediment::table {
namespace {

class AppenderTest : public TableServiceTest {
 protected:
  // Every KV record and stored file: what "nothing changed" compares.
  std::pair<std::map<std::string, std::string>, std::set<std::string>> State() {
    std::map<std::string, std::string> kv;
    EXPECT_TRUE(kv_->ScanAll("", "",
                             [&](const kv::KeyValue& e) -> Result<bool> {
                               kv[e.key] = e.value;
                               return true;
                             })
                    .ok());
    return {kv, Stored()};
  }

  Result<AppendResult> AppendRaw(AppendRequest req, int fork, bool force = false) {
    req.force = force;
    auto reader = Reader({Rows(req.start_block, req.end_block, fork)});
    return service_->Append(id_, req, reader.get());
  }
};

// Seen by trying: 40 one-block segments, a compaction, then one append at
// block 10 whose parent hash matches nothing was accepted and dropped 59 rows.
TEST_F(AppenderTest, AReorgWhoseParentMatchesNoStoredHashIsRefusedAndChangesNothing) {
  Create();
  for (uint64_t b = 0; b < 40; ++b) ASSERT_TRUE(Append(b, b, 0, -1, 2).ok());
  ASSERT_TRUE(service_->CompactNow(id_).ok());
  ASSERT_LT(Live().size(), 40u) << "the reorg must reach into a merged file";
  auto before = State();
  std::string bogus(64, 'e');
  auto r = AppendRaw(AppendRequest{10, 10, Hash(10, 1), bogus}, 1);
  ASSERT_TRUE(IsConflict(r.status())) << r.status().ToString();
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("block 9"), std::string::npos) << msg;
  EXPECT_NE(msg.find(bogus), std::string::npos) << msg;
  EXPECT_NE(msg.find(Hash(9, 0)), std::string::npos) << "names the stored hash: " << msg;
  EXPECT_EQ(State(), before) << "KV and storage byte for byte the same";
  EXPECT_EQ(ReadRows().size(), 80u);
  EXPECT_EQ(Metric("table_reorgs_total"), 0);
}

TEST_F(AppenderTest, AProvenReorgFromInsideAMergedFileIsAccepted) {
  Create();
  for (uint64_t b = 0; b < 40; ++b) ASSERT_TRUE(Append(b, b, 0, -1, 2).ok());
  ASSERT_TRUE(service_->CompactNow(id_).ok());
  auto r = Append(10, 10, 1, 0, 2);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->reorg);
  EXPECT_EQ(ReadRows().size(), 22u);
}

TEST_F(AppenderTest, AReorgDeeperThanTheWindowNeedsForce) {
  config_.writer.max_reorg_depth = 5;
  Restart();
  Create();
  for (uint64_t b = 0; b < 20; ++b) ASSERT_TRUE(Append(b, b, 0).ok());
  auto before = State();
  // Blocks 10..19 are 10 deep: the hash of block 9 would prove it, but the
  // window is 5 blocks.
  auto r = AppendRaw(AppendRequest{10, 12, Hash(12, 1), Hash(9, 0)}, 1);
  ASSERT_TRUE(IsConflict(r.status())) << r.status().ToString();
  EXPECT_NE(r.status().message().find("max_reorg_depth 5"), std::string::npos) << r.status().message();
  EXPECT_EQ(State(), before);
  // Within the window: fine.
  ASSERT_TRUE(AppendRaw(AppendRequest{16, 19, Hash(19, 1), Hash(15, 0)}, 1).ok());
  // With force, deeper is accepted, logged and counted.
  r = AppendRaw(AppendRequest{10, 12, Hash(12, 2), Hash(9, 0)}, 2, /*force=*/true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->reorg);
  EXPECT_EQ(Live().back().end, 12u);
  EXPECT_EQ(Metric("table_forced_reorgs_total"), 1);
  EXPECT_EQ(Metric("table_reorgs_total"), 2);
}

TEST_F(AppenderTest, AReorgWhereNoHashIsStoredNeedsForce) {
  Create();
  // One ten-block segment without per-block hashes: only block 9's hash and
  // the parent of block 0 are known.
  ASSERT_TRUE(AppendRaw(AppendRequest{0, 9, Hash(9, 0), Hash(-1, 0)}, 0).ok());
  auto before = State();
  auto r = AppendRaw(AppendRequest{5, 9, Hash(9, 1), Hash(4, 0)}, 1);
  ASSERT_TRUE(IsConflict(r.status())) << r.status().ToString();
  EXPECT_NE(r.status().message().find("no stored hash of block 4"), std::string::npos) << r.status().message();
  EXPECT_EQ(State(), before);
  r = AppendRaw(AppendRequest{5, 9, Hash(9, 1), Hash(4, 0)}, 1, /*force=*/true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->rewritten.has_value());
  EXPECT_EQ(r->rewritten->end, 4u);
}

TEST_F(AppenderTest, AnAppendBeforeTheFirstBlockNeedsForce) {
  Create();
  ASSERT_TRUE(AppendRaw(AppendRequest{10, 19, Hash(19, 0), Hash(9, 0)}, 0).ok());
  auto before = State();
  auto r = AppendRaw(AppendRequest{5, 12, Hash(12, 0), Hash(4, 0)}, 0);
  ASSERT_TRUE(IsConflict(r.status())) << r.status().ToString();
  EXPECT_NE(r.status().message().find("before the table's first block 10"), std::string::npos) << r.status().message();
  EXPECT_EQ(State(), before);
  ASSERT_TRUE(AppendRaw(AppendRequest{5, 12, Hash(12, 0), Hash(4, 0)}, 0, /*force=*/true).ok());
  EXPECT_EQ(Live().front().start, 5u);
}

TEST_F(AppenderTest, AReorgAtTheFirstBlockIsProvenByItsParent) {
  Create();
  ASSERT_TRUE(Append(0, 9, 0).ok());
  auto before = State();
  auto r = Append(0, 3, 1, 1);  // another parent of block 0: another chain
  ASSERT_TRUE(IsConflict(r.status())) << r.status().ToString();
  EXPECT_NE(r.status().message().find("the parent of block 0"), std::string::npos) << r.status().message();
  EXPECT_EQ(State(), before);
  ASSERT_TRUE(Append(0, 3, 1, 0).ok());
}

TEST_F(AppenderTest, BadBlockHashesAreRefusedBeforeAnythingIsWritten) {
  Create();
  auto req = AppendRequest{0, 1, Hash(1, 0), Hash(-1, 0)};
  req.block_hashes = {Hash(0, 0), Hash(1, 0), Hash(2, 0)};
  auto r = AppendRaw(req, 0);
  ASSERT_TRUE(IsInvalidArgument(r.status())) << r.status().ToString();
  EXPECT_NE(r.status().message().find("3 hashes but the segment [0, 1] has 2 blocks"), std::string::npos);
  req.block_hashes = {Hash(0, 0), Hash(1, 1)};
  r = AppendRaw(req, 0);
  ASSERT_TRUE(IsInvalidArgument(r.status())) << r.status().ToString();
  EXPECT_NE(r.status().message().find("is not end_hash"), std::string::npos) << r.status().message();
  req.block_hashes = {"not hex", Hash(1, 0)};
  r = AppendRaw(req, 0);
  ASSERT_TRUE(IsInvalidArgument(r.status())) << r.status().ToString();
  EXPECT_NE(r.status().message().find("block_hashes[0]"), std::string::npos) << r.status().message();
  EXPECT_TRUE(Stored().empty());
  EXPECT_TRUE(Live().empty());
}

TEST_F(AppenderTest, HashesThatLeaveTheWindowArePrunedByGc) {
  config_.writer.max_reorg_depth = 4;
  Restart();
  Create();
  for (uint64_t b = 0; b < 10; ++b) ASSERT_TRUE(Append(b, b, 0).ok());
  ASSERT_TRUE(service_->RunGc(id_).ok());
  TableRegistry reg(kv_);
  auto kept = reg.HashesFrom(id_, 0);
  ASSERT_TRUE(kept.ok());
  std::vector<uint64_t> blocks;
  for (const auto& [block, hash] : *kept) blocks.push_back(block);
  EXPECT_EQ(blocks, (std::vector<uint64_t>{5, 6, 7, 8, 9})) << "a reorg 4 deep (from block 6) needs block 5";
}

// A stream's cursor on the abandoned fork finds where the chains part.
TEST_F(AppenderTest, AReorgKeepsTheHashesItReplacedUntilTheyLeaveTheWindow) {
  config_.writer.max_reorg_depth = 4;
  Restart();
  Create();
  for (uint64_t b = 0; b < 10; ++b) ASSERT_TRUE(Append(b, b, 0).ok());
  ASSERT_TRUE(Append(8, 9, 1, 0).ok());
  TableRegistry reg(kv_);
  for (uint64_t b : {8, 9}) {
    auto gone = reg.Abandoned(id_, Hash(b, 0));
    ASSERT_TRUE(gone.ok() && gone->has_value()) << b;
    EXPECT_EQ((*gone)->block, b);
    EXPECT_EQ((*gone)->ancestor, std::optional<uint64_t>(7));
  }
  auto canonical = reg.Abandoned(id_, Hash(9, 1));
  ASSERT_TRUE(canonical.ok());
  EXPECT_FALSE(canonical->has_value());
  // Blocks 20 on: 8 and 9 leave the window, and their abandoned twins with them.
  for (uint64_t b = 10; b < 20; ++b) ASSERT_TRUE(Append(b, b, 1).ok());
  ASSERT_TRUE(service_->RunGc(id_).ok());
  auto pruned = reg.Abandoned(id_, Hash(9, 0));
  ASSERT_TRUE(pruned.ok());
  EXPECT_FALSE(pruned->has_value());
}

// Two servers appending the first segments of an empty table: without a
// precondition on the live set both landed, overlapping.
TEST_F(AppenderTest, TheFirstAppendRequiresTheTableStillEmpty) {
  Create();
  TableRegistry reg(kv_);
  auto snap = reg.TakeSnapshot(id_);
  ASSERT_TRUE(snap.ok());
  ASSERT_TRUE(snap->segments.empty());
  auto seg = [](uint64_t start, uint64_t end) {
    SegmentRecord s;
    s.id = fmt::format("{}-{}", start, end);
    s.path = "x/" + s.id;
    s.start = start;
    s.end = end;
    return s;
  };
  LiveSetChange a, b;
  a.add = {seg(0, 9)};
  a.expect_version = snap->state.token;
  b.add = {seg(5, 12)};
  b.expect_version = snap->state.token;
  ASSERT_TRUE(reg.Commit(id_, a, clock_->Now()).ok());
  EXPECT_TRUE(IsPreconditionFailed(reg.Commit(id_, b, clock_->Now()).status()));
  EXPECT_EQ(reg.TakeSnapshot(id_)->segments.size(), 1u);
}

}  // namespace
}  // namespace sediment::table

namespace sediment::table {
namespace {

// Found in review: the window kept D blocks' hashes but a reorg D deep needs
// the hash of the block before them, which GC pruned after a merge.
TEST_F(AppenderTest, AReorgExactlyMaxReorgDepthDeepIsProvenAfterAMerge) {
  config_.writer.max_reorg_depth = 4;
  Restart();
  Create();
  for (uint64_t b = 0; b < 10; ++b) ASSERT_TRUE(Append(b, b, 0).ok());
  ASSERT_TRUE(service_->CompactNow(id_).ok());  // one merged file: block 5 is no segment end
  ASSERT_TRUE(service_->RunGc(id_).ok());
  auto r = Append(6, 9, 1, 0);  // replaces 6..9: 4 blocks deep
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->reorg);
}

}  // namespace
}  // namespace sediment::table
