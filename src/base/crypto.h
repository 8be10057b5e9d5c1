// The one home of randomness, digests and checksums (OpenSSL underneath), so
// no module grows its own copy. Encodings (hex, base64, percent) are in
// base/codec.h, included here for Digest::FinalHex.
//
// Randomness: everything here draws from OpenSSL's CSPRNG (RAND_bytes).
// Anything anyone could profit from guessing — keys, secrets, session nonces,
// upload ids, data addresses, request ids, lease owners — comes from these
// functions and nothing else; seeded generators are for tests and simulations
// only. If the CSPRNG cannot deliver, the process aborts rather than hand out
// something weaker.
//
// Thread-safety: all functions are safe from many threads; a Digest or Hmac
// object is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/codec.h"

namespace sediment {

// --- randomness (CSPRNG) ------------------------------------------------------

std::string RandomBytes(size_t n);

// The system's CA bundle for TLS clients: $SSL_CERT_FILE, else OpenSSL's default file, else the
// Debian and Red Hat bundle paths; "" if none exists. Named explicitly because OpenSSL's "default
// verify paths" go through its OSSL_STORE loaders, which crash in a process that also loads the
// OpenSSL bundled with the Arrow libraries.
std::string SystemCaBundle();
// `n` random bytes as 2n lower-case hex digits.
std::string RandomHex(size_t n);
uint64_t RandomUint64();
// Uniform in [lo, hi).
double RandomUniform(double lo, double hi);
// `n` characters drawn uniformly from `alphabet` (no modulo bias).
std::string RandomString(size_t n, std::string_view alphabet);

// --- digests --------------------------------------------------------------------

enum class DigestKind { kMd5, kSha1, kSha256 };

// A streaming digest. Final() ends it; call it once.
class Digest {
 public:
  explicit Digest(DigestKind kind = DigestKind::kSha256);
  ~Digest();
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;

  void Update(std::string_view data);
  void Update(const void* data, size_t n);
  std::string Final();  // raw bytes
  std::string FinalHex() { return Hex(Final()); }

 private:
  void* ctx_;  // EVP_MD_CTX*
};

std::string Sha256(std::string_view data);  // raw bytes
std::string Sha256Hex(std::string_view data);
std::string Md5(std::string_view data);                               // raw bytes
std::string HmacSha256(std::string_view key, std::string_view data);  // raw bytes
std::string HmacSha1(std::string_view key, std::string_view data);    // raw bytes (S3 signature V2)

// HKDF-SHA256 (RFC 5869): `length` bytes of key derived from `material`,
// bound to `info` (what the key is for), with `salt`.
std::string HkdfSha256(std::string_view material, std::string_view salt, std::string_view info, size_t length);

// Compares secrets in time that depends only on their lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// --- checksums ------------------------------------------------------------------

// CRC32C (Castagnoli), continuing from `crc` (0 to start).
uint32_t Crc32c(uint32_t crc, const void* data, size_t n);

}  // namespace sediment
