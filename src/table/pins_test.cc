#include "table/pins.h"

#include <gtest/gtest.h>

namespace sediment::table {
namespace {

SegmentRecord Seg(const std::string& path) {
  SegmentRecord s;
  s.path = path;
  return s;
}

TEST(SnapshotPinsTest, PinnedPathsAreHeldUntilEverySnapshotUnpins) {
  SnapshotPins pins;
  EXPECT_FALSE(pins.Held("a"));
  pins.BeginOpen();
  pins.Pin({Seg("a"), Seg("b")});
  pins.BeginOpen();
  pins.Pin({Seg("a")});
  EXPECT_TRUE(pins.Held("a"));
  EXPECT_TRUE(pins.Held("b"));
  EXPECT_FALSE(pins.Held("c"));
  pins.Unpin({Seg("a"), Seg("b")});
  EXPECT_TRUE(pins.Held("a")) << "the second snapshot still holds it";
  EXPECT_FALSE(pins.Held("b"));
  pins.Unpin({Seg("a")});
  EXPECT_FALSE(pins.Held("a"));
}

TEST(SnapshotPinsTest, EveryPathIsHeldWhileASnapshotIsBeingOpened) {
  SnapshotPins pins;
  pins.BeginOpen();
  EXPECT_TRUE(pins.Held("anything")) << "the opening snapshot may have read it while it was live";
  pins.CancelOpen();
  EXPECT_FALSE(pins.Held("anything"));
}

}  // namespace
}  // namespace sediment::table
