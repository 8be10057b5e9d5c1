// /api/v1/jobs: list, start and stop the ingest jobs of [[jobs]].
#pragma once

namespace sediment::chain {
class JobManager;
}

namespace sediment::server {

class HttpServer;

void RegisterJobsApi(HttpServer* http, chain::JobManager* jobs);

}  // namespace sediment::server
