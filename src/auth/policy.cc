#include "auth/policy.h"

#include <fmt/format.h>

#include <set>

#include "base/wildcard.h"

namespace sediment::auth {

Status Evaluate(const std::vector<Policy>& policies, const std::string& user, const std::string& action,
                const std::string& resource) {
  bool allowed = false;
  for (const auto& p : policies) {
    for (const auto& s : p.statements) {
      std::string pattern = s.resource;
      for (size_t at = pattern.find("${user}"); at != std::string::npos;
           at = pattern.find("${user}", at + user.size())) {
        pattern.replace(at, 7, user);
      }
      if (!WildcardMatch(pattern, resource)) continue;
      for (const auto& a : s.actions) {
        if (!WildcardMatch(a, action)) continue;
        if (s.effect == "deny") {
          return Forbidden(fmt::format("user \"{}\" is denied {} on {}", user, action, resource));
        }
        allowed = true;
      }
    }
  }
  if (!allowed) return Forbidden(fmt::format("user \"{}\" lacks permission {} on {}", user, action, resource));
  return Status::OK();
}

Status ValidatePolicy(const Policy& p) {
  if (p.statements.empty()) return InvalidArgument("a policy needs at least one statement");
  for (const auto& s : p.statements) {
    if (s.effect != "allow" && s.effect != "deny") {
      return InvalidArgument(fmt::format("statement effect \"{}\" must be allow or deny", s.effect));
    }
    if (s.actions.empty() || s.resource.empty()) return InvalidArgument("each statement needs action and resource");
    for (const auto& a : s.actions) {
      if (a == "*") continue;
      static const std::set<std::string, std::less<>> kServices = {"fs", "auth",    "ci",     "retention", "branches",
                                                                   "pr", "catalog", "tables", "jobs"};
      const auto colon = a.find(':');
      if (colon == std::string::npos || colon + 1 == a.size() || !kServices.contains(a.substr(0, colon))) {
        return InvalidArgument(fmt::format(
            "action \"{}\" must be \"*\" or <service>:<action> with a service of fs, auth, ci, retention, branches, "
            "pr, catalog, tables, jobs",
            a));
      }
    }
  }
  return Status::OK();
}

}  // namespace sediment::auth
