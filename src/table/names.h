// Table names: `<dataset>.<table>`, each part matching [a-z][a-z0-9_]* (at
// most 63 characters), so names are safe in KV keys, object paths and URLs.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace sediment::table {

struct TableId {
  std::string dataset;
  std::string table;

  std::string ToString() const { return dataset + "." + table; }
  bool operator==(const TableId&) const = default;
  auto operator<=>(const TableId&) const = default;
};

// InvalidArgument naming `what` ("dataset", "table") if `name` is not allowed.
Status ValidateName(std::string_view what, std::string_view name);
Result<TableId> MakeTableId(std::string_view dataset, std::string_view table);
// "dataset.table" -> TableId.
Result<TableId> ParseTableId(std::string_view text);

}  // namespace sediment::table
