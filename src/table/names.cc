#include "table/names.h"

#include <fmt/format.h>

namespace sediment::table {

Status ValidateName(std::string_view what, std::string_view name) {
  auto bad = [&](const char* why) {
    return InvalidArgument(fmt::format("{} name \"{}\" is not allowed: {} (use [a-z][a-z0-9_]*)", what, name, why));
  };
  if (name.empty()) return bad("it is empty");
  if (name.size() > 63) return bad("it is longer than 63 characters");
  if (name[0] < 'a' || name[0] > 'z') return bad("it must start with a lowercase letter");
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return bad("it has a character other than a-z, 0-9 and _");
  }
  return Status::OK();
}

Result<TableId> MakeTableId(std::string_view dataset, std::string_view table) {
  ARROW_RETURN_NOT_OK(ValidateName("dataset", dataset));
  ARROW_RETURN_NOT_OK(ValidateName("table", table));
  return TableId{std::string(dataset), std::string(table)};
}

Result<TableId> ParseTableId(std::string_view text) {
  auto dot = text.find('.');
  if (dot == std::string_view::npos) {
    return InvalidArgument(fmt::format("\"{}\" is not <dataset>.<table>", text));
  }
  return MakeTableId(text.substr(0, dot), text.substr(dot + 1));
}

}  // namespace sediment::table
