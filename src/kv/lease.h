// Lease: a named lock with an expiry in the KV store, so that of several
// servers sharing the store one at a time does a piece of work (compacting a
// table), and another takes over when the holder dies and its lease expires.
//
// Value: {"v":1,"owner":"…","expires_us":…}. Acquire succeeds if the lease is
// free, expired, or already ours (then it is renewed); every change is a
// compare-and-swap, so two servers never both hold it. Time comes from the
// caller's clock; servers' clocks must agree to well within the TTL.
//
// Thread-safety: safe from many threads; stateless apart from the KV store.
#pragma once

#include <memory>
#include <string>

#include "base/clock.h"
#include "base/status.h"
#include "kv/kv.h"

namespace sediment::kv {

class Lease {
 public:
  Lease(std::shared_ptr<KvStore> kv, std::string key, std::string owner, Duration ttl)
      : kv_(std::move(kv)), key_(std::move(key)), owner_(std::move(owner)), ttl_(ttl) {}

  // True if we hold the lease until now + ttl; false if someone else holds it.
  Result<bool> TryAcquire(TimePoint now);
  // True if we hold it for at least `at_least` more (renewed to now + ttl
  // only when less is left: a holder that asks often writes seldom); false if
  // someone else holds it.
  Result<bool> TryAcquire(TimePoint now, Duration at_least);
  // Gives it up if we hold it.
  Status Release();
  // Who holds it now (empty if free or expired).
  Result<std::string> Holder(TimePoint now);

 private:
  std::shared_ptr<KvStore> kv_;
  const std::string key_;
  const std::string owner_;
  const Duration ttl_;
};

}  // namespace sediment::kv
