// One case per statement of spec/parquet-compaction.md that the planner decides.
#include "table/planner.h"

#include <gtest/gtest.h>

namespace sediment::table {
namespace {

constexpr int64_t KiB = 1024;
const TimePoint kNow = FromUnixMicros(1'800'000'000'000'000);

// A file described by size and age in seconds (rows default to bytes / 100).
struct F {
  int64_t bytes;
  double age_s = 10'000;
  int64_t rows = -1;
};

std::vector<SegmentRecord> Files(const std::vector<F>& files) {
  std::vector<SegmentRecord> out;
  uint64_t block = 0;
  for (const auto& f : files) {
    SegmentRecord s;
    s.start = block;
    s.end = block + 9;
    block += 10;
    s.bytes = f.bytes;
    s.rows = f.rows >= 0 ? f.rows : f.bytes / 100;
    s.created_at_us = ToUnixMicros(kNow - SecondsToDuration(f.age_s));
    out.push_back(s);
  }
  return out;
}

// Groups as lists of input indices.
std::vector<std::vector<size_t>> Plan(const std::vector<F>& files, PlannerSettings settings) {
  std::vector<std::vector<size_t>> out;
  for (const auto& g : PlanCompaction(Files(files), settings, kNow)) {
    std::vector<size_t> idx;
    for (size_t i = 0; i < g.count; ++i) idx.push_back(g.first + i);
    out.push_back(idx);
  }
  return out;
}

PlannerSettings Target(int64_t bytes, double overflow = 1.0) {
  PlannerSettings s;  // spec defaults
  s.bytes = bytes;
  s.overflow = overflow;
  s.skip_latest_segments = 0;
  return s;
}

using Groups = std::vector<std::vector<size_t>>;

struct Case {
  const char* rule;
  std::vector<F> files;
  PlannerSettings settings;
  Groups want;
};

TEST(PlannerTest, SpecRules) {
  PlannerSettings skip3 = Target(10'000 * KiB);
  skip3.skip_latest_segments = 3;
  PlannerSettings no_eager = Target(10'000 * KiB);
  no_eager.max_eager_bytes = 0;
  PlannerSettings by_rows = Target(1'000'000 * KiB);
  by_rows.rows = 1000;
  PlannerSettings by_rows_overflow = by_rows;
  by_rows_overflow.overflow = 2;

  const double young = 5;          // seconds, well inside the 1024 s cooldown
  const double old = 2000;         // past the cooldown
  const int64_t small = 50 * KiB;  // <= max_eager_bytes (100 KiB)
  const int64_t mid = 300 * KiB;   // > max_eager_bytes

  std::vector<Case> cases = {
      {"skip_latest_segments: the newest files are left out",
       {{small}, {small}, {small}, {small}, {small}},
       skip3,
       {{0, 1}}},
      {"skip_latest_segments covering every file: nothing to do", {{small}, {small}, {small}}, skip3, {}},
      {"group adjacent files from the oldest while the total stays under bytes * overflow",
       {{300 * KiB}, {300 * KiB}, {300 * KiB}, {300 * KiB}, {300 * KiB}},
       Target(1000 * KiB),
       {{0, 1, 2}, {3, 4}}},
      {"a total of exactly the target still fits",
       {{500 * KiB}, {500 * KiB}, {500 * KiB}},
       Target(1000 * KiB),
       {{0, 1}}},
      {"only groups of two or more files are merged", {{small}, {2000 * KiB}, {small}}, Target(1000 * KiB), {}},
      {"small files (<= max_eager_bytes) start a group right away",
       {{small, young}, {small, young}, {small, young}},
       Target(10'000 * KiB),
       {{0, 1, 2}}},
      {"a file of exactly max_eager_bytes is small", {{100 * KiB, 0}, {100 * KiB, 0}}, Target(10'000 * KiB), {{0, 1}}},
      {"recent files can't start a group", {{mid, young}, {mid, young}, {mid, young}}, Target(10'000 * KiB), {}},
      {"recent files can join a group an older file started",
       {{mid, old}, {mid, young}, {mid, young}},
       Target(10'000 * KiB),
       {{0, 1, 2}}},
      {"recent files can join a group a small file started",
       {{small, young}, {mid, young}, {mid, young}},
       Target(10'000 * KiB),
       {{0, 1, 2}}},
      {"a recent file is passed over; the small ones after it group",
       {{mid, young}, {small, young}, {small, young}},
       Target(10'000 * KiB),
       {{1, 2}}},
      {"older files can start a group", {{mid, old}, {mid, old}}, Target(10'000 * KiB), {{0, 1}}},
      {"a file that reaches the target on its own is never merged again",
       {{small}, {1000 * KiB}, {small}, {small}},
       Target(1000 * KiB, 4.0),
       {{2, 3}}},
      {"a merged file is new, so it waits before it starts a group",
       {{900 * KiB, young}, {small, 1}, {mid, young}},
       Target(10'000 * KiB),
       {{1, 2}}},
      {"... and once past the cooldown it starts one",
       {{900 * KiB, old}, {small, 1}, {mid, young}},
       Target(10'000 * KiB),
       {{0, 1, 2}}},
      {"tuning: files just over half the target don't merge with overflow = 1",
       {{501 * KiB}, {501 * KiB}, {501 * KiB}},
       Target(1000 * KiB),
       {}},
      {"tuning: a larger overflow lets them merge, above the target",
       {{501 * KiB}, {501 * KiB}, {501 * KiB}},
       Target(1000 * KiB, 1.5),
       {{0, 1}}},
      {"tuning: max_eager_bytes = 0 makes every file wait", {{small, young}, {small, young}, {0, young}}, no_eager, {}},
      {"... until the cooldown has passed", {{small, old}, {small, young}, {small, young}}, no_eager, {{0, 1, 2}}},
      {"rows * overflow limits a group when rows is set",
       {{small, old, 400}, {small, old, 400}, {small, old, 400}, {small, old, 400}},
       by_rows,
       {{0, 1}, {2, 3}}},
      {"... and overflow applies to rows too",
       {{small, old, 400}, {small, old, 400}, {small, old, 400}, {small, old, 400}, {small, old, 400}},
       by_rows_overflow,
       {{0, 1, 2, 3, 4}}},
      {"a file with rows >= rows is full", {{small, old, 1000}, {small, old, 10}, {small, old, 10}}, by_rows, {{1, 2}}},
      {"the file that doesn't fit starts the next group",
       {{600 * KiB}, {600 * KiB}, {300 * KiB}, {100 * KiB}},
       Target(1000 * KiB),
       {{1, 2, 3}}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Plan(c.files, c.settings), c.want) << c.rule;
  }
}

TEST(PlannerTest, GroupsCarryTheirTotals) {
  auto files = Files({{100}, {200}, {300}});
  auto groups = PlanCompaction(files, Target(1000), kNow);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0], (CompactionGroup{0, 3, 600, 6}));
}

// Whether each planned group's output is final (never merged again).
std::vector<bool> Finals(const std::vector<F>& files, PlannerSettings settings) {
  std::vector<bool> out;
  for (const auto& g : PlanCompaction(Files(files), settings, kNow)) out.push_back(g.final);
  return out;
}

TEST(PlannerTest, AGroupIsFinalWhenNothingCanEverJoinIt) {
  // Reaches the target.
  EXPECT_EQ(Finals({{500}, {500}, {100}}, Target(1000)), std::vector<bool>{true});
  // Stopped by a right neighbour that does not fit, nothing on the left.
  EXPECT_EQ(Finals({{300}, {300}, {300}, {200}}, Target(1000)), std::vector<bool>{true});
  // Nothing on the right yet: newer files may fit.
  EXPECT_EQ(Finals({{300}, {300}, {50}}, Target(1000)), std::vector<bool>{false});
  // The right neighbour (a newest file, left out of this pass) would fit.
  PlannerSettings skip = Target(1000);
  skip.skip_latest_segments = 1;
  EXPECT_EQ(Finals({{300}, {300}, {50}}, skip), std::vector<bool>{false});
  // The left neighbour is the previous group's output (900), not its last
  // file (300, which would fit beside 500).
  EXPECT_EQ(Finals({{600}, {300}, {300}, {200}, {900}}, Target(1000)), (std::vector<bool>{true, true}));
  // A full file on the left never joins.
  EXPECT_EQ(Finals({{1200}, {300}, {300}, {500}}, Target(1000)), std::vector<bool>{true});
  // A left neighbour that fits (a recent file may not start a group, but may later).
  PlannerSettings waiting = Target(1000);
  waiting.max_eager_bytes = 0;
  EXPECT_EQ(Finals({{300, 1}, {200}, {200}, {700}}, waiting), std::vector<bool>{false});
  // The rows target counts too.
  PlannerSettings rows = Target(1'000'000);
  rows.rows = 10;
  EXPECT_EQ(Finals({{100, 10'000, 5}, {100, 10'000, 5}, {100, 10'000, 1}}, rows), std::vector<bool>{true});
}

TEST(PlannerTest, DefaultsAreTheSpecs) {
  Config config = *Config::Load("", {});
  PlannerSettings s = PlannerSettings::FromConfig(config.writer);
  EXPECT_EQ(s.bytes, 2147483648);
  EXPECT_EQ(s.rows, 0);
  EXPECT_EQ(s.overflow, 1.0);
  EXPECT_EQ(s.skip_latest_segments, 3);
  EXPECT_EQ(s.cooldown, SecondsToDuration(1024.0));
  EXPECT_EQ(s.max_eager_bytes, 102400);
}

TEST(PlannerTest, Classify) {
  PlannerSettings s = Target(1000 * KiB);
  auto f = Files({{1000 * KiB}, {100 * KiB, 0}, {200 * KiB, 1}, {200 * KiB, 1024}});
  EXPECT_EQ(ClassifyFile(f[0], s, kNow), FileAge::kFull);
  EXPECT_EQ(ClassifyFile(f[1], s, kNow), FileAge::kEager);
  EXPECT_EQ(ClassifyFile(f[2], s, kNow), FileAge::kRecent);
  EXPECT_EQ(ClassifyFile(f[3], s, kNow), FileAge::kOld) << "exactly cooldown_duration old may start a group";
}

}  // namespace
}  // namespace sediment::table

namespace sediment::table {
namespace {

PlannerSettings Tiered(int64_t bytes, double ratio = 1.0) {  // ratio 1 makes the cases easy to read
  PlannerSettings s = Target(bytes);
  s.policy = CompactionPolicy::kTiered;
  s.size_ratio = ratio;
  return s;
}

TEST(PlannerTest, TieredRule) {
  const int64_t k = 1024;
  std::vector<Case> cases = {
      {"a large old file doesn't absorb a few small ones",
       {{800 * k}, {10 * k}, {10 * k}, {10 * k}},
       Tiered(10'000 * k),
       {{1, 2, 3}}},
      {"it merges once the newer files together reach its size",
       {{300 * k}, {100 * k}, {100 * k}, {100 * k}},
       Tiered(10'000 * k),
       {{0, 1, 2, 3}}},
      {"boundary: first == size_ratio x rest merges",
       {{200 * k}, {100 * k}, {100 * k}},
       Tiered(10'000 * k),
       {{0, 1, 2}}},
      {"boundary: one byte more doesn't", {{200 * k + 1}, {100 * k}, {100 * k}}, Tiered(10'000 * k), {{1, 2}}},
      {"a larger size_ratio lets a bigger file in",
       {{400 * k}, {100 * k}, {100 * k}},
       Tiered(10'000 * k, 2.0),
       {{0, 1, 2}}},
      {"the spec's target still bounds a group",
       {{50 * k}, {50 * k}, {50 * k}, {50 * k}, {50 * k}},
       Tiered(150 * k),
       {{0, 1, 2}, {3, 4}}},
      {"a recent file left out at the front doesn't start the group",
       {{900 * k}, {300 * k, 5}, {10 * k}, {10 * k}},
       Tiered(10'000 * k),
       {{2, 3}}},
      {"full files are never merged", {{10'000 * k}, {10 * k}, {10 * k}}, Tiered(10'000 * k), {{1, 2}}},
      {"skip_latest_segments still applies",
       {{10 * k}, {10 * k}, {10 * k}, {10 * k}},
       [] {
         PlannerSettings s = Tiered(10'000 * 1024);
         s.skip_latest_segments = 2;
         return s;
       }(),
       {{0, 1}}},
  };
  for (const auto& c : cases) EXPECT_EQ(Plan(c.files, c.settings), c.want) << c.rule;
}

TEST(PlannerTest, TieredFromConfig) {
  Config config = *Config::Load(
      "", {{"SEDIMENT_WRITER_COMPACTOR_POLICY", "tiered"}, {"SEDIMENT_WRITER_COMPACTOR_SIZE_RATIO", "2"}});
  PlannerSettings s = PlannerSettings::FromConfig(config.writer);
  EXPECT_EQ(s.policy, CompactionPolicy::kTiered);
  EXPECT_EQ(s.size_ratio, 2.0);
  auto bad = Config::Load("", {{"SEDIMENT_WRITER_COMPACTOR_POLICY", "leveled"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("must be one of adjacent, tiered"), std::string::npos);
  EXPECT_FALSE(Config::Load("", {{"SEDIMENT_WRITER_COMPACTOR_SIZE_RATIO", "0"}}).ok());
}

}  // namespace
}  // namespace sediment::table
