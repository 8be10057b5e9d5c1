#include "catalog/entry.h"

#include <openssl/evp.h>

#include <random>

namespace sediment::catalog {
namespace {

constexpr char kVersion = 1;

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutString(std::string* out, std::string_view s) {
  PutVarint(out, s.size());
  out->append(s);
}

struct Decoder {
  std::string_view in;
  bool ok = true;

  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
      auto b = static_cast<uint8_t>(in.front());
      in.remove_prefix(1);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    ok = false;
    return 0;
  }
  std::string_view String() {
    uint64_t n = Varint();
    if (!ok || n > in.size()) {
      ok = false;
      return {};
    }
    auto s = in.substr(0, n);
    in.remove_prefix(n);
    return s;
  }
};

}  // namespace

std::string EncodeEntry(const Entry& e) {
  std::string out;
  out.reserve(32 + e.address.size() + e.checksum.size() + e.content_type.size());
  out.push_back(kVersion);
  PutString(&out, e.address);
  PutString(&out, e.checksum);
  PutVarint(&out, static_cast<uint64_t>(e.size));
  PutVarint(&out, static_cast<uint64_t>(e.mtime));
  PutString(&out, e.content_type);
  PutVarint(&out, e.metadata.size());
  for (const auto& [k, v] : e.metadata) {
    PutString(&out, k);
    PutString(&out, v);
  }
  return out;
}

Result<Entry> DecodeEntry(std::string_view data) {
  if (data.empty() || data[0] != kVersion) {
    return Status::Invalid("corrupt catalog entry: unknown version");
  }
  Decoder d{data.substr(1)};
  Entry e;
  e.address = std::string(d.String());
  e.checksum = std::string(d.String());
  e.size = static_cast<int64_t>(d.Varint());
  e.mtime = static_cast<int64_t>(d.Varint());
  e.content_type = std::string(d.String());
  uint64_t n = d.Varint();
  for (uint64_t i = 0; d.ok && i < n; ++i) {
    std::string k(d.String());
    e.metadata[k] = std::string(d.String());
  }
  if (!d.ok || !d.in.empty()) return Status::Invalid("corrupt catalog entry: truncated or trailing bytes");
  return e;
}

std::string EntryIdentity(std::string_view encoded) {
  if (encoded.empty()) return {};
  auto e = DecodeEntry(encoded);
  if (!e.ok()) return std::string(encoded);  // compare raw bytes rather than fail
  std::string id;
  PutString(&id, e->checksum);
  PutVarint(&id, static_cast<uint64_t>(e->size));
  PutString(&id, e->content_type);
  for (const auto& [k, v] : e->metadata) {
    PutString(&id, k);
    PutString(&id, v);
  }
  return id;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 15]);
  }
  return out;
}

std::string RandomHex(size_t n) {
  thread_local std::mt19937_64 rng(std::random_device{}() ^ (static_cast<uint64_t>(std::random_device{}()) << 32));
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    auto b = static_cast<uint8_t>(rng());
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
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
