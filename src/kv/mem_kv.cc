// In-memory KvStore: a std::map under one reader-writer lock. For tests, and
// for sharing one store between several server objects in one process.
#include <fmt/format.h>

#include <map>
#include <mutex>
#include <shared_mutex>

#include "kv/kv.h"
#include "kv/kv_internal.h"

namespace sediment::kv {
namespace {

class MemoryStore final : public KvStore {
 public:
  Result<std::string> Get(std::string_view key) override {
    std::shared_lock lock(mu_);
    auto it = data_.find(key);
    if (it == data_.end()) return NotFound(fmt::format("key \"{}\" not found", Printable(key)));
    return it->second;
  }

  Status Set(std::string_view key, std::string_view value) override {
    std::unique_lock lock(mu_);
    data_.insert_or_assign(std::string(key), std::string(value));
    return Status::OK();
  }

  Status Delete(std::string_view key) override {
    std::unique_lock lock(mu_);
    auto it = data_.find(key);
    if (it != data_.end()) data_.erase(it);
    return Status::OK();
  }

  Result<ScanPage> Scan(std::string_view prefix, std::string_view from, size_t limit) override {
    std::shared_lock lock(mu_);
    ScanPage page;
    std::string_view start = from > prefix ? from : prefix;
    for (auto it = data_.lower_bound(start); it != data_.end(); ++it) {
      if (it->first.compare(0, prefix.size(), prefix) != 0) break;
      if (page.items.size() == limit) {
        page.has_more = true;
        break;
      }
      page.items.push_back({it->first, it->second});
    }
    return page;
  }

  Result<std::optional<KeyValue>> Floor(std::string_view prefix, std::string_view at) override {
    std::shared_lock lock(mu_);
    auto it = data_.upper_bound(at);
    if (it == data_.begin()) return std::optional<KeyValue>();
    --it;
    if (it->first.compare(0, prefix.size(), prefix) != 0) return std::optional<KeyValue>();
    return std::optional<KeyValue>(KeyValue{it->first, it->second});
  }

  Status Apply(const Batch& batch) override {
    std::unique_lock lock(mu_);
    for (const auto& p : batch.preconditions) {
      auto it = data_.find(p.key);
      ARROW_RETURN_NOT_OK(CheckPrecondition(p, it == data_.end() ? nullptr : &it->second));
    }
    for (const auto& m : batch.mutations) {
      if (m.kind == Mutation::Kind::kPut) {
        data_.insert_or_assign(m.key, m.value);
      } else {
        data_.erase(m.key);
      }
    }
    return Status::OK();
  }

  std::string Describe() const override { return "mem"; }

 private:
  std::shared_mutex mu_;
  std::map<std::string, std::string, std::less<>> data_;  // GUARDED_BY(mu_)
};

}  // namespace

std::shared_ptr<KvStore> NewMemoryStore() { return std::make_shared<MemoryStore>(); }

}  // namespace sediment::kv
