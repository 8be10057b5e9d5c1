// Private to actions/: what the server and its Lua sandbox process
// (`sediment-lua`, lua_sandbox_main.cc) say to each other over two pipes, the
// child's stdin and stdout. Binary-safe: a frame is a little-endian u32
// length, a kind byte, then fields, each a u32 length and its bytes.
//
//   server -> child  kRun    script, chunk name, globals (JSON: action,
//                            username, api), args (JSON), memory limit
//                            (decimal bytes), CPU seconds (decimal)
//   child -> server  kPrint  text (one print, or a part of a long one)
//   child -> server  kApi    method, path, query (JSON [[k, v], ...]), body
//   server -> child  kReply  status (decimal), body
//   child -> server  kDone   outcome (ok | fail | memory | error), message
//
// The child is not trusted: the server reads at most kMaxFrame per frame and
// kills a child that sends more, or anything it does not expect.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sediment::actions::sandbox {

enum class Kind : uint8_t { kRun = 1, kPrint = 2, kApi = 3, kReply = 4, kDone = 5 };

constexpr size_t kMaxFrame = 1 << 20;     // what the server takes from the child in one frame
constexpr size_t kPrintPart = 256 << 10;  // a longer print is sent in parts

inline void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

inline uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

inline std::string Frame(Kind kind, const std::vector<std::string_view>& fields) {
  std::string body(1, static_cast<char>(kind));
  for (auto f : fields) {
    PutU32(&body, static_cast<uint32_t>(f.size()));
    body.append(f);
  }
  std::string out;
  PutU32(&out, static_cast<uint32_t>(body.size()));
  return out + body;
}

struct Message {
  Kind kind;
  std::vector<std::string> fields;
};

// Takes one whole frame off the front of `buffer` when it holds one.
// nullopt: not yet; `broken` is set when the frame is larger than `max` or
// its fields do not add up.
inline std::optional<Message> TakeFrame(std::string* buffer, size_t max, bool* broken) {
  if (buffer->size() < 4) return std::nullopt;
  uint32_t size = GetU32(buffer->data());
  if (size == 0 || size > max) {
    *broken = true;
    return std::nullopt;
  }
  if (buffer->size() < 4 + static_cast<size_t>(size)) return std::nullopt;
  Message m{static_cast<Kind>((*buffer)[4]), {}};
  size_t at = 5, end = 4 + static_cast<size_t>(size);
  while (at < end) {
    if (end - at < 4) {
      *broken = true;
      return std::nullopt;
    }
    uint32_t n = GetU32(buffer->data() + at);
    at += 4;
    if (n > end - at) {
      *broken = true;
      return std::nullopt;
    }
    m.fields.emplace_back(buffer->data() + at, n);
    at += n;
  }
  buffer->erase(0, end);
  return m;
}

}  // namespace sediment::actions::sandbox
