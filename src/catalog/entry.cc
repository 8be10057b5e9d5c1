#include "catalog/entry.h"

#include <algorithm>

#include "base/crypto.h"
#include "catalog/coding_internal.h"

namespace sediment::catalog {
namespace {

constexpr char kVersion = 1;

using internal::GetLengthPrefixed;
using internal::GetVarint;
using internal::PutLengthPrefixed;
using internal::PutVarint;

}  // namespace

std::string EncodeEntry(const Entry& e) {
  std::string out;
  out.reserve(32 + e.address.size() + e.checksum.size() + e.content_type.size());
  out.push_back(kVersion);
  PutLengthPrefixed(&out, e.address);
  PutLengthPrefixed(&out, e.checksum);
  PutVarint(&out, static_cast<uint64_t>(e.size));
  PutVarint(&out, static_cast<uint64_t>(e.mtime));
  PutLengthPrefixed(&out, e.content_type);
  PutVarint(&out, e.metadata.size());
  for (const auto& [k, v] : e.metadata) {
    PutLengthPrefixed(&out, k);
    PutLengthPrefixed(&out, v);
  }
  return out;
}

Result<Entry> DecodeEntry(std::string_view data) {
  if (data.empty() || data[0] != kVersion) {
    return Status::Invalid("corrupt catalog entry: unknown version");
  }
  std::string_view in = data.substr(1);
  Entry e;
  uint64_t size = 0, mtime = 0, n = 0;
  bool ok = GetLengthPrefixed(&in, &e.address) && GetLengthPrefixed(&in, &e.checksum) && GetVarint(&in, &size) &&
            GetVarint(&in, &mtime) && GetLengthPrefixed(&in, &e.content_type) && GetVarint(&in, &n);
  for (uint64_t i = 0; ok && i < n; ++i) {
    std::string k, v;
    ok = GetLengthPrefixed(&in, &k) && GetLengthPrefixed(&in, &v);
    e.metadata[std::move(k)] = std::move(v);
  }
  if (!ok || !in.empty()) return Status::Invalid("corrupt catalog entry: truncated or trailing bytes");
  e.size = static_cast<int64_t>(size);
  e.mtime = static_cast<int64_t>(mtime);
  return e;
}

std::string EntryIdentity(std::string_view encoded) {
  if (encoded.empty()) return {};
  auto e = DecodeEntry(encoded);
  if (!e.ok()) return std::string(encoded);  // compare raw bytes rather than fail
  std::string id;
  PutLengthPrefixed(&id, e->checksum);
  PutVarint(&id, static_cast<uint64_t>(e->size));
  PutLengthPrefixed(&id, e->content_type);
  for (const auto& [k, v] : e->metadata) {
    PutLengthPrefixed(&id, k);
    PutLengthPrefixed(&id, v);
  }
  return id;
}

std::string NewDataAddress(int64_t unix_seconds) {
  static const char* kDigits = "0123456789abcdefghijklmnopqrstuv";
  auto base32 = [](uint64_t v, size_t width) {
    std::string out(width, '0');
    for (size_t i = width; i-- > 0 && v > 0; v >>= 5) out[i] = kDigits[v & 31];
    return out;
  };
  uint64_t hour = static_cast<uint64_t>(std::max<int64_t>(unix_seconds, 0)) / 3600;
  std::string partition = base32(~hour, 20);
  std::string id = base32(RandomUint64(), 13) + base32(RandomUint64() & ((uint64_t{1} << 35) - 1), 7);
  return "data/" + partition + "/" + id;
}

uint64_t StableHash(std::string_view data) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  // FNV's low bits mix poorly; finalize like splitmix64 so `h % n` is uniform.
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

}  // namespace sediment::catalog
