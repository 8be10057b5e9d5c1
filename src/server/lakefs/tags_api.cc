// lakeFS API handlers for tags.
#include "server/lakefs/api_internal.h"

namespace sediment::server::lakefs {

Status ListTags(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo = req.matches[1];
  ARROW_ASSIGN_OR_RAISE(auto o, ListParams(req));
  ARROW_ASSIGN_OR_RAISE(auto page, ctx.cat->ListTags(repo, o.prefix, o.after, o.amount));
  json results = json::array();
  for (const auto& t : page.items) results.push_back({{"id", t.id}, {"commit_id", t.commit_id}});
  std::string next = page.items.empty() ? "" : page.items.back().id;
  ReplyPage(res, std::move(results), page.has_more, next, o.amount);
  return Status::OK();
}

Status CreateTag(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  std::string repo = req.matches[1];
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto id, Field<std::string>(body, "id"));
  ARROW_ASSIGN_OR_RAISE(auto ref, Field<std::string>(body, "ref"));
  ARROW_ASSIGN_OR_RAISE(auto force, Field<bool>(body, "force", false));
  auto event = HookEvent("pre-create-tag", repo, me);
  event.tag_id = id;
  std::string pre_run;
  if (auto at = ctx.cat->ResolveRef(repo, ref); at.ok()) {
    event.source_ref = event.commit_id = at->commit_id;
    ARROW_ASSIGN_OR_RAISE(pre_run, RunPreHooks(ctx, event));
  } else if (!IsNotFound(at.status())) {
    return at.status();
  }  // not found: CreateTag says so
  ARROW_ASSIGN_OR_RAISE(auto t, ctx.cat->CreateTag(repo, id, ref, force));
  ReplyJson(res, 201, {{"id", t.id}, {"commit_id", t.commit_id}});
  event.event_type = "post-create-tag";
  event.source_ref = event.commit_id = t.commit_id;
  RunPostHooks(ctx, std::move(event), pre_run, /*set_pre_run_commit=*/false);
  return Status::OK();
}

Status GetTag(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo = req.matches[1], id = req.matches[2];
  ARROW_ASSIGN_OR_RAISE(auto t, ctx.cat->GetTag(repo, id));
  ReplyJson(res, 200, {{"id", t.id}, {"commit_id", t.commit_id}});
  return Status::OK();
}

Status DeleteTag(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  std::string repo = req.matches[1], id = req.matches[2];
  auto event = HookEvent("pre-delete-tag", repo, me);
  event.tag_id = id;
  std::string pre_run;
  if (auto t = ctx.cat->GetTag(repo, id); t.ok()) {
    event.source_ref = event.commit_id = t->commit_id;
    ARROW_ASSIGN_OR_RAISE(pre_run, RunPreHooks(ctx, event));
  } else if (!IsNotFound(t.status())) {
    return t.status();
  }  // not found: DeleteTag says so
  ARROW_RETURN_NOT_OK(ctx.cat->DeleteTag(repo, id));
  res.status = 204;
  event.event_type = "post-delete-tag";
  RunPostHooks(ctx, std::move(event), pre_run, /*set_pre_run_commit=*/false);
  return Status::OK();
}

}  // namespace sediment::server::lakefs
