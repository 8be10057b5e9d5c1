// Catalog: Sediment's versioned object store — repositories, branches,
// commits and tags over a KV store (refs and staging) and range files in each
// repository's storage namespace (committed data). The lakeFS-compatible API
// in server/ is a thin layer over this class.
//
// KV layout (docs/formats.md): c/r/<repo> repository, c/n/<namespace> its
// owner, c/b/<repo>/<branch>, c/c/<repo>/<commit>, c/t/<repo>/<tag>,
// c/s/<token>/<path> staged entry ("" = tombstone), c/d/<token> a staging
// token to drop in the background, c/rd/<repo> a deleted repository whose
// bulk cleanup is not finished.
//
// A branch's view is its staging token over its sealed tokens (newest first)
// over its base meta-range (the compacted one, if any, else its commit's).
// Branch records change only by compare-and-swap, so concurrent commits,
// resets and merges on one branch serialize; writes never touch the branch
// record and go to whatever token is current (re-checked after the write so
// a write racing a commit's seal lands in the new token too).
//
// Thread-safety: all methods are safe to call from many threads and servers.
//
// State lives in three managers, as in lakeFS's graveler, each with its own
// header: RefManager (ref_manager.h: repository, branch, commit and tag
// records, ResolveRef, the commit graph; the commit cache and log cursors),
// StagingManager (staging_manager.h: staged entries in tokens, retired tokens
// and the background dropper) and CommittedManager (committed_manager.h: the
// range store, the namespaces' blob stores, meta-ranges applied, diffed and
// merged). The Catalog owns them and composes them for what spans them: a
// commit or compaction seals (refs), folds (staging into committed) and swaps
// (refs, retiring tokens in the same batch); merges, resets, repository
// creation and deletion likewise. It keeps what is the facade's own: options,
// hooks, listeners and the modules' repository key owners.
//
// The facade's implementation is split by job: catalog.cc (start/stop, the
// background pass), catalog_refs.cc (names, calls the refs answer alone,
// branch deletion), catalog_repositories.cc (repository life cycle and rules),
// catalog_staging.cc (staged writes), catalog_reads.cc (views, GetEntry,
// ListEntries), catalog_commit.cc (commit and the seal/fold/swap steps shared
// with CompactStaging), catalog_diff.cc (diffs), catalog_merge.cc (merge,
// revert, cherry-pick), catalog_reset.cc (resets); what they share is in
// catalog_internal.h.
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/config.h"
#include "base/status.h"
#include "catalog/committed.h"
#include "catalog/entry.h"
#include "catalog/hooks.h"
#include "catalog/range_store.h"
#include "catalog/records.h"
#include "catalog/storage_namespace.h"

namespace sediment {
class CounterMetric;
class MetricsRegistry;
namespace kv {
class KvStore;
struct Batch;
}  // namespace kv
}  // namespace sediment

namespace arrow::io {
class RandomAccessFile;
}  // namespace arrow::io

namespace sediment::catalog {

class StagingManager;
class CommittedManager;
class RefManager;
struct BranchRecord;
struct RepositoryRecord;

struct CatalogOptions {
  std::string cache_dir;
  int64_t cache_bytes = int64_t{1} << 30;
  RangeSettings ranges;
  S3Config s3;
  // Where repositories' storage namespaces may be. The default allows no local
  // namespace; the server sets [catalog] local_namespace_roots, which defaults
  // to <data_dir>/namespaces. The cache directory is always reserved.
  NamespaceRules namespaces;
  // How long the staging tokens a commit, compaction or reset retired stay
  // readable before the dropper deletes their keys: a reader that loaded the
  // branch just before the swap still reads them ([catalog] dropped_token_grace).
  Duration dropped_token_grace = std::chrono::seconds(60);
  // How long an address from IssueLinkAddress can be linked ([catalog] link_address_ttl_secs).
  Duration link_address_ttl = std::chrono::hours(1);
  // Counted after every pass of the background dropper, failed or not (catalog_token_drop_passes_total):
  // shows that it runs, and lets a test wait for a whole pass instead of for a duration.
  CounterMetric* drop_passes = nullptr;
};

class Catalog {
 public:
  Catalog(std::shared_ptr<kv::KvStore> kv, std::shared_ptr<Clock> clock, CatalogOptions options);
  ~Catalog();  // Stop()

