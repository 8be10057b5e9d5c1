// CountingKv: a KvStore decorator for tests that counts the records its
// callers read, so a test can bound the reads of an operation (for instance,
// that it does not grow with the size of a table). A point read and a floor
// lookup count one; a scan counts the items of its page plus one for the page.
// Writes pass through uncounted. Test-only; header-only.
//
// Thread-safety: safe from many threads (the count is atomic).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kv/kv.h"

namespace sediment::kv {

class CountingKv final : public KvStore {
 public:
  explicit CountingKv(std::shared_ptr<KvStore> inner) : inner_(std::move(inner)) {}
  std::atomic<int64_t> reads{0};
  Result<std::string> Get(std::string_view k) override {
    reads++;
    return inner_->Get(k);
  }
  Status Set(std::string_view k, std::string_view v) override { return inner_->Set(k, v); }
  Status Delete(std::string_view k) override { return inner_->Delete(k); }
  Result<ScanPage> Scan(std::string_view p, std::string_view f, size_t n) override {
    auto page = inner_->Scan(p, f, n);
    if (page.ok()) reads += static_cast<int64_t>(page->items.size()) + 1;
    return page;
  }
  Result<std::optional<KeyValue>> Floor(std::string_view p, std::string_view at) override {
    reads++;
    return inner_->Floor(p, at);
  }
  Status Apply(const Batch& b) override { return inner_->Apply(b); }
  std::string Describe() const override { return "counting"; }

 private:
  std::shared_ptr<KvStore> inner_;
};

}  // namespace sediment::kv
