// LandsButFailsKv: a KvStore decorator for tests whose next `armed` batches
// that write a key under a chosen prefix land but answer Unavailable, as a
// PostgreSQL that went away right after a COMMIT would after its retries: the
// caller cannot tell whether its write happened. Other calls, and batches that
// write no key under the prefix, pass through. Test-only; header-only.
//
// Thread-safety: safe from many threads (`armed` is atomic).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kv/kv.h"

namespace sediment::kv {

class LandsButFailsKv final : public KvStore {
 public:
  LandsButFailsKv(std::shared_ptr<KvStore> inner, std::string prefix)
      : inner_(std::move(inner)), prefix_(std::move(prefix)) {}
  std::atomic<int> armed{0};
  Result<std::string> Get(std::string_view k) override { return inner_->Get(k); }
  Status Set(std::string_view k, std::string_view v) override { return inner_->Set(k, v); }
  Status Delete(std::string_view k) override { return inner_->Delete(k); }
  Result<ScanPage> Scan(std::string_view p, std::string_view f, size_t n) override { return inner_->Scan(p, f, n); }
  Result<std::optional<KeyValue>> Floor(std::string_view p, std::string_view at) override {
    return inner_->Floor(p, at);
  }
  Status Apply(const Batch& b) override {
    Status st = inner_->Apply(b);
    bool matched = false;
    for (const auto& m : b.mutations) matched |= m.key.rfind(prefix_, 0) == 0;
    if (st.ok() && matched && armed > 0) {
      armed--;
      return Unavailable("the database went away after COMMIT");
    }
    return st;
  }
  std::string Describe() const override { return "lands-but-fails"; }

 private:
  std::shared_ptr<KvStore> inner_;
  std::string prefix_;
};

}  // namespace sediment::kv