  // Opens the range cache and starts the background drop of dead staging tokens.
  Status Start(bool background = true);
  void Stop();

  // Repositories. Deleting one is one atomic batch (the record, its namespace,
  // branches and tags) followed by a bulk cleanup of commits and bookkeeping that
  // the background task finishes if it is cut off; the name is free at once.
  Result<Repository> CreateRepository(const std::string& id, const std::string& storage_namespace,
                                      const std::string& default_branch, bool read_only);
  Result<Repository> GetRepository(const std::string& id);
  Result<Page<Repository>> ListRepositories(const std::string& prefix, const std::string& after, int64_t amount);
  Status DeleteRepository(const std::string& id);
  // Branch protection rules and their ETag (a hash of the rules; "" when none).
  Result<std::pair<std::vector<std::string>, std::string>> GetBranchProtection(const std::string& repo);
  // Replaces the rules. `if_match`: nullopt = unconditionally; "" = only if
  // there are none; else only if the ETag is still that (PreconditionFailed).
  Status SetBranchProtection(const std::string& repo, const std::vector<std::string>& patterns,
                             const std::optional<std::string>& if_match);
  // Sets the pairs of `set` and removes the keys of `remove` (absent ones are
  // ignored) in the repository's metadata, in one conditional write.
  Status UpdateRepositoryMetadata(const std::string& repo, const std::map<std::string, std::string>& set,
                                  const std::vector<std::string>& remove);
  // Imports (lakeFS's: zero-copy). In one commit on the clean branch, the
  // committed objects whose paths start with one of `destinations` (string
  // prefixes) are replaced by `entries` (full addresses of objects elsewhere).
  // The commit's metadata says ".lakefs.merge.strategy": "source-wins", and the
  // repository's ".lakefs.last.import.timestamp" its time.
  // `record`: the import's KV record, which must still exist when the branch
  // moves (a repository deleted, and perhaps made again, meanwhile took it);
  // `guard`: a KV key that must be absent then, and then holds
  // "committed:<commit id>" (written in the same batch): whoever writes it
  // first, the commit or a cancel, wins; a cancel that won, or a record gone,
  // makes this Cancelled with nothing changed.
  Result<Commit> CommitImport(const std::string& repo, const std::string& branch,
                              const std::map<std::string, Entry>& entries, const std::vector<std::string>& destinations,
                              CommitParams params, const std::string& record, const std::string& guard);
  // `params` with the import's hooks (pre-commit before the branch moves,
  // post-commit after) around its own before_publish and after_publish.
  CommitParams WithImportHooks(const std::string& repo, const std::string& branch, CommitParams params);
  // Where an import may read: `source` (local:// or s3://, a directory or
  // prefix when `prefix`, else one object) checked by the namespace rules
  // (local roots, S3 prefixes, never the server's own files) and neither in
  // nor, for a prefix, around the repository's own namespace ("invalid import
  // source", lakeFS's words).
  Result<NamespaceLocation> CheckImportSource(const Repository& repo, const std::string& source, bool prefix);
  // InvalidArgument unless `where` is outside every repository's namespace
  // (and, for a `prefix`, holds none; an S3 prefix `string_prefix` as written,
  // without a trailing '/', holds every key that starts with it).
  Status CheckOwnedByNoRepository(const NamespaceLocation& where, bool prefix, bool string_prefix);
  Status ApplyNewRepository(const kv::Batch& batch, const std::string& ns, const NamespaceLocation& where,
                            const std::function<Status()>& conflict, const std::string& id);
  Status CheckRetiredNamespaces(const NamespaceLocation& where, const std::vector<NamespaceLocation>& around,
                                bool prefix, bool string_prefix);
  // An imported object's full address, checked as a read of it is (Forbidden otherwise).
  Result<NamespaceLocation> CheckImportedAddress(const std::string& address);
  // The store of an imported S3 object's bucket, and its key.
  Result<std::pair<Namespace, std::string>> ImportedS3Object(const NamespaceLocation& where);
  // The data of `e`: in the repository's namespace, or, for an imported
  // object, at its full address (checked by the namespace rules again).
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenEntry(const Repository& repo, const Entry& e);
  // The entry of local file `path` (absolute, resolved) for an import: read
  // through real directories under a local root only (no symbolic link on the
  // way, whenever planted), its size and time from the file opened, and the
  // MD5 of its bytes. NotFound if it is gone; InvalidArgument if it is no
  // regular file.
  Result<Entry> ImportLocalFile(const std::string& path);
  // Whether `uri` (an s3:// object's address) lies under the S3 prefixes.
  bool S3Allowed(const std::string& uri) const;
  // A presigned URL to `method` (GET or PUT) the data of `e` on the object
  // store, for `expires` seconds; NotImplemented for data on local disk.
  Result<std::string> PresignEntry(const Repository& repo, const Entry& e, const std::string& method, int64_t expires);
  const S3Config& s3_config() const { return options_.s3; }
  // Forbidden if `branch` matches a protection rule ("cannot write to" or
  // "cannot commit to protected branch", lakeFS's words).
  static Status CheckProtection(const Repository& repo, const std::string& branch, bool commit);
  // Adds (`add`) or removes branch protection rule `pattern`: Conflict if it
  // is there already, NotFound if it is not (lakeFS's one-rule API).
  Status ChangeBranchProtectionRule(const std::string& repo, const std::string& pattern, bool add);
  // Sets (or, with nullopt, removes) the repository's GC rules. InvalidArgument
  // for negative days, a bad branch name or more than 1,000 branches.
  Status SetGcRules(const std::string& repo, const std::optional<GcRules>& rules);
  // The blob store behind a repository's storage namespace (its location).
  Result<Namespace> RepositoryNamespace(const Repository& repo);
  const NamespaceRules& namespace_rules() const { return options_.namespaces; }

