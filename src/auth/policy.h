// Policies as lakeFS has them, and the one place they are evaluated — for
// the REST API, the S3 gateway, the tables and jobs APIs alike.
//
// A request is allowed when one of the user's policies has an "allow"
// statement matching the action and resource ARN and none has a matching
// "deny" (wildcards: '*' any run, '?' one character). A pure function of its
// inputs, tested rule by rule in policy_test.cc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace sediment::auth {

struct Statement {
  std::string effect;  // allow | deny
  std::vector<std::string> actions;
  std::string resource;
};

struct Policy {
  std::string id;
  std::vector<Statement> statements;
  int64_t creation_date = 0;
  std::string acl;  // a group ACL's policy: the permission it was made from (Read, Write, Super, Admin)
};

// OK if `policies` allow `action` on `resource`; Forbidden naming the user,
// the action and the resource (and whether a statement denied it) otherwise.
// "${user}" in a statement's resource stands for `user` (lakeFS's
// AuthManageOwnCredentials: arn:lakefs:auth:::user/${user}).
Status Evaluate(const std::vector<Policy>& policies, const std::string& user, const std::string& action,
                const std::string& resource);

// InvalidArgument unless every statement has effect allow or deny, a resource,
// and actions that are "*" or "<service>:<name>" of a service that exists
// (lakeFS's fs, auth, ci, retention, branches, pr, catalog; Sediment's tables, jobs).
Status ValidatePolicy(const Policy& policy);

}  // namespace sediment::auth
