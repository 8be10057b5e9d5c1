// Catalog, staged writes: PutEntry (and PutUploadedEntry, the one rule for
// when data written for a refused entry is deleted), PutEntries, DeleteEntry
// and DeleteEntries.
// Writes never touch the branch record; each goes to the current staging token
// and is re-checked against a concurrent seal (WriteStaged), except a write
// if absent, which requires the branch record unchanged in its batch.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/executor.h"
#include "base/failpoint.h"
#include "blob/blob.h"
#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "catalog/keys.h"
#include "catalog/ref_manager.h"
#include "catalog/staging_manager.h"
#include "kv/kv.h"

namespace sediment::catalog {

Status Catalog::WriteStaged(const std::string& repo_id, const std::string& branch,
                            const std::function<Status(const Branch& branch)>& write, const char* what,
                            std::string* token) {
  ARROW_ASSIGN_OR_RAISE(auto rec, refs_->LoadBranch(repo_id, branch));
  for (int i = 0; i < internal::kCasRetries; ++i) {
    const Branch& wrote_on = rec.branch;
    ARROW_RETURN_NOT_OK(write(wrote_on));
    SEDIMENT_FAILPOINT("catalog.stage.after_write");
    auto now = refs_->LoadBranch(repo_id, branch);
    if (IsNotFound(now.status())) {
      // Deleted meanwhile: the write may have landed after its token was dropped.
      ARROW_RETURN_NOT_OK(staging_->QueueDrop(wrote_on.staging_token));
      return now.status();
    }
    ARROW_RETURN_NOT_OK(now.status());
    if (now->branch.staging_token == wrote_on.staging_token && now->branch.commit_id == wrote_on.commit_id) {
      if (token) *token = wrote_on.staging_token;
      return Status::OK();
    }
    // A commit or compaction sealed the token (write again to the new one), or
    // a commit, merge or reset moved the branch. If the token is not even sealed
    // any more, it was dropped, maybe before the write landed: drop it again.
    const auto& sealed = now->branch.sealed_tokens;
    if (now->branch.staging_token != wrote_on.staging_token &&
        std::find(sealed.begin(), sealed.end(), wrote_on.staging_token) == sealed.end()) {
      ARROW_RETURN_NOT_OK(staging_->QueueDrop(wrote_on.staging_token));
    }
    rec = std::move(*now);
  }
  return Busy(fmt::format("branch \"{}\" kept changing; retry the {}", branch, what));
}

Status Catalog::PutEntry(const std::string& repo_id, const std::string& branch, const std::string& path,
                         const Entry& entry, bool if_absent, bool force) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  return PutEntry(repo, branch, path, entry, if_absent, force);
}

Status Catalog::PutEntry(const Repository& repo, const std::string& branch, const std::string& path, const Entry& entry,
                         bool if_absent, bool force) {
  bool wrote = false;
  return StageEntry(repo, branch, path, entry, WriteCondition{if_absent, std::nullopt}, force, &wrote);
}

Status Catalog::SwapEntry(const std::string& repo_id, const std::string& branch, const std::string& path,
                          const Entry& entry, const std::optional<std::string>& expected_address) {
  return SwapEntries(repo_id, branch, {EntrySwap{path, entry, expected_address}});
}

Status Catalog::SwapEntries(const std::string& repo_id, const std::string& branch,
                            const std::vector<EntrySwap>& swaps) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  std::vector<CheckedWrite> writes;
  std::set<std::string> paths;
  for (const EntrySwap& s : swaps) {
    ARROW_RETURN_NOT_OK(ValidatePath(s.path));
    if (!paths.insert(s.path).second) return InvalidArgument(fmt::format("path \"{}\" swapped twice", s.path));
    writes.push_back({s.path, s.entry ? EncodeEntry(*s.entry) : "", WriteCondition{true, s.expected_address}});
  }
  if (writes.empty()) return Status::OK();
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_RETURN_NOT_OK(CheckProtection(repo, branch, /*commit=*/false));
  std::string token;
  bool wrote = false;
  ARROW_RETURN_NOT_OK(PutIfCurrent(repo, branch, writes, &token, &wrote));
  if (on_mutation_) on_mutation_(repo_id, branch, token, static_cast<int64_t>(writes.size()));
  return Status::OK();
}

Status Catalog::PutUploadedEntry(const Repository& repo, const std::string& branch, const std::string& path,
                                 const Entry& entry, bool if_absent, bool force) {
  bool wrote = false;
  Status st = StageEntry(repo, branch, path, entry, WriteCondition{if_absent, std::nullopt}, force, &wrote);
  const bool refused = IsInvalidArgument(st) || IsForbidden(st) || IsNotFound(st) || IsPreconditionFailed(st);
  if (!wrote && refused) {
    if (auto ns = RepositoryNamespace(repo); ns.ok()) (void)(*ns)->Delete(entry.address);
  }
  return st;
}

Status Catalog::StageEntry(const Repository& repo, const std::string& branch, const std::string& path,
                           const Entry& entry, const WriteCondition& condition, bool force, bool* wrote) {
  const std::string& repo_id = repo.id;
  ARROW_RETURN_NOT_OK(ValidatePath(path));
  if (!force) ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_RETURN_NOT_OK(CheckProtection(repo, branch, /*commit=*/false));
  std::string value = EncodeEntry(entry);
  std::string token;
  if (condition.checked) {
    ARROW_RETURN_NOT_OK(PutIfCurrent(repo, branch, {CheckedWrite{path, value, condition}}, &token, wrote));
  } else {
    auto write = [&](const Branch& b) {
      *wrote = true;
      return staging_->Set(b.staging_token, path, value);
    };
    ARROW_RETURN_NOT_OK(WriteStaged(repo_id, branch, write, "write", &token));
  }
  if (on_mutation_) on_mutation_(repo_id, branch, token, 1);
  return Status::OK();
}

