// ScanFloors: where a scan of a key range that is deleted from its front
// starts. The GC queue (entries removed in removal order) and the block
// hashes (pruned below the reorg window) are such ranges: RocksDB keeps a
// deleted key's tombstone until compaction, so a scan from the range's start
// wades through every entry ever removed, and a busy table pays for its whole
// history on each pass. A floor is a key below which, as far as this process
// knows, the range holds nothing; scans start there.
//
// A writer lowers the floor before its batch lands (BeginWrite) and says when
// it is done (EndWrite); a scan raises the floor only if no such write began
// or ended while it read and none is under way, so a key written beside a scan
// is never skipped. Keys another server writes below the floor are found by
// every kFullScanEvery-th scan of a range, which reads from its start.
//
// Thread-safety: safe from many threads.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace sediment::table {

class ScanFloors {
 public:
  static constexpr uint64_t kFullScanEvery = 32;

  // What a scan of the range `prefix` starts from ("" = its start) and the
  // write count it saw, for Finish.
  struct Ticket {
    std::string from;
    uint64_t writes = 0;
  };
  Ticket Start(const std::string& prefix);
  // The scan found nothing below `floor`: later scans start there, unless a
  // write began or ended since Start (or is under way).
  void Finish(const std::string& prefix, const Ticket& ticket, const std::string& floor);

  void BeginWrite(const std::string& prefix, const std::string& key);
  void EndWrite(const std::string& prefix);

 private:
  struct Floor {
    std::string key;         // "" = read from the start
    uint64_t writes = 0;     // writes begun or ended
    uint64_t in_flight = 0;  // writes under way
    uint64_t scans = 0;
  };
  std::mutex mu_;
  std::map<std::string, Floor> floors_;  // GUARDED_BY(mu_), by prefix
};

}  // namespace sediment::table