  // Branches.
  // The operations below marked "hooked" fire lakeFS's pre- and post-events
  // (hooks.h; catalog_hooks.cc) around what they do; `user` (or the
  // committer) is who caused them.
  void SetHooks(HookRunner* hooks) { hooks_ = hooks; }
  // Paths both sides of a merge changed are offered to `resolver` before they
  // are a conflict (hooks.h). Set before the catalog serves.
  void SetMergeResolver(MergeResolver* resolver) { merge_resolver_ = resolver; }
  // What catalog GC keeps with the entries it keeps, and may collect (hooks.h).
  void SetReferenceWalker(ReferenceWalker* walker) { reference_walker_ = walker; }
  ReferenceWalker* reference_walker() const { return reference_walker_; }

  // Hooked.
  Result<Branch> CreateBranch(const std::string& repo, const std::string& name, const std::string& source_ref,
                              const std::string& user = "");
  Result<Branch> GetBranch(const std::string& repo, const std::string& name);
  Result<Page<Branch>> ListBranches(const std::string& repo, const std::string& prefix, const std::string& after,
                                    int64_t amount);
  // Hooked.
  Status DeleteBranch(const std::string& repo, const std::string& name, const std::string& user = "");
  // True if the branch has staged entries or a compacted meta-range.
  Result<bool> IsDirty(const std::string& repo, const Branch& branch);

  Result<ResolvedRef> ResolveRef(const std::string& repo, const std::string& ref);