// The checks and the writes are one batch: it requires the branch record as
// read (so the token is still current and the sealed tokens and base checked
// below are the branch's) and each staged key as read (absent, or a
// tombstone). A batch that loses either race re-reads and checks again; no
// re-check after the write is needed, since it cannot land in a token that was
// sealed meanwhile.
Status Catalog::PutIfCurrent(const Repository& repo, const std::string& branch, const std::vector<CheckedWrite>& writes,
                             std::string* token, bool* wrote) {
  // The path as the branch sees it (encoded, nullopt if absent) against the condition.
  auto check = [&](const CheckedWrite& w, const std::optional<std::string>& current) -> Status {
    const auto& want = w.condition.address;
    if (!want) {
      if (!current) return Status::OK();
      return PreconditionFailed(fmt::format("object \"{}\" already exists on branch \"{}\"", w.path, branch));
    }
    if (current) {
      ARROW_ASSIGN_OR_RAISE(auto e, DecodeEntry(*current));
      if (e.address == *want) return Status::OK();
    }
    return PreconditionFailed(fmt::format("object \"{}\" on branch \"{}\" no longer names {}", w.path, branch, *want));
  };
  for (int i = 0; i < internal::kCasRetries; ++i) {
    ARROW_ASSIGN_OR_RAISE(auto rec, refs_->LoadBranch(repo.id, branch));
    kv::Batch batch;
    batch.Require(kv::Precondition::Equals(BranchKey(repo.id, branch), rec.raw));
    for (const CheckedWrite& w : writes) {
      std::string key = StagedEntryKey(rec.branch.staging_token, w.path);
      auto staged = kv_->Get(key);
      if (staged.ok()) {
        // A tombstone is absent, whatever is below.
        ARROW_RETURN_NOT_OK(check(w, staged->empty() ? std::nullopt : std::optional<std::string>(*staged)));
        batch.Require(kv::Precondition::Equals(key, *staged));
      } else if (IsNotFound(staged.status())) {
        ARROW_ASSIGN_OR_RAISE(auto below, LookupOnBranch(repo, rec.branch, w.path, /*include_current=*/false));
        ARROW_RETURN_NOT_OK(check(w, below));
        batch.Require(kv::Precondition::Absent(key));
      } else {
        return staged.status();
      }
      batch.Put(key, w.value);
    }
    Status st = kv_->Apply(batch);
    if (st.ok()) *token = rec.branch.staging_token;
    if (!IsPreconditionFailed(st)) {
      *wrote = true;
      return st;
    }
  }
  return Busy(fmt::format("branch \"{}\" kept changing; retry the write of \"{}\"", branch, writes.front().path));
}

Status Catalog::PutEntries(const std::string& repo_id, const std::string& branch,
                           const std::vector<std::pair<std::string, Entry>>& entries) {
  for (const auto& [path, e] : entries) ARROW_RETURN_NOT_OK(ValidatePath(path));
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  constexpr size_t kBatch = 1000;
  for (size_t start = 0; start < entries.size(); start += kBatch) {
    size_t end = std::min(entries.size(), start + kBatch);
    auto write = [&](const Branch& b) { return staging_->SetEntries(b.staging_token, entries, start, end); };
    std::string token;
    ARROW_RETURN_NOT_OK(WriteStaged(repo_id, branch, write, "write", &token));
    if (on_mutation_) on_mutation_(repo_id, branch, token, static_cast<int64_t>(end - start));
  }
  return Status::OK();
}

Status Catalog::DeleteEntry(const std::string& repo_id, const std::string& branch, const std::string& path,
                            bool force) {
  ARROW_RETURN_NOT_OK(GetEntry(repo_id, branch, path).status());
  ARROW_ASSIGN_OR_RAISE(auto n, DeleteEntries(repo_id, branch, {path}, force));
  (void)n;
  return Status::OK();
}

Result<int64_t> Catalog::DeleteEntries(const std::string& repo_id, const std::string& branch,
                                       const std::vector<std::string>& paths, bool force) {
  for (const auto& p : paths) ARROW_RETURN_NOT_OK(ValidatePath(p));
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  if (!force) ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_RETURN_NOT_OK(CheckProtection(repo, branch, /*commit=*/false));
  int64_t deleted = 0, run = 0;  // run: deletes counted into `token` but not reported yet
  std::string token;
  auto report = [&] {
    if (on_mutation_ && run > 0) on_mutation_(repo_id, branch, token, run);
    run = 0;
  };
  for (const auto& p : paths) {
    auto e = GetEntry(repo_id, branch, p);
    if (IsNotFound(e.status())) continue;
    ARROW_RETURN_NOT_OK(e.status());
    auto write = [&](const Branch& b) { return staging_->Set(b.staging_token, p, ""); };
    std::string landed;
    if (Status st = WriteStaged(repo_id, branch, write, "delete", &landed); !st.ok()) {
      report();  // the deletes before this one landed
      return st;
    }
    if (landed != token) report();  // a commit sealed the token between two deletes
    token = landed;
    ++run;
    ++deleted;
  }
  report();
  return deleted;
}

}  // namespace sediment::catalog
