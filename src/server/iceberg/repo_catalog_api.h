// The Iceberg REST catalog of tables in repositories, in lakeFS Enterprise's
// form (docs/iceberg-repositories.md): /iceberg/api (identifiers
// <repository>.<ref>.<namespace...>.<table>, the REST prefix "lakefs" or none),
// /iceberg/relative_to/<repository>[.<ref>]/api (the scope's parts prepended
// to every namespace), tokens at .../v1/oauth/tokens. Every route is a row of
// the route table: reading needs lakeFS Enterprise's catalog action on the
// namespace or table and fs:ReadObject on its object; writing, the catalog
// action and fs:WriteObject (fs:DeleteObject to drop) on the branch's object.
// Errors are the protocol's ErrorModel with the exception types clients map
// (NoSuchTableException, AlreadyExistsException, CommitFailedException, ...).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "server/http/route.h"

namespace sediment::repo_tables {
class RepoTables;
}
namespace sediment::auth {
class AuthService;
}

namespace sediment::server {

struct RepoCatalogOptions {
  Duration token_ttl = std::chrono::hours(1);
  // What engines need to read (and, when `write`, write) the files under
  // `location` (a table's, in repository `repo`'s storage namespace), as
  // LoadTableResult "config" keys: for S3, the endpoint and credentials
  // scoped to the location; nothing for local files. Null: nothing.
  std::function<Result<std::map<std::string, std::string>>(const std::string& repo, const std::string& location,
                                                           bool write)>
      storage_config;
};

std::vector<Route> RepoCatalogRoutes(repo_tables::RepoTables* tables, auth::AuthService* auth,
                                     RepoCatalogOptions options);

}  // namespace sediment::server
