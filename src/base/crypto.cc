#include "base/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace sediment {

// --- randomness -------------------------------------------------------------------

std::string RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (n > 0 && RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    std::fputs("sediment: the CSPRNG (OpenSSL RAND_bytes) failed; refusing to go on with weaker randomness\n", stderr);
    std::abort();
  }
  return out;
}

std::string RandomHex(size_t n) { return Hex(RandomBytes(n)); }

uint64_t RandomUint64() {
  std::string b = RandomBytes(8);
  uint64_t v;
  std::memcpy(&v, b.data(), 8);
  return v;
}

double RandomUniform(double lo, double hi) {
  // 53 random bits: every double in [0, 1) with that spacing, equally likely.
  double unit = static_cast<double>(RandomUint64() >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * unit;
}

std::string RandomString(size_t n, std::string_view alphabet) {
  std::string out;
  out.reserve(n);
  // Rejection sampling: bytes at or above the largest multiple of the
  // alphabet's size would favour its first characters.
  const unsigned size = static_cast<unsigned>(alphabet.size());
  const unsigned limit = 256 - 256 % size;
  while (out.size() < n) {
    for (unsigned char c : RandomBytes(n - out.size() + 8)) {
      if (c >= limit) continue;
      out.push_back(alphabet[c % size]);
      if (out.size() == n) break;
    }
  }
  return out;
}

// --- digests ------------------------------------------------------------------------

namespace {
const EVP_MD* MdOf(DigestKind kind) {
  switch (kind) {
    case DigestKind::kMd5:
      return EVP_md5();
    case DigestKind::kSha1:
      return EVP_sha1();
    case DigestKind::kSha256:
      break;
  }
  return EVP_sha256();
}
}  // namespace

Digest::Digest(DigestKind kind) : ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), MdOf(kind), nullptr);
}

Digest::~Digest() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Digest::Update(const void* data, size_t n) { EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, n); }

void Digest::Update(std::string_view data) { Update(data.data(), data.size()); }

std::string Digest::Final() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &n);
  return std::string(reinterpret_cast<char*>(md), n);
}

namespace {
std::string OneShot(const EVP_MD* md, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), out, &n, md, nullptr);
  return std::string(reinterpret_cast<char*>(out), n);
}
}  // namespace

std::string Sha256(std::string_view data) { return OneShot(EVP_sha256(), data); }
std::string Sha256Hex(std::string_view data) { return Hex(Sha256(data)); }
std::string Md5(std::string_view data) { return OneShot(EVP_md5(), data); }

namespace {
std::string Hmac(const EVP_MD* md, std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(md, key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()), data.size(),
       out, &n);
  return std::string(reinterpret_cast<char*>(out), n);
}
}  // namespace

std::string HmacSha256(std::string_view key, std::string_view data) { return Hmac(EVP_sha256(), key, data); }
std::string HmacSha1(std::string_view key, std::string_view data) { return Hmac(EVP_sha1(), key, data); }

std::string HkdfSha256(std::string_view material, std::string_view salt, std::string_view info, size_t length) {
  std::string out(length, '\0');
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr);
  size_t n = length;
  bool ok = ctx != nullptr && EVP_PKEY_derive_init(ctx) > 0 && EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) > 0 &&
            EVP_PKEY_CTX_set1_hkdf_salt(ctx, reinterpret_cast<const unsigned char*>(salt.data()),
                                        static_cast<int>(salt.size())) > 0 &&
            EVP_PKEY_CTX_set1_hkdf_key(ctx, reinterpret_cast<const unsigned char*>(material.data()),
                                       static_cast<int>(material.size())) > 0 &&
            EVP_PKEY_CTX_add1_hkdf_info(ctx, reinterpret_cast<const unsigned char*>(info.data()),
                                        static_cast<int>(info.size())) > 0 &&
            EVP_PKEY_derive(ctx, reinterpret_cast<unsigned char*>(out.data()), &n) > 0 && n == length;
  EVP_PKEY_CTX_free(ctx);
  if (!ok) {
    std::fputs("sediment: HKDF (OpenSSL) failed\n", stderr);
    std::abort();
  }
  return out;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// --- checksums ------------------------------------------------------------------------

uint32_t Crc32c(uint32_t crc, const void* data, size_t n) {
  static const std::array<uint32_t, 256> kTable = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

std::string SystemCaBundle() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv(X509_get_default_cert_file_env()); env != nullptr && *env != '\0') {
    candidates.push_back(env);
  }
  candidates.push_back(X509_get_default_cert_file());
  candidates.push_back("/etc/ssl/certs/ca-certificates.crt");  // Debian, Ubuntu
  candidates.push_back("/etc/pki/tls/certs/ca-bundle.crt");    // Red Hat
  for (const auto& c : candidates) {
    struct stat st;
    if (::stat(c.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return c;
  }
  return "";
}

}  // namespace sediment
