// Helpers the catalog's tests share. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "catalog/entry.h"

// Fails the test unless `expr` (a Status or Result) is OK, evaluating it once.
#define ASSERT_OK(expr)                      \
  do {                                       \
    auto _st = (expr);                       \
    ASSERT_TRUE(_st.ok()) << _st.ToString(); \
  } while (0)

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
