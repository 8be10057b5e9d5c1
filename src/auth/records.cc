// The JSON of auth's records, id checks, and paging over ids
// (auth_internal.h). Values must stay readable by older versions and read
// what they wrote: docs/formats.md.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>

#include "auth/auth_internal.h"
#include "base/crypto.h"
#include "kv/kv.h"

namespace sediment::auth {

using nlohmann::json;

Status ValidateId(const std::string& what, const std::string& id) {
  static const std::regex re("^[\\w+=,.@-]{1,128}$");
  if (!std::regex_match(id, re)) {
    return InvalidArgument(fmt::format("invalid {} id \"{}\": use 1-128 letters, digits and _+=,.@-", what, id));
  }
  return Status::OK();
}

Result<std::string> WithNewRev(const std::string& what, const std::string& raw) {
  auto j = json::parse(raw, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::IOError(fmt::format("corrupt {} record", what));
  j["rev"] = RandomHex(8);
  return j.dump();
}

std::string SecretHash(const std::string& salt, const std::string& secret) { return Sha256Hex(salt + ":" + secret); }

std::string UserJson(int64_t creation_date) { return json{{"creation_date", creation_date}}.dump(); }

int64_t UserCreationDate(const std::string& raw) {
  auto j = json::parse(raw, nullptr, false);
  return j.is_discarded() ? 0 : j.value("creation_date", int64_t{0});
}

json PolicyJson(const Policy& p) {
  json st = json::array();
  for (const auto& s : p.statements)
    st.push_back({{"effect", s.effect}, {"action", s.actions}, {"resource", s.resource}});
  json j = {{"statement", st}, {"creation_date", p.creation_date}};
  if (!p.acl.empty()) j["acl"] = p.acl;
  return j;
}

Result<Policy> ParsePolicy(const std::string& id, const std::string& raw) {
  try {
    auto j = json::parse(raw);
    Policy p{id, {}, j.value("creation_date", int64_t{0}), j.value("acl", "")};
    for (const auto& s : j.at("statement")) {
      p.statements.push_back(
          {s.at("effect").get<std::string>(), s.at("action").get<std::vector<std::string>>(), s.at("resource")});
    }
    return p;
  } catch (const std::exception& e) {
    return Status::IOError(fmt::format("corrupt policy {}: {}", id, e.what()));
  }
}

std::string GroupJson(const Group& g) {
  return json{{"creation_date", g.creation_date}, {"description", g.description}}.dump();
}

Group ParseGroup(const std::string& id, const std::string& raw) {
  auto j = json::parse(raw, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Group{id, "", 0};
  return Group{id, j.value("description", ""), j.value("creation_date", int64_t{0})};
}

Status ScanIds(kv::KvStore& kv, const std::string& base, const AuthIdPage& page,
               const std::function<Status(const std::string&, const std::string&)>& visit) {
  if (page.has_more) *page.has_more = false;
  size_t n = 0;
  std::string from = page.after.empty() ? "" : base + page.after + std::string(1, '\0');
  return kv.ScanAll(
      base + page.prefix, from,
      [&](const kv::KeyValue& item) -> Result<bool> {
        if (n == page.amount) {
          if (page.has_more) *page.has_more = true;
          return false;
        }
        n++;
        ARROW_RETURN_NOT_OK(visit(item.key.substr(base.size()), item.value));
        return true;
      },
      std::min<size_t>(page.amount + 1, 1024));
}

}  // namespace sediment::auth
