#include "cli/catalog_cmd.h"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "base/codec.h"
#include "cli/client.h"

namespace sediment::cli {
namespace {

using nlohmann::json;

struct Args {
  std::string server = DefaultServerUrl();
  std::string repo, branch, ref, path, file, name, source = "main", message, strategy, prefix, delimiter, output;
  std::string ns, default_branch = "main", user = "admin", key_id, secret;
  std::string right;
  int64_t amount = 100;
  bool all = false, reset_prefix = false;
};

std::string RepoPath(const Args& a) { return "/api/v1/repositories/" + a.repo; }

void Print(const json& j) { std::cout << j.dump(2) << "\n"; }

Status ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument(fmt::format("cannot read {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return Status::OK();
}

using Registry = std::vector<std::pair<CLI::App*, std::function<Status(Client&)>>>;

// Adds a subcommand whose body gets a client for --server.
CLI::App* Command(CLI::App* parent, const std::string& name, const std::string& help, Args* a, Registry* registry,
                  std::function<Status(Client&)> body) {
  auto* cmd = parent->add_subcommand(name, help);
  AddServerOption(cmd, &a->server);
  registry->emplace_back(cmd, std::move(body));
  return cmd;
}

// `branch compact`: starts a compaction of the branch's staging; with --wait, polls until it is over.
Status CompactBranch(const Args& a, Client& c) {
  std::string path = RepoPath(a) + "/branches/" + a.branch + "/compact";
  ARROW_ASSIGN_OR_RAISE(auto before, c.Get(path));
  int64_t prev = before["last_compaction"]["started_us"].get<int64_t>();
  ARROW_RETURN_NOT_OK(c.Post(path, "").status());
  if (!a.all) {
    std::cout << "compaction of " << a.repo << "/" << a.branch << " started\n";
    return Status::OK();
  }
  auto t0 = std::chrono::steady_clock::now();
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ARROW_ASSIGN_OR_RAISE(auto j, c.Get(path));
    const auto& last = j["last_compaction"];
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string state = last["state"].get<std::string>();
    bool finished = last["started_us"].get<int64_t>() != prev && state != "running";
    std::cerr << fmt::format("\rcompacting {}/{}: {} {:.1f}s", a.repo, a.branch,
                             last["started_us"].get<int64_t>() != prev ? state : "queued", secs)
              << std::flush;
    if (finished) {
      std::cerr << "\n";
      Print(j);
      if (state == "failed") return Status::IOError("compaction failed: ", last["message"].get<std::string>());
      return Status::OK();
    }
    if (secs > static_cast<double>(a.amount)) return Status::IOError("timed out waiting for the compaction");
  }
}

// `setup`: the first admin user and its access key.
void AddSetupCommand(CLI::App& app, Args* A, Registry* R) {
  auto* setup = Command(&app, "setup", "Create the first admin user and print its access key", A, R, [A](Client& c) {
    json body = {{"username", A->user}};
    if (!A->key_id.empty()) body["key"] = {{"access_key_id", A->key_id}, {"secret_access_key", A->secret}};
    ARROW_ASSIGN_OR_RAISE(auto j, c.Post("/api/v1/setup_lakefs", body.dump()));
    Print(j);
    return Status::OK();
  });
  setup->add_option("--user", A->user, "Admin user name");
  setup->add_option("--access-key-id", A->key_id, "Use this access key id (default: generated)");
  setup->add_option("--secret-access-key", A->secret, "Use this secret (default: generated)");
}

// `repo create|list|delete|gc`.
void AddRepoCommands(CLI::App& app, Args* A, Registry* R) {
  auto* repo = app.add_subcommand("repo", "Repositories of the catalog (lakeFS API)");
  repo->require_subcommand(1);
  auto* rc = Command(repo, "create", "Create a repository", A, R, [A](Client& c) {
    json body = {{"name", A->repo}, {"storage_namespace", A->ns}, {"default_branch", A->default_branch}};
    ARROW_ASSIGN_OR_RAISE(auto j, c.Post("/api/v1/repositories", body.dump()));
    Print(j);
    return Status::OK();
  });
  rc->add_option("repo", A->repo)->required();
  rc->add_option("storage-namespace", A->ns, "s3://bucket/prefix, local:///abs/path or /abs/path")->required();
  rc->add_option("--default-branch", A->default_branch);
  Command(repo, "list", "List repositories", A, R, [](Client& c) {
    std::string after;
    while (true) {
      ARROW_ASSIGN_OR_RAISE(auto j, c.Get("/api/v1/repositories?amount=1000&after=" +
                                          PercentEncode(after, PercentSet::kUnreservedAndSlash)));
      for (const auto& r : j["results"]) {
        std::cout << r["id"].get<std::string>() << "\t" << r["storage_namespace"].get<std::string>() << "\n";
      }
      if (!j["pagination"]["has_more"].get<bool>()) return Status::OK();
      after = j["pagination"]["next_offset"].get<std::string>();
    }
  });
  auto* rd = Command(repo, "delete", "Delete a repository (its objects stay in storage)", A, R,
                     [A](Client& c) { return c.Send("DELETE", RepoPath(*A)).status(); });
  rd->add_option("repo", A->repo)->required();
  auto* rgc =
      Command(repo, "gc", "Delete the repository's files nothing within retention references", A, R, [A](Client& c) {
        std::string q = A->all ? "?dry_run=true" : "?dry_run=false";
        if (!A->message.empty()) q += "&retention_days=" + PercentEncode(A->message, PercentSet::kUnreservedAndSlash);
        if (!A->prefix.empty()) q += "&grace_seconds=" + PercentEncode(A->prefix, PercentSet::kUnreservedAndSlash);
        ARROW_ASSIGN_OR_RAISE(auto j, c.Post(RepoPath(*A) + "/gc" + q));
        Print(j);
        return Status::OK();
      });
  rgc->add_option("repo", A->repo)->required();
  rgc->add_flag("--dry-run", A->all, "List what would be deleted, delete nothing");
  rgc->add_option("--retention-days", A->message, "Commits younger than this keep their objects (server default 21)");
  rgc->add_option("--grace-seconds", A->prefix, "Files younger than this stay (server default 21600)");
}

// `branch create|list|delete|reset|compact|compaction-status`.
void AddBranchCommands(CLI::App& app, Args* A, Registry* R) {
  auto* branch = app.add_subcommand("branch", "Branches of a repository");
  branch->require_subcommand(1);
  auto* bc = Command(branch, "create", "Create a branch from a ref", A, R, [A](Client& c) {
    json body = {{"name", A->branch}, {"source", A->source}};
    ARROW_ASSIGN_OR_RAISE(auto j, c.Post(RepoPath(*A) + "/branches", body.dump()));
    std::cout << (j.is_string() ? j.get<std::string>() : j.dump()) << "\n";
    return Status::OK();
  });
  bc->add_option("repo", A->repo)->required();
  bc->add_option("branch", A->branch)->required();
  bc->add_option("--source", A->source, "Ref to branch from (default main)");
  auto* bl = Command(branch, "list", "List branches", A, R, [A](Client& c) {
    ARROW_ASSIGN_OR_RAISE(auto j, c.Get(RepoPath(*A) + "/branches?amount=1000"));
    for (const auto& b : j["results"]) {
      std::cout << b["id"].get<std::string>() << "\t" << b["commit_id"].get<std::string>() << "\n";
    }
    return Status::OK();
  });
  bl->add_option("repo", A->repo)->required();
  auto* bd = Command(branch, "delete", "Delete a branch", A, R,
                     [A](Client& c) { return c.Send("DELETE", RepoPath(*A) + "/branches/" + A->branch).status(); });
  bd->add_option("repo", A->repo)->required();
  bd->add_option("branch", A->branch)->required();
  auto* br =
      Command(branch, "reset", "Drop uncommitted changes (all, one --path, or a --prefix)", A, R, [A](Client& c) {
        json body = {{"type", "reset"}};
        if (!A->path.empty()) body = {{"type", A->reset_prefix ? "common_prefix" : "object"}, {"path", A->path}};
        return c.Send("PUT", RepoPath(*A) + "/branches/" + A->branch, body.dump()).status();
      });
  br->add_option("repo", A->repo)->required();
  br->add_option("branch", A->branch)->required();
  br->add_option("--path", A->path, "Only this path (or prefix with --prefix)");
  br->add_flag("--prefix", A->reset_prefix, "Treat --path as a prefix");

  auto* bcomp = Command(branch, "compact", "Compact a branch's staging (runs in the background)", A, R,
                        [A](Client& c) { return CompactBranch(*A, c); });
  bcomp->add_option("repo", A->repo)->required();
  bcomp->add_option("branch", A->branch)->required();
  bcomp->add_flag("--wait", A->all, "Wait for it to finish, showing progress");
  bcomp->add_option("--timeout", A->amount, "Seconds to wait with --wait (default 100)");
  auto* bstat =
      Command(branch, "compaction-status", "Whether a branch holds a compacted meta-range", A, R, [A](Client& c) {
        ARROW_ASSIGN_OR_RAISE(auto j, c.Get(RepoPath(*A) + "/branches/" + A->branch + "/compact"));
        Print(j);
        return Status::OK();
      });
  bstat->add_option("repo", A->repo)->required();
  bstat->add_option("branch", A->branch)->required();
}

// `object put|get|stat|ls|rm`.
void AddObjectCommands(CLI::App& app, Args* A, Registry* R) {
  auto* object = app.add_subcommand("object", "Objects on a branch or ref");
  object->require_subcommand(1);
  auto* op = Command(object, "put", "Upload a file to a path on a branch", A, R, [A](Client& c) {
    std::string data;
    ARROW_RETURN_NOT_OK(ReadFile(A->file, &data));
    ARROW_ASSIGN_OR_RAISE(auto j, c.Post(RepoPath(*A) + "/branches/" + A->branch +
                                             "/objects?path=" + PercentEncode(A->path, PercentSet::kUnreservedAndSlash),
                                         data, "application/octet-stream"));
    Print(j);
    return Status::OK();
  });
  op->add_option("repo", A->repo)->required();
  op->add_option("branch", A->branch)->required();
  op->add_option("path", A->path)->required();
  op->add_option("file", A->file)->required()->check(CLI::ExistingFile);
  auto* og = Command(object, "get", "Download an object (to stdout or --output)", A, R, [A](Client& c) {
    ARROW_ASSIGN_OR_RAISE(auto data, c.GetRaw(RepoPath(*A) + "/refs/" + A->ref + "/objects?path=" +
                                              PercentEncode(A->path, PercentSet::kUnreservedAndSlash)));
    if (A->output.empty()) {
      std::cout << data;
      return Status::OK();
    }
    std::ofstream out(A->output, std::ios::binary);
    out << data;
    return out ? Status::OK() : Status::IOError("cannot write ", A->output);
  });
  og->add_option("repo", A->repo)->required();
  og->add_option("ref", A->ref)->required();
  og->add_option("path", A->path)->required();
  og->add_option("--output,-o", A->output);
  auto* os = Command(object, "stat", "Show an object's entry", A, R, [A](Client& c) {
    ARROW_ASSIGN_OR_RAISE(auto j, c.Get(RepoPath(*A) + "/refs/" + A->ref + "/objects/stat?path=" +
                                        PercentEncode(A->path, PercentSet::kUnreservedAndSlash)));
    Print(j);
    return Status::OK();
  });
  os->add_option("repo", A->repo)->required();
  os->add_option("ref", A->ref)->required();
  os->add_option("path", A->path)->required();
  auto* ol = Command(object, "ls", "List objects (one page, or --all)", A, R, [A](Client& c) {
    std::string after;
    while (true) {
      ARROW_ASSIGN_OR_RAISE(
          auto j, c.Get(fmt::format("{}/refs/{}/objects/ls?amount={}&prefix={}&delimiter={}&after={}", RepoPath(*A),
                                    A->ref, A->amount, PercentEncode(A->prefix, PercentSet::kUnreservedAndSlash),
                                    PercentEncode(A->delimiter, PercentSet::kUnreservedAndSlash),
                                    PercentEncode(after, PercentSet::kUnreservedAndSlash))));
      for (const auto& o : j["results"]) {
        if (o["path_type"] == "common_prefix") {
          std::cout << o["path"].get<std::string>() << "\n";
        } else {
          std::cout << o["path"].get<std::string>() << "\t" << o["size_bytes"].get<int64_t>() << "\t"
                    << o["checksum"].get<std::string>() << "\n";
        }
      }
      if (!A->all || !j["pagination"]["has_more"].get<bool>()) return Status::OK();
      after = j["pagination"]["next_offset"].get<std::string>();
    }
  });
  ol->add_option("repo", A->repo)->required();
  ol->add_option("ref", A->ref)->required();
  ol->add_option("--prefix", A->prefix);
  ol->add_option("--delimiter", A->delimiter);
  ol->add_option("--amount", A->amount)->check(CLI::Range(1, 1000));
  ol->add_flag("--all", A->all, "Follow every page");
  auto* orm = Command(object, "rm", "Delete an object from a branch", A, R, [A](Client& c) {
    return c
        .Send("DELETE", RepoPath(*A) + "/branches/" + A->branch +
                            "/objects?path=" + PercentEncode(A->path, PercentSet::kUnreservedAndSlash))
        .status();
  });
  orm->add_option("repo", A->repo)->required();
  orm->add_option("branch", A->branch)->required();
  orm->add_option("path", A->path)->required();
}

// `commit`, `log`, `diff` and `merge`: commits and how refs differ.
void AddHistoryCommands(CLI::App& app, Args* A, Registry* R) {
  auto* commit = Command(&app, "commit", "Commit a branch's uncommitted changes", A, R, [A](Client& c) {
    ARROW_ASSIGN_OR_RAISE(
        auto j, c.Post(RepoPath(*A) + "/branches/" + A->branch + "/commits", json{{"message", A->message}}.dump()));
    Print(j);
    return Status::OK();
  });
  commit->add_option("repo", A->repo)->required();
  commit->add_option("branch", A->branch)->required();
  commit->add_option("--message,-m", A->message)->required();

  auto* log = Command(&app, "log", "Commits reachable from a ref, newest first", A, R, [A](Client& c) {
    ARROW_ASSIGN_OR_RAISE(auto j, c.Get(fmt::format("{}/refs/{}/commits?amount={}", RepoPath(*A), A->ref, A->amount)));
    for (const auto& x : j["results"]) {
      std::cout << x["id"].get<std::string>().substr(0, 12) << "  " << x["committer"].get<std::string>() << "  "
                << x["message"].get<std::string>() << "\n";
    }
    return Status::OK();
  });
  log->add_option("repo", A->repo)->required();
  log->add_option("ref", A->ref)->required();
  log->add_option("--amount", A->amount)->check(CLI::Range(1, 1000));

  auto* diff = Command(&app, "diff", "Uncommitted changes of a branch, or REF..RIGHT", A, R, [A](Client& c) {
    std::string path = A->right.empty() ? RepoPath(*A) + "/branches/" + A->ref + "/diff?amount=1000"
                                        : RepoPath(*A) + "/refs/" + A->ref + "/diff/" + A->right + "?amount=1000";
    ARROW_ASSIGN_OR_RAISE(auto j, c.Get(path));
    for (const auto& d : j["results"]) {
      std::cout << d["type"].get<std::string>() << "\t" << d["path"].get<std::string>() << "\n";
    }
    return Status::OK();
  });
  diff->add_option("repo", A->repo)->required();
  diff->add_option("ref", A->ref, "Branch (uncommitted changes) or left ref")->required();
  diff->add_option("right", A->right, "Right ref: diff committed refs instead");

  auto* merge = Command(&app, "merge", "Merge a ref into a branch", A, R, [A](Client& c) {
    json body = json::object();
    if (!A->strategy.empty()) body["strategy"] = A->strategy;
    ARROW_ASSIGN_OR_RAISE(auto j, c.Post(RepoPath(*A) + "/refs/" + A->ref + "/merge/" + A->branch, body.dump()));
    Print(j);
    return Status::OK();
  });
  merge->add_option("repo", A->repo)->required();
  merge->add_option("source", A->ref)->required();
  merge->add_option("dest", A->branch)->required();
  merge->add_option("--strategy", A->strategy)->check(CLI::IsMember({"source-wins", "dest-wins"}));
}

// `tag create|list|delete`.
void AddTagCommands(CLI::App& app, Args* A, Registry* R) {
  auto* tag = app.add_subcommand("tag", "Tags of a repository");
  tag->require_subcommand(1);
  auto* tc = Command(tag, "create", "Tag a ref", A, R, [A](Client& c) {
    ARROW_ASSIGN_OR_RAISE(auto j, c.Post(RepoPath(*A) + "/tags", json{{"id", A->name}, {"ref", A->ref}}.dump()));
    Print(j);
    return Status::OK();
  });
  tc->add_option("repo", A->repo)->required();
  tc->add_option("tag", A->name)->required();
  tc->add_option("ref", A->ref)->required();
  auto* tl = Command(tag, "list", "List tags", A, R, [A](Client& c) {
    ARROW_ASSIGN_OR_RAISE(auto j, c.Get(RepoPath(*A) + "/tags?amount=1000"));
    for (const auto& t : j["results"]) {
      std::cout << t["id"].get<std::string>() << "\t" << t["commit_id"].get<std::string>() << "\n";
    }
    return Status::OK();
  });
  tl->add_option("repo", A->repo)->required();
  auto* td = Command(tag, "delete", "Delete a tag", A, R,
                     [A](Client& c) { return c.Send("DELETE", RepoPath(*A) + "/tags/" + A->name).status(); });
  td->add_option("repo", A->repo)->required();
  td->add_option("tag", A->name)->required();
}

}  // namespace

std::function<int()> AddCatalogCommands(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto reg = std::make_shared<Registry>();
  AddSetupCommand(app, a.get(), reg.get());
  AddRepoCommands(app, a.get(), reg.get());
  AddBranchCommands(app, a.get(), reg.get());
  AddObjectCommands(app, a.get(), reg.get());
  AddHistoryCommands(app, a.get(), reg.get());
  AddTagCommands(app, a.get(), reg.get());

  return [a, reg]() -> int {
    for (auto& [cmd, body] : *reg) {
      if (cmd->parsed()) {
        return Run([&] {
          Client c(a->server);
          return body(c);
        });
      }
    }
    return -1;
  };
}

}  // namespace sediment::cli