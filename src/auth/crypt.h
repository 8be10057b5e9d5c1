// SecretBox: how access-key secrets are kept at rest, and the key console
// sessions are signed with — both derived (HKDF-SHA256) from one key
// material, never the material itself.
//
// A sealed secret is "2:" base64(12-byte IV | AES-256-GCM ciphertext | 16-byte
// tag). One without the prefix was sealed by a version before the KDF, under
// the plain SHA-256 of the material, and still opens (docs/formats.md).
//
// Thread-safety: a SecretBox is immutable; use it from any thread.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace sediment::auth {

class SecretBox {
 public:
  explicit SecretBox(std::string material);

  Result<std::string> Seal(std::string_view secret) const;
  // Unauthorized if `sealed` was sealed under other material; IOError if it is no sealed secret.
  Result<std::string> Open(std::string_view sealed) const;
  // The HMAC key of session tokens.
  const std::string& session_key() const { return session_key_; }

 private:
  std::string material_;
  std::string secrets_key_;
  std::string session_key_;
};

}  // namespace sediment::auth
