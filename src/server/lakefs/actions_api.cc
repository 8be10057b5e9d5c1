// The runs of lakeFS actions (/repositories/{repo}/actions/runs...), read
// with ci:ReadAction on the repository, and the hooks the operation handlers
// run around commits, merges, branches, tags, reverts and cherry-picks.
#include <fmt/format.h>

#include "actions/actions.h"
#include "base/clock.h"
#include "server/lakefs/api_internal.h"

namespace sediment::server::lakefs {
namespace {

json RunJson(const actions::RunResult& r) {
  return {{"run_id", r.run_id},
          {"branch", r.branch_id},
          {"commit_id", r.commit_id},
          {"event_type", r.event_type},
          {"start_time", FormatTime(FromUnixMicros(r.start_micros))},
          {"end_time", FormatTime(FromUnixMicros(r.end_micros))},
          {"status", r.passed ? "completed" : "failed"}};
}

json HookJson(const actions::TaskResult& t) {
  json j = {{"hook_run_id", t.hook_run_id}, {"action", t.action_name}, {"hook_id", t.hook_id}};
  if (t.start_micros == 0) {  // skipped: lakeFS's zero time and no end
    j["start_time"] = "0001-01-01T00:00:00Z";
    j["status"] = "skipped";
  } else {
    j["start_time"] = FormatTime(FromUnixMicros(t.start_micros));
    j["end_time"] = FormatTime(FromUnixMicros(t.end_micros));
    j["status"] = t.passed ? "completed" : "failed";
  }
  return j;
}

// Run ids are 20 of [0-9a-v]; hook run ids "0000_0000".
Status CheckIds(const std::string& run, const std::string& hook = "0000_0000") {
  bool ok = run.size() == 20 && hook.size() == 9 && hook[4] == '_';
  for (char c : run) ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'v'));
  for (size_t i = 0; i < hook.size(); ++i) ok = ok && (i == 4 || (hook[i] >= '0' && hook[i] <= '9'));
  if (!ok) return NotFound(fmt::format("action run \"{}\" hook \"{}\" not found", run, hook));
  return Status::OK();
}

// The repository must exist and the caller may read its runs.
Status AllowRuns(const Context& ctx, const std::string& repo, const std::string& /*me*/) {
  ARROW_RETURN_NOT_OK(ctx.cat->GetRepository(repo).status());
  if (ctx.actions == nullptr) return NotFound("actions are not enabled on this server");
  return Status::OK();
}

}  // namespace

Status ListRepositoryRuns(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  std::string repo = req.matches[1];
  ARROW_RETURN_NOT_OK(AllowRuns(ctx, repo, me));
  ARROW_ASSIGN_OR_RAISE(auto amount, AmountParam(req));
  ARROW_ASSIGN_OR_RAISE(
      auto page, ctx.actions->ListRuns(repo, Param(req, "branch"), Param(req, "commit"), Param(req, "after"), amount));
  json results = json::array();
  for (const auto& r : page.items) results.push_back(RunJson(r));
  ReplyPage(res, std::move(results), page.has_more, page.has_more ? page.items.back().run_id : "", 1000);
  return Status::OK();
}

Status GetRun(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  std::string repo = req.matches[1], run = req.matches[2];
  ARROW_RETURN_NOT_OK(AllowRuns(ctx, repo, me));
  ARROW_RETURN_NOT_OK(CheckIds(run));
  ARROW_ASSIGN_OR_RAISE(auto r, ctx.actions->GetRun(repo, run));
  ReplyJson(res, 200, RunJson(r));
  return Status::OK();
}

Status ListRunHooks(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  std::string repo = req.matches[1], run = req.matches[2];
  ARROW_RETURN_NOT_OK(AllowRuns(ctx, repo, me));
  ARROW_ASSIGN_OR_RAISE(auto amount, AmountParam(req));
  if (!CheckIds(run).ok()) {  // lakeFS: an unknown run has no hooks
    ReplyPage(res, json::array(), false, "", 1000);
    return Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(auto page, ctx.actions->ListTasks(repo, run, Param(req, "after"), amount));
  json results = json::array();
  for (const auto& t : page.items) results.push_back(HookJson(t));
  ReplyPage(res, std::move(results), page.has_more, page.has_more ? page.items.back().hook_run_id : "", 1000);
  return Status::OK();
}

Status GetRunHookOutput(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  std::string repo = req.matches[1], run = req.matches[2], hook = req.matches[3];
  ARROW_RETURN_NOT_OK(AllowRuns(ctx, repo, me));
  ARROW_RETURN_NOT_OK(CheckIds(run, hook));
  ARROW_ASSIGN_OR_RAISE(auto out, ctx.actions->TaskOutput(repo, run, hook));
  res.status = 200;
  // An attachment, never rendered: the output holds what a webhook answered.
  res.set_header("Content-Disposition", fmt::format("attachment; filename={}.log", hook));
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(out, "application/octet-stream");
  return Status::OK();
}

}  // namespace sediment::server::lakefs
