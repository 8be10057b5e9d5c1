#include "auth/crypt.h"

#include <openssl/evp.h>

#include <cstring>

#include "base/crypto.h"

namespace sediment::auth {
namespace {

constexpr size_t kIvBytes = 12, kTagBytes = 16;
constexpr std::string_view kSealedV2 = "2:";
constexpr std::string_view kKdfSalt = "sediment";

// AES-256-GCM with `key` over `in`; `encrypt` false opens (and checks the tag).
bool Gcm(bool encrypt, const std::string& key, const unsigned char* iv, const unsigned char* in, size_t len,
         unsigned char* out, unsigned char* tag) {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  auto k = reinterpret_cast<const unsigned char*>(key.data());
  int n = 0;
  bool ok = encrypt ? EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, k, iv) == 1 &&
                          EVP_EncryptUpdate(ctx, out, &n, in, static_cast<int>(len)) == 1 &&
                          EVP_EncryptFinal_ex(ctx, out + n, &n) == 1 &&
                          EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, kTagBytes, tag) == 1
                    : EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, k, iv) == 1 &&
                          EVP_DecryptUpdate(ctx, out, &n, in, static_cast<int>(len)) == 1 &&
                          EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, kTagBytes, tag) == 1 &&
                          EVP_DecryptFinal_ex(ctx, out + n, &n) == 1;
  EVP_CIPHER_CTX_free(ctx);
  return ok;
}

}  // namespace

SecretBox::SecretBox(std::string material)
    : material_(std::move(material)),
      secrets_key_(HkdfSha256(material_, kKdfSalt, "sediment access-key secrets v2", 32)),
      session_key_(HkdfSha256(material_, kKdfSalt, "sediment session tokens v2", 32)) {}

Result<std::string> SecretBox::Seal(std::string_view secret) const {
  std::string out = RandomBytes(kIvBytes) + std::string(secret.size() + kTagBytes, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  if (!Gcm(true, secrets_key_, o, reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), o + kIvBytes,
           o + kIvBytes + secret.size())) {
    return Status::IOError("encrypting a secret failed");
  }
  return std::string(kSealedV2) + Base64(out);
}

Result<std::string> SecretBox::Open(std::string_view sealed_b64) const {
  std::string legacy_key;
  const std::string* key = &secrets_key_;
  if (sealed_b64.substr(0, kSealedV2.size()) == kSealedV2) {
    sealed_b64.remove_prefix(kSealedV2.size());
  } else {
    legacy_key = Sha256(material_);  // sealed by a version before the KDF
    key = &legacy_key;
  }
  std::string sealed = Base64Decode(sealed_b64).value_or("");
  if (sealed.size() < kIvBytes + kTagBytes) return Status::IOError("corrupt encrypted secret");
  size_t len = sealed.size() - kIvBytes - kTagBytes;
  auto* in = reinterpret_cast<unsigned char*>(sealed.data());
  std::string out(len, '\0');
  if (!Gcm(false, *key, in, in + kIvBytes, len, reinterpret_cast<unsigned char*>(out.data()), in + kIvBytes + len)) {
    return Unauthorized(
        "the access key's secret cannot be decrypted: [auth] encrypt_secret_key differs from the key it was "
        "stored with");
  }
  return out;
}

}  // namespace sediment::auth
