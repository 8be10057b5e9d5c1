#include "server/tables/jobs_api.h"

#include <nlohmann/json.hpp>

#include "chain/ingest_job.h"
#include "server/http/errors.h"
#include "server/http/http_server.h"
#include "server/http/routes.h"

namespace sediment::server {
namespace {

using nlohmann::json;

json JobJson(const chain::JobStatus& s) {
  json tables = json::object();
  for (const auto& [name, last] : s.last_block) tables[name] = last ? json(*last) : json(nullptr);
  std::optional<uint64_t> behind;  // the table furthest behind
  for (const auto& [name, last] : s.last_block) {
    if (!last) continue;
    behind = behind ? std::min(*behind, *last) : *last;
  }
  std::optional<uint64_t> newest = s.node_head ? s.node_head : s.head;
  json lag = newest && behind ? json(*newest > *behind ? *newest - *behind : 0) : json(nullptr);
  return {{"dataset", s.dataset},
          {"source", s.source},
          {"running", s.running},
          {"head", s.head ? json(*s.head) : json(nullptr)},
          {"node_head", s.node_head ? json(*s.node_head) : json(nullptr)},
          {"lag", lag},
          {"retries", s.retries},
          {"last_block", tables},
          {"segments_written", s.segments_written},
          {"reorgs", s.reorgs},
          {"last_error", s.last_error}};
}

Status ListJobs(chain::JobManager* jobs, const httplib::Request&, httplib::Response& res) {
  json out = json::array();
  for (const auto& s : jobs->List()) out.push_back(JobJson(s));
  ReplyJson(res, 200, {{"jobs", out}});
  return Status::OK();
}

Status StartJob(chain::JobManager* jobs, const httplib::Request& req, httplib::Response& res) {
  ARROW_ASSIGN_OR_RAISE(auto s, jobs->StartJob(req.matches[1].str()));
  ReplyJson(res, 200, JobJson(s));
  return Status::OK();
}

Status StopJob(chain::JobManager* jobs, const httplib::Request& req, httplib::Response& res) {
  ARROW_ASSIGN_OR_RAISE(auto s, jobs->StopJob(req.matches[1].str()));
  ReplyJson(res, 200, JobJson(s));
  return Status::OK();
}

}  // namespace

std::vector<Route> JobsRoutes(chain::JobManager* jobs) {
  const auto manage = Need("jobs:ManageJob", "arn:sediment:jobs:::{dataset}");
  const Protocol* p = &TablesProtocol();
  // clang-format off
  return {
      {"GET",  "/api/v1/jobs",                  "jobs ListJobs", Access::kAuthorized, Need("jobs:ReadJob", "arn:sediment:jobs:::*"),
       Bind(jobs, ListJobs), p},
      {"POST", "/api/v1/jobs/{dataset}/start",  "jobs StartJob", Access::kAuthorized, manage, Bind(jobs, StartJob), p},
      {"POST", "/api/v1/jobs/{dataset}/stop",   "jobs StopJob",  Access::kAuthorized, manage, Bind(jobs, StopJob),  p},
  };
  // clang-format on
}

}  // namespace sediment::server
