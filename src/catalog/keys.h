// The catalog's KV key layout, in one place: every key and prefix that the
// catalog (Catalog, StagingCompactor, Importer, CatalogCollector) reads or
// writes is built here (keys.cc) and nowhere else. Each builder says which
// record it names; docs/formats.md describes the records for operators. Keys
// are on disk: changing a spelling here orphans every stored record of it.
//
// Repository, branch and tag names never contain '/' (ValidateRepositoryName
// and friends), nor do commit ids, staging tokens, upload ids or import ids;
// so "<prefix><repo>/" selects exactly one repository's records. Paths,
// namespaces and link addresses ("data/<partition>/<id>") may contain '/':
// they come last in their keys.
//
// Other modules keep records of a repository under prefixes of their own
// (actions' runs, src/actions/keys.h) and hand them to
// Catalog::AddRepositoryKeyOwner, so deleting a repository deletes them too.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

namespace sediment::catalog {

// --- repositories and their namespaces ---------------------------------------

// c/r/<repo> -> JSON {version: 1, storage_namespace, location, default_branch,
// creation_date, read_only, protected_branches, metadata, gc_rules}: a repository.
std::string RepoKey(const std::string& repo);
// c/r/: every repository, by name.
std::string RepositoriesPrefix();
// c/rd/<repo> -> a random id naming the deletion: a repository whose deletion
// is decided and whose bulk cleanup is not finished.
std::string RepoDeletionKey(const std::string& repo);
// c/rd/: every unfinished deletion.
std::string RepoDeletionsPrefix();
// c/n/<namespace> -> the id of the repository whose storage namespace it is.
// NamespaceKey(uri + "/") selects the namespaces inside `uri`.
std::string NamespaceKey(const std::string& ns);
// c/nr/<namespace> -> the id of a deleted repository: kept while its files are
// there, so nobody imports them (docs/security.md). RetiredNamespaceKey(uri +
// "/") selects those inside `uri`.
std::string RetiredNamespaceKey(const std::string& ns);
// c/ne -> a random value every repository creation changes in its batch.
std::string NamespaceEpochKey();

// --- refs and commits ---------------------------------------------------------

// c/b/<repo>/<branch> -> the branch record, JSON version 1 (BranchJson).
std::string BranchKey(const std::string& repo, const std::string& branch);
// c/b/<repo>/: the repository's branches.
std::string BranchesPrefix(const std::string& repo);
// c/c/<repo>/<commit id> -> the commit record, JSON version 1; the id is the
// SHA-256 of exactly these bytes.
std::string CommitKey(const std::string& repo, const std::string& commit_id);
// c/c/<repo>/: the repository's commits.
std::string CommitsPrefix(const std::string& repo);
// c/t/<repo>/<tag> -> the commit id the tag names.
std::string TagKey(const std::string& repo, const std::string& tag);
// c/t/<repo>/: the repository's tags.
std::string TagsPrefix(const std::string& repo);

// --- staging ------------------------------------------------------------------

// c/s/<token>/<path> -> a staged entry (EncodeEntry); "" is a tombstone.
std::string StagedEntryKey(const std::string& token, const std::string& path);
// c/s/<token>/: the entries staged in one token, in path order.
std::string StagingPrefix(const std::string& token);
// c/d/<token> -> "" when a batch retires the token, then {"v":1,"seen_us":…}
// once the dropper has seen it: a staging token for the dropper to delete.
std::string DropKey(const std::string& token);
// c/d/: every token waiting to be dropped.
std::string DropsPrefix();

// --- staging compaction (staging_compactor.cc) --------------------------------

// c/m/<repo>/<branch> -> JSON {epoch, count}: the branch's staged mutations
// since its last compaction or commit.
std::string MutationCounterKey(const std::string& repo, const std::string& branch);
// c/m/: every branch's counter.
std::string MutationCountersPrefix();
// c/cs/<repo>/<branch> -> JSON {state, started_us, finished_us, message}: the
// branch's last staging compaction.
std::string CompactionStatusKey(const std::string& repo, const std::string& branch);
// c/cl/<repo>/<branch> -> which server compacts the branch's staging (kv::Lease).
std::string CompactionLeaseKey(const std::string& repo, const std::string& branch);

// --- multipart uploads (catalog_multipart.cc) ---------------------------------

// c/mp/<repo>/<upload id> -> JSON {branch, path, content_type, metadata,
// initiator, created}: an S3 multipart upload in progress.
std::string UploadKey(const std::string& repo, const std::string& upload_id);
// c/mp/<repo>/: the repository's uploads and their parts (a key with a '/'
// after the upload id is a part).
std::string UploadsPrefix(const std::string& repo);
// c/mp/<repo>/<upload id>/<part:05> -> JSON {n, etag, size, address, mtime}:
// one uploaded part, in part-number order.
std::string UploadPartKey(const std::string& repo, const std::string& upload_id, int part);
// c/mp/<repo>/<upload id>/: the upload's parts.
std::string UploadPartsPrefix(const std::string& repo, const std::string& upload_id);

// --- link addresses (catalog_links.cc) ----------------------------------------

// c/la/<repo>/<address> -> JSON {branch, path, expires (Unix seconds)}: an
// address issued for a client to write an object's data to, linkable once.
std::string LinkAddressKey(const std::string& repo, const std::string& address);
// c/la/<repo>/: the repository's issued addresses.
std::string LinkAddressesPrefix(const std::string& repo);

// --- imports (importer.cc) ----------------------------------------------------

// c/imp/<repo>/<import id> -> JSON {branch, update_time_us, ingested, ...}: an
// import's status, written by the job's server.
std::string ImportKey(const std::string& repo, const std::string& import_id);
// c/imp/<repo>/<import id>/end -> "committed:<commit id>" or "canceled": the
// end marker a commit and a cancel race to write.
std::string ImportEndKey(const std::string& repo, const std::string& import_id);
// c/imp/<repo>/: the repository's imports.
std::string ImportsPrefix(const std::string& repo);

// --- garbage collection (catalog_gc.cc) ---------------------------------------

// c/gcl/<repo> -> which server collects the repository's garbage (kv::Lease).
std::string GcLeaseKey(const std::string& repo);

// --- repository deletion --------------------------------------------------------

// Every prefix of the catalog's records of repository `repo` that its
// deletion removes in bulk (FinishRepositoryDeletion), in that order: tags,
// commits, the staging-compaction bookkeeping, multipart uploads, link
// addresses and imports. Not among them: the branches (BranchesPrefix, whose
// tokens the cleanup queues for the dropper first), the records keyed by the
// repository itself (RepoKey and NamespaceKey go in the deciding batch,
// RepoDeletionKey last; GcLeaseKey expires), and other modules' prefixes.
std::vector<std::string> RepositoryKeyPrefixes(const std::string& repo);

}  // namespace sediment::catalog