  // Objects.
  Result<Entry> GetEntry(const std::string& repo, const std::string& ref, const std::string& path);
  // PreconditionFailed if `if_absent` and the path exists on the branch, checked
  // and written atomically (the branch record and the staged key are
  // preconditions of the write).
  // `force` writes into a read-only repository (as lakeFS's ?force=true).
  Status PutEntry(const std::string& repo, const std::string& branch, const std::string& path, const Entry& entry,
                  bool if_absent = false, bool force = false);
  // The same, for a repository record the caller already read.
  Status PutEntry(const Repository& repo, const std::string& branch, const std::string& path, const Entry& entry,
                  bool if_absent = false, bool force = false);
  // PutEntry for data the caller has just written at entry.address in the
  // repository's namespace for this entry alone (an upload, or bytes copied
  // for it; never data another entry may share). When staging fails, the data
  // is deleted if, and only if, no staging write was issued and the failure is
  // a refusal: the path is invalid (InvalidArgument), the repository is
  // read-only or the branch protected (Forbidden), the branch does not exist
  // (NotFound), or the path exists under `if_absent` (PreconditionFailed).
  // Then no entry can name the data. Once a staging write was issued the data
  // is kept, whatever the error, because a staged entry may already name it:
  // the write may have landed before an I/O error, in a token a commit sealed
  // meanwhile (Busy after the retries), or just before the branch was deleted
  // (NotFound, and a commit may have taken the entry first). Data kept that
  // nothing names is catalog GC's to delete, as after any other error.
  Status PutUploadedEntry(const Repository& repo, const std::string& branch, const std::string& path,
                          const Entry& entry, bool if_absent = false, bool force = false);
  // Stages `entry` at `path` only if the path now names `expected_address`
  // (nullopt: only if it is absent), checked and written atomically as
  // PutEntry's if_absent; PreconditionFailed otherwise, and nothing written.
  // The compare-and-set of a pointer entry (an Iceberg table's current
  // metadata: docs/iceberg-repositories.md).
  Status SwapEntry(const std::string& repo, const std::string& branch, const std::string& path, const Entry& entry,
                   const std::optional<std::string>& expected_address);
  // Several swaps on one branch in one atomic batch: all land or none
  // (PreconditionFailed naming the first path that changed). A swap without an
  // entry deletes the path. Paths must differ. Iceberg's multi-table
  // transactions and renames.
  struct EntrySwap {
    std::string path;
    std::optional<Entry> entry;                   // nullopt: delete
    std::optional<std::string> expected_address;  // nullopt: the path must be absent
  };
  Status SwapEntries(const std::string& repo, const std::string& branch, const std::vector<EntrySwap>& swaps);
  // Stages many entries at once (imports, benchmarks): atomic KV batches of up
  // to 1,000, each re-checked against a concurrent seal like PutEntry.
  Status PutEntries(const std::string& repo, const std::string& branch,
                    const std::vector<std::pair<std::string, Entry>>& entries);
  // NotFound if the path does not exist on the branch.
  Status DeleteEntry(const std::string& repo, const std::string& branch, const std::string& path, bool force = false);
  // Deletes those that exist; returns how many did.
  Result<int64_t> DeleteEntries(const std::string& repo, const std::string& branch,
                                const std::vector<std::string>& paths, bool force = false);
  Result<Page<ListItem>> ListEntries(const std::string& repo, const std::string& ref, const ListOptions& opts);
  Result<Page<ListItem>> ListEntries(const Repository& repo, const std::string& ref, const ListOptions& opts);

