// The lakeFS-compatible REST API (/api/v1/...): repositories, branches,
// objects, commits, diff, merge, tags, setup and auth, over catalog::Catalog
// and AuthService. Paths, parameters, status codes and JSON shapes follow
// lakeFS's OpenAPI spec so its clients (lakefs-sdk, lakectl) work unchanged.
#pragma once

namespace sediment::catalog {
class Catalog;
class StagingCompactor;
}  // namespace sediment::catalog

namespace sediment::server {
class HttpServer;
class AuthService;

void RegisterLakeFsApi(HttpServer* http, catalog::Catalog* catalog, catalog::StagingCompactor* compactor,
                       AuthService* auth);

}  // namespace sediment::server
