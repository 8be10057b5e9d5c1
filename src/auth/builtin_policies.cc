// The base groups' policies and the group ACLs' statements
// (builtin_policies_internal.h).
#include <fmt/format.h>

#include "auth/builtin_policies_internal.h"

namespace sediment::auth {
namespace {

// lakeFS's AuthManageOwnCredentials and RepoManagementReadAll statements.
Statement OwnCredentials() {
  return {"allow",
          {"auth:CreateCredentials", "auth:DeleteCredentials", "auth:ListCredentials", "auth:ReadCredentials"},
          "arn:lakefs:auth:::user/${user}"};
}
Statement RepoManagementRead() {
  return {"allow", {"ci:Read*", "retention:Get*", "branches:Get*", "pr:Read*", "pr:List*", "fs:ReadConfig"}, "*"};
}
const std::vector<std::string> kFsReadWrite = {
    "fs:Read*",        "fs:List*",     "fs:WriteObject",  "fs:DeleteObject", "fs:RevertBranch",
    "fs:CreateBranch", "fs:CreateTag", "fs:DeleteBranch", "fs:DeleteTag",    "fs:CreateCommit"};

Statement AllowOnAll(std::vector<std::string> actions) { return Statement{"allow", std::move(actions), "*"}; }

}  // namespace

std::vector<Policy> BasePolicies(int64_t now) {
  auto all = AllowOnAll;
  return {
      {"FSFullAccess", {all({"fs:*"})}, now, ""},
      {"FSReadWriteAll", {all(kFsReadWrite)}, now, ""},
      {"FSReadAll", {all({"fs:List*", "fs:Read*"})}, now, ""},
      {"RepoManagementFullAccess", {all({"ci:*", "retention:*", "branches:*", "pr:*", "fs:ReadConfig"})}, now, ""},
      {"RepoManagementReadAll", {RepoManagementRead()}, now, ""},
      {"PRReadWriteAll", {all({"pr:*"})}, now, ""},
      {"CatalogReadAll",
       {all({"catalog:ListNamespaces", "catalog:GetNamespace", "catalog:ListTables", "catalog:ReadTable",
             "catalog:ListViews", "catalog:ReadView"})},
       now,
       ""},
      {"CatalogReadWriteAll", {all({"catalog:*"})}, now, ""},
      {"AuthFullAccess", {all({"auth:*"})}, now, ""},
      {"AuthManageOwnCredentials", {OwnCredentials()}, now, ""},
      {"TablesFullAccess", {all({"tables:*", "jobs:*"})}, now, ""},
      {"TablesReadAll", {all({"tables:Read*", "tables:List*", "jobs:Read*"})}, now, ""},
  };
}

const std::vector<BaseGroup>& BaseGroups() {
  static const std::vector<BaseGroup> groups = {
      {"Admins",
       {"FSFullAccess", "CatalogReadWriteAll", "AuthFullAccess", "RepoManagementFullAccess", "TablesFullAccess"}},
      {"SuperUsers",
       {"FSFullAccess", "CatalogReadWriteAll", "AuthManageOwnCredentials", "RepoManagementReadAll",
        "TablesFullAccess"}},
      {"Developers",
       {"FSReadWriteAll", "PRReadWriteAll", "CatalogReadWriteAll", "AuthManageOwnCredentials", "RepoManagementReadAll",
        "TablesReadAll"}},
      {"Viewers", {"FSReadAll", "CatalogReadAll", "AuthManageOwnCredentials", "TablesReadAll"}},
  };
  return groups;
}

Result<std::vector<Statement>> AclStatements(const std::string& permission) {
  auto all = AllowOnAll;
  if (permission == "Read")
    return std::vector<Statement>{all({"fs:List*", "fs:Read*", "tables:Read*", "tables:List*"}), OwnCredentials()};
  if (permission == "Write") {
    auto rw = kFsReadWrite;
    rw.insert(rw.end(), {"tables:Read*", "tables:List*"});
    return std::vector<Statement>{all(rw), OwnCredentials(), RepoManagementRead()};
  }
  if (permission == "Super")
    return std::vector<Statement>{all({"fs:*", "tables:*", "jobs:*"}), OwnCredentials(), RepoManagementRead()};
  if (permission == "Admin") {
    return std::vector<Statement>{
        all({"fs:*", "auth:*", "ci:*", "retention:*", "branches:*", "pr:*", "catalog:*", "tables:*", "jobs:*"})};
  }
  return InvalidArgument(fmt::format("ACL permission \"{}\" must be Read, Write, Super or Admin", permission));
}

}  // namespace sediment::auth
