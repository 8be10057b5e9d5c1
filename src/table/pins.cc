#include "table/pins.h"

namespace sediment::table {

void SnapshotPins::BeginOpen() {
  std::lock_guard<std::mutex> lock(mu_);
  opening_++;
}

void SnapshotPins::CancelOpen() {
  std::lock_guard<std::mutex> lock(mu_);
  opening_--;
}

void SnapshotPins::Pin(const std::vector<SegmentRecord>& segments) {
  std::lock_guard<std::mutex> lock(mu_);
  opening_--;
  for (const auto& s : segments) pins_[s.path]++;
}

void SnapshotPins::Unpin(const std::vector<SegmentRecord>& segments) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& s : segments) {
    auto it = pins_.find(s.path);
    if (it != pins_.end() && --it->second == 0) pins_.erase(it);
  }
}

bool SnapshotPins::Held(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  return opening_ > 0 || pins_.count(path) > 0;
}

}  // namespace sediment::table