  // Commits, history, diff, merge.
  // Hooked (prepare-commit, pre-commit, post-commit).
  Result<Commit> CommitBranch(const std::string& repo, const std::string& branch, const CommitParams& params);
  Result<Commit> GetCommit(const std::string& repo, const std::string& commit_id);
  Result<Page<Commit>> Log(const std::string& repo, const std::string& ref, const std::string& after, int64_t amount,
                           bool first_parent);
  Result<Page<DiffItem>> DiffUncommitted(const std::string& repo, const std::string& branch, const ListOptions& opts);
  // three_dot: from the merge base of left and right to right.
  Result<Page<DiffItem>> DiffRefs(const std::string& repo, const std::string& left, const std::string& right,
                                  bool three_dot, const ListOptions& opts);
  // Hooked: pre-merge once the merge commit exists, before the branch moves to it.
  Result<Commit> Merge(const std::string& repo, const std::string& source_ref, const std::string& dest_branch,
                       const CommitParams& params, MergeStrategy strategy);
  // Revert undoes on `branch` what `ref`'s commit changed from its parent
  // `parent_number` (1-based; a merge commit needs it, others take 1);
  // CherryPick does it again there, with the commit's message and metadata
  // unless `params` gives others (and lakeFS's cherry-pick-origin and
  // cherry-pick-committer keys). Both need a clean branch, and a change
  // (unless params.allow_empty, for a revert); a conflict is Conflict. Hooked.
  Result<Commit> Revert(const std::string& repo, const std::string& branch, const std::string& ref, int parent_number,
                        const CommitParams& params);
  Result<Commit> CherryPick(const std::string& repo, const std::string& branch, const std::string& ref,
                            int parent_number, const CommitParams& params);
  // Drops all uncommitted changes (staging and any compacted meta-range).
  Status ResetBranch(const std::string& repo, const std::string& branch);
  // Drops uncommitted changes to one path, or to every path under a prefix.
  Status ResetPath(const std::string& repo, const std::string& branch, const std::string& path, bool prefix);
  Status HardReset(const std::string& repo, const std::string& branch, const std::string& ref);

  // Staging compaction (spec staging-compaction.md): folds the branch's staged
  // entries into a meta-range over its base and records it on the branch,
  // without committing. New writes go to a fresh staging token from the start.
  // `after_seal` runs once the token is sealed (tests use it to interleave).
  // Forbidden on a read-only repository.
  Result<CompactionResult> CompactStaging(const std::string& repo, const std::string& branch,
                                          const std::function<void()>& after_seal = nullptr);

  // Runs in a commit right after it sealed the staging token (tests interleave with it).
  void SetAfterCommitSealForTesting(std::function<void()> hook) { after_commit_seal_ = std::move(hook); }

  // Called after every staged write or delete with (repo, branch, the staging
  // token the writes landed in, count).
  using MutationListener =
      std::function<void(const std::string& repo, const std::string& branch, const std::string& token, int64_t n)>;
  void SetMutationListener(MutationListener listener) { on_mutation_ = std::move(listener); }
  // Called after a branch is deleted (branch "" : every branch of a deleted repository).
  using BranchGoneListener = std::function<void(const std::string& repo, const std::string& branch)>;
  void SetBranchGoneListener(BranchGoneListener listener) { on_branch_gone_ = std::move(listener); }
  // A module keeping records of a repository under KV prefixes of its own
  // (actions' runs) names them, so deleting the repository deletes them too; a
  // module registered again is replaced. Refused after Start(true): the
  // background cleanup of deleted repositories may have left them behind.
  using KeyOwner = std::function<std::vector<std::string>(const std::string& repo)>;
  Status AddRepositoryKeyOwner(std::string module, KeyOwner prefixes);

  // Tags.
  // Multipart uploads: their records (c/mp/<repo>/<id>[/<part>]). The caller
  // writes and deletes the parts' data. Creating one checks that the branch
  // exists and the repository is writable.
  Result<MultipartUpload> CreateMultipartUpload(const Repository& repo, MultipartUpload upload);
  Result<MultipartUpload> GetMultipartUpload(const std::string& repo, const std::string& id);
  // Records `part`, replacing a part with its number; returns the replaced
  // part's address. NotFound once the upload is completed or aborted.
  Result<std::optional<std::string>> PutUploadPart(const std::string& repo, const std::string& id,
                                                   const UploadedPart& part);
  // Parts by number, from `after` on, at most `amount` (0 = all).
  Result<Page<UploadedPart>> ListUploadParts(const std::string& repo, const std::string& id, int after = 0,
                                             int64_t amount = 0);
  Result<Page<MultipartUpload>> ListMultipartUploads(const std::string& repo, const std::string& after, int64_t amount);
  // Removes the records; NotFound if already gone (only one completion wins).
  Status DeleteMultipartUpload(const std::string& repo, const std::string& id);

