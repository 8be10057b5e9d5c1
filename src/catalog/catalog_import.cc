// Imports: objects that stay where they are, brought under version control in
// one commit (lakeFS's import), and reading them back (Catalog::OpenEntry).
#include <arrow/buffer.h>
#include <arrow/io/file.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "base/crypto.h"
#include "blob/blob.h"
#include "catalog/catalog.h"
#include "catalog/catalog_refs_internal.h"
#include "catalog/iterator.h"
#include "catalog/keys.h"
#include "catalog/ref_manager.h"
#include "kv/kv.h"

namespace sediment::catalog {

using refs_internal::LocationOf;

Result<NamespaceLocation> Catalog::CheckImportSource(const Repository& repo, const std::string& source, bool prefix) {
  // lakeFS's rule, on the strings as written (its clients expect these words)...
  for (const std::string& ns : std::vector<std::string>{repo.storage_namespace, LocationOf(repo)}) {
    if (source.rfind(ns, 0) == 0) {
      return InvalidArgument(fmt::format(
          "import path ({}) in repository namespace ({}) is prohibited: invalid import source", source, ns));
    }
    if (prefix && ns.rfind(source, 0) == 0) {
      return InvalidArgument(
          fmt::format("prefix ({}) contains repository namespace: ({}), invalid import source", source, ns));
    }
  }
  // ... then the namespace rules on the location resolved (links, '..').
  std::string trimmed = source;
  while (trimmed.size() > 1 && trimmed.back() == '/' && trimmed.find("://") + 3 < trimmed.size()) trimmed.pop_back();
  auto where = ResolveNamespace(trimmed, options_.namespaces);
  if (!where.ok()) return InvalidArgument(fmt::format("import source: {}", where.status().message()));
  const bool string_prefix = prefix && where->kind == NamespaceKind::kS3 && source.back() != '/';
  // A prefix as written ("s3://b/obj") covers every key that starts with it.
  for (const auto& own : options_.namespaces.reserved_s3) {
    auto mine = ParseNamespace(own);
    if (string_prefix && mine.ok() && mine->path.rfind(where->path, 0) == 0) {
      return InvalidArgument(
          fmt::format("import source: {} holds the server's own files at {}: invalid import source", source, own));
    }
  }
  ARROW_RETURN_NOT_OK(CheckOwnedByNoRepository(*where, prefix, string_prefix));
  return where;
}

// No repository's namespace, this one's or another's: their files are theirs
// to read and to collect (an import of them would read past the repository's
// policies, and point at files its GC deletes).
Status Catalog::CheckOwnedByNoRepository(const NamespaceLocation& where, bool prefix, bool string_prefix) {
  std::vector<NamespaceLocation> around = where.Ancestors();
  around.insert(around.begin(), where);
  for (const auto& outer : around) {
    auto owner = kv_->Get(NamespaceKey(outer.Uri()));
    if (owner.ok()) {
      return InvalidArgument(fmt::format("{} lies in {}, the namespace of repository \"{}\": invalid import source",
                                         where.Uri(), outer.Uri(), *owner));
    }
    if (!IsNotFound(owner.status())) return owner.status();
  }
  if (prefix) {
    ARROW_ASSIGN_OR_RAISE(auto inner, kv_->Scan(NamespaceKey(where.Uri() + (string_prefix ? "" : "/")), "", 1));
    if (!inner.items.empty()) {
      return InvalidArgument(fmt::format("{} holds {}, the namespace of repository \"{}\": invalid import source",
                                         where.Uri(), inner.items[0].key.substr(NamespaceKey("").size()),
                                         inner.items[0].value));
    }
  }
  return CheckRetiredNamespaces(where, around, prefix, string_prefix);
}

// How many deleted repositories' namespaces one import checks for files.
constexpr size_t kMaxRetiredChecked = 100;

// Nor a deleted repository's namespace while its files are there: they were
// its own, and deleting the repository did not make them anyone's.
Status Catalog::CheckRetiredNamespaces(const NamespaceLocation& where, const std::vector<NamespaceLocation>& around,
                                       bool prefix, bool string_prefix) {
  std::vector<kv::KeyValue> retired;
  for (const auto& outer : around) {
    auto owner = kv_->Get(RetiredNamespaceKey(outer.Uri()));
    if (owner.ok()) retired.push_back({RetiredNamespaceKey(outer.Uri()), *owner});
    if (!owner.ok() && !IsNotFound(owner.status())) return owner.status();
  }
  if (prefix) {
    ARROW_RETURN_NOT_OK(kv_->ScanAll(RetiredNamespaceKey(where.Uri() + (string_prefix ? "" : "/")), "",
                                     [&](const kv::KeyValue& item) -> Result<bool> {
                                       retired.push_back(item);
                                       return retired.size() <= kMaxRetiredChecked;
                                     }));
    if (retired.size() > kMaxRetiredChecked) {
      return InvalidArgument(
          fmt::format("{} holds the namespaces of more than {} deleted repositories; import a narrower prefix",
                      where.Uri(), kMaxRetiredChecked));
    }
  }
  for (const auto& item : retired) {
    const std::string uri = item.key.substr(RetiredNamespaceKey("").size());
    ARROW_ASSIGN_OR_RAISE(auto left, blob::FindStoredObject(uri, options_.s3));
    if (left) {
      return InvalidArgument(
          fmt::format("{} belonged to repository \"{}\" (deleted), whose files are still there: invalid import source",
                      uri, item.value));
    }
    // Its files are gone: nothing of it is left to guard.
    kv::Batch forget;
    forget.Require(kv::Precondition::Equals(item.key, item.value)).Delete(item.key);
    Status st = kv_->Apply(forget);
    if (!st.ok() && !IsPreconditionFailed(st)) return st;
  }
  return Status::OK();
}

namespace {

// Opens regular file `path` (absolute, normal form) read-only through real
// directories under one of `roots` only: openat2 from the root with
// RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS, so a symbolic link anywhere on the
// way, planted before or after any check, is refused rather than followed.
Result<int> OpenBeneath(const std::vector<std::string>& roots, const std::string& path) {
  for (const auto& configured : roots) {
    std::error_code ec;
    const std::string root = std::filesystem::weakly_canonical(configured, ec).string();
    if (ec || root.empty() || path.size() <= root.size() + 1 || path.compare(0, root.size(), root) != 0 ||
        path[root.size()] != '/') {
      continue;
    }
    const int dir = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) continue;
    struct open_how how {};
    how.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
    const int fd = static_cast<int>(::syscall(SYS_openat2, dir, path.c_str() + root.size() + 1, &how, sizeof(how)));
    const int err = errno;
    ::close(dir);
    if (fd < 0) {
      if (err == ENOENT) return NotFound(fmt::format("{}: no such file", path));
      if (err == ELOOP || err == EXDEV) {
        return Forbidden(fmt::format("{}: a symbolic link on the way is not followed", path));
      }
      return Status::IOError(fmt::format("opening {}: {}", path, std::strerror(err)));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return InvalidArgument(fmt::format("{} is not a regular file", path));
    }
    return fd;
  }
  return Forbidden(fmt::format("{} lies under no local namespace root", path));
}

}  // namespace

