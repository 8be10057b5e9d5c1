// Digest: the catalog's one wrapper over OpenSSL's EVP hashing — a streaming
// digest (SHA-256 unless told otherwise) that ends in lowercase hex. Content
// ids are built on it: commit ids (Sha256Hex), range and meta-range ids
// (range_store.cc). Private to src/catalog.
//
// Thread-safety: a Digest is used by one thread at a time.
#pragma once
#include <openssl/evp.h>

#include <string>
#include <string_view>

#include "catalog/coding_internal.h"

namespace sediment::catalog::internal {

class Digest {
 public:
  explicit Digest(const EVP_MD* md = EVP_sha256()) : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, md, nullptr); }
  ~Digest() { EVP_MD_CTX_free(ctx_); }
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;

  void Update(std::string_view data) { EVP_DigestUpdate(ctx_, data.data(), data.size()); }

  // The digest of everything added, as hex. Call once: it finishes the digest.
  std::string Hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_, md, &n);
    return HexEncode(md, n);
  }

 private:
  EVP_MD_CTX* ctx_;
};

}  // namespace sediment::catalog::internal
