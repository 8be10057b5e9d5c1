// Catalog, commit: CommitBranch, CompactStaging, and the three steps both
// take — seal the staging token (new writes go to a fresh
// one), fold the sealed tokens into the branch's base meta-range, and swap the
// result onto the branch unless a commit, compaction or reset moved it.
#include <fmt/format.h>

#include <algorithm>
#include <queue>
#include <set>

#include "base/executor.h"
#include "base/failpoint.h"
#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "catalog/committed_manager.h"
#include "catalog/keys.h"
#include "catalog/ref_manager.h"
#include "catalog/staging_manager.h"
#include "kv/kv.h"

namespace sediment::catalog {

using internal::BranchJson;
using internal::ClampAmount;
using internal::kCasRetries;

// ---------------------------------------------------------------------------
// Seal, fold, swap

Result<Catalog::BranchRecord> Catalog::Seal(const std::string& repo_id, const std::string& branch) {
  for (int i = 0;; ++i) {
    ARROW_ASSIGN_OR_RAISE(auto rec, refs_->LoadBranch(repo_id, branch));
    Branch next = rec.branch;
    next.sealed_tokens.insert(next.sealed_tokens.begin(), rec.branch.staging_token);
    next.staging_token = internal::NewToken();
    std::string raw = BranchJson(next);
    Status st = kv_->SetIf(BranchKey(repo_id, branch), raw, rec.raw);
    if (st.ok()) return BranchRecord{std::move(next), std::move(raw)};
    if (!IsPreconditionFailed(st) || i + 1 >= kCasRetries) return st;
  }
}

Result<std::shared_ptr<const MetaRange>> Catalog::FoldSealed(const Repository& repo, const Branch& sealed,
                                                             ApplyStats* stats) {
  ARROW_ASSIGN_OR_RAISE(auto base, BaseMetaRange(repo, sealed));
  ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
  auto changes = staging_->View(sealed, /*include_current=*/false);
  return committed_->Apply(ns, base, *changes, stats);
}

Result<Catalog::SwapResult> Catalog::SwapFolded(const std::string& repo_id, const std::string& branch,
                                                const Branch& sealed, const std::function<void(Branch*)>& update,
                                                int attempts) {
  std::set<std::string> folded(sealed.sealed_tokens.begin(), sealed.sealed_tokens.end());
  SwapResult result;
  for (int i = 0; i < attempts; ++i) {
    ARROW_ASSIGN_OR_RAISE(auto now, refs_->LoadBranch(repo_id, branch));
    result.branch = now.branch;
    size_t still_sealed = 0;
    for (const auto& t : now.branch.sealed_tokens) still_sealed += folded.count(t);
    if (now.branch.commit_id != sealed.commit_id) {
      result.outcome = SwapOutcome::kCommitMoved;
    } else if (now.branch.compacted_meta_range_id != sealed.compacted_meta_range_id) {
      result.outcome = SwapOutcome::kCompactionMoved;
    } else if (still_sealed != folded.size()) {
      result.outcome = SwapOutcome::kTokensDropped;
    } else {
      result.outcome = SwapOutcome::kSwapped;
    }
    if (result.outcome != SwapOutcome::kSwapped) return result;
    // Only the folded tokens leave the branch; any sealed since stay.
    Branch next = now.branch;
    std::erase_if(next.sealed_tokens, [&](const std::string& t) { return folded.count(t) > 0; });
    update(&next);
    kv::Batch batch;
    batch.Require(kv::Precondition::Equals(BranchKey(repo_id, branch), now.raw))
        .Put(BranchKey(repo_id, branch), BranchJson(next));
    for (const auto& t : folded) StagingManager::Retire(&batch, t);
    Status st = kv_->Apply(batch);
    if (st.ok()) {
      staging_->TriggerDrop();
      result.branch = std::move(next);
      return result;
    }
    if (!IsPreconditionFailed(st)) return st;
  }
  result.outcome = SwapOutcome::kKeptChanging;
  return result;
}

// ---------------------------------------------------------------------------
// Staging compaction

Result<CompactionResult> Catalog::CompactStaging(const std::string& repo_id, const std::string& branch,
                                                 const std::function<void()>& after_seal) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  if (repo.read_only) return Forbidden(fmt::format("repository \"{}\" is read-only: it is never compacted", repo_id));
  CompactionResult result;
  ARROW_ASSIGN_OR_RAISE(auto probe, refs_->LoadBranch(repo_id, branch));
  ARROW_ASSIGN_OR_RAISE(bool staged, staging_->HasStagedEntries(probe.branch, StagedProbe::kEveryToken));
  if (!staged) {
    result.meta_range_id = probe.branch.compacted_meta_range_id;
    return result;
  }

  // 1. Seal: writes from now on go to a fresh token and stay staged over the result.
  ARROW_ASSIGN_OR_RAISE(auto sealed, Seal(repo_id, branch));
  if (after_seal) after_seal();
  SEDIMENT_FAILPOINT("catalog.compact.after_seal");
  const Branch& b = sealed.branch;

