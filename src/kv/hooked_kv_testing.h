// HookedKv: a KvStore decorator for tests that forces one interleaving of
// concurrent operations deterministically, in the spirit of RocksDB's sync
// points: "just before the first write to a key matching P, run A" (A is
// typically the racing operation, run to completion), or "fail the first write
// to a key matching P" (an interrupted operation). Test-only; header-only so the
// tests of every module over a KvStore (catalog, auth, table) can share it.
//
// A write is a Set, SetIf, Delete, or an Apply with a mutation on the key. Each
// hook fires once and is disarmed before its action runs, so the action's own
// writes go through unhooked. A read counter (CountReads) is no hook: it counts
// every Get it matches until Clear().
//
// Thread-safety: safe from many threads; actions run on the writing thread,
// outside the hook lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kv/kv.h"

namespace sediment::kv {

class HookedKv : public KvStore {
 public:
  using KeyMatch = std::function<bool(const std::string& key)>;

  explicit HookedKv(std::shared_ptr<KvStore> inner) : inner_(std::move(inner)) {}

  // Runs `action` once, just before the first write to a key `match` accepts.
  void BeforeWrite(KeyMatch match, std::function<void()> action) {
    std::lock_guard<std::mutex> lock(mu_);
    hooks_.push_back({std::move(match), std::move(action), Status::OK()});
  }
  // Fails the first write to a key `match` accepts with `error`, writing nothing.
  void FailWrite(KeyMatch match, Status error) {
    std::lock_guard<std::mutex> lock(mu_);
    hooks_.push_back({std::move(match), nullptr, std::move(error)});
  }
  // Drops every hook and read counter (a dropped counter keeps its count and stops counting).
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    hooks_.clear();
    read_hooks_.clear();
    read_counters_.clear();
  }

  static KeyMatch Prefix(std::string prefix) {
    return [prefix = std::move(prefix)](const std::string& key) { return key.rfind(prefix, 0) == 0; };
  }
  static KeyMatch Exactly(std::string want) {
    return [want = std::move(want)](const std::string& key) { return key == want; };
  }

  // Runs `action` once, just before the first Get of a key (or Scan of a
  // prefix) `match` accepts: a reader paused between two of its reads.
  void BeforeRead(KeyMatch match, std::function<void()> action) {
    std::lock_guard<std::mutex> lock(mu_);
    read_hooks_.push_back({std::move(match), std::move(action), Status::OK()});
  }

  // Counts every Get of a key `match` accepts from now on; never disarmed by
  // counting (only Clear() drops it). Read the count with ->load().
  std::shared_ptr<std::atomic<int64_t>> CountReads(KeyMatch match) {
    auto count = std::make_shared<std::atomic<int64_t>>(0);
    std::lock_guard<std::mutex> lock(mu_);
    read_counters_.push_back({std::move(match), count});
    return count;
  }

  Result<std::string> Get(std::string_view key) override {
    CountRead(key);
    BeforeReading(key);
    return inner_->Get(key);
  }

 private:
  void CountRead(std::string_view key) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& c : read_counters_) {
      if (c.match(std::string(key))) ++*c.count;
    }
  }
  void BeforeReading(std::string_view key) {
    std::function<void()> action;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = read_hooks_.begin(); it != read_hooks_.end(); ++it) {
        if (it->match(std::string(key))) {
          action = std::move(it->action);
          read_hooks_.erase(it);
          break;
        }
      }
    }
    if (action) action();
  }

 public:
  Status Set(std::string_view key, std::string_view value) override {
    ARROW_RETURN_NOT_OK(Fire({std::string(key)}));
    return inner_->Set(key, value);
  }
  Status SetIf(std::string_view key, std::string_view value, const std::optional<std::string>& expected) override {
    ARROW_RETURN_NOT_OK(Fire({std::string(key)}));
    return inner_->SetIf(key, value, expected);
  }
  Status Delete(std::string_view key) override {
    ARROW_RETURN_NOT_OK(Fire({std::string(key)}));
    return inner_->Delete(key);
  }
  Result<ScanPage> Scan(std::string_view prefix, std::string_view from, size_t limit) override {
    BeforeReading(prefix);
    return inner_->Scan(prefix, from, limit);
  }
  Result<std::optional<KeyValue>> Floor(std::string_view prefix, std::string_view at) override {
    BeforeReading(prefix);
    return inner_->Floor(prefix, at);
  }
  Status Apply(const Batch& batch) override {
    std::vector<std::string> keys;
    for (const auto& m : batch.mutations) keys.push_back(m.key);
    ARROW_RETURN_NOT_OK(Fire(keys));
    return inner_->Apply(batch);
  }
  std::string Describe() const override { return "hooked(" + inner_->Describe() + ")"; }

 private:
  struct Hook {
    KeyMatch match;
    std::function<void()> action;  // null: fail with `error`
    Status error;
  };

  Status Fire(const std::vector<std::string>& keys) {
    std::optional<Hook> fired;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = 0; i < hooks_.size() && !fired; ++i) {
        for (const auto& k : keys) {
          if (!hooks_[i].match(k)) continue;
          fired = std::move(hooks_[i]);
          hooks_.erase(hooks_.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
      }
    }
    if (!fired) return Status::OK();
    if (!fired->action) return fired->error;
    fired->action();
    return Status::OK();
  }

  std::shared_ptr<KvStore> inner_;
  std::mutex mu_;
  std::vector<Hook> hooks_;       // GUARDED_BY(mu_)
  std::vector<Hook> read_hooks_;  // GUARDED_BY(mu_)
  struct ReadCounter {
    KeyMatch match;
    std::shared_ptr<std::atomic<int64_t>> count;
  };
  std::vector<ReadCounter> read_counters_;  // GUARDED_BY(mu_)
};

}  // namespace sediment::kv
