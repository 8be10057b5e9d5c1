// lakeFS API handlers that make or read commits: commit, get, log, diff
// between refs, merge, revert and cherry-pick.
#include <ctime>
#include <optional>
#include <vector>

#include "server/lakefs/api_internal.h"

namespace sediment::server::lakefs {

using StringMap = std::map<std::string, std::string>;

Status Commit(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  std::string repo = req.matches[1], branch = req.matches[2];
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  catalog::CommitParams p;
  p.committer = me;
  ARROW_ASSIGN_OR_RAISE(p.message, Field<std::string>(body, "message"));
  ARROW_ASSIGN_OR_RAISE(p.metadata, Field<StringMap>(body, "metadata", StringMap{}));
  if (body.contains("date") && !body["date"].is_null()) {
    ARROW_ASSIGN_OR_RAISE(auto d, Field<int64_t>(body, "date"));
    p.date = d;
  }
  ARROW_ASSIGN_OR_RAISE(p.allow_empty, Field<bool>(body, "allow_empty", false));
  ARROW_ASSIGN_OR_RAISE(p.force, Field<bool>(body, "force", false));
  ARROW_ASSIGN_OR_RAISE(auto c, ctx.cat->CommitBranch(repo, branch, p));
  ReplyJson(res, 201, CommitJson(c));
  return Status::OK();
}

Status GetCommit(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo = req.matches[1];
  ARROW_RETURN_NOT_OK(ctx.cat->GetRepository(repo).status());
  auto r = ctx.cat->ResolveRef(repo, req.matches[2]);
  if (IsNotFound(r.status())) return NotFound("commit not found");
  ARROW_RETURN_NOT_OK(r.status());
  ARROW_ASSIGN_OR_RAISE(auto c, ctx.cat->GetCommit(repo, r->commit_id));
  ReplyJson(res, 200, CommitJson(c));
  return Status::OK();
}

namespace {

// Every value of a repeated query parameter.
std::vector<std::string> ParamValues(const Req& req, const char* name) {
  std::vector<std::string> out;
  auto range = req.params.equal_range(name);
  for (auto it = range.first; it != range.second; ++it) out.push_back(it->second);
  return out;
}

// Whether commit `c` changed `object` or anything under `prefix` against its first parent.
Result<bool> Touches(const Context& ctx, const std::string& repo, const catalog::Commit& c,
                     const std::vector<std::string>& objects, const std::vector<std::string>& prefixes) {
  std::string parent = c.parents.empty() ? "" : c.parents.front();
  for (const auto& path : objects) {
    auto now = ctx.cat->GetEntry(repo, c.id, path);
    if (!now.ok() && !IsNotFound(now.status())) return now.status();
    Result<catalog::Entry> before = NotFound("no parent");
    if (!parent.empty()) before = ctx.cat->GetEntry(repo, parent, path);
    if (!before.ok() && !IsNotFound(before.status())) return before.status();
    if (now.ok() != before.ok()) return true;
    if (now.ok() && (now->address != before->address || now->checksum != before->checksum)) return true;
  }
  for (const auto& prefix : prefixes) {
    catalog::ListOptions o;
    o.prefix = prefix;
    o.amount = 1;
    if (parent.empty()) {
      ARROW_ASSIGN_OR_RAISE(auto page, ctx.cat->ListEntries(repo, c.id, o));
      if (!page.items.empty()) return true;
    } else {
      ARROW_ASSIGN_OR_RAISE(auto page, ctx.cat->DiffRefs(repo, parent, c.id, /*three_dot=*/false, o));
      if (!page.items.empty()) return true;
    }
  }
  return false;
}

}  // namespace

// GET .../refs/{ref}/commits: history from the ref, newest first. Filters:
// objects= / prefixes= (repeatable: commits that changed them against their
// first parent; limit=true stops at `amount` of them), since= (RFC 3339: stop
// at the first older commit) and stop_at= (a commit id: the last one listed).
Status LogCommits(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo = req.matches[1];
  ARROW_ASSIGN_OR_RAISE(auto amount, AmountParam(req));
  ARROW_ASSIGN_OR_RAISE(bool first_parent, BoolParam(req, "first_parent"));
  ARROW_ASSIGN_OR_RAISE(bool limit, BoolParam(req, "limit"));
  auto objects = ParamValues(req, "objects"), prefixes = ParamValues(req, "prefixes");
  std::optional<int64_t> since;
  if (req.has_param("since")) {
    std::tm tm{};
    std::string v = req.get_param_value("since");
    const char* end = strptime(v.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    if (end == nullptr) return InvalidArgument(fmt::format("since=\"{}\" is not an RFC 3339 date-time", v));
    since = static_cast<int64_t>(timegm(&tm));
  }
  std::string stop_at = Param(req, "stop_at");
  bool filtered = !objects.empty() || !prefixes.empty() || since || !stop_at.empty();
  if (!filtered) {
    ARROW_ASSIGN_OR_RAISE(auto page, ctx.cat->Log(repo, req.matches[2], Param(req, "after"), amount, first_parent));
    json results = json::array();
    for (const auto& c : page.items) results.push_back(CommitJson(c));
    std::string next = page.items.empty() ? "" : page.items.back().id;
    ReplyPage(res, std::move(results), page.has_more, next, amount);
    return Status::OK();
  }
  json results = json::array();
  std::string after = Param(req, "after"), last;
  bool has_more = false, done = false;
  while (!done) {
    ARROW_ASSIGN_OR_RAISE(auto page, ctx.cat->Log(repo, req.matches[2], after, 1000, first_parent));
    for (const auto& c : page.items) {
      after = c.id;
      if (since && c.creation_date < *since) {
        done = true;
        break;
      }
      bool stop = !stop_at.empty() && c.id.rfind(stop_at, 0) == 0;
      bool wanted = true;
      if (!objects.empty() || !prefixes.empty()) {
        ARROW_ASSIGN_OR_RAISE(wanted, Touches(ctx, repo, c, objects, prefixes));
      }
      if (wanted) {
        if (static_cast<int64_t>(results.size()) == amount) {
          has_more = !limit;
          done = true;
          break;
        }
        results.push_back(CommitJson(c));
        last = c.id;
      }
      if (stop) {
        done = true;
        break;
      }
    }
    if (!page.has_more || page.items.empty()) break;
  }
  ReplyPage(res, std::move(results), has_more, last, amount);
  return Status::OK();
}

Status DiffRefs(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo = req.matches[1];
  ARROW_ASSIGN_OR_RAISE(auto o, ListParams(req));
  std::string type = Param(req, "type", "three_dot");
  if (type != "two_dot" && type != "three_dot") {
    return InvalidArgument(fmt::format("diff type \"{}\" must be two_dot or three_dot", type));
  }
  ARROW_ASSIGN_OR_RAISE(auto page, ctx.cat->DiffRefs(repo, req.matches[2], req.matches[3], type == "three_dot", o));
  json results = json::array();
  for (const auto& d : page.items) results.push_back(DiffJson(d));
  std::string next = page.items.empty() ? "" : page.items.back().path;
  ReplyPage(res, std::move(results), page.has_more, next, o.amount);
  return Status::OK();
}

Status Merge(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  std::string repo = req.matches[1], source = req.matches[2], dest = req.matches[3];
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req, /*optional=*/true));
  catalog::CommitParams p;
  p.committer = me;
  ARROW_ASSIGN_OR_RAISE(p.message, Field<std::string>(body, "message", std::string()));
  ARROW_ASSIGN_OR_RAISE(p.metadata, Field<StringMap>(body, "metadata", StringMap{}));
  ARROW_ASSIGN_OR_RAISE(p.allow_empty, Field<bool>(body, "allow_empty", false));
  ARROW_ASSIGN_OR_RAISE(p.force, Field<bool>(body, "force", false));
  ARROW_ASSIGN_OR_RAISE(p.squash, Field<bool>(body, "squash_merge", false));
  ARROW_ASSIGN_OR_RAISE(auto strategy_name, Field<std::string>(body, "strategy", std::string()));
  catalog::MergeStrategy strategy = catalog::MergeStrategy::kNone;
  if (strategy_name == "source-wins") {
    strategy = catalog::MergeStrategy::kSourceWins;
  } else if (strategy_name == "dest-wins") {
    strategy = catalog::MergeStrategy::kDestWins;
  } else if (!strategy_name.empty()) {
    return InvalidArgument(fmt::format("merge strategy \"{}\" must be source-wins or dest-wins", strategy_name));
  }
  ARROW_ASSIGN_OR_RAISE(auto c, ctx.cat->Merge(repo, source, dest, p, strategy));
  ReplyJson(res, 200, {{"reference", c.id}});
  return Status::OK();
}