Result<Entry> Catalog::ImportLocalFile(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(int fd, OpenBeneath(options_.namespaces.local_roots, path));
  struct stat st {};
  ::fstat(fd, &st);
  ARROW_ASSIGN_OR_RAISE(auto file, arrow::io::ReadableFile::Open(fd));  // owns fd from here
  Digest md5(DigestKind::kMd5);
  for (int64_t at = 0; at < st.st_size;) {
    ARROW_ASSIGN_OR_RAISE(auto chunk, file->ReadAt(at, std::min<int64_t>(1 << 20, st.st_size - at)));
    if (chunk->size() == 0) break;  // shrank meanwhile
    md5.Update(chunk->data(), static_cast<size_t>(chunk->size()));
    at += chunk->size();
  }
  Entry e;
  e.address = "local://" + path;
  e.size = st.st_size;
  e.mtime = st.st_mtim.tv_sec;
  e.checksum = md5.FinalHex();
  e.content_type = "application/octet-stream";
  return e;
}

bool Catalog::S3Allowed(const std::string& uri) const {
  const auto& prefixes = options_.namespaces.s3_prefixes;
  if (prefixes.empty()) return true;
  for (std::string p : prefixes) {
    while (!p.empty() && p.back() == '/') p.pop_back();
    if (uri.size() > p.size() && uri.compare(0, p.size(), p) == 0 && uri[p.size()] == '/') return true;
  }
  return false;
}

Result<NamespaceLocation> Catalog::CheckImportedAddress(const std::string& address) {
  // Only where the rules, as they are now, allow, and never a repository's namespace.
  auto where = ResolveNamespace(address, options_.namespaces);
  Status allowed = where.ok() ? CheckOwnedByNoRepository(*where, false, false) : where.status();
  if (!allowed.ok()) {
    return Forbidden(fmt::format("object at {} is outside what this server may read: {}", address, allowed.message()));
  }
  return where;
}

Result<std::pair<Namespace, std::string>> Catalog::ImportedS3Object(const NamespaceLocation& where) {
  const auto slash = where.path.find('/');
  if (slash == std::string::npos) {
    return InvalidArgument(fmt::format("address {} names a bucket, not an object", where.Uri()));
  }
  Repository bucket;
  bucket.location = "s3://" + where.path.substr(0, slash);
  bucket.storage_namespace = bucket.location;
  ARROW_ASSIGN_OR_RAISE(auto store, RepositoryNamespace(bucket));  // cached by location
  return std::make_pair(std::move(store), where.path.substr(slash + 1));
}

