#include "chain/evm_hex.h"

#include <fmt/format.h>

#include <string_view>

#include "base/codec.h"

namespace sediment::chain {
namespace {

using nlohmann::json;

// The digits after "0x", or InvalidArgument.
Result<std::string_view> HexDigits(const json& v, const std::string& what) {
  if (!v.is_string()) return InvalidArgument(fmt::format("{}: expected a hex string, got {}", what, v.dump()));
  const std::string& s = v.get_ref<const std::string&>();
  if (s.size() < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) {
    return InvalidArgument(fmt::format("{}: \"{}\" does not start with 0x", what, s));
  }
  std::string_view digits = std::string_view(s).substr(2);
  for (char c : digits) {
    if (HexDigitValue(c) < 0) return InvalidArgument(fmt::format("{}: \"{}\" is not hex", what, s));
  }
  return digits;
}

}  // namespace

Result<uint64_t> HexQuantity(const json& v, const std::string& what) {
  ARROW_ASSIGN_OR_RAISE(std::string_view digits, HexDigits(v, what));
  if (digits.empty() || digits.size() > 16) {
    return InvalidArgument(fmt::format("{}: {} is not a quantity of at most 64 bits", what, v.dump()));
  }
  uint64_t out = 0;
  for (char c : digits) out = out << 4 | static_cast<uint64_t>(HexDigitValue(c));
  return out;
}

Result<std::string> HexData(const json& v, const std::string& what, size_t size) {
  ARROW_ASSIGN_OR_RAISE(std::string_view digits, HexDigits(v, what));
  if (digits.size() % 2 != 0)
    return InvalidArgument(fmt::format("{}: {} has an odd number of hex digits", what, v.dump()));
  if (size > 0 && digits.size() != 2 * size) {
    return InvalidArgument(fmt::format("{}: {} is not {} bytes", what, v.dump(), size));
  }
  return *HexDecode(digits, HexCase::kAny);  // the digits were checked
}

Result<std::array<uint8_t, 32>> HexUint256(const json& v, const std::string& what) {
  ARROW_ASSIGN_OR_RAISE(std::string_view digits, HexDigits(v, what));
  if (digits.empty() || digits.size() > 64) {
    return InvalidArgument(fmt::format("{}: {} is not a quantity of at most 256 bits", what, v.dump()));
  }
  std::array<uint8_t, 32> out{};
  // From the last digit: digit k from the end goes to byte 31 - k/2.
  for (size_t k = 0; k < digits.size(); ++k) {
    int d = HexDigitValue(digits[digits.size() - 1 - k]);
    out[31 - k / 2] |= static_cast<uint8_t>(k % 2 == 0 ? d : d << 4);
  }
  return out;
}

std::string Uint256Decimal(const std::array<uint8_t, 32>& v) {
  std::array<uint8_t, 32> n = v;
  std::string digits;
  for (;;) {
    // n /= 10, the remainder is the next digit (from the last).
    unsigned rem = 0;
    bool zero = true;
    for (auto& byte : n) {
      unsigned cur = rem << 8 | byte;
      byte = static_cast<uint8_t>(cur / 10);
      rem = cur % 10;
      zero = zero && byte == 0;
    }
    digits.push_back(static_cast<char>('0' + rem));
    if (zero) break;
  }
  return std::string(digits.rbegin(), digits.rend());
}

}  // namespace sediment::chain
