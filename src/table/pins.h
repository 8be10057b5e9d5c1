// SnapshotPins: which files the read snapshots open on this server hold
// against garbage collection (spec: a query that took its snapshot before a
// swap reads every file of it for at least gc_manifest_grace_period).
//
// A snapshot is taken in two steps: BeginOpen() before the live set is read,
// then Pin() with the files it got (or CancelOpen() if reading failed). While
// any snapshot is between the two steps, Held() is true for every path: the
// snapshot may have read a file just before it left the live set.
//
// Thread-safety: safe from many threads.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "table/segment.h"

namespace sediment::table {

class SnapshotPins {
 public:
  void BeginOpen();
  void CancelOpen();
  // Ends an open begun with BeginOpen() and pins the snapshot's files.
  void Pin(const std::vector<SegmentRecord>& segments);
  void Unpin(const std::vector<SegmentRecord>& segments);
  // True if a snapshot holds `path` or one is being opened.
  bool Held(const std::string& path) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, int> pins_;  // GUARDED_BY(mu_): path -> open snapshots
  int opening_ = 0;                  // GUARDED_BY(mu_)
};

}  // namespace sediment::table