  // 2. Fold every sealed token into the base: the previous compaction, else the commit.
  ARROW_ASSIGN_OR_RAISE(auto mr, FoldSealed(repo, b, &result.stats));
  result.staged_entries = result.stats.changes;
  SEDIMENT_FAILPOINT("catalog.compact.after_fold");

  // 3. Swap, unless a commit or reset made the work stale; later seals are kept.
  auto update = [&](Branch* next) { next->compacted_meta_range_id = mr->id; };
  ARROW_ASSIGN_OR_RAISE(auto swap, SwapFolded(repo_id, branch, b, update, kCasRetries));
  switch (swap.outcome) {
    case SwapOutcome::kSwapped:
      SEDIMENT_FAILPOINT("catalog.compact.after_swap");
      result.outcome = CompactionOutcome::kCompleted;
      result.meta_range_id = mr->id;
      return result;
    case SwapOutcome::kKeptChanging:
      return Busy(fmt::format("branch \"{}\" kept changing; compaction not applied", branch));
    case SwapOutcome::kCommitMoved:
    case SwapOutcome::kCompactionMoved:
    case SwapOutcome::kTokensDropped:
      break;
  }
  result.outcome = CompactionOutcome::kDiscarded;
  result.meta_range_id = swap.branch.compacted_meta_range_id;
  return result;
}

// ---------------------------------------------------------------------------
// Commit

Result<Commit> Catalog::DoCommitBranch(const std::string& repo_id, const std::string& branch,
                                       const CommitParams& params) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  if (!params.force) ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_RETURN_NOT_OK(CheckProtection(repo, branch, /*commit=*/true));
  if (params.message.empty()) return InvalidArgument("commit message is required");

  // A staging compaction that lands between our seal and our swap folded some of
  // our tokens into a new compacted meta-range: nothing is lost, so start over
  // from it rather than fail the user's commit.
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    bool raced = false;
    auto c = CommitOnce(repo, branch, params, &raced);
    if (!raced || attempt == kAttempts) return c;
  }
}

Result<Commit> Catalog::CommitOnce(const Repository& repo, const std::string& branch, const CommitParams& params,
                                   bool* raced_compaction) {
  const std::string& repo_id = repo.id;
  // 1. Seal: new writes go to a fresh token from here on.
  ARROW_ASSIGN_OR_RAISE(auto probe, refs_->LoadBranch(repo_id, branch));
  ARROW_ASSIGN_OR_RAISE(bool dirty, IsDirty(repo_id, probe.branch));
  if (!dirty && !params.allow_empty) {
    return InvalidArgument("commit: no changes");  // lakeFS's words (lakectl shows them as they are)
  }
  ARROW_ASSIGN_OR_RAISE(auto sealed, Seal(repo_id, branch));
  if (after_commit_seal_) after_commit_seal_();
  SEDIMENT_FAILPOINT("catalog.commit.after_seal");
  const Branch& b = sealed.branch;

  // 2. Apply the sealed tokens to the base meta-range.
  ARROW_ASSIGN_OR_RAISE(auto parent, GetCommit(repo_id, b.commit_id));
  ARROW_ASSIGN_OR_RAISE(auto mr, FoldSealed(repo, b, /*stats=*/nullptr));
  if (SameMetaRange(mr->id, parent.meta_range_id) && !params.allow_empty) {
    return internal::NoChanges(fmt::format("the staged changes on \"{}\" leave its content as committed", branch));
  }

  // 3. Record the commit and swap the branch to it.
  Commit c;
  c.parents = {b.commit_id};
  c.committer = params.committer;
  c.message = params.message;
  c.creation_date = params.date ? *params.date : ToUnixMicros(clock_->Now()) / 1000000;
  c.meta_range_id = mr->id;
  c.metadata = params.metadata;
  c.generation = parent.generation + 1;
  ARROW_RETURN_NOT_OK(refs_->StoreCommit(repo_id, &c).status());
  SEDIMENT_FAILPOINT("catalog.commit.after_fold");
  auto update = [&](Branch* next) {
    next->commit_id = c.id;
    next->compacted_meta_range_id.clear();
  };
  // One try: a lost compare-and-swap fails the commit like any other change.
  ARROW_ASSIGN_OR_RAISE(auto swap, SwapFolded(repo_id, branch, b, update, /*attempts=*/1));
  if (swap.outcome == SwapOutcome::kSwapped) {
    SEDIMENT_FAILPOINT("catalog.commit.after_swap");
    return c;
  }
  // Another commit, hard reset or merge; a compaction (then a new try can
  // succeed); a reset (do not commit what it dropped); or a lost race.
  if (swap.outcome == SwapOutcome::kCompactionMoved) *raced_compaction = true;
  return Conflict(fmt::format("branch \"{}\" changed during the commit; its changes are still staged, retry", branch));
}

}  // namespace sediment::catalog
