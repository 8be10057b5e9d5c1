// Arrow record batches as JSON lines: one object per row, for the scan API
// (tables/scan_api.h) and the query server's JSON lines transport
// (query/query_api.h, in Amp's encoding).
#pragma once

#include <string>

namespace arrow {
class RecordBatch;
}

namespace sediment::server {

struct JsonLinesStyle {
  bool omit_nulls = false;           // a null column is left out of its row (Amp) or written as null
  bool hex_prefix = true;            // binary as "0x…" hex, or bare hex (Amp)
  bool decimals_as_numbers = false;  // decimals as bare numbers (Amp) or strings

  static JsonLinesStyle Scan() { return {}; }
  static JsonLinesStyle Amp() { return {true, false, true}; }
};

// Integers as numbers, binary as hex strings, timestamps as RFC 3339 strings,
// floating point as numbers (NaN and infinities null), lists as arrays,
// structs as objects.
void AppendJsonLines(const arrow::RecordBatch& batch, const JsonLinesStyle& style, std::string* out);

}  // namespace sediment::server
