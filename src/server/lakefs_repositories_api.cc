// lakeFS API handlers for repositories.
#include "server/lakefs_api_internal.h"

namespace sediment::server::lakefs {

Status ListRepositories(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  ARROW_RETURN_NOT_OK(ctx.Allow(me, "fs:ListRepositories", "*"));
  ARROW_ASSIGN_OR_RAISE(auto o, ListParams(req));
  ARROW_ASSIGN_OR_RAISE(auto page, ctx.cat->ListRepositories(o.prefix, o.after, o.amount));
  json results = json::array();
  for (const auto& r : page.items) results.push_back(RepoJson(r));
  std::string next = page.items.empty() ? "" : page.items.back().id;
  ReplyJson(res, 200,
            {{"pagination", Pagination(page.has_more, next, page.items.size(), o.amount)}, {"results", results}});
  return Status::OK();
}

Status CreateRepository(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto name, Field<std::string>(body, "name"));
  ARROW_ASSIGN_OR_RAISE(auto ns, Field<std::string>(body, "storage_namespace"));
  ARROW_ASSIGN_OR_RAISE(auto def, Field<std::string>(body, "default_branch", std::string("main")));
  ARROW_ASSIGN_OR_RAISE(auto ro, Field<bool>(body, "read_only", false));
  ARROW_RETURN_NOT_OK(catalog::Catalog::ValidateRepositoryName(name));
  ARROW_RETURN_NOT_OK(ctx.Allow(me, "fs:CreateRepository", RepoArn(name)));
  ARROW_ASSIGN_OR_RAISE(auto repo, ctx.cat->CreateRepository(name, ns, def, ro));
  ReplyJson(res, 201, RepoJson(repo));
  return Status::OK();
}

Status GetRepository(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  ARROW_RETURN_NOT_OK(ctx.Allow(me, "fs:ReadRepository", RepoArn(req.matches[1])));
  ARROW_ASSIGN_OR_RAISE(auto repo, ctx.cat->GetRepository(req.matches[1]));
  ReplyJson(res, 200, RepoJson(repo));
  return Status::OK();
}

Status DeleteRepository(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  ARROW_RETURN_NOT_OK(ctx.Allow(me, "fs:DeleteRepository", RepoArn(req.matches[1])));
  ARROW_RETURN_NOT_OK(ctx.cat->DeleteRepository(req.matches[1]));
  res.status = 204;
  return Status::OK();
}

}  // namespace sediment::server::lakefs
