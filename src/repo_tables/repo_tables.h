// Iceberg tables in repositories (docs/iceberg-repositories.md): the catalog
// behind the lakeFS Enterprise-form REST endpoints (/iceberg/api), over the
// versioned store. A namespace and a table are objects on a ref (names.h);
// a table's object points at its current metadata file. Reads take any ref
// (branch, tag, commit id); writes take a branch, and a tag or commit id is
// Forbidden. Every write is a staged change of the branch: an Iceberg commit
// writes a new metadata file, then swaps the pointer only if it still names
// the file the commit was checked against (Catalog::SwapEntry); a lost race
// is Conflict, the REST API's 409 CommitFailedException, and changes nothing.
//
// Errors: NotFound (repository, ref, namespace or table), Conflict (exists,
// not empty, requirement failed, lost race), InvalidArgument (a malformed
// name or request, a location outside the table's place), Forbidden (a ref
// that is no branch, a read-only repository, a protected branch).
//
// Thread-safety: safe from many threads (the catalog serializes what must be).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "catalog/hooks.h"
#include "repo_tables/names.h"

namespace sediment::catalog {
class Catalog;
struct Repository;
struct Entry;
}  // namespace sediment::catalog

namespace sediment::repo_tables {

struct MetadataFile;
class MetadataCache;

struct LoadedTable {
  std::string metadata_location;  // "" for a staged create
  nlohmann::json metadata;
  // The metadata file as read (then `metadata` is empty): send its text as
  // it is rather than printing the document again.
  std::shared_ptr<const MetadataFile> file;
  const nlohmann::json& Metadata() const;
  std::string location;   // the table's location, a URI engines open
  bool writable = false;  // on a branch of a writable repository
};

struct PropertiesChange {
  std::vector<std::string> updated, removed, missing;
};

// Whether an Iceberg commit's requirements say assert-create (it creates the table).
bool HasAssertCreate(const nlohmann::json& requirements);

// One table's part of a multi-table transaction.
struct TableChange {
  TablePath table;
  nlohmann::json requirements = nlohmann::json::array();
  nlohmann::json updates = nlohmann::json::array();
};

class RepoTables : public catalog::MergeResolver, public catalog::ReferenceWalker {
 public:
  RepoTables(catalog::Catalog* catalog, std::shared_ptr<Clock> clock);
  ~RepoTables() override;

  // The levels above namespaces: repositories, and the refs of one (branches, then tags).
  Result<std::vector<std::string>> ListRepositories();
  Result<std::vector<std::string>> ListRefs(const std::string& repo);

  // Namespaces one level under `parent` ({repo, ref} lists the ref's top level).
  Result<std::vector<std::vector<std::string>>> ListNamespaces(const NamespacePath& parent);
  Result<std::map<std::string, std::string>> LoadNamespace(const NamespacePath& ns);
  Status CreateNamespace(const NamespacePath& ns, const std::map<std::string, std::string>& properties);
  // Conflict unless the namespace holds no table and no namespace.
  Status DropNamespace(const NamespacePath& ns);
  // InvalidArgument if a key is both set and removed.
  Result<PropertiesChange> UpdateNamespace(const NamespacePath& ns, const std::map<std::string, std::string>& updates,
                                           const std::vector<std::string>& removals);

  Result<std::vector<std::string>> ListTables(const NamespacePath& ns);
  Result<LoadedTable> LoadTable(const TablePath& table);
  // The REST API's CreateTableRequest. With "stage-create" nothing is stored:
  // the metadata is returned for a later CommitTable with assert-create.
  Result<LoadedTable> CreateTable(const TablePath& table, const nlohmann::json& request);
  // updateTable; a table that does not exist is created when the
  // requirements say assert-create.
  Result<LoadedTable> CommitTable(const TableChange& change);
  // All changes, on one branch, land together or none does.
  Status CommitTransaction(const std::vector<TableChange>& changes);
  // The pointer goes; the files stay while any commit or branch names them
  // (catalog GC takes them after), with or without purge.
  Status DropTable(const TablePath& table);
  // Within one branch; Conflict if `to` exists.
  Status RenameTable(const TablePath& from, const TablePath& to);
  // Adopts a metadata file inside the repository's storage namespace.
  Result<LoadedTable> RegisterTable(const TablePath& table, const std::string& metadata_location, bool overwrite);

