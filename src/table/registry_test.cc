// The registry's incremental records (registry.h): the state record stays
// equal to the live set through every kind of change, block-range snapshots
// hold exactly the overlapping segments, and an append reads the same number
// of records whatever the number of live files.
#include "table/registry.h"

#include <gtest/gtest.h>

#include <mutex>
#include <random>
#include <set>

#include "base/failpoint.h"
#include "kv/counting_kv_testing.h"
#include "kv/hooked_kv_testing.h"
#include "table/keys.h"
#include "table/table_test_fixture_internal.h"

namespace sediment::table {
namespace {

using kv::CountingKv;

class RegistryTest : public TableServiceTest {};

TEST_F(RegistryTest, TheStateFollowsTheLiveSetThroughAppendsReorgsMergesGcAndRestarts) {
  config_.writer.max_reorg_depth = 20;
  Restart();
  Create();
  Live();  // an empty table
  for (uint64_t b = 0; b < 30; ++b) {
    ASSERT_TRUE(Append(b, b, 0).ok());
    Live();
  }
  ASSERT_TRUE(service_->CompactNow(id_).ok());
  ASSERT_LT(Live().size(), 30u);
  auto r = Append(25, 27, 1, 0);  // a reorg into the merged tail, which is rewritten
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->reorg);
  Live();
  ASSERT_TRUE(Append(28, 31, 1).ok());
  Live();
  r = Append(0, 4, 2, 9);  // forced from the table's first block: every file replaced
  ASSERT_FALSE(r.ok());
  AppendRequest forced{0, 4, Hash(4, 2), Hash(static_cast<uint64_t>(-1), 2), {}, true};
  auto reader = Reader({Rows(0, 4, 2)});
  ASSERT_TRUE(service_->Append(id_, forced, reader.get()).ok());
  auto live = Live();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live.front().end, 4u);
  for (uint64_t b = 5; b < 40; ++b) ASSERT_TRUE(Append(b, b, 2).ok());
  ASSERT_TRUE(service_->CompactNow(id_).ok());
  clock_->AdvanceSeconds(3600);
  ASSERT_TRUE(service_->RunGc(id_).ok());
  Restart();
  live = Live();
  ExpectContiguous(live);
  EXPECT_EQ(ReadRows().size(), 40u * 3);
}

// A change that lands between another's read of the state and its batch:
// both land (the second is applied to the new state), and the state adds up.
TEST_F(RegistryTest, AChangeBesideAnotherIsAppliedOnTheNewState) {
  auto hooked = std::make_shared<kv::HookedKv>(kv_);
  kv_ = hooked;
  Restart();
  Create();
  for (uint64_t b = 0; b < 6; ++b) ASSERT_TRUE(Append(b, b, 0).ok());
  auto live = Live();
  TableRegistry reg(hooked);
  // Just before the next append's batch, a swap of the first two files lands.
  bool swapped = false;
  hooked->BeforeWrite(kv::HookedKv::Prefix("t/seg/eth/logs/00000000000000000006"), [&] {
    SegmentRecord merged = live[0];
    merged.id = NewSegmentId(0);
    merged.path = TableRegistry::SegmentPath(id_, merged.id);
    merged.end = live[1].end;
    merged.end_hash = live[1].end_hash;
    merged.rows = live[0].rows + live[1].rows;
    merged.bytes = live[0].bytes + live[1].bytes;
    merged.stored_bytes = live[0].stored_bytes + live[1].stored_bytes;
    LiveSetChange swap;
    swap.remove = {live[0], live[1]};
    swap.add = {merged};
    swapped = reg.Commit(id_, swap, clock_->Now()).ok();
  });
  ASSERT_TRUE(Append(6, 6, 0).ok());
  EXPECT_TRUE(swapped);
  live = Live();
  ASSERT_EQ(live.size(), 6u);
  EXPECT_EQ(live.front().end, 1u);
  EXPECT_EQ(live.back().start, 6u);
}

