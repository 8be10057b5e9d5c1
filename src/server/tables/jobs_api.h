// /api/v1/jobs: list, start and stop the ingest jobs of [[jobs]].
#pragma once

#include <vector>

#include "server/http/route.h"

namespace sediment::chain {
class JobManager;
}

namespace sediment::server {

// The jobs API's rows of the route table.
std::vector<Route> JobsRoutes(chain::JobManager* jobs);

}  // namespace sediment::server