  // A table both sides of a lakeFS merge changed (catalog/hooks.h;
  // table_merge.cc): appends on both sides merge into one new snapshot of the
  // destination's; anything else is a Conflict saying why.
  bool Handles(const std::string& path) const override;
  Result<catalog::Entry> Resolve(const catalog::Repository& repo, const std::string& path,
                                 const std::optional<catalog::Entry>& base, const std::optional<catalog::Entry>& source,
                                 const std::optional<catalog::Entry>& dest) override;

  // What catalog GC keeps with a table's pointer (catalog/hooks.h;
  // table_files.cc): its metadata file, the metadata files its log names, and
  // every manifest list, manifest and live data file of its snapshots, inside
  // the namespace's _managed/iceberg/ (which GC may collect).
  std::string CollectableDir() const override;
  bool Names(const catalog::Entry& e) const override;
  Status ForEachReference(const catalog::Repository& repo, const catalog::Entry& e,
                          const std::function<bool(const std::string&)>& keep) override;

  // The URI engines open for `relative` (a path in the repository's namespace).
  Result<std::string> EngineUri(const std::string& repo, const std::string& relative);

 private:
  struct Current;
  struct Prepared;
  Result<catalog::Repository> WritableBranch(const NamespacePath& where);
  Status RequireNamespace(const NamespacePath& ns);
  Result<std::optional<Current>> ReadCurrent(const TablePath& table);
  Result<Prepared> Prepare(const TableChange& change);
  Result<std::string> WriteMetadata(const std::string& repo, const std::string& table_dir, int64_t version,
                                    const std::string& data);
  Result<std::string> NamespaceRoot(const std::string& repo);
  // A branch of a writable repository, not protected: engines may write the table's files.
  bool Writable(const NamespacePath& where);
  Status RequireUnclaimed(const TablePath& table, const std::string& address);
  Result<catalog::Entry> WriteNamespaceFile(const catalog::Repository& repo, const NamespacePath& ns,
                                            const std::map<std::string, std::string>& properties);
  Result<LoadedTable> Loaded(const std::string& repo, const std::string& address, nlohmann::json metadata,
                             bool writable, std::shared_ptr<const MetadataFile> file = nullptr);
  Result<std::string> RelativeInNamespace(const std::string& repo, const std::string& uri, const char* what);
  // The metadata file at `address` (relative, inside the namespace), checked
  // to be table metadata located in the namespace (cached: metadata_cache.h);
  // InvalidArgument saying what it is not.
  Result<std::shared_ptr<const MetadataFile>> MetadataAt(const catalog::Repository& repo, const std::string& address);
  // Caches a metadata file this catalog just wrote.
  void Remember(const catalog::Repository& repo, const std::string& address, std::string text, nlohmann::json json);
  // The metadata JSON of a merge side's file (Conflict if it is none).
  Result<nlohmann::json> ReadMetadata(const catalog::Repository& repo, const std::string& address);
  struct SideFiles;
  Result<catalog::Entry> MergeTable(const catalog::Repository& repo, const std::optional<catalog::Entry>& base,
                                    const std::optional<catalog::Entry>& source,
                                    const std::optional<catalog::Entry>& dest);
  Result<SideFiles> LiveFilesOf(const catalog::Repository& repo, const nlohmann::json& metadata, const char* side);
  Result<catalog::Entry> WriteMerged(const catalog::Repository& repo, const catalog::Entry& dest,
                                     const nlohmann::json& dest_metadata, const std::string& dest_list,
                                     const std::map<std::string, std::set<std::string>>& added);

  catalog::Catalog* const catalog_;
  const std::shared_ptr<Clock> clock_;
  std::unique_ptr<MetadataCache> cache_;
};

}  // namespace sediment::repo_tables
