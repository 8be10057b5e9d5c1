// The one home of encodings: hex, base64 (RFC 4648 §4), percent-encoding
// (RFC 3986 §2.1) and the query strings built on it, and the UTF-8 check.
// No Arrow: the Lua sandbox links these (sediment_crypto).
//
// Decoders are strict and say no with std::nullopt: a value has the
// spellings its protocol allows and no others, so two parts of the server
// that decode the same bytes cannot read different values from them.
//
// Thread-safety: all functions are pure and safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sediment {

// --- hex ------------------------------------------------------------------------

// Lower-case hex.
std::string Hex(std::string_view bytes);
std::string Hex(const uint8_t* data, size_t n);
void AppendHex(const uint8_t* data, size_t n, std::string* out);

// Which spellings a hex decoder accepts.
enum class HexCase {
  kLower,  // lower-case only: tokens and ids Sediment wrote itself (one spelling per value)
  kAny,    // either case: hex written by people or by other systems (scan filters, EVM JSON-RPC)
};

// The value of one hex digit of either case (0 to 15), or -1.
int HexDigitValue(char c);

// The bytes of an even number of hex digits; nullopt on an odd count or a
// character `accept` does not allow.
std::optional<std::string> HexDecode(std::string_view hex, HexCase accept = HexCase::kLower);

// --- base64 ---------------------------------------------------------------------

std::string Base64(std::string_view bytes);
// Standard alphabet; '=' padding optional but, if present, correct; nothing
// else (no whitespace, no URL-safe characters).
std::optional<std::string> Base64Decode(std::string_view in);

// --- percent-encoding (RFC 3986 §2.1) ---------------------------------------------

// Which bytes PercentEncode leaves as they are. Every other byte becomes %XY
// with upper-case hex digits, as RFC 3986 recommends and SigV4 requires (a
// space is %20, never '+').
enum class PercentSet {
  kUnreserved,          // RFC 3986 unreserved, A-Z a-z 0-9 - . _ ~: a query name or value, one path segment
  kUnreservedAndSlash,  // those and '/': a whole path (an S3 key keeps its '/')
};

std::string PercentEncode(std::string_view bytes, PercentSet keep);

// %XY (hex digits of either case) becomes the byte 0xXY; every other
// character stays as it is, '+' included. nullopt when a '%' is not followed
// by two hex digits ("%G0", "%-1", a final "%4"): RFC 3986 gives '%' no other
// use, and guessing what such a text means is how two decoders come to read
// one request differently.
std::optional<std::string> PercentDecode(std::string_view in);

// --- query strings ----------------------------------------------------------------

// (name, value) pairs in the order they came, repeats kept.
using QueryParams = std::vector<std::pair<std::string, std::string>>;

// A raw query (after '?', as sent) decoded: split at '&' (empty parts are
// skipped), each part at its first '=' (a part without one is a name with an
// empty value, as in "?uploads"), each side PercentDecode'd. nullopt when a
// side is not valid percent-encoding.
//
// '+' is a plus, not a space. The query parser serves the S3 gateway, whose
// signature check (SigV4 canonical query) and operations must read one query
// alike; AWS's S3 and SigV4 documents say a space is sent as %20 and never as
// '+', and RFC 3986 gives '+' no special meaning. Only HTML form bodies
// (application/x-www-form-urlencoded) spell a space '+', and nothing here
// decodes those (cpp-httplib parses the few form requests).
std::optional<QueryParams> DecodeQuery(std::string_view raw);

// --- UTF-8 ------------------------------------------------------------------------

// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code
// points past U+10FFFF): paths and metadata must be, to be JSON and S3 keys.
bool IsUtf8(std::string_view s);

}  // namespace sediment
