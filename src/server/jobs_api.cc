#include "server/jobs_api.h"

#include <nlohmann/json.hpp>

#include "chain/ingest_job.h"
#include "server/errors.h"
#include "server/http_server.h"

namespace sediment::server {
namespace {

using nlohmann::json;

json JobJson(const chain::JobStatus& s) {
  json tables = json::object();
  for (const auto& [name, last] : s.last_block) tables[name] = last ? json(*last) : json(nullptr);
  return {{"dataset", s.dataset},
          {"running", s.running},
          {"head", s.head ? json(*s.head) : json(nullptr)},
          {"last_block", tables},
          {"segments_written", s.segments_written},
          {"reorgs", s.reorgs},
          {"last_error", s.last_error}};
}

void Reply(httplib::Response& res, const json& j) {
  res.status = 200;
  res.set_content(j.dump(), "application/json");
}

}  // namespace

void RegisterJobsApi(HttpServer* http, chain::JobManager* jobs) {
  http->Handle("GET", "/api/v1/jobs", "/api/v1/jobs", [jobs](const httplib::Request&, httplib::Response& res) {
    json out = json::array();
    for (const auto& s : jobs->List()) out.push_back(JobJson(s));
    Reply(res, {{"jobs", out}});
  });
  http->Handle("POST", R"(/api/v1/jobs/([^/]+)/start)", "/api/v1/jobs/{dataset}/start",
               [jobs](const httplib::Request& req, httplib::Response& res) {
                 auto s = jobs->StartJob(req.matches[1].str());
                 if (!s.ok()) return ReplyError(res, s.status());
                 Reply(res, JobJson(*s));
               });
  http->Handle("POST", R"(/api/v1/jobs/([^/]+)/stop)", "/api/v1/jobs/{dataset}/stop",
               [jobs](const httplib::Request& req, httplib::Response& res) {
                 auto s = jobs->StopJob(req.matches[1].str());
                 if (!s.ok()) return ReplyError(res, s.status());
                 Reply(res, JobJson(*s));
               });
}

}  // namespace sediment::server
