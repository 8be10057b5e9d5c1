#include "kv/kv_internal.h"

#include <fmt/format.h>

namespace sediment::kv {

Status CheckPrecondition(const Precondition& p, const std::string* current) {
  switch (p.kind) {
    case Precondition::Kind::kAbsent:
      if (current != nullptr) return PreconditionFailed(fmt::format("key \"{}\" already exists", Printable(p.key)));
      break;
    case Precondition::Kind::kPresent:
      if (current == nullptr) return PreconditionFailed(fmt::format("key \"{}\" does not exist", Printable(p.key)));
      break;
    case Precondition::Kind::kEquals:
      if (current == nullptr) return PreconditionFailed(fmt::format("key \"{}\" does not exist", Printable(p.key)));
      if (*current != p.value) {
        return PreconditionFailed(fmt::format("key \"{}\" changed", Printable(p.key)));
      }
      break;
  }
  return Status::OK();
}

std::string Printable(std::string_view key) {
  std::string out;
  for (unsigned char c : key) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out;
}

}  // namespace sediment::kv
