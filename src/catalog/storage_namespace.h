// Storage namespaces: where a repository keeps its files, and where it may.
// docs/catalog.md ("Storage namespaces") states the rules; creating a
// repository checks them in this order, before anything is written:
//
//   1. Form: s3://bucket[/prefix], or a local directory written local:///abs,
//      file:///abs or /abs. A local path must be absolute; an S3 prefix has no
//      empty, '.' or '..' part.
//   2. Local: the path, resolved as the kernel would ('..' and the symbolic
//      links of the parts that exist), lies strictly inside one of the local
//      roots (resolved too), and is neither inside nor around one of the
//      server's own files or directories. A root itself is no namespace.
//   3. S3: the namespace is neither inside nor around the server's own
//      objects, and is one of the S3 prefixes or lies under one, at a '/'
//      boundary, when any prefixes are set.
//   4. It is not inside or around another repository's namespace, and holds
//      no object yet (Catalog::CreateRepository, over the KV store and the
//      blob store).
//
// ParseNamespace and CheckNamespaceAllowed (1-3) are pure functions;
// ResolveNamespace adds the symbolic links, reading the file system and
// writing nothing. The resolved location is what the repository opens from
// then on, so the directory checked is the directory written.
//
// Thread-safety: free functions over values.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace sediment::catalog {

// Where repositories' storage namespaces may be ([catalog] settings).
struct NamespaceRules {
  std::vector<std::string> local_roots;  // absolute directories; none = no local namespace is allowed
  std::vector<std::string> s3_prefixes;  // s3://bucket[/prefix]; none = any bucket
  // The server's own files and directories (data directory, KV, cache, the
  // config file, what it reads). A namespace root inside one of them is carved
  // out: a namespace may be in the root, not elsewhere in the directory.
  std::vector<std::string> reserved_paths;
  std::vector<std::string> reserved_s3;  // s3://bucket[/prefix] the server keeps its own objects under
};

enum class NamespaceKind { kLocal, kS3 };

// A namespace in canonical form.
struct NamespaceLocation {
  NamespaceKind kind = NamespaceKind::kLocal;
  // Local: absolute, normal form, no trailing '/'. S3: "bucket" or "bucket/prefix".
  std::string path;

  // "local:///abs/path" or "s3://bucket/prefix": what the blob store opens,
  // and what the KV key naming the namespace's owner holds (c/n/<uri>).
  std::string Uri() const;
  // The locations that contain this one, nearest first ("/" and the empty S3
  // prefix excluded: no namespace can be there).
  std::vector<NamespaceLocation> Ancestors() const;
};

// Rule 1. A local path is put in normal form lexically ('..' removed as text;
// ResolveNamespace is what follows links). InvalidArgument naming `ns`.
Result<NamespaceLocation> ParseNamespace(const std::string& ns);

// Rules 2 and 3 for a location already resolved, under rules whose paths are
// already resolved. InvalidArgument naming `ns` and what is allowed.
Status CheckNamespaceAllowed(const std::string& ns, const NamespaceLocation& location, const NamespaceRules& rules);

// Rules 1-3: parses `ns`, resolves a local path and the rules' paths through
// the file system (symbolic links, '..'), and checks the result. Writes
// nothing. A path through a symbolic link that leads nowhere is refused: what
// it would create cannot be checked.
Result<NamespaceLocation> ResolveNamespace(const std::string& ns, const NamespaceRules& rules);

}  // namespace sediment::catalog
