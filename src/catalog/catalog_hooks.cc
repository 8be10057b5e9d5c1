// The catalog's operations that fire lakeFS's hooks (hooks.h): each builds
// its events, runs the pre-event, does the operation (Do...), then queues the
// post-event. With no HookRunner set, or on a hook's own call, they only do it.
#include <fmt/format.h>

#include <memory>

#include "catalog/catalog.h"
#include "catalog/hooks.h"

namespace sediment::catalog {
namespace {

thread_local bool tl_no_hooks = false;

HookEvent Event(const char* type, const std::string& repo, const std::string& user) {
  HookEvent e;
  e.event_type = type;
  e.repository_id = repo;
  e.user = user;
  return e;
}

// The events' shared shape: the committer's message and metadata.
void CommitFields(HookEvent* e, const CommitParams& p) {
  e->committer = p.committer;
  e->commit_message = p.message;
  e->commit_metadata = p.metadata;
}

Result<std::string> RunPreHooks(HookRunner* hooks, const HookEvent& event) {
  if (hooks == nullptr) return std::string();
  return hooks->RunPre(event);
}

void RunPostHooks(HookRunner* hooks, HookEvent event, const std::string& pre_run, bool set_pre_run_commit) {
  if (hooks == nullptr) return;
  event.pre_run_id = pre_run;
  hooks->RunPost(std::move(event), set_pre_run_commit);
}

}  // namespace

NoHooksOnThisThread::NoHooksOnThisThread() : outer_(tl_no_hooks) { tl_no_hooks = true; }
NoHooksOnThisThread::~NoHooksOnThisThread() { tl_no_hooks = outer_; }
bool NoHooksOnThisThread::Active() { return tl_no_hooks; }

HookRunner* Catalog::Hooks() const { return NoHooksOnThisThread::Active() ? nullptr : hooks_.load(); }

Result<Branch> Catalog::CreateBranch(const std::string& repo, const std::string& name, const std::string& source_ref,
                                     const std::string& user) {
  HookRunner* hooks = Hooks();
  if (hooks == nullptr) return DoCreateBranch(repo, name, source_ref);
  ARROW_RETURN_NOT_OK(ValidateBranchName(name));  // before hooks record it
  // The hooks read their actions from the source as given (a branch: with its
  // staged changes); a source that does not resolve is DoCreateBranch's to report.
  auto event = Event("pre-create-branch", repo, user);
  event.branch_id = name;
  event.source_ref = source_ref;
  std::string pre_run;
  if (auto from = ResolveRef(repo, source_ref); from.ok()) {
    event.commit_id = from->commit_id;
    ARROW_ASSIGN_OR_RAISE(pre_run, RunPreHooks(hooks, event));
  } else if (!IsNotFound(from.status())) {
    return from.status();
  }
  ARROW_ASSIGN_OR_RAISE(auto b, DoCreateBranch(repo, name, source_ref));
  event.event_type = "post-create-branch";
  event.commit_id = b.commit_id;
  RunPostHooks(hooks, std::move(event), pre_run, /*set_pre_run_commit=*/false);
  return b;
}

Status Catalog::DeleteBranch(const std::string& repo, const std::string& name, const std::string& user) {
  HookRunner* hooks = Hooks();
  if (hooks == nullptr) return DoDeleteBranch(repo, name);
  auto event = Event("pre-delete-branch", repo, user);
  event.branch_id = name;
  std::string pre_run;
  if (auto b = GetBranch(repo, name); b.ok()) {
    event.source_ref = b->commit_id;
    ARROW_ASSIGN_OR_RAISE(pre_run, RunPreHooks(hooks, event));
  } else if (!IsNotFound(b.status())) {
    return b.status();
  }  // not found: DoDeleteBranch says so
  ARROW_RETURN_NOT_OK(DoDeleteBranch(repo, name));
  event.event_type = "post-delete-branch";
  RunPostHooks(hooks, std::move(event), pre_run, /*set_pre_run_commit=*/false);
  return Status::OK();
}

Result<Commit> Catalog::CommitBranch(const std::string& repo, const std::string& branch, const CommitParams& params) {
  HookRunner* hooks = Hooks();
  if (hooks == nullptr) return DoCommitBranch(repo, branch, params);
  auto event = Event("prepare-commit", repo, params.committer);
  event.branch_id = event.source_ref = branch;
  CommitFields(&event, params);
  ARROW_RETURN_NOT_OK(RunPreHooks(hooks, event).status());
  event.event_type = "pre-commit";
  ARROW_ASSIGN_OR_RAISE(auto pre_run, RunPreHooks(hooks, event));
  ARROW_ASSIGN_OR_RAISE(auto c, DoCommitBranch(repo, branch, params));
  event.event_type = "post-commit";
  event.source_ref = event.commit_id = c.id;
  RunPostHooks(hooks, std::move(event), pre_run, /*set_pre_run_commit=*/true);
  return c;
}

Result<Commit> Catalog::Merge(const std::string& repo, const std::string& source_ref, const std::string& dest_branch,
                              const CommitParams& params, MergeStrategy strategy) {
  HookRunner* hooks = Hooks();
  if (hooks == nullptr) return DoMerge(repo, source_ref, dest_branch, params, strategy);
  // pre-merge runs once the merge commit exists, before the branch moves to it.
  auto event = Event("pre-merge", repo, params.committer);
  event.branch_id = dest_branch;
  event.merge_source = source_ref;
  event.committer = params.committer;
  std::string pre_run;
  CommitParams p = params;
  p.before_publish = [&](const Commit& made) -> Status {
    if (made.parents.size() >= 2) {
      event.source_ref = made.parents[1];  // the source commit that was merged
    } else {                               // a squash merge records only the destination
      ARROW_ASSIGN_OR_RAISE(auto src, ResolveRef(repo, source_ref));
      event.source_ref = src.commit_id;
    }
    event.commit_id = made.id;
    event.commit_message = made.message;
    event.commit_metadata = made.metadata;
    ARROW_ASSIGN_OR_RAISE(pre_run, RunPreHooks(hooks, event));
    return params.before_publish ? params.before_publish(made) : Status::OK();
  };
  ARROW_ASSIGN_OR_RAISE(auto c, DoMerge(repo, source_ref, dest_branch, p, strategy));
  event.event_type = "post-merge";
  event.source_ref = event.commit_id = c.id;
  RunPostHooks(hooks, std::move(event), pre_run, /*set_pre_run_commit=*/false);
  return c;
}

Result<Commit> Catalog::Revert(const std::string& repo, const std::string& branch, const std::string& ref,
                               int parent_number, const CommitParams& params) {
  HookRunner* hooks = Hooks();
  if (hooks == nullptr) return DoRevert(repo, branch, ref, parent_number, params);
  auto event = Event("pre-revert", repo, params.committer);
  event.branch_id = event.source_ref = branch;
  CommitFields(&event, params);
  std::string pre_run;
  if (auto target = ResolveRef(repo, ref); target.ok()) {
    if (event.commit_message.empty()) event.commit_message = fmt::format("Revert {}", target->commit_id);
    ARROW_ASSIGN_OR_RAISE(pre_run, RunPreHooks(hooks, event));
  } else if (!IsNotFound(target.status())) {
    return target.status();
  }  // not found: DoRevert says so
  ARROW_ASSIGN_OR_RAISE(auto c, DoRevert(repo, branch, ref, parent_number, params));
  event.event_type = "post-revert";
  event.source_ref = event.commit_id = c.id;
  event.commit_message = c.message;
  RunPostHooks(hooks, std::move(event), pre_run, /*set_pre_run_commit=*/true);
  return c;
}

Result<Commit> Catalog::CherryPick(const std::string& repo, const std::string& branch, const std::string& ref,
                                   int parent_number, const CommitParams& params) {
  HookRunner* hooks = Hooks();
  if (hooks == nullptr) return DoCherryPick(repo, branch, ref, parent_number, params);
  auto event = Event("pre-cherry-pick", repo, params.committer);
  event.branch_id = event.source_ref = branch;
  event.committer = params.committer;
  std::string pre_run;
  auto picked = ResolveRef(repo, ref);
  if (!picked.ok() && !IsNotFound(picked.status())) return picked.status();
  if (picked.ok()) {  // not found: DoCherryPick says so
    auto original = GetCommit(repo, picked->commit_id);
    if (original.ok()) {
      event.commit_message = params.message.empty() ? original->message : params.message;
      event.commit_metadata = params.metadata.empty() ? original->metadata : params.metadata;
      event.commit_metadata["cherry-pick-origin"] = original->id;
      event.commit_metadata["cherry-pick-committer"] = original->committer;
    }
    ARROW_ASSIGN_OR_RAISE(pre_run, RunPreHooks(hooks, event));
  }
  ARROW_ASSIGN_OR_RAISE(auto c, DoCherryPick(repo, branch, ref, parent_number, params));
  event.event_type = "post-cherry-pick";
  event.source_ref = event.commit_id = c.id;
  event.commit_message = c.message;
  event.commit_metadata = c.metadata;
  RunPostHooks(hooks, std::move(event), pre_run, /*set_pre_run_commit=*/false);
  return c;
}

Result<Tag> Catalog::CreateTag(const std::string& repo, const std::string& id, const std::string& ref, bool force,
                               const std::string& user) {
  HookRunner* hooks = Hooks();
  if (hooks == nullptr) return DoCreateTag(repo, id, ref, force);
  auto event = Event("pre-create-tag", repo, user);
  event.tag_id = id;
  std::string pre_run;
  if (auto at = ResolveRef(repo, ref); at.ok()) {
    event.source_ref = event.commit_id = at->commit_id;
    ARROW_ASSIGN_OR_RAISE(pre_run, RunPreHooks(hooks, event));
  } else if (!IsNotFound(at.status())) {
    return at.status();
  }  // not found: DoCreateTag says so
  ARROW_ASSIGN_OR_RAISE(auto t, DoCreateTag(repo, id, ref, force));
  event.event_type = "post-create-tag";
  event.source_ref = event.commit_id = t.commit_id;
  RunPostHooks(hooks, std::move(event), pre_run, /*set_pre_run_commit=*/false);
  return t;
}

Status Catalog::DeleteTag(const std::string& repo, const std::string& id, const std::string& user) {
  HookRunner* hooks = Hooks();
  if (hooks == nullptr) return DoDeleteTag(repo, id);
  auto event = Event("pre-delete-tag", repo, user);
  event.tag_id = id;
  std::string pre_run;
  if (auto t = GetTag(repo, id); t.ok()) {
    event.source_ref = event.commit_id = t->commit_id;
    ARROW_ASSIGN_OR_RAISE(pre_run, RunPreHooks(hooks, event));
  } else if (!IsNotFound(t.status())) {
    return t.status();
  }  // not found: DoDeleteTag says so
  ARROW_RETURN_NOT_OK(DoDeleteTag(repo, id));
  event.event_type = "post-delete-tag";
  RunPostHooks(hooks, std::move(event), pre_run, /*set_pre_run_commit=*/false);
  return Status::OK();
}

// An import is a commit: its pre-commit hooks run in the import's job once the
// commit is made and before the branch moves (a failure fails the import), its
// post-commit hooks after.
CommitParams Catalog::WithImportHooks(const std::string& repo, const std::string& branch, CommitParams params) {
  HookRunner* hooks = Hooks();
  if (hooks == nullptr) return params;
  auto event = std::make_shared<HookEvent>(Event("pre-commit", repo, params.committer));
  event->branch_id = event->source_ref = branch;
  CommitFields(event.get(), params);
  auto pre_run = std::make_shared<std::string>();
  auto before = std::move(params.before_publish);
  auto after = std::move(params.after_publish);
  params.before_publish = [hooks, event, pre_run, before](const Commit& made) -> Status {
    ARROW_ASSIGN_OR_RAISE(*pre_run, RunPreHooks(hooks, *event));
    return before ? before(made) : Status::OK();
  };
  params.after_publish = [hooks, event, pre_run, after](const Commit& made) {
    if (after) after(made);
    HookEvent post = *event;
    post.event_type = "post-commit";
    post.source_ref = post.commit_id = made.id;
    RunPostHooks(hooks, std::move(post), *pre_run, /*set_pre_run_commit=*/true);
  };
  return params;
}

}  // namespace sediment::catalog
