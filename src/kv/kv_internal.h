// Helpers shared by the KV drivers. Private to src/kv.
#pragma once

#include <string>
#include <string_view>

#include "kv/kv.h"

namespace sediment::kv {

// `current` is the key's value, or nullptr if absent. PreconditionFailed
// naming the key if `p` does not hold.
Status CheckPrecondition(const Precondition& p, const std::string* current);

// A key shown in a message: printable ASCII kept, other bytes as \xNN.
std::string Printable(std::string_view key);

}  // namespace sediment::kv
