#include "kv/lease.h"

#include <nlohmann/json.hpp>

namespace sediment::kv {
namespace {

struct LeaseValue {
  std::string owner;
  int64_t expires_us = 0;
};

bool Decode(const std::string& text, LeaseValue* out) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("v", 0) != 1) return false;
  out->owner = j.value("owner", "");
  out->expires_us = j.value("expires_us", int64_t{0});
  return true;
}

}  // namespace

Result<bool> Lease::TryAcquire(TimePoint now) { return TryAcquire(now, ttl_); }

Result<bool> Lease::TryAcquire(TimePoint now, Duration at_least) {
  std::string mine = nlohmann::json{{"v", 1}, {"owner", owner_}, {"expires_us", ToUnixMicros(now + ttl_)}}.dump();
  auto current = kv_->Get(key_);
  std::optional<std::string> expected;
  if (current.ok()) {
    LeaseValue v;
    // An unreadable value is treated as expired: the lease must not wedge.
    const bool read = Decode(*current, &v);
    if (read && v.owner != owner_ && v.expires_us > ToUnixMicros(now)) return false;
    if (read && v.owner == owner_ && v.expires_us > ToUnixMicros(now + at_least)) return true;
    expected = *current;
  } else if (!IsNotFound(current.status())) {
    return current.status();
  }
  Status st = kv_->SetIf(key_, mine, expected);
  if (IsPreconditionFailed(st)) return false;  // someone else moved first
  ARROW_RETURN_NOT_OK(st);
  return true;
}

Status Lease::Release() {
  auto current = kv_->Get(key_);
  if (IsNotFound(current.status())) return Status::OK();
  ARROW_RETURN_NOT_OK(current.status());
  LeaseValue v;
  if (!Decode(*current, &v) || v.owner != owner_) return Status::OK();
  Batch b;
  b.Require(Precondition::Equals(key_, *current)).Delete(key_);
  Status st = kv_->Apply(b);
  return IsPreconditionFailed(st) ? Status::OK() : st;
}

Result<std::string> Lease::Holder(TimePoint now) {
  auto current = kv_->Get(key_);
  if (IsNotFound(current.status())) return std::string();
  ARROW_RETURN_NOT_OK(current.status());
  LeaseValue v;
  if (!Decode(*current, &v) || v.expires_us <= ToUnixMicros(now)) return std::string();
  return v.owner;
}

}  // namespace sediment::kv
