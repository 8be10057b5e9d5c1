// Names of Iceberg tables in repositories (docs/iceberg-repositories.md):
// how a client's identifier splits into repository, ref, namespace and table,
// which names are allowed, and where each lives in the repository.
//
// An identifier is `<repository>.<ref>.<namespace...>.<table>` on the
// unscoped catalog (/iceberg/api); a scoped catalog
// (/iceberg/relative_to/<repository>[.<ref>]/api) prepends its scope's parts.
// Namespace parts and table names are letters, digits, '_' and '-' (lakeFS
// allows no other characters, so '.' can join a nested namespace unambiguously),
// at most 255 characters joined, case-sensitive.
//
// In the repository (ordinary objects, so commits, branches, diffs, merges,
// resets and reverts treat them as objects):
//   _lakefs_tables/iceberg/namespaces/<a.b>/.namespace     the namespace (its properties)
//   _lakefs_tables/iceberg/namespaces/<a.b>/tables/<table> the table's pointer: its data
//                                                          is the current metadata file
// Files, in the storage namespace: _managed/iceberg/<table uuid>/{metadata,data}/...
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace sediment::repo_tables {

// Where a namespace is: a repository, a ref of it, and the namespace's parts
// (empty for the ref itself).
struct NamespacePath {
  std::string repo;
  std::string ref;
  std::vector<std::string> ns;

  std::string Dotted() const;  // "a.b"
};

struct TablePath {
  NamespacePath where;
  std::string name;
};

// The parts of a client's namespace: the scope's parts (from the endpoint),
// then the namespace parameter split at 0x1F (or '.', DuckDB's form). Up to
// two leading parts are the repository and the ref. Validates every part.
// InvalidArgument naming the bad part.
Result<std::vector<std::string>> SplitNamespace(const std::vector<std::string>& scope, const std::string& raw);
// The scope of /iceberg/relative_to/<scope>/api: "repo" or "repo.ref".
Result<std::vector<std::string>> SplitScope(const std::string& scope);
// Parts -> a namespace inside a ref (at least repository and ref; with
// `need_namespace`, at least one namespace part too).
Result<NamespacePath> ToNamespacePath(const std::vector<std::string>& parts, bool need_namespace);
Status ValidateTableName(const std::string& name);

constexpr const char* kTablesRoot = "_lakefs_tables/iceberg/namespaces/";
std::string NamespaceDir(const std::vector<std::string>& ns);     // kTablesRoot + "a.b/"
std::string NamespaceMarker(const std::vector<std::string>& ns);  // NamespaceDir + ".namespace"
std::string TablePointer(const std::vector<std::string>& ns, const std::string& table);
// The namespace parts of a directory listed under kTablesRoot ("a.b/").
std::vector<std::string> NamespaceOfDir(const std::string& dir);

// Where a table's and a namespace's files go, relative to the storage namespace.
std::string TableDir(const std::string& uuid);  // _managed/iceberg/<uuid>
// Whether `relative` is exactly the directory of table `uuid` (a UUID in
// lower-case hex): a table's files, and the credentials vended for them, stay
// in a directory of its own that no other table names.
bool IsTableDir(const std::string& relative, const std::string& uuid);
constexpr const char* kManagedDir = "_managed/";

// The ARNs of lakeFS Enterprise's catalog actions.
std::string NamespaceArn(const std::string& repo, const std::string& dotted);
std::string TableArn(const std::string& repo, const std::string& dotted, const std::string& table);

}  // namespace sediment::repo_tables
