// lakeFS API handlers for branches: create, read, delete, reset, staging
// compaction and the uncommitted diff. (Revert and cherry-pick, which commit,
// are in lakefs/commits_api.cc.)
#include "catalog/staging_compactor.h"
#include "server/lakefs/api_internal.h"

namespace sediment::server::lakefs {

Status ListBranches(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo = req.matches[1];
  ARROW_ASSIGN_OR_RAISE(auto o, ListParams(req));
  ARROW_ASSIGN_OR_RAISE(auto page, ctx.cat->ListBranches(repo, o.prefix, o.after, o.amount));
  json results = json::array();
  for (const auto& b : page.items) results.push_back({{"id", b.id}, {"commit_id", b.commit_id}});
  std::string next = page.items.empty() ? "" : page.items.back().id;
  ReplyPage(res, std::move(results), page.has_more, next, o.amount);
  return Status::OK();
}

Status CreateBranch(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  std::string repo = req.matches[1];
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto name, Field<std::string>(body, "name"));
  ARROW_ASSIGN_OR_RAISE(auto source, Field<std::string>(body, "source"));
  ARROW_ASSIGN_OR_RAISE(auto b, ctx.cat->CreateBranch(repo, name, source, me));
  res.status = 201;
  res.set_content(b.commit_id, "text/html");
  return Status::OK();
}

Status GetBranch(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo = req.matches[1], name = req.matches[2];
  ARROW_ASSIGN_OR_RAISE(auto b, ctx.cat->GetBranch(repo, name));
  ReplyJson(res, 200, {{"id", b.id}, {"commit_id", b.commit_id}});
  return Status::OK();
}

Status DeleteBranch(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  std::string repo = req.matches[1], name = req.matches[2];
  ARROW_RETURN_NOT_OK(ctx.cat->DeleteBranch(repo, name, me));
  res.status = 204;
  return Status::OK();
}

// Reset: all uncommitted changes, one object, or a common prefix.
Status ResetBranch(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo = req.matches[1], name = req.matches[2];
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto type, Field<std::string>(body, "type"));
  ARROW_ASSIGN_OR_RAISE(auto path, Field<std::string>(body, "path", std::string()));
  if (type == "reset") {
    ARROW_RETURN_NOT_OK(ctx.cat->ResetBranch(repo, name));
  } else if (type == "object") {
    ARROW_RETURN_NOT_OK(ctx.cat->ResetPath(repo, name, path, false));
  } else if (type == "common_prefix") {
    ARROW_RETURN_NOT_OK(ctx.cat->ResetPath(repo, name, path, true));
  } else {
    return InvalidArgument(fmt::format("reset type \"{}\" must be reset, object or common_prefix", type));
  }
  res.status = 204;
  return Status::OK();
}

Status HardResetBranch(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo = req.matches[1], name = req.matches[2];
  if (!req.has_param("ref")) return InvalidArgument("missing query parameter ref");
  ARROW_RETURN_NOT_OK(ctx.cat->HardReset(repo, name, req.get_param_value("ref")));
  res.status = 204;
  return Status::OK();
}

// Staging compaction (spec staging-compaction.md): 202 and run in the background, or 503.
Status CompactBranch(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo = req.matches[1], name = req.matches[2];
  ARROW_RETURN_NOT_OK(ctx.compactor->Submit(repo, name));
  res.status = 202;
  return Status::OK();
}

// What the branch holds now (and, beyond lakeFS's shape, how its last compaction went).
Status GetCompaction(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo = req.matches[1], name = req.matches[2];
  ARROW_ASSIGN_OR_RAISE(auto b, ctx.cat->GetBranch(repo, name));
  ARROW_ASSIGN_OR_RAISE(auto last, ctx.compactor->LastStatus(repo, name));
  ARROW_ASSIGN_OR_RAISE(auto staged, ctx.compactor->StagedMutations(repo, name));
  ReplyJson(res, 200,
            {{"compacted", !b.compacted_meta_range_id.empty()},
             {"meta_range_id", b.compacted_meta_range_id},
             {"staged_mutations", staged},
             {"last_compaction",
              {{"state", last.state},
               {"started_us", last.started_us},
               {"finished_us", last.finished_us},
               {"message", last.message}}}});
  return Status::OK();
}

Status DiffBranch(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo = req.matches[1], name = req.matches[2];
  ARROW_ASSIGN_OR_RAISE(auto o, ListParams(req));
  ARROW_ASSIGN_OR_RAISE(auto page, ctx.cat->DiffUncommitted(repo, name, o));
  json results = json::array();
  for (const auto& d : page.items) results.push_back(DiffJson(d));
  std::string next = page.items.empty() ? "" : page.items.back().path;
  ReplyPage(res, std::move(results), page.has_more, next, o.amount);
  return Status::OK();
}

}  // namespace sediment::server::lakefs
