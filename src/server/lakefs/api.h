// The lakeFS-compatible REST API (/api/v1/...): repositories, branches,
// objects, commits, diff, merge, tags, setup and auth, over catalog::Catalog
// and AuthService. Paths, parameters, status codes and JSON shapes follow
// lakeFS's OpenAPI spec so its clients (lakefs-sdk, lakectl) work unchanged.
#pragma once

#include <string>

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
class HttpServer;

// `blockstore_type` ("s3" or "local") is what GET /config reports as the default storage.
// `collector` serves POST /api/v1/repositories/{repo}/gc; `importer` the imports;
// `actions` (may be null) runs hooks around operations and keeps their runs.
void RegisterLakeFsApi(HttpServer* http, catalog::Catalog* catalog, catalog::StagingCompactor* compactor,
                       catalog::CatalogCollector* collector, catalog::Importer* importer, AuthService* auth,
                       const std::string& blockstore_type, actions::ActionsService* actions);

}  // namespace sediment::server