TEST_F(RegistryTest, ARangeSnapshotHoldsExactlyTheSegmentsThatOverlapIt) {
  Create();
  for (uint64_t b = 10; b < 70; b += 3) ASSERT_TRUE(Append(b, b + 2, 0).ok());
  auto all = Live();
  TableRegistry reg(kv_);
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    uint64_t from = rng() % 90, to = from + rng() % 20;
    auto snap = reg.TakeSnapshot(id_, from, to);
    ASSERT_TRUE(snap.ok()) << snap.status().ToString();
    std::vector<SegmentRecord> want;
    for (const auto& s : all) {
      if (s.end >= from && s.start <= to) want.push_back(s);
    }
    EXPECT_EQ(snap->segments, want) << "[" << from << ", " << to << "]";
    EXPECT_EQ(snap->state.files, static_cast<int64_t>(all.size()));
  }
  EXPECT_TRUE(reg.TakeSnapshot(id_, 5, 3)->segments.empty()) << "an empty range";
  EXPECT_EQ(reg.TakeSnapshot(id_, 0, UINT64_MAX)->segments, all);
}

// A store written before the state record had a bare token there.
TEST_F(RegistryTest, AStoreWithoutTheStateRecordIsCountedAndThenKept) {
  Create();
  for (uint64_t b = 0; b < 5; ++b) ASSERT_TRUE(Append(b, b, 0).ok());
  ASSERT_TRUE(kv_->Set("t/ver/eth/logs", "0123456789abcdef").ok());
  Restart();
  auto live = Live();  // the counted state adds up
  ASSERT_EQ(live.size(), 5u);
  EXPECT_EQ(service_->State(id_)->token, "0123456789abcdef");
  ASSERT_TRUE(Append(5, 5, 0).ok());
  EXPECT_EQ(kv_->Get("t/ver/eth/logs")->front(), '{') << "the next change stores the state record";
  EXPECT_EQ(Live().size(), 6u);
}

TEST_F(RegistryTest, AMalformedStateRecordIsAnErrorNamingItsKeyAndChangesNothing) {
  Create();
  ASSERT_TRUE(Append(0, 0, 0).ok());
  ASSERT_TRUE(kv_->Set("t/ver/eth/logs", "{\"v\":2,\"token\":\"x\",\"files\":1,\"first\":9,\"last\":3}").ok());
  auto r = Append(1, 1, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t/ver/eth/logs"), std::string::npos) << r.status().ToString();
  TableRegistry reg(kv_);
  EXPECT_EQ(reg.ListSegments(id_, std::nullopt, 10)->segments.size(), 1u) << "nothing was added";
}

// The rule of issue 17: an append reads the state, the last segment and a few
// keys, not the live set. Counted in KV records read, at 10 and 400 live files.
TEST_F(RegistryTest, AnAppendReadsAsManyRecordsAt400FilesAsAt10) {
  auto counting = std::make_shared<CountingKv>(kv_);
  kv_ = counting;
  Restart();
  Create();
  auto reads_of_append = [&](uint64_t b) {
    int64_t before = counting->reads;
    EXPECT_TRUE(Append(b, b, 0).ok());
    return counting->reads - before;
  };
  uint64_t b = 0;
  for (; b < 10; ++b) ASSERT_TRUE(Append(b, b, 0).ok());
  int64_t at_10 = reads_of_append(b++);
  for (; b < 400; ++b) ASSERT_TRUE(Append(b, b, 0).ok());
  int64_t at_400 = reads_of_append(b++);
  EXPECT_EQ(at_400, at_10) << "records read by one append";
  EXPECT_LT(at_10, 20);

  // A reorg 3 blocks deep reads the segments it replaces, not the table.
  auto reorg_reads = [&](uint64_t head) {
    int64_t before = counting->reads;
    auto r = Append(head - 2, head - 2, 1, 0);
    EXPECT_TRUE(r.ok() && r->reorg) << r.status().ToString();
    return counting->reads - before;
  };
  int64_t reorg_at_401 = reorg_reads(b - 1);
  EXPECT_LT(reorg_at_401, 40);

  // A 10-block range scan reads the records of the files it touches.
  TableRegistry reg(counting);
  int64_t before = counting->reads;
  auto snap = reg.TakeSnapshot(id_, 100, 109);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->segments.size(), 10u);
  EXPECT_LE(counting->reads - before, 24);
}

