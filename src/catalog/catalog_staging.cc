// Catalog, staged writes: PutEntry, PutEntries, DeleteEntry and DeleteEntries.
// Writes never touch the branch record; each goes to the current staging token
// and is re-checked against a concurrent seal (WriteStaged).
#include <fmt/format.h>

#include <algorithm>

#include "base/failpoint.h"
#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "kv/kv.h"

namespace sediment::catalog {

Status Catalog::WriteStaged(const std::string& repo_id, const std::string& branch,
                            const std::function<Status(const std::string& token)>& write, const char* what) {
  ARROW_ASSIGN_OR_RAISE(auto rec, LoadBranch(repo_id, branch));
  for (int i = 0; i < internal::kCasRetries; ++i) {
    std::string token = rec.branch.staging_token;
    ARROW_RETURN_NOT_OK(write(token));
    SEDIMENT_FAILPOINT("catalog.stage.after_write");
    // A commit may have sealed the token meanwhile: then write again to the new one.
    ARROW_ASSIGN_OR_RAISE(rec, LoadBranch(repo_id, branch));
    if (rec.branch.staging_token == token) return Status::OK();
  }
  return Busy(fmt::format("branch \"{}\" kept changing; retry the {}", branch, what));
}

Status Catalog::PutEntry(const std::string& repo_id, const std::string& branch, const std::string& path,
                         const Entry& entry, bool if_absent) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  return PutEntry(repo, branch, path, entry, if_absent);
}

Status Catalog::PutEntry(const Repository& repo, const std::string& branch, const std::string& path, const Entry& entry,
                         bool if_absent) {
  const std::string& repo_id = repo.id;
  ARROW_RETURN_NOT_OK(ValidatePath(path));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  std::string value = EncodeEntry(entry);
  if (if_absent) {
    auto existing = GetEntry(repo_id, branch, path);
    if (existing.ok()) return PreconditionFailed(fmt::format("object \"{}\" already exists", path));
    if (!IsNotFound(existing.status())) return existing.status();
  }
  auto write = [&](const std::string& token) { return kv_->Set(StagingPrefix(token) + path, value); };
  ARROW_RETURN_NOT_OK(WriteStaged(repo_id, branch, write, "write"));
  if (on_mutation_) on_mutation_(repo_id, branch, 1);
  return Status::OK();
}

Status Catalog::PutEntries(const std::string& repo_id, const std::string& branch,
                           const std::vector<std::pair<std::string, Entry>>& entries) {
  for (const auto& [path, e] : entries) ARROW_RETURN_NOT_OK(ValidatePath(path));
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  constexpr size_t kBatch = 1000;
  for (size_t start = 0; start < entries.size(); start += kBatch) {
    size_t end = std::min(entries.size(), start + kBatch);
    auto write = [&](const std::string& token) {
      kv::Batch batch;
      for (size_t j = start; j < end; ++j) {
        batch.Put(StagingPrefix(token) + entries[j].first, EncodeEntry(entries[j].second));
      }
      return kv_->Apply(batch);
    };
    ARROW_RETURN_NOT_OK(WriteStaged(repo_id, branch, write, "write"));
    if (on_mutation_) on_mutation_(repo_id, branch, static_cast<int64_t>(end - start));
  }
  return Status::OK();
}

Status Catalog::DeleteEntry(const std::string& repo_id, const std::string& branch, const std::string& path) {
  ARROW_RETURN_NOT_OK(GetEntry(repo_id, branch, path).status());
  ARROW_ASSIGN_OR_RAISE(auto n, DeleteEntries(repo_id, branch, {path}));
  (void)n;
  return Status::OK();
}

Result<int64_t> Catalog::DeleteEntries(const std::string& repo_id, const std::string& branch,
                                       const std::vector<std::string>& paths) {
  for (const auto& p : paths) ARROW_RETURN_NOT_OK(ValidatePath(p));
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  int64_t deleted = 0;
  for (const auto& p : paths) {
    auto e = GetEntry(repo_id, branch, p);
    if (IsNotFound(e.status())) continue;
    ARROW_RETURN_NOT_OK(e.status());
    auto write = [&](const std::string& token) { return kv_->Set(StagingPrefix(token) + p, ""); };
    ARROW_RETURN_NOT_OK(WriteStaged(repo_id, branch, write, "delete"));
    ++deleted;
  }
  if (on_mutation_ && deleted > 0) on_mutation_(repo_id, branch, deleted);
  return deleted;
}

}  // namespace sediment::catalog
