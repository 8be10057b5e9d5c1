// lakeFS API handlers for repositories, and their garbage collection.

#include <algorithm>
#include <charconv>
#include <ctime>
#include <filesystem>
#include <optional>
#include <tuple>

#include "base/crypto.h"
#include "blob/blob.h"
#include "catalog/catalog_gc.h"
#include "catalog/lakefs_sstable.h"
#include "server/lakefs/api_internal.h"

namespace sediment::server::lakefs {

Status ListRepositories(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_ASSIGN_OR_RAISE(auto o, ListParams(req));
  ARROW_ASSIGN_OR_RAISE(auto page, ctx.cat->ListRepositories(o.prefix, o.after, o.amount));
  json results = json::array();
  for (const auto& r : page.items) results.push_back(RepoJson(r));
  std::string next = page.items.empty() ? "" : page.items.back().id;
  ReplyJson(res, 200,
            {{"pagination", Pagination(page.has_more, next, page.items.size(), o.amount)}, {"results", results}});
  return Status::OK();
}

namespace {

std::string Md5Hex(const std::string& data) { return Hex(Md5(data)); }

// sample_data: a README and a small table, committed, so a new user has
// something to list, read, branch and diff.
Status AddSampleData(const Context& ctx, const catalog::Repository& repo, const std::string& me) {
  std::string readme = fmt::format(
      "# {0}\n\nThis repository was created with sample data. Try:\n\n"
      "    lakectl fs ls lakefs://{0}/{1}/\n"
      "    lakectl branch create lakefs://{0}/experiment --source lakefs://{0}/{1}\n"
      "    aws s3 ls s3://{0}/{1}/ --endpoint-url <this server>\n",
      repo.id, repo.default_branch);
  std::string lakes =
      "name,country,area_km2,max_depth_m\n"
      "Caspian Sea,Kazakhstan;Russia;Turkmenistan;Azerbaijan;Iran,371000,1025\n"
      "Superior,Canada;United States,82100,406\n"
      "Victoria,Uganda;Kenya;Tanzania,68870,84\n"
      "Huron,Canada;United States,59600,229\n"
      "Michigan,United States,58000,281\n"
      "Tanganyika,Tanzania;DR Congo;Burundi;Zambia,32600,1470\n"
      "Baikal,Russia,31500,1642\n";
  ARROW_ASSIGN_OR_RAISE(auto ns, ctx.cat->RepositoryNamespace(repo));
  for (const auto& [path, content, type] :
       {std::tuple<std::string, std::string, std::string>{"README.md", readme, "text/markdown"},
        {"data/lakes.csv", lakes, "text/csv"}}) {
    catalog::Entry e;
    e.address = catalog::NewDataAddress(std::time(nullptr));
    ARROW_RETURN_NOT_OK(ns->Put(e.address, content));
    e.size = static_cast<int64_t>(content.size());
    e.checksum = Md5Hex(content);
    e.mtime = std::time(nullptr);
    e.content_type = type;
    ARROW_RETURN_NOT_OK(ctx.cat->PutEntry(repo, repo.default_branch, path, e, false, /*force=*/true));
  }
  catalog::CommitParams p;
  p.committer = me;
  p.message = "Add sample data";
  p.force = true;
  // Part of creating the repository, as before hooks moved into the catalog: a
  // new repository has no actions, and a busy hook pool must not fail it halfway.
  catalog::NoHooksOnThisThread no_hooks;
  return ctx.cat->CommitBranch(repo.id, repo.default_branch, p).status();
}

}  // namespace

Status CreateRepository(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto name, Field<std::string>(body, "name"));
  ARROW_ASSIGN_OR_RAISE(auto ns, Field<std::string>(body, "storage_namespace"));
  ARROW_ASSIGN_OR_RAISE(auto def, Field<std::string>(body, "default_branch", std::string("main")));
  ARROW_ASSIGN_OR_RAISE(auto ro, Field<bool>(body, "read_only", false));
  ARROW_ASSIGN_OR_RAISE(auto sample, Field<bool>(body, "sample_data", false));
  ARROW_RETURN_NOT_OK(catalog::Catalog::ValidateRepositoryName(name));
  auto repo = ctx.cat->CreateRepository(name, ns, def, ro);
  if (IsConflict(repo.status()) && repo.status().message().find("already exists") != std::string::npos) {
    return Conflict("error creating repository: not unique");  // lakeFS's words
  }
  ARROW_RETURN_NOT_OK(repo.status());
  if (sample) ARROW_RETURN_NOT_OK(AddSampleData(ctx, *repo, me));
  ReplyJson(res, 201, RepoJson(*repo));
  return Status::OK();
}

Status GetRepository(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_ASSIGN_OR_RAISE(auto repo, ctx.cat->GetRepository(req.matches[1]));
  ReplyJson(res, 200, RepoJson(repo));
  return Status::OK();
}

// GET/PUT /repositories/{repo}/settings/branch_protection: [{"pattern": ...}],
// with an ETag for conditional replacement.
Status GetBranchProtection(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo = req.matches[1];
  ARROW_ASSIGN_OR_RAISE(auto got, ctx.cat->GetBranchProtection(repo));
  json rules = json::array();
  for (const auto& p : got.first) rules.push_back({{"pattern", p}});
  res.set_header("ETag", got.second);
  ReplyJson(res, 200, rules);
  return Status::OK();
}

