#include "repo_tables/names.h"

#include <fmt/format.h>

#include "catalog/catalog.h"

namespace sediment::repo_tables {
namespace {

constexpr size_t kMaxJoined = 255;

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

Status ValidatePart(const char* what, const std::string& part) {
  if (part.empty()) return InvalidArgument(fmt::format("empty {} (empty namespace components are not allowed)", what));
  for (char c : part) {
    if (!NameChar(c)) {
      return InvalidArgument(
          fmt::format("{} \"{}\" has a character other than letters, digits, '_' and '-'", what, part));
    }
  }
  if (part.size() > kMaxJoined)
    return InvalidArgument(fmt::format("{} is longer than {} characters", what, kMaxJoined));
  return Status::OK();
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

std::string Join(const std::vector<std::string>& parts, size_t from, char sep) {
  std::string out;
  for (size_t i = from; i < parts.size(); ++i) out += (i > from ? std::string(1, sep) : "") + parts[i];
  return out;
}

}  // namespace

std::string NamespacePath::Dotted() const { return Join(ns, 0, '.'); }

Result<std::vector<std::string>> SplitScope(const std::string& scope) {
  std::vector<std::string> parts = Split(scope, '.');
  if (parts.size() > 2) {
    return InvalidArgument(fmt::format("scope \"{}\" is not <repository> or <repository>.<ref>", scope));
  }
  ARROW_RETURN_NOT_OK(catalog::Catalog::ValidateRepositoryName(parts[0]));
  if (parts.size() == 2) ARROW_RETURN_NOT_OK(ValidatePart("ref", parts[1]));
  return parts;
}

Result<std::vector<std::string>> SplitNamespace(const std::vector<std::string>& scope, const std::string& raw) {
  std::vector<std::string> parts = scope;
  if (!raw.empty()) {
    for (auto& p : Split(raw, raw.find('\x1f') != std::string::npos ? '\x1f' : '.')) parts.push_back(std::move(p));
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i == 0) {
      Status st = catalog::Catalog::ValidateRepositoryName(parts[0]);
      if (!st.ok()) return InvalidArgument(fmt::format("namespace \"{}\": {}", raw, st.message()));
      continue;
    }
    ARROW_RETURN_NOT_OK(ValidatePart(i == 1 ? "ref" : "namespace component", parts[i]));
  }
  if (Join(parts, 2, '.').size() > kMaxJoined) {
    return InvalidArgument(fmt::format("namespace \"{}\" is longer than {} characters", raw, kMaxJoined));
  }
  return parts;
}

Result<NamespacePath> ToNamespacePath(const std::vector<std::string>& parts, bool need_namespace) {
  if (parts.size() == 2 && need_namespace) {
    // Engines probe `a.b.c` as table c of namespace a.b: a ref holds no table itself.
    return NotFound(fmt::format("namespace \"{}\" names a ref, not a namespace inside it: it holds no tables",
                                Join(parts, 0, '.')));
  }
  if (parts.size() < 2 || (need_namespace && parts.size() < 3)) {
    return InvalidArgument(fmt::format(
        "namespace \"{}\" names no {}: write <repository>.<ref>.<namespace> (or use a /iceberg/relative_to/ endpoint)",
        Join(parts, 0, '.'), parts.size() < 2 ? "ref" : "namespace inside the ref"));
  }
  NamespacePath out{parts[0], parts[1], {parts.begin() + 2, parts.end()}};
  return out;
}

Status ValidateTableName(const std::string& name) { return ValidatePart("table name", name); }

std::string NamespaceDir(const std::vector<std::string>& ns) { return kTablesRoot + Join(ns, 0, '.') + "/"; }
std::string NamespaceMarker(const std::vector<std::string>& ns) { return NamespaceDir(ns) + ".namespace"; }
std::string TablePointer(const std::vector<std::string>& ns, const std::string& table) {
  return NamespaceDir(ns) + "tables/" + table;
}

std::vector<std::string> NamespaceOfDir(const std::string& dir) {
  std::string d = dir;
  if (!d.empty() && d.back() == '/') d.pop_back();
  return Split(d, '.');
}

std::string TableDir(const std::string& uuid) { return std::string(kManagedDir) + "iceberg/" + uuid; }

bool IsTableDir(const std::string& relative, const std::string& uuid) {
  if (uuid.size() != 36) return false;
  for (size_t i = 0; i < uuid.size(); ++i) {
    char c = uuid[i];
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return relative == TableDir(uuid);
}

std::string NamespaceArn(const std::string& repo, const std::string& dotted) {
  return fmt::format("arn:lakefs:catalog:::namespace/{}/{}", repo, dotted);
}
std::string TableArn(const std::string& repo, const std::string& dotted, const std::string& table) {
  return fmt::format("arn:lakefs:catalog:::table/{}/{}/{}", repo, dotted, table);
}

}  // namespace sediment::repo_tables
