#include "table/scan_floors.h"

namespace sediment::table {

ScanFloors::Ticket ScanFloors::Start(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  Floor& f = floors_[prefix];
  Ticket t;
  if (++f.scans % kFullScanEvery != 0) t.from = f.key;
  t.writes = f.writes;
  return t;
}

void ScanFloors::Finish(const std::string& prefix, const Ticket& ticket, const std::string& floor) {
  std::lock_guard<std::mutex> lock(mu_);
  Floor& f = floors_[prefix];
  if (f.writes == ticket.writes && f.in_flight == 0) f.key = floor;
}

void ScanFloors::BeginWrite(const std::string& prefix, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  Floor& f = floors_[prefix];
  f.writes++;
  f.in_flight++;
  if (!f.key.empty() && key < f.key) f.key = key;
}

void ScanFloors::EndWrite(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  Floor& f = floors_[prefix];
  f.writes++;
  f.in_flight--;
}

}  // namespace sediment::table