Status SetBranchProtection(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo = req.matches[1];
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_array()) {
    return InvalidArgument("the body must be a JSON array of {\"pattern\": \"...\"}");
  }
  std::vector<std::string> patterns;
  for (const auto& r : body) {
    if (!r.is_object() || !r.contains("pattern") || !r["pattern"].is_string()) {
      return InvalidArgument("each rule must be {\"pattern\": \"<branch glob>\"}");
    }
    patterns.push_back(r["pattern"].get<std::string>());
  }
  std::optional<std::string> if_match;
  if (req.has_header("If-Match")) if_match = req.get_header_value("If-Match");
  ARROW_RETURN_NOT_OK(ctx.cat->SetBranchProtection(repo, patterns, if_match));
  res.status = 204;
  return Status::OK();
}

// lakeFS's older branch protection API: one rule at a time, over the same
// rules (a read, then a write conditional on what was read).
Status ListBranchProtectionRules(const Context& ctx, const Req& req, Res& res, const std::string& me) {
  return GetBranchProtection(ctx, req, res, me);
}

Status BranchProtectionSetAllowed(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_RETURN_NOT_OK(ctx.cat->GetBranchProtection(req.matches[1]).status());
  res.status = 204;
  return Status::OK();
}

Status ChangeBranchProtectionRule(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  std::string repo = req.matches[1];
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto pattern, Field<std::string>(body, "pattern"));
  ARROW_RETURN_NOT_OK(ctx.cat->ChangeBranchProtectionRule(repo, pattern, req.method == "POST"));
  res.status = 204;
  return Status::OK();
}

// GET /repositories/{repo}/metadata/object/{meta_range|range}/{id}: committed
// metadata as lakeFS stores it (catalog/lakefs_sstable.h), made from
// Sediment's own range files on request (what lakeFS's system tests read). As lakeFS: fs:ListObjects and
// fs:ReadRepository; ?presign=true redirects to the object store, where the
// file made is kept at _lakefs_sst/{type}/{id} (outside _lakefs/, whose files
// GC reads as ranges; immutable, as the ranges are; GC deletes it with its range).
Status GetMetadataObject(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  const std::string repo_id = req.matches[1], kind = req.matches[2], id = req.matches[3];
  ARROW_ASSIGN_OR_RAISE(bool presign, BoolParam(req, "presign"));
  ARROW_ASSIGN_OR_RAISE(auto repo, ctx.cat->GetRepository(repo_id));
  ARROW_ASSIGN_OR_RAISE(auto ns, ctx.cat->RepositoryNamespace(repo));
  if (presign && !ns->Remote()) return NotImplemented("presigned URLs need S3 storage");
  std::error_code ec;
  const std::string temp = std::filesystem::temp_directory_path(ec).string();
  auto make = [&] { return catalog::LakeFsMetadataObject(ctx.cat->ranges(), ns, kind, id, temp); };
  if (presign) {
    // Made once, in this namespace after the checks of its kind and place;
    // served only while its range file is there (GC takes the copy after it).
    ARROW_RETURN_NOT_OK(catalog::CheckLakeFsMetadataName(kind, id));
    auto range = ns->Stat("_lakefs/" + id);
    if (IsNotFound(range.status())) return NotFound(fmt::format("{} {} not found", kind, id));
    ARROW_RETURN_NOT_OK(range.status());
    const std::string kept = "_lakefs_sst/" + kind + "/" + id;
    auto st = ns->Stat(kept);
    if (IsNotFound(st.status())) {
      ARROW_ASSIGN_OR_RAISE(auto bytes, make());
      ARROW_RETURN_NOT_OK(ns->Put(kept, bytes));
    } else {
      ARROW_RETURN_NOT_OK(st.status());
    }
    ARROW_ASSIGN_OR_RAISE(auto url, ns->PresignUrl(kept, "GET", 15 * 60));
    res.status = 302;
    res.set_header("Location", url);
    return Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(auto bytes, make());
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Content-Security-Policy", "default-src 'none'");
  res.set_content(std::move(bytes), "application/octet-stream");
  res.status = 200;
  return Status::OK();
}

// lakeFS's repository metadata: string pairs, read with fs:ReadRepository,
// changed with fs:UpdateRepository.
Status GetRepositoryMetadata(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_ASSIGN_OR_RAISE(auto repo, ctx.cat->GetRepository(req.matches[1]));
  ReplyJson(res, 200, repo.metadata);
  return Status::OK();
}

Status SetRepositoryMetadata(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto pairs, Field<json>(body, "metadata"));
  if (!pairs.is_object()) return InvalidArgument("field \"metadata\" must be an object of strings");
  std::map<std::string, std::string> set;
  for (const auto& [k, v] : pairs.items()) {
    if (!v.is_string()) return InvalidArgument(fmt::format("metadata value of \"{}\" must be a string", k));
    set[k] = v.get<std::string>();
  }
  ARROW_RETURN_NOT_OK(ctx.cat->UpdateRepositoryMetadata(req.matches[1], set, {}));
  res.status = 204;
  return Status::OK();
}

