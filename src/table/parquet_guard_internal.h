// ParquetGuard: Parquet reports I/O errors and corrupt files by throwing;
// this turns the exception into an IOError prefixed by `what` (a path, or the
// step that failed), so no exception leaves src/table. Private to src/table.
#pragma once

#include <fmt/format.h>

#include <exception>
#include <string_view>

#include "base/status.h"

namespace sediment::table {

template <typename Fn>
auto ParquetGuard(std::string_view what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return Status::IOError(fmt::format("{}: {}", what, e.what()));
  }
}

}  // namespace sediment::table