  // Addresses handed out for a client to write an object's data itself before
  // linking it (GET .../staging/backing): c/la/<repo>/<address> ->
  // {branch, path, expires}. An address links once, for the branch and path
  // it was issued for, before it expires; nothing else can be linked, so a
  // link can never point at data the caller did not write.
  // `ttl` replaces link_address_ttl (a presigned multipart upload's lasts 24 h, as lakeFS's).
  Result<std::string> IssueLinkAddress(const Repository& repo, const std::string& branch, const std::string& path,
                                       std::optional<Duration> ttl = std::nullopt);
  // InvalidArgument, naming what is wrong, unless `address` may be linked now.
  Status CheckLinkAddress(const std::string& repo, const std::string& branch, const std::string& path,
                          const std::string& address);
  // Uses up the address; InvalidArgument naming what is wrong otherwise.
  Status ClaimLinkAddress(const std::string& repo, const std::string& branch, const std::string& path,
                          const std::string& address);
  // Forgets addresses that expired unlinked (catalog GC calls it).
  Status PruneLinkAddresses(const std::string& repo);

  // Hooked.
  Result<Tag> CreateTag(const std::string& repo, const std::string& id, const std::string& ref, bool force,
                        const std::string& user = "");
  Result<Tag> GetTag(const std::string& repo, const std::string& id);
  Result<Page<Tag>> ListTags(const std::string& repo, const std::string& prefix, const std::string& after,
                             int64_t amount);
  // Hooked.
  Status DeleteTag(const std::string& repo, const std::string& id, const std::string& user = "");

  RangeStore& ranges();
  kv::KvStore& kv() { return *kv_; }
  // The staging area (staged entries and retired tokens); GC reads it.
  StagingManager& staging() { return *staging_; }
  // The committed data (meta-ranges, the range cache, namespaces); GC reads it.
  CommittedManager& committed() { return *committed_; }
  // The records of repositories, branches, commits and tags; GC reads them.
  RefManager& refs() { return *refs_; }
  Clock& clock() { return *clock_; }
  // Finishes the cleanup of deleted repositories and drops dead staging tokens
  // now (the background task does it periodically).
  Status DropDeadTokens();

  // Validation shared with the API layer.
  static Status ValidateRepositoryName(const std::string& name);
  static Status ValidateBranchName(const std::string& name);
  // lakeFS's tag rules, wider than a branch's: not empty or "@"; no "..",
  // "/", "@{", "~", space, control character or any of ^:?*[\; not ending
  // in "." or ".lock".
  static Status ValidateTagName(const std::string& name);
  static Status ValidatePath(const std::string& path);

  // The read view of a resolved ref (tombstones hidden unless `keep_tombstones`).
  Result<std::unique_ptr<ValueIterator>> View(const Repository& repo, const ResolvedRef& ref);

 private:
  // The operations themselves, hooks aside (catalog_refs.cc, catalog_commit.cc, catalog_merge.cc).
  Result<Branch> DoCreateBranch(const std::string& repo, const std::string& name, const std::string& source_ref);
  Status DoDeleteBranch(const std::string& repo, const std::string& name);
  Result<Commit> DoCommitBranch(const std::string& repo, const std::string& branch, const CommitParams& params);
  Result<Commit> DoMerge(const std::string& repo, const std::string& source_ref, const std::string& dest_branch,
                         const CommitParams& params, MergeStrategy strategy);
  Result<Commit> DoRevert(const std::string& repo, const std::string& branch, const std::string& ref, int parent_number,
                          const CommitParams& params);
  Result<Commit> DoCherryPick(const std::string& repo, const std::string& branch, const std::string& ref,
                              int parent_number, const CommitParams& params);
  Result<Tag> DoCreateTag(const std::string& repo, const std::string& id, const std::string& ref, bool force);
  Status DoDeleteTag(const std::string& repo, const std::string& id);
  // The hook runner, unless none is set or this thread is a hook's own call.
  HookRunner* Hooks() const;