Status DeleteRepositoryMetadata(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  ARROW_ASSIGN_OR_RAISE(auto keys, Field<std::vector<std::string>>(body, "keys"));
  ARROW_RETURN_NOT_OK(ctx.cat->UpdateRepositoryMetadata(req.matches[1], {}, keys));
  res.status = 204;
  return Status::OK();
}

Status DeleteRepository(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  ARROW_RETURN_NOT_OK(ctx.cat->DeleteRepository(req.matches[1]));
  res.status = 204;
  return Status::OK();
}

namespace {

// A non-negative number of `unit`s from the query, or `def`.
Result<Duration> DurationParam(const Req& req, const char* name, double unit_seconds, Duration def) {
  if (!req.has_param(name)) return def;
  std::string v = req.get_param_value(name);
  double x = -1;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || end != v.data() + v.size() || x < 0) {
    return InvalidArgument(fmt::format("{} must be a non-negative number, not \"{}\"", name, v));
  }
  return SecondsToDuration(x * unit_seconds);
}

}  // namespace

// POST /api/v1/repositories/{repo}/gc[?dry_run=true][&retention_days=N][&grace_seconds=N]:
// collects the repository's unreferenced files now (catalog_gc.h) and reports them.
Status CollectGarbage(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  const std::string repo = req.matches[1];
  ARROW_RETURN_NOT_OK(ctx.cat->GetRepository(repo).status());
  catalog::GcOptions o = ctx.collector->defaults();
  ARROW_ASSIGN_OR_RAISE(o.dry_run, BoolParam(req, "dry_run"));
  ARROW_ASSIGN_OR_RAISE(o.retention, DurationParam(req, "retention_days", 86400, o.retention));
  // A run that names its retention uses it for every branch; otherwise the repository's GC rules apply.
  o.use_repository_rules = !req.has_param("retention_days");
  ARROW_ASSIGN_OR_RAISE(o.grace, DurationParam(req, "grace_seconds", 1, o.grace));
  ARROW_ASSIGN_OR_RAISE(auto report, ctx.collector->Run(repo, o));
  ReplyJson(res, 200,
            {{"dry_run", o.dry_run},
             {"reachable_files", report.marked_files},
             {"scanned_files", report.scanned_files},
             {"kept_young", report.kept_young},
             {"deleted", report.deleted},
             {"deleted_bytes", report.deleted_bytes},
             {"failed", report.failed},
             {"paths", report.paths}});
  return Status::OK();
}

// lakeFS's GC rules (settings/gc_rules, and the same under gc/rules): how long
// commits keep their objects, by default and per branch; the collector uses them.
Status GetGcRules(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  const std::string repo = req.matches[1];
  ARROW_ASSIGN_OR_RAISE(auto r, ctx.cat->GetRepository(repo));
  if (!r.gc_rules) return NotFound(fmt::format("repository \"{}\" has no GC rules", repo));
  json branches = json::array();
  for (const auto& [b, days] : r.gc_rules->branches) branches.push_back({{"branch_id", b}, {"retention_days", days}});
  ReplyJson(res, 200, {{"default_retention_days", r.gc_rules->default_retention_days}, {"branches", branches}});
  return Status::OK();
}

Status SetGcRules(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  const std::string repo = req.matches[1];
  ARROW_ASSIGN_OR_RAISE(auto body, Body(req));
  catalog::GcRules rules;
  ARROW_ASSIGN_OR_RAISE(rules.default_retention_days, Field<int64_t>(body, "default_retention_days"));
  ARROW_ASSIGN_OR_RAISE(auto branches, Field<json>(body, "branches"));
  if (!branches.is_array()) return InvalidArgument("field \"branches\" must be a list of {branch_id, retention_days}");
  for (const auto& b : branches) {
    if (!b.is_object()) return InvalidArgument("each of \"branches\" must be {branch_id, retention_days}");
    ARROW_ASSIGN_OR_RAISE(auto id, Field<std::string>(b, "branch_id"));
    ARROW_ASSIGN_OR_RAISE(auto days, Field<int64_t>(b, "retention_days"));
    if (!rules.branches.emplace(id, days).second) {
      return InvalidArgument(fmt::format("branch \"{}\" has two GC rules", id));
    }
  }
  ARROW_RETURN_NOT_OK(ctx.cat->SetGcRules(repo, rules));
  res.status = 204;
  return Status::OK();
}

Status DeleteGcRules(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  const std::string repo = req.matches[1];
  ARROW_RETURN_NOT_OK(ctx.cat->SetGcRules(repo, std::nullopt));
  res.status = 204;
  return Status::OK();
}

Status GcRulesSetAllowed(const Context& ctx, const Req& req, Res& res, const std::string& /*me*/) {
  const std::string repo = req.matches[1];
  ARROW_RETURN_NOT_OK(ctx.cat->GetRepository(repo).status());
  res.status = 204;
  return Status::OK();
}

}  // namespace sediment::server::lakefs
