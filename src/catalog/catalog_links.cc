// Link addresses: where GET .../staging/backing lets a client write an
// object's data itself, and the one-time permission to link what it wrote
// there (catalog.h, IssueLinkAddress). c/la/<repo>/<address> holds
// {"branch", "path", "expires" (Unix seconds)}; claiming deletes the record in
// a batch that requires it unchanged, so of two racing links one wins.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "catalog/keys.h"
#include "kv/kv.h"

namespace sediment::catalog {
namespace {

using nlohmann::json;

Status NotIssued(const std::string& address, const std::string& why) {
  return InvalidArgument(fmt::format(
      "physical address \"{}\" cannot be used: {} (only an address the server issued for this branch and path, "
      "by GET .../staging/backing or POST .../staging/pmpu, is used, once, before it expires)",
      address, why));
}

}  // namespace

Result<std::string> Catalog::IssueLinkAddress(const Repository& repo, const std::string& branch,
                                              const std::string& path, std::optional<Duration> ttl) {
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_RETURN_NOT_OK(ValidatePath(path));
  ARROW_RETURN_NOT_OK(GetBranch(repo.id, branch).status());
  int64_t now = ToUnixMicros(clock_->Now()) / 1000000;
  std::string address = NewDataAddress(now);
  int64_t expires = ToUnixMicros(clock_->Now() + ttl.value_or(options_.link_address_ttl)) / 1000000;
  json record = {{"branch", branch}, {"path", path}, {"expires", expires}};
  kv::Batch b;
  b.Require(kv::Precondition::Absent(LinkAddressKey(repo.id, address)))
      .Put(LinkAddressKey(repo.id, address), record.dump());
  ARROW_RETURN_NOT_OK(kv_->Apply(b));
  return address;
}

Status Catalog::CheckLinkAddress(const std::string& repo, const std::string& branch, const std::string& path,
                                 const std::string& address) {
  return LinkRecord(repo, branch, path, address).status();
}

Status Catalog::ClaimLinkAddress(const std::string& repo, const std::string& branch, const std::string& path,
                                 const std::string& address) {
  ARROW_ASSIGN_OR_RAISE(std::string raw, LinkRecord(repo, branch, path, address));
  kv::Batch b;
  b.Require(kv::Precondition::Equals(LinkAddressKey(repo, address), raw)).Delete(LinkAddressKey(repo, address));
  Status st = kv_->Apply(b);
  if (IsPreconditionFailed(st)) return NotIssued(address, "it was linked already");
  return st;
}

Result<std::string> Catalog::LinkRecord(const std::string& repo, const std::string& branch, const std::string& path,
                                        const std::string& address) {
  auto raw = kv_->Get(LinkAddressKey(repo, address));
  if (IsNotFound(raw.status()))
    return NotIssued(address, "it was not issued by this repository, or was linked already");
  ARROW_RETURN_NOT_OK(raw.status());
  json j = json::parse(*raw, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("branch") || !j["branch"].is_string() || !j.contains("path") ||
      !j["path"].is_string() || !j.contains("expires") || !j["expires"].is_number_integer()) {
    return Status::IOError(fmt::format("corrupt link address record of repository \"{}\"", repo));
  }
  if (j["branch"].get<std::string>() != branch || j["path"].get<std::string>() != path) {
    return NotIssued(address, fmt::format("it was issued for branch \"{}\", path \"{}\"",
                                          j["branch"].get<std::string>(), j["path"].get<std::string>()));
  }
  if (j["expires"].get<int64_t>() <= ToUnixMicros(clock_->Now()) / 1000000) return NotIssued(address, "it expired");
  return raw;
}

Status Catalog::PruneLinkAddresses(const std::string& repo) {
  int64_t now = ToUnixMicros(clock_->Now()) / 1000000;
  std::vector<kv::KeyValue> expired;
  ARROW_RETURN_NOT_OK(kv_->ScanAll(LinkAddressesPrefix(repo), "", [&](const kv::KeyValue& item) -> Result<bool> {
    json j = json::parse(item.value, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("expires") || !j["expires"].is_number_integer() ||
        j["expires"].get<int64_t>() <= now) {
      expired.push_back(item);
    }
    return true;
  }));
  for (const auto& item : expired) {
    kv::Batch b;  // only if still as read: a concurrent claim wins
    b.Require(kv::Precondition::Equals(item.key, item.value)).Delete(item.key);
    Status st = kv_->Apply(b);
    if (!st.ok() && !IsPreconditionFailed(st)) return st;
  }
  return Status::OK();
}

}  // namespace sediment::catalog