  // A record and its stored bytes, for compare-and-swap (ref_manager.h).
  using BranchRecord = catalog::BranchRecord;
  using RepositoryRecord = catalog::RepositoryRecord;
  // Runs `write(branch)`, which writes into branch.staging_token, then re-loads
  // the branch: if a commit or compaction sealed that token, or the branch moved
  // to another commit, meanwhile, writes again on the branch as it is now. A
  // token the write may have landed in after it was dropped is queued for
  // dropping again. Busy ("... retry the <what>") if the branch kept changing.
  // `*token`, if given: the staging token the write stayed in.
  Status WriteStaged(const std::string& repo, const std::string& branch,
                     const std::function<Status(const Branch& branch)>& write, const char* what,
                     std::string* token = nullptr);
  // One pass of ResetPath on the branch as loaded (see catalog_reset.cc).
  Status ResetPathOn(const Repository& repo, const Branch& branch, const std::string& path, bool prefix);
  // What a conditional staged write requires of the path as the branch sees it.
  struct WriteCondition {
    bool checked = false;                // false: write whatever is there
    std::optional<std::string> address;  // when checked: the address it names now (nullopt: absent)
  };
  // PutEntry's work; `*wrote` is set once a staging write was issued (it may
  // have landed, whatever the answer).
  Status StageEntry(const Repository& repo, const std::string& branch, const std::string& path, const Entry& entry,
                    const WriteCondition& condition, bool force, bool* wrote);
  // A checked write: one atomic check-and-write on the current token;
  // `*wrote` as StageEntry's (a batch refused by its preconditions wrote nothing).
  // One value per path ("" deletes), each with its condition.
  struct CheckedWrite {
    std::string path;
    std::string value;
    WriteCondition condition;
  };
  Status PutIfCurrent(const Repository& repo, const std::string& branch, const std::vector<CheckedWrite>& writes,
                      std::string* token, bool* wrote);
  // The encoded entry of `path` on `branch` (tokens, then its base meta-range),
  // nullopt if absent or deleted. Skips the current token unless `include_current`.
  Result<std::optional<std::string>> LookupOnBranch(const Repository& repo, const Branch& branch,
                                                    const std::string& path, bool include_current);
  // Conflict if `where` is, contains or lies inside another repository's
  // namespace (c/n/ keys), or already holds an object (storage_namespace.h, rule 4).
  Status CheckNamespaceFree(const std::string& ns, const NamespaceLocation& where);
  // The bulk cleanup of a deleted repository (c/rd/<repo>); stops without error
  // if another cleanup finished it first.
  Status FinishRepositoryDeletion(const std::string& repo);

  // Commit and CompactStaging both seal, fold and swap:
  // Moves the staging token to the front of the sealed tokens and starts a fresh one.
  Result<BranchRecord> Seal(const std::string& repo, const std::string& branch);
  // Applies the sealed tokens of `sealed` to its base meta-range.
  Result<std::shared_ptr<const MetaRange>> FoldSealed(const Repository& repo, const Branch& sealed, ApplyStats* stats);
  enum class SwapOutcome {
    kSwapped,          // the branch record now holds the update
    kCommitMoved,      // another commit, a hard reset or a merge moved the branch
    kCompactionMoved,  // a staging compaction swapped in a new compacted meta-range
    kTokensDropped,    // a reset dropped some of the folded tokens
    kKeptChanging,     // every compare-and-swap lost a race
  };
  struct SwapResult {
    SwapOutcome outcome = SwapOutcome::kSwapped;
    Branch branch;  // the branch as last loaded, or as written if swapped
  };
  // Removes the tokens folded from `sealed` from the branch and applies `update`
  // to the rest of its current record (tokens sealed since stay), in one batch
  // that also queues the folded tokens for dropping. Writes nothing if the branch
  // no longer builds on `sealed`; tries the compare-and-swap `attempts` times.
  Result<SwapResult> SwapFolded(const std::string& repo, const std::string& branch, const Branch& sealed,
                                const std::function<void(Branch*)>& update, int attempts);

