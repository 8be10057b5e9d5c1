// Private to auth/: the policies AuthService makes itself — lakeFS's base
// groups and their policies (created at set-up), and the statements of a
// group ACL (SetGroupAcl). Data, not mechanism: setup.cc and groups.cc store
// them.
//
// Thread-safety: pure functions and constants.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "auth/policy.h"
#include "base/status.h"

namespace sediment::auth {

// The policy set-up attaches to the first admin.
inline constexpr const char* kAdminPolicy = "AdminAccess";

// The policies of lakeFS's base groups (ids and statements as lakeFS's), and
// Sediment's two for its tables and jobs APIs, created at `now`.
std::vector<Policy> BasePolicies(int64_t now);

// lakeFS's base groups (Admins, SuperUsers, Developers, Viewers) and the base
// policies each gets.
struct BaseGroup {
  const char* id;
  std::vector<std::string> policies;
};
const std::vector<BaseGroup>& BaseGroups();

// The statements of a group ACL, as lakeFS makes them (and Sediment's tables);
// InvalidArgument unless `permission` is Read, Write, Super or Admin.
Result<std::vector<Statement>> AclStatements(const std::string& permission);

}  // namespace sediment::auth