namespace {

// What revert and cherry-pick bodies share: force, allow_empty, commit_overrides.
Result<catalog::CommitParams> ReplayParams(const json& body, const std::string& me) {
  catalog::CommitParams p;
  p.committer = me;
  ARROW_ASSIGN_OR_RAISE(p.force, Field<bool>(body, "force", false));
  ARROW_ASSIGN_OR_RAISE(p.allow_empty, Field<bool>(body, "allow_empty", false));
  if (body.contains("commit_overrides") && body["commit_overrides"].is_object()) {
    const auto& o = body["commit_overrides"];
    ARROW_ASSIGN_OR_RAISE(p.message, Field<std::string>(o, "message", std::string()));
    ARROW_ASSIGN_OR_RAISE(p.metadata, Field<StringMap>(o, "metadata", StringMap{}));
  }
  return p;
}

}  // namespace

Status RevertBranch(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  std::string repo = req.matches[1], name = req.matches[2];
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto ref, Field<std::string>(body, "ref"));
  ARROW_ASSIGN_OR_RAISE(auto pn, Field<int>(body, "parent_number", 0));
  ARROW_ASSIGN_OR_RAISE(auto p, ReplayParams(body, me));
  ARROW_ASSIGN_OR_RAISE(auto c, ctx.cat->Revert(repo, name, ref, pn, p));
  res.status = 204;
  return Status::OK();
}

Status CherryPick(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  std::string repo = req.matches[1], name = req.matches[2];
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto ref, Field<std::string>(body, "ref"));
  ARROW_ASSIGN_OR_RAISE(auto pn, Field<int>(body, "parent_number", 0));
  ARROW_ASSIGN_OR_RAISE(auto p, ReplayParams(body, me));
  auto c = ctx.cat->CherryPick(repo, name, ref, pn, p);
  if (IsConflict(c.status())) return Conflict("update branch: conflict found");  // lakeFS's words
  ARROW_RETURN_NOT_OK(c.status());
  ReplyJson(res, 201, CommitJson(*c));
  return Status::OK();
}

}  // namespace sediment::server::lakefs
