// lakeFS API handlers for imports (catalog/importer.h): start, status, cancel.
#include <fmt/format.h>

#include <memory>

#include "base/clock.h"
#include "catalog/importer.h"
#include "server/lakefs/api_internal.h"

namespace sediment::server::lakefs {

// lakeFS's authorization: write and commit on the branch, and for each
// source, reading it (fs:ImportFromStorage on its namespace ARN, as written
// and as resolved) and writing its destination.
Status ImportStart(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  const std::string repo = req.matches[1], branch = req.matches[2];
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto paths, Field<json>(body, "paths"));
  if (!paths.is_array()) return InvalidArgument("field \"paths\" must be an array of {type, path, destination}");
  std::vector<catalog::ImportLocation> locations;
  for (const auto& p : paths) {
    catalog::ImportLocation l;
    ARROW_ASSIGN_OR_RAISE(l.type, Field<std::string>(p, "type"));
    ARROW_ASSIGN_OR_RAISE(l.path, Field<std::string>(p, "path"));
    ARROW_ASSIGN_OR_RAISE(l.destination, Field<std::string>(p, "destination"));
    locations.push_back(std::move(l));
  }
  ARROW_ASSIGN_OR_RAISE(auto commit, Field<json>(body, "commit"));
  if (!commit.is_object()) return InvalidArgument("field \"commit\" must be an object ({message, metadata})");
  catalog::CommitParams params;
  params.committer = me;
  ARROW_ASSIGN_OR_RAISE(params.message, Field<std::string>(commit, "message"));
  if (commit.contains("metadata") && !commit["metadata"].is_null()) {
    ARROW_ASSIGN_OR_RAISE(params.metadata, (Field<std::map<std::string, std::string>>(commit, "metadata")));
  }
  if (body.contains("force") && !body["force"].is_null()) {
    ARROW_ASSIGN_OR_RAISE(params.force, Field<bool>(body, "force"));
  }
  // Reading each source is authorized on the path as written (before it is
  // looked at) and as it resolves (what will be read), writing on its
  // destination.
  auto authorize = [&](const catalog::ImportLocation& l, const std::string* resolved) -> Status {
    if (resolved) return ctx.Allow(me, "fs:ImportFromStorage", "arn:lakefs:fs:::namespace/" + *resolved);
    ARROW_RETURN_NOT_OK(ctx.Allow(me, "fs:ImportFromStorage", "arn:lakefs:fs:::namespace/" + l.path));
    return ctx.Allow(me, "fs:WriteObject", ObjectArn(repo, l.destination));
  };
  // An import is a commit: the catalog runs its hooks (pre-commit, post-commit).
  ARROW_ASSIGN_OR_RAISE(auto id, ctx.importer->Start(repo, branch, std::move(locations), std::move(params), authorize));
  ReplyJson(res, 202, {{"id", id}});
  return Status::OK();
}

namespace {

Result<std::string> ImportId(const Req& req) {
  std::string id = req.get_param_value("id");
  if (id.empty()) return InvalidArgument("query parameter \"id\" (the import's) is required");
  if (id.size() > 64 || id.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyz") != std::string::npos) {
    return InvalidArgument(fmt::format("\"{}\" is not an import id", id.substr(0, 80)));
  }
  return id;
}

// The import `id` of `repo`, reached only through its own branch: the router
// authorized the caller on the branch in the path, not on the import's.
Result<catalog::ImportStatus> ImportOnBranch(const Context& ctx, const std::string& repo, const std::string& branch,
                                             const std::string& id) {
  ARROW_ASSIGN_OR_RAISE(auto s, ctx.importer->GetStatus(repo, id));
  if (s.branch != branch) return NotFound(fmt::format("import \"{}\" not found on branch \"{}\"", id, branch));
  return s;
}

}  // namespace

Status ImportStatus(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  const std::string repo = req.matches[1], branch = req.matches[2];
  ARROW_ASSIGN_OR_RAISE(auto id, ImportId(req));
  ARROW_ASSIGN_OR_RAISE(auto s, ImportOnBranch(ctx, repo, branch, id));
  json out = {{"completed", s.completed},
              {"update_time", FormatTime(FromUnixMicros(s.update_time_us))},
              {"ingested_objects", s.ingested_objects}};
  if (!s.commit_id.empty()) {
    ARROW_ASSIGN_OR_RAISE(auto c, ctx.cat->GetCommit(repo, s.commit_id));
    out["commit"] = CommitJson(c);
    if (s.metarange_id.empty()) s.metarange_id = c.meta_range_id;
  }
  if (!s.metarange_id.empty()) out["metarange_id"] = s.metarange_id;
  if (!s.error.empty()) out["error"] = {{"message", s.error}};
  ReplyJson(res, 200, out);
  return Status::OK();
}

Status ImportCancel(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  const std::string repo = req.matches[1], branch = req.matches[2];
  ARROW_ASSIGN_OR_RAISE(auto id, ImportId(req));
  ARROW_RETURN_NOT_OK(ImportOnBranch(ctx, repo, branch, id).status());
  ARROW_RETURN_NOT_OK(ctx.importer->Cancel(repo, id));
  res.status = 204;
  return Status::OK();
}

}  // namespace sediment::server::lakefs
