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

// --- encodings ----------------------------------------------------------------------

namespace {
constexpr char kHexDigits[] = "0123456789abcdef";
constexpr char kBase64Chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}  // namespace

void AppendHex(const uint8_t* data, size_t n, std::string* out) {
  size_t at = out->size();
  out->resize(at + 2 * n);
  char* p = out->data() + at;
  for (size_t i = 0; i < n; ++i) {
    p[2 * i] = kHexDigits[data[i] >> 4];
    p[2 * i + 1] = kHexDigits[data[i] & 15];
  }
}

std::string Hex(const uint8_t* data, size_t n) {
  std::string out;
  AppendHex(data, n, &out);
  return out;
}

std::string Hex(std::string_view bytes) { return Hex(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()); }

std::optional<std::string> HexDecode(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>(hi << 4 | lo);
  }
  return out;
}

std::string Base64(std::string_view bytes) {
  std::string out;
  out.reserve(4 * ((bytes.size() + 2) / 3));
  size_t i = 0;
  auto at = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kBase64Chars[(v >> s) & 63]);
  }
  size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = at(i) << 16 | (rest == 2 ? at(i + 1) << 8 : 0);
    out.push_back(kBase64Chars[(v >> 18) & 63]);
    out.push_back(kBase64Chars[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kBase64Chars[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view in) {
  static const std::array<int8_t, 256> kValue = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(kBase64Chars[i])] = static_cast<int8_t>(i);
    return t;
  }();
  size_t pad = 0;
  while (!in.empty() && in.back() == '=' && pad < 2) {
    in.remove_suffix(1);
    pad++;
  }
  if (pad > 0 && (in.size() + pad) % 4 != 0) return std::nullopt;
  if (in.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(in.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v = kValue[static_cast<unsigned char>(c)];
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  // Leftover bits must be zero: otherwise two spellings decode alike.
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

bool IsUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t n;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // cut short
    for (size_t k = 1; k <= n; ++k) {
      auto t = static_cast<unsigned char>(s[i + k]);
      if ((t & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (t & 0x3F);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += n + 1;
  }
  return true;
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
