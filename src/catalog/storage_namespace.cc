#include "catalog/storage_namespace.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "base/config.h"

namespace sediment::catalog {
namespace {

namespace fs = std::filesystem;

// `path` is `dir` or lies under it (both in normal form, no trailing '/').
bool IsWithin(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

std::string NormalForm(const fs::path& p) {
  std::string s = p.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

std::string JoinList(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// The path of a local namespace as written: the scheme removed, not normalized
// (normalizing '..' before following links would change what it names).
std::string LocalPathAsWritten(const std::string& ns) {
  std::string path = ns;
  for (const char* scheme : {"local://", "file://"}) {
    if (ns.rfind(scheme, 0) == 0) path = ns.substr(std::string_view(scheme).size());
  }
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// A path in normal form with the symbolic links of its existing parts
// resolved; on an error (a part we may not read), the lexical normal form.
std::string ResolveQuietly(const std::string& path) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec) absolute = path;
  fs::path resolved = fs::weakly_canonical(absolute, ec);
  return NormalForm(ec ? absolute : resolved);
}

}  // namespace

std::string NamespaceLocation::Uri() const { return (kind == NamespaceKind::kS3 ? "s3://" : "local://") + path; }

std::vector<NamespaceLocation> NamespaceLocation::Ancestors() const {
  std::vector<NamespaceLocation> out;
  std::string p = path;
  for (size_t slash = p.rfind('/'); slash != std::string::npos && slash > 0; slash = p.rfind('/')) {
    p.resize(slash);
    out.push_back({kind, p});
  }
  return out;
}

Result<NamespaceLocation> ParseNamespace(const std::string& ns) {
  if (ns.find('\0') != std::string::npos) return InvalidArgument("storage_namespace contains a NUL byte");
  NamespaceLocation loc;
  if (ns.rfind("s3://", 0) == 0) {
    auto uri = ParseS3Uri(ns);
    if (!uri.ok()) {
      return InvalidArgument(fmt::format(
          "storage_namespace \"{}\" is not s3://bucket or s3://bucket/prefix (with no empty, '.' or '..' part): {}", ns,
          uri.status().message()));
    }
    loc.kind = NamespaceKind::kS3;
    loc.path = uri->prefix.empty() ? uri->bucket : uri->bucket + "/" + uri->prefix;
    return loc;
  }
  auto scheme_end = ns.find("://");
  if (scheme_end != std::string::npos) {
    std::string scheme = ns.substr(0, scheme_end);
    if (scheme != "local" && scheme != "file") {
      return InvalidArgument(
          fmt::format("storage_namespace \"{}\": unsupported scheme (use s3://, local:// or an absolute path)", ns));
    }
  }
  std::string path = LocalPathAsWritten(ns);
  if (path.empty() || path.front() != '/') {
    return InvalidArgument(fmt::format(
        "storage_namespace \"{}\": a local namespace must be an absolute path, as in local:///srv/repos/name", ns));
  }
  loc.kind = NamespaceKind::kLocal;
  loc.path = NormalForm(path);
  return loc;
}

Status CheckNamespaceAllowed(const std::string& ns, const NamespaceLocation& location, const NamespaceRules& rules) {
  if (location.kind == NamespaceKind::kS3) {
    for (const auto& own : rules.reserved_s3) {
      auto uri = ParseS3Uri(own);
      if (!uri.ok()) return Status::IOError(fmt::format("the server's own S3 prefix {} does not parse", own));
      std::string r = uri->prefix.empty() ? uri->bucket : uri->bucket + "/" + uri->prefix;
      if (IsWithin(location.path, r) || IsWithin(r, location.path)) {
        return InvalidArgument(
            fmt::format("storage_namespace \"{}\" overlaps the server's own files at s3://{}", ns, r));
      }
    }
    if (rules.s3_prefixes.empty()) return Status::OK();
    for (const auto& prefix : rules.s3_prefixes) {
      auto uri = ParseS3Uri(prefix);
      if (!uri.ok()) continue;  // refused when the settings were loaded
      if (IsWithin(location.path, uri->prefix.empty() ? uri->bucket : uri->bucket + "/" + uri->prefix)) {
        return Status::OK();
      }
    }
    return InvalidArgument(fmt::format("storage_namespace \"{}\" is not under a prefix allowed for S3 namespaces ({})",
                                       ns, JoinList(rules.s3_prefixes)));
  }
  if (rules.local_roots.empty()) {
    return InvalidArgument(fmt::format(
        "storage_namespace \"{}\": local namespaces are not allowed on this server (no local namespace roots)", ns));
  }
  bool inside = false, is_root = false;
  for (const auto& root : rules.local_roots) {
    std::string r = NormalForm(root);
    if (location.path == r) {
      is_root = true;
    } else if (IsWithin(location.path, r)) {
      inside = true;
    }
  }
  std::string roots = JoinList(rules.local_roots);
  if (!inside && is_root) {
    return InvalidArgument(fmt::format(
        "storage_namespace \"{}\" is a directory that holds local namespaces ({}), not one; use a directory under it",
        ns, roots));
  }
  if (!inside) {
    std::string resolved;
    auto as_written = ParseNamespace(ns);
    if (as_written.ok() && as_written->path != location.path) resolved = " (it resolves to " + location.path + ")";
    return InvalidArgument(fmt::format(
        "storage_namespace \"{}\"{} is outside the directories allowed for local namespaces: {}", ns, resolved, roots));
  }
  for (const auto& own : rules.reserved_paths) {
    std::string r = NormalForm(own);
    // A namespace root inside a reserved directory (<data_dir>/namespaces) is
    // the one part of it that is not the server's.
    bool carved = std::any_of(rules.local_roots.begin(), rules.local_roots.end(), [&](const std::string& root) {
      std::string nr = NormalForm(root);
      return IsWithin(nr, r) && IsWithin(location.path, nr);
    });
    if ((IsWithin(location.path, r) && !carved) || IsWithin(r, location.path)) {
      return InvalidArgument(
          fmt::format("storage_namespace \"{}\" overlaps the server's own files at {}; use another directory under {}",
                      ns, r, roots));
    }
  }
  return Status::OK();
}

Result<NamespaceLocation> ResolveNamespace(const std::string& ns, const NamespaceRules& rules) {
  ARROW_ASSIGN_OR_RAISE(NamespaceLocation loc, ParseNamespace(ns));
  if (loc.kind == NamespaceKind::kS3) {
    ARROW_RETURN_NOT_OK(CheckNamespaceAllowed(ns, loc, rules));
    return loc;
  }
  std::string written = LocalPathAsWritten(ns);
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(written, ec);
  if (ec)
    return InvalidArgument(fmt::format("storage_namespace \"{}\": cannot resolve {}: {}", ns, written, ec.message()));
  loc.path = NormalForm(resolved);
  // The parts that exist are free of links now; a link among the rest leads
  // nowhere yet, and where creating the directory through it lands is not
  // what was checked.
  fs::path prefix;
  for (const auto& part : fs::path(loc.path)) {
    prefix /= part;
    if (fs::is_symlink(fs::symlink_status(prefix, ec))) {
      return InvalidArgument(fmt::format(
          "storage_namespace \"{}\" passes through {}, a symbolic link that leads nowhere", ns, prefix.string()));
    }
  }
  NamespaceRules resolved_rules;
  for (const auto& root : rules.local_roots) resolved_rules.local_roots.push_back(ResolveQuietly(root));
  for (const auto& own : rules.reserved_paths) resolved_rules.reserved_paths.push_back(ResolveQuietly(own));
  ARROW_RETURN_NOT_OK(CheckNamespaceAllowed(ns, loc, resolved_rules));
  return loc;
}

}  // namespace sediment::catalog
