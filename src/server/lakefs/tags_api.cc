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
  ARROW_ASSIGN_OR_RAISE(auto t, ctx.cat->CreateTag(repo, id, ref, force, me));
  ReplyJson(res, 201, {{"id", t.id}, {"commit_id", t.commit_id}});
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
  ARROW_RETURN_NOT_OK(ctx.cat->DeleteTag(repo, id, me));
  res.status = 204;
  return Status::OK();
}

}  // namespace sediment::server::lakefs