TEST_F(RegistryTest, ASnapshotAfterThisServersCommitsIsNotReadAgain) {
  auto counting = std::make_shared<CountingKv>(kv_);
  kv_ = counting;
  Restart();
  Create();
  for (uint64_t b = 0; b < 200; ++b) ASSERT_TRUE(Append(b, b, 0).ok());
  ASSERT_EQ(Live().size(), 200u);  // read once, and cached
  // Appends, a reorg and a merge, each followed by a snapshot: the cached
  // live set moves with each commit instead of being read again.
  auto reads_of_snapshot = [&] {
    int64_t before = counting->reads;
    auto live = Live();
    EXPECT_LE(counting->reads - before, 2) << "the live set was read again";
    return live;
  };
  for (uint64_t b = 200; b < 210; ++b) {
    ASSERT_TRUE(Append(b, b, 0).ok());
    ASSERT_EQ(reads_of_snapshot().size(), b + 1);
  }
  ASSERT_TRUE(Append(208, 208, 1, 0).ok());  // replaces 208 and 209
  ASSERT_EQ(reads_of_snapshot().size(), 209u);
  ASSERT_TRUE(service_->CompactNow(id_).ok());
  auto cached = reads_of_snapshot();
  ASSERT_LT(cached.size(), 209u);
  // What a registry without the cache reads: the same.
  TableRegistry fresh(kv_);
  auto read = fresh.TakeSnapshot(id_);
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->segments.size(), cached.size());
  for (size_t i = 0; i < cached.size(); ++i) {
    EXPECT_EQ(EncodeSegmentRecord(read->segments[i]), EncodeSegmentRecord(cached[i])) << i;
  }
  // Another server's commit is not applied to the cache: the next snapshot reads it.
  TableRegistry other(kv_);
  auto live = *other.TakeSnapshot(id_);
  LiveSetChange drop;
  drop.remove = {live.segments.back()};
  ASSERT_TRUE(other.Commit(id_, drop, SystemClock().Now()).ok());
  EXPECT_EQ(Live().size(), cached.size() - 1);
}

TEST_F(RegistryTest, AnAppendAcknowledgedLostIsCountedOnce) {
  Create();
  for (uint64_t b = 0; b < 3; ++b) ASSERT_TRUE(Append(b, b, 0).ok());
  ASSERT_TRUE(failpoint::Arm("table.append.after_commit", failpoint::Action::kError).ok());
  auto r = Append(3, 3, 0);
  failpoint::DisarmAll();
  ASSERT_FALSE(r.ok());
  Restart();
  EXPECT_EQ(Live().size(), 4u) << "it landed; the state counts it once";
  ASSERT_TRUE(Append(4, 4, 0).ok());
  EXPECT_EQ(Live().size(), 5u);
}

}  // namespace
}  // namespace sediment::table

namespace sediment::table {
namespace {

// The timer's round visits a bounded number of tables, round-robin: with 2 a
// tick, 5 tables with files due for GC are all collected in 3 ticks, 2 at a time.
TEST_F(RegistryTest, TheTimerVisitsABoundedSliceOfTheTablesEachTick) {
  std::vector<TableId> ids;
  for (int t = 0; t < 5; ++t) {
    id_ = TableId{"eth", fmt::format("t{}", t)};
    ids.push_back(id_);
    Create();
    for (uint64_t b = 0; b < 4; ++b) ASSERT_TRUE(Append(b, b, 0).ok());
    auto pass = service_->CompactNow(id_);
    ASSERT_TRUE(pass.ok() && !pass->merges.empty());
  }
  clock_->AdvanceSeconds(3600);
  TableRegistry reg(kv_);
  auto collected = [&] {
    int n = 0;
    for (const auto& id : ids) n += reg.ListGc(id)->empty() ? 1 : 0;
    return n;
  };
  ASSERT_EQ(collected(), 0);
  service_->TickForTesting(2);
  EXPECT_EQ(collected(), 2);
  service_->TickForTesting(2);
  EXPECT_EQ(collected(), 4);
  service_->TickForTesting(2);
  EXPECT_EQ(collected(), 5) << "the last one, then the round wraps to the first";
  auto first = reg.TablesWithSegments(std::nullopt, 10);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, ids);
  EXPECT_EQ(*reg.TablesWithSegments(ids[2], 2), (std::vector<TableId>{ids[3], ids[4]}));
}

}  // namespace
}  // namespace sediment::table

namespace sediment::table {
namespace {

// Records where each scan of a prefix starts.
class ScanFromKv final : public kv::HookedKv {
 public:
  using HookedKv::HookedKv;
  Result<kv::ScanPage> Scan(std::string_view prefix, std::string_view from, size_t limit) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      froms.emplace_back(prefix, from);
    }
    return HookedKv::Scan(prefix, from, limit);
  }
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> froms;
};

