// The actions module's KV key layout, in one place: every key and prefix that
// ActionsService reads or writes is built here (keys.cc). Each builder says
// what its record holds; docs/formats.md describes the same layout. Keys are
// on disk: changing a spelling here orphans every stored record of it.
//
// Everything lives under c/ar/<repo>/, so a repository's deletion removes its
// runs with RepositoryKeyPrefixes. Repository, branch and commit ids never
// contain '/'; run ids and hook run ids are [0-9a-v_] only.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

namespace sediment::actions {

// c/ar/<repo>/r/<run id> -> JSON {v: 1, run_id, branch_id, source_ref,
// event_type, commit_id, start, end (Unix microseconds), passed}: a run;
// listed newest first (run ids sort so).
std::string RunKey(const std::string& repo, const std::string& run_id);
std::string RunsPrefix(const std::string& repo);
// c/ar/<repo>/t/<run id>/<hook run id> -> JSON {v: 1, run_id, hook_run_id,
// hook_id, action_name, start, end (0 = skipped), passed}: one hook of a run.
std::string TaskKey(const std::string& repo, const std::string& run_id, const std::string& hook_run_id);
std::string TasksPrefix(const std::string& repo, const std::string& run_id);
// c/ar/<repo>/b/<branch>/<run id> -> "": the runs of a branch.
std::string BranchRunKey(const std::string& repo, const std::string& branch, const std::string& run_id);
std::string BranchRunsPrefix(const std::string& repo, const std::string& branch);
// c/ar/<repo>/c/<commit>/<run id> -> "": the runs of a commit.
std::string CommitRunKey(const std::string& repo, const std::string& commit, const std::string& run_id);
std::string CommitRunsPrefix(const std::string& repo, const std::string& commit);

// Every prefix under which actions keeps records of repository `repo`: what
// deleting the repository must delete.
std::vector<std::string> RepositoryKeyPrefixes(const std::string& repo);

}  // namespace sediment::actions
