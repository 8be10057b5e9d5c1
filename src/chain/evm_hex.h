// Ethereum JSON-RPC's hex encodings read exactly: quantities ("0x1a") into
// integers of up to 64 or 256 bits, data ("0x00ff") into raw bytes, and a
// 256-bit quantity written out in decimal (no float on the way). Every error
// is InvalidArgument naming `what` and the value.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace sediment::chain {

// "0x1a" -> 26. InvalidArgument unless 0x followed by 1..16 hex digits.
Result<uint64_t> HexQuantity(const nlohmann::json& v, const std::string& what);
// "0x00ff" -> bytes. InvalidArgument unless 0x followed by an even number of
// hex digits, and exactly `size` bytes when size > 0.
Result<std::string> HexData(const nlohmann::json& v, const std::string& what, size_t size = 0);
// A quantity of up to 256 bits as 32 big-endian bytes.
Result<std::array<uint8_t, 32>> HexUint256(const nlohmann::json& v, const std::string& what);
// 32 big-endian bytes as a decimal number ("0" for zero).
std::string Uint256Decimal(const std::array<uint8_t, 32>& v);

}  // namespace sediment::chain
