// The lakeFS-compatible REST API (/api/v1/...): repositories, branches,
// objects, commits, diff, merge, tags, setup and auth, over catalog::Catalog
// and AuthService. Paths, parameters, status codes and JSON shapes follow
// lakeFS's OpenAPI spec so its clients (lakefs-sdk, lakectl) work unchanged.
#pragma once

#include <string>
#include <vector>

#include "server/http/route.h"

namespace sediment::catalog {
class Catalog;
class StagingCompactor;
class CatalogCollector;
class Importer;
}  // namespace sediment::catalog

namespace sediment::actions {
class ActionsService;
}  // namespace sediment::actions

namespace sediment::auth {
class AuthService;
}  // namespace sediment::auth

namespace sediment::server {
using auth::AuthService;

struct LakeFsServices {
  catalog::Catalog* catalog;
  catalog::StagingCompactor* compactor;
  catalog::CatalogCollector* collector;  // serves POST /api/v1/repositories/{repo}/gc
  catalog::Importer* importer;
  AuthService* auth;
  std::string blockstore_type;       // "s3" or "local": what GET /config reports as the default storage
  actions::ActionsService* actions;  // may be null: runs hooks around operations and keeps their runs
};

// The lakeFS API's rows of the route table (their handlers share `services`).
std::vector<Route> LakeFsRoutes(const LakeFsServices& services);

// Gives `actions` (if any) the lakeFS API in-process, through `router`'s
// lakeFS rows as `Dispatch` runs them, for Lua hooks' `lakefs` calls.
void ConnectHooksToApi(actions::ActionsService* actions, Router* router);

}  // namespace sediment::server
