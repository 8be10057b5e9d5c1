#include "actions/keys.h"

namespace sediment::actions {
namespace {

// c/ar/<repo>/
std::string RepositoryRoot(const std::string& repo) { return "c/ar/" + repo + "/"; }

}  // namespace

std::string RunsPrefix(const std::string& repo) { return RepositoryRoot(repo) + "r/"; }
std::string RunKey(const std::string& repo, const std::string& run_id) { return RunsPrefix(repo) + run_id; }

std::string TasksPrefix(const std::string& repo, const std::string& run_id) {
  return RepositoryRoot(repo) + "t/" + run_id + "/";
}
std::string TaskKey(const std::string& repo, const std::string& run_id, const std::string& hook_run_id) {
  return TasksPrefix(repo, run_id) + hook_run_id;
}

std::string BranchRunsPrefix(const std::string& repo, const std::string& branch) {
  return RepositoryRoot(repo) + "b/" + branch + "/";
}
std::string BranchRunKey(const std::string& repo, const std::string& branch, const std::string& run_id) {
  return BranchRunsPrefix(repo, branch) + run_id;
}

std::string CommitRunsPrefix(const std::string& repo, const std::string& commit) {
  return RepositoryRoot(repo) + "c/" + commit + "/";
}
std::string CommitRunKey(const std::string& repo, const std::string& commit, const std::string& run_id) {
  return CommitRunsPrefix(repo, commit) + run_id;
}

std::vector<std::string> RepositoryKeyPrefixes(const std::string& repo) { return {RepositoryRoot(repo)}; }

}  // namespace sediment::actions
