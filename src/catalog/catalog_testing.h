// Helpers the catalog's tests share. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "base/test_util.h"
#include "catalog/entry.h"

namespace sediment::catalog::fixtures {

// An entry whose checksum is `checksum` and whose data is at data/<checksum>.
inline Entry MakeEntry(const std::string& checksum) {
  Entry e;
  e.address = "data/" + checksum;
  e.checksum = checksum;
  e.size = static_cast<int64_t>(checksum.size());
  e.mtime = 1700000000;
  e.content_type = "application/octet-stream";
  return e;
}

}  // namespace sediment::catalog::fixtures