// The GC queue is read from past what this registry has collected (RocksDB
// keeps the removed keys' tombstones at the queue's front); what a commit adds
// below that point is still listed: this registry's at once (even while a
// listing runs beside the commit), another server's within 32 listings. The
// block hashes, pruned from their front, likewise.
TEST_F(RegistryTest, TheGcQueueIsReadFromPastWhatWasCollected) {
  auto hooked = std::make_shared<ScanFromKv>(kv_);
  kv_ = hooked;
  Restart();
  Create();
  for (uint64_t b = 0; b < 6; ++b) ASSERT_TRUE(Append(b, b, 0).ok());
  TableRegistry reg(kv_);
  const auto live = reg.TakeSnapshot(id_)->segments;
  ASSERT_EQ(live.size(), 6u);
  auto remove = [&](TableRegistry& r, size_t i, TimePoint at) {
    LiveSetChange c;
    c.remove = {live[i]};
    ASSERT_TRUE(r.Commit(id_, c, at).ok());
  };
  auto due = [&](TableRegistry& r) {
    std::set<std::string> ids;
    for (const auto& e : *r.ListDueGc(id_, INT64_MAX)) ids.insert(e.id);
    return ids;
  };
  const TimePoint t0 = clock_->Now();
  remove(reg, 0, t0);
  remove(reg, 1, t0 + std::chrono::seconds(1));
  auto entries = *reg.ListDueGc(id_, ToUnixMicros(t0 + std::chrono::seconds(2)));
  ASSERT_EQ(entries.size(), 2u);
  for (const auto& e : entries) ASSERT_TRUE(reg.RemoveGcEntry(id_, e).ok());
  EXPECT_TRUE(due(reg).empty());  // reads past the tombstones: the floor moves to the queue's end
  hooked->froms.clear();
  EXPECT_TRUE(due(reg).empty());
  const std::string collected = GcQueueKey(id_, ToUnixMicros(t0 + std::chrono::seconds(1)), live[1].id);
  for (const auto& [prefix, from] : hooked->froms) {
    if (prefix == GcQueuePrefix(id_)) EXPECT_GT(from, collected) << "the collected entries were read again";
  }

  remove(reg, 2, t0 - std::chrono::hours(1));  // this server's clock went back
  EXPECT_EQ(due(reg), std::set<std::string>{live[2].id});
  // A listing while a commit's batch is being written must not move past it.
  hooked->BeforeWrite(kv::HookedKv::Prefix(GcQueuePrefix(id_)), [&] { (void)reg.ListDueGc(id_, INT64_MAX); });
  remove(reg, 3, t0 - std::chrono::hours(2));
  EXPECT_EQ(due(reg), (std::set<std::string>{live[2].id, live[3].id}));

  for (const auto& e : *reg.ListGc(id_)) ASSERT_TRUE(reg.RemoveGcEntry(id_, e).ok());
  EXPECT_TRUE(due(reg).empty());
  TableRegistry other(kv_);  // another server (its entry lands below this one's floor, the queue's end)
  remove(other, 4, t0 - std::chrono::hours(3));
  EXPECT_EQ(reg.ListGc(id_)->size(), 1u) << "read whole, as the orphan sweep needs it";
  int listings = 1;
  while (due(reg).empty() && listings < 100) listings++;
  EXPECT_LE(listings, 32) << "another server's entry below the floor is listed within 32 listings";

  // Block hashes, pruned below the reorg window, are read from where the last prune ended.
  ASSERT_TRUE(reg.BlockHash(id_, 2)->has_value());
  ASSERT_TRUE(reg.PruneBlockHashes(id_, 3).ok());
  hooked->froms.clear();
  ASSERT_TRUE(reg.PruneBlockHashes(id_, 4).ok());
  for (const auto& [prefix, from] : hooked->froms) {
    if (prefix == BlockHashesPrefix(id_)) EXPECT_GE(from, BlockHashKey(id_, 3)) << "pruned hashes were read again";
  }
  EXPECT_FALSE(reg.BlockHash(id_, 3)->has_value());
  EXPECT_TRUE(reg.BlockHash(id_, 4)->has_value());
  LiveSetChange rehash;  // a hash written below the floor (a table rewritten from its start)
  rehash.put_hashes = {{1, std::string(64, 'a')}};
  ASSERT_TRUE(reg.Commit(id_, rehash, t0).ok());
  ASSERT_TRUE(reg.PruneBlockHashes(id_, 4).ok());
  EXPECT_FALSE(reg.BlockHash(id_, 1)->has_value()) << "pruned, though below where the last prune ended";
}

}  // namespace
}  // namespace sediment::table