  // One try of CommitBranch; sets *raced_compaction when a staging compaction
  // swapped in between (then a new try can succeed).
  Result<Commit> CommitOnce(const Repository& repo, const std::string& branch, const CommitParams& params,
                            bool* raced_compaction);
  Result<std::shared_ptr<const MetaRange>> CommitMetaRange(const Repository& repo, const std::string& commit_id);
  Result<std::shared_ptr<const MetaRange>> BaseMetaRange(const Repository& repo, const Branch& branch);
  // The changes that turn dest into dest + (source - base), between the three
  // commits' meta-ranges (CommittedManager::ThreeWay).
  // `resolve`: offer conflicts to the merge resolver (merges only).
  Result<std::unique_ptr<ValueIterator>> ThreeWay(const Repository& repo, const std::string& base,
                                                  const std::string& source, const std::string& dest,
                                                  MergeStrategy strategy, bool* any_change, bool resolve = false);
  // Applies `changes` to the clean branch's commit and commits with `parents`.
  // `also`: more conditions and writes for the batch that moves the branch
  // (an import's "not cancelled"); if they fail, nothing moves (Conflict).
  Result<Commit> CommitChanges(const Repository& repo, const BranchRecord& rec, ValueIterator& changes, Commit commit,
                               const std::function<void(const Commit&, kv::Batch*)>& also = nullptr,
                               const std::function<Status(const Commit&)>& before = nullptr);
  Result<BranchRecord> RequireClean(const Repository& repo, const std::string& branch);
  Result<Page<DiffItem>> CollectDiff(DiffIterator& diff, const ListOptions& opts);
  Status CheckWritable(const Repository& repo);
  enum class Replay { kRevert, kCherryPick };
  // Revert and CherryPick: one commit's change, backwards or forwards.
  Result<Commit> ReplayCommit(Replay how, const std::string& repo_id, const std::string& branch, const std::string& ref,
                              int parent_number, const CommitParams& params);
  // The record of a link address that may be linked now (CheckLinkAddress).
  Result<std::string> LinkRecord(const std::string& repo, const std::string& branch, const std::string& path,
                                 const std::string& address);

  // Shared with the managers: the facade writes the atomic batches that span
  // them (a swap that retires tokens, a repository's creation and deletion).
  std::shared_ptr<kv::KvStore> kv_;
  std::shared_ptr<Clock> clock_;
  CatalogOptions options_;
  std::unique_ptr<CommittedManager> committed_;  // meta-ranges, the range cache, the namespaces' stores
  std::unique_ptr<StagingManager> staging_;      // staged entries, retired tokens, the dropper
  std::unique_ptr<RefManager> refs_;             // repository, branch, commit and tag records; the commit graph
  MutationListener on_mutation_;                 // set before serving; read-only afterwards
  BranchGoneListener on_branch_gone_;            // set before serving; read-only afterwards
  // The modules' prefixes of a repository's records (AddRepositoryKeyOwner).
  struct KeyOwners {
    std::mutex mu;
    std::map<std::string, KeyOwner> by_module;  // GUARDED_BY(mu)
    bool closed = false;                        // GUARDED_BY(mu): Start(true) ran
  } key_owners_;
  std::function<void()> after_commit_seal_;
  std::atomic<HookRunner*> hooks_{nullptr};  // SetHooks; null: no hooks
  MergeResolver* merge_resolver_ = nullptr;
  ReferenceWalker* reference_walker_ = nullptr;
};

}  // namespace sediment::catalog