Result<std::shared_ptr<arrow::io::RandomAccessFile>> Catalog::OpenEntry(const Repository& repo, const Entry& e) {
  if (e.address.find("://") == std::string::npos) {
    ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
    return ns->OpenReader(e.address);
  }
  ARROW_ASSIGN_OR_RAISE(auto where, CheckImportedAddress(e.address));
  if (where.kind == NamespaceKind::kLocal) {
    ARROW_ASSIGN_OR_RAISE(auto lexical, ParseNamespace(e.address));  // as written: links are refused below
    ARROW_ASSIGN_OR_RAISE(int fd, OpenBeneath(options_.namespaces.local_roots, lexical.path));
    return arrow::io::ReadableFile::Open(fd);
  }
  ARROW_ASSIGN_OR_RAISE(auto object, ImportedS3Object(where));
  return object.first->OpenReader(object.second);
}

Result<std::string> Catalog::PresignEntry(const Repository& repo, const Entry& e, const std::string& method,
                                          int64_t expires) {
  if (e.address.find("://") == std::string::npos) {
    ARROW_ASSIGN_OR_RAISE(auto ns, RepositoryNamespace(repo));
    return ns->PresignUrl(e.address, method, expires);
  }
  ARROW_ASSIGN_OR_RAISE(auto where, CheckImportedAddress(e.address));
  if (where.kind == NamespaceKind::kLocal) return NotImplemented("presigned URLs need S3 storage");
  ARROW_ASSIGN_OR_RAISE(auto object, ImportedS3Object(where));
  return object.first->PresignUrl(object.second, method, expires);
}

Result<Commit> Catalog::CommitImport(const std::string& repo_id, const std::string& branch,
                                     const std::map<std::string, Entry>& entries,
                                     const std::vector<std::string>& destinations, CommitParams params,
                                     const std::string& record, const std::string& guard) {
  ARROW_ASSIGN_OR_RAISE(auto repo, GetRepository(repo_id));
  if (!params.force) ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_RETURN_NOT_OK(CheckProtection(repo, branch, /*commit=*/true));
  ARROW_ASSIGN_OR_RAISE(auto rec, RequireClean(repo, branch));
  // What the destinations held and the import does not: removed.
  std::set<std::string> removed;
  ARROW_ASSIGN_OR_RAISE(auto head, View(repo, ResolvedRef{rec.branch.commit_id, std::nullopt}));
  for (const auto& dest : destinations) {
    for (head->SeekGE(dest); head->Next();) {
      if (head->key().compare(0, dest.size(), dest) != 0) break;
      if (!entries.contains(head->key())) removed.insert(head->key());
    }
    ARROW_RETURN_NOT_OK(head->status());
  }
  std::vector<KeyValueEntry> changes;
  changes.reserve(entries.size() + removed.size());
  auto r = removed.begin();
  for (const auto& [path, e] : entries) {
    for (; r != removed.end() && *r < path; ++r) changes.push_back({*r, ""});
    changes.push_back({path, EncodeEntry(e)});
  }
  for (; r != removed.end(); ++r) changes.push_back({*r, ""});
  auto it = NewVectorIterator(std::move(changes));
  Commit c;
  c.parents = {rec.branch.commit_id};
  c.committer = params.committer;
  c.message = params.message.empty() ? "Import objects" : params.message;
  c.metadata = params.metadata;
  c.metadata[".lakefs.merge.strategy"] = "source-wins";
  if (params.date) c.creation_date = *params.date;
  auto committed = CommitChanges(
      repo, rec, *it, c,
      [&](const Commit& made, kv::Batch* b) {
        b->Require(kv::Precondition::Present(record))
            .Require(kv::Precondition::Absent(guard))
            .Put(guard, "committed:" + made.id);
      },
      params.before_publish);
  if (!committed.ok() && (kv_->Get(guard).ok() || IsNotFound(kv_->Get(record).status()))) {
    return Status::Cancelled("Canceled");
  }
  ARROW_ASSIGN_OR_RAISE(auto commit, std::move(committed));
  // The commit is made: a failure to note its time does not undo it.
  Status noted =
      UpdateRepositoryMetadata(repo_id, {{".lakefs.last.import.timestamp", std::to_string(commit.creation_date)}}, {});
  if (!noted.ok()) spdlog::warn("repository {}: recording the import's time failed: {}", repo_id, noted.ToString());
  if (params.after_publish) params.after_publish(commit);
  return commit;
}

}  // namespace sediment::catalog
