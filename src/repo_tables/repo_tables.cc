// RepoTables: names and files (locations in the storage namespace, metadata
// files) and namespaces. Tables are in tables.cc.
#include "repo_tables/repo_tables.h"

#include <arrow/buffer.h>
#include <fmt/format.h>

#include <set>

#include "base/codec.h"
#include "base/crypto.h"
#include "blob/blob.h"
#include "catalog/catalog.h"
#include "catalog/storage_namespace.h"
#include "repo_tables/repo_tables_internal.h"

namespace sediment::repo_tables {

using nlohmann::json;

namespace internal {

std::string NewUuid() {
  std::string b = RandomBytes(16);
  b[6] = static_cast<char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<char>((b[8] & 0x3f) | 0x80);
  std::string h = Hex(b);
  return fmt::format("{}-{}-{}-{}-{}", h.substr(0, 8), h.substr(8, 4), h.substr(12, 4), h.substr(16, 4), h.substr(20));
}

catalog::Entry FileEntry(const std::string& address, const std::string& data, int64_t now_s) {
  catalog::Entry e;
  e.address = address;
  e.checksum = Hex(Md5(data));
  e.size = static_cast<int64_t>(data.size());
  e.mtime = now_s;
  e.content_type = "application/json";
  return e;
}

int64_t MetadataVersion(const std::string& address) {
  size_t slash = address.rfind('/');
  std::string name = address.substr(slash == std::string::npos ? 0 : slash + 1);
  size_t dash = name.find('-');
  if (dash == std::string::npos || dash == 0 || dash > 9) return 0;
  int64_t v = 0;
  for (size_t i = 0; i < dash; ++i) {
    if (name[i] < '0' || name[i] > '9') return 0;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

}  // namespace internal

namespace {

template <typename T>
Result<std::vector<T>> AllPages(const std::function<Result<catalog::Page<T>>(const std::string&)>& fetch,
                                const std::function<std::string(const T&)>& key) {
  std::vector<T> out;
  std::string after;
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto page, fetch(after));
    for (auto& item : page.items) out.push_back(std::move(item));
    if (!page.has_more || page.items.empty()) return out;
    after = key(out.back());
  }
}

Result<std::vector<catalog::ListItem>> ListAll(catalog::Catalog* c, const NamespacePath& where,
                                               const std::string& prefix) {
  return AllPages<catalog::ListItem>(
      [&](const std::string& after) {
        catalog::ListOptions o{prefix, after, "/", 1000};
        return c->ListEntries(where.repo, where.ref, o);
      },
      [](const catalog::ListItem& i) { return i.path; });
}

bool StartsWith(const std::vector<std::string>& ns, const std::vector<std::string>& prefix) {
  return ns.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), ns.begin());
}

}  // namespace

const nlohmann::json& LoadedTable::Metadata() const { return file ? file->json : metadata; }

RepoTables::RepoTables(catalog::Catalog* catalog, std::shared_ptr<Clock> clock)
    : catalog_(catalog), clock_(std::move(clock)), cache_(std::make_unique<MetadataCache>(int64_t{64} << 20)) {}

RepoTables::~RepoTables() = default;

Result<std::string> RepoTables::NamespaceRoot(const std::string& repo_id) {
  ARROW_ASSIGN_OR_RAISE(auto repo, catalog_->GetRepository(repo_id));
  ARROW_ASSIGN_OR_RAISE(auto where,
                        catalog::ParseNamespace(repo.location.empty() ? repo.storage_namespace : repo.location));
  return (where.kind == catalog::NamespaceKind::kS3 ? "s3://" : "file://") + where.path;
}

Result<std::string> RepoTables::EngineUri(const std::string& repo, const std::string& relative) {
  ARROW_ASSIGN_OR_RAISE(auto root, NamespaceRoot(repo));
  return root + "/" + relative;
}

Result<std::string> RepoTables::RelativeInNamespace(const std::string& repo, const std::string& uri, const char* what) {
  ARROW_ASSIGN_OR_RAISE(auto root, NamespaceRoot(repo));
  std::string u = uri;
  if (u.starts_with("file:/") && !u.starts_with("file://")) u = "file://" + u.substr(5);  // Hadoop's file:/abs
  while (u.size() > root.size() + 1 && u.back() == '/') u.pop_back();
  if (!u.starts_with(root + "/") || !blob::ValidateObjectPath(u.substr(root.size() + 1)).ok()) {
    return InvalidArgument(
        fmt::format("{} \"{}\" is outside repository \"{}\"'s storage namespace ({})", what, uri, repo, root));
  }
  return u.substr(root.size() + 1);
}

Result<catalog::Repository> RepoTables::WritableBranch(const NamespacePath& where) {
  ARROW_ASSIGN_OR_RAISE(auto repo, catalog_->GetRepository(where.repo));
  auto branch = catalog_->GetBranch(where.repo, where.ref);
  if (branch.ok()) return repo;
  if (!IsNotFound(branch.status())) return branch.status();
  if (catalog_->ResolveRef(where.repo, where.ref).ok()) {
    return Forbidden(
        fmt::format("ref \"{}\" of repository \"{}\" is a tag or a commit: its tables are read-only "
                    "(write on a branch)",
                    where.ref, where.repo));
  }
  return NotFound(fmt::format("branch \"{}\" of repository \"{}\" does not exist", where.ref, where.repo));
}

Status RepoTables::RequireNamespace(const NamespacePath& ns) {
  auto marker = catalog_->GetEntry(ns.repo, ns.ref, NamespaceMarker(ns.ns));
  if (IsNotFound(marker.status())) {
    return NotFound(
        fmt::format("namespace \"{}\" does not exist on \"{}\" of repository \"{}\"", ns.Dotted(), ns.ref, ns.repo));
  }
  return marker.status();
}

Result<std::vector<std::string>> RepoTables::ListRepositories() {
  ARROW_ASSIGN_OR_RAISE(auto repos,
                        AllPages<catalog::Repository>(
                            [&](const std::string& after) { return catalog_->ListRepositories("", after, 1000); },
                            [](const catalog::Repository& r) { return r.id; }));
  std::vector<std::string> out;
  for (const auto& r : repos) out.push_back(r.id);
  return out;
}

Result<std::vector<std::string>> RepoTables::ListRefs(const std::string& repo) {
  ARROW_ASSIGN_OR_RAISE(
      auto branches,
      AllPages<catalog::Branch>([&](const std::string& after) { return catalog_->ListBranches(repo, "", after, 1000); },
                                [](const catalog::Branch& b) { return b.id; }));
  ARROW_ASSIGN_OR_RAISE(
      auto tags,
      AllPages<catalog::Tag>([&](const std::string& after) { return catalog_->ListTags(repo, "", after, 1000); },
                             [](const catalog::Tag& t) { return t.id; }));
  std::vector<std::string> out;
  for (const auto& b : branches) out.push_back(b.id);
  for (const auto& t : tags) out.push_back(t.id);
  return out;
}

Result<std::vector<std::vector<std::string>>> RepoTables::ListNamespaces(const NamespacePath& parent) {
  if (!parent.ns.empty()) ARROW_RETURN_NOT_OK(RequireNamespace(parent));
  ARROW_ASSIGN_OR_RAISE(auto items, ListAll(catalog_, parent, kTablesRoot));
  std::set<std::vector<std::string>> found;
  for (const auto& item : items) {
    if (!item.common_prefix) continue;
    auto ns = NamespaceOfDir(item.path.substr(std::string(kTablesRoot).size()));
    // A nested namespace implies its parents, as a path implies its directories.
    if (ns.size() > parent.ns.size() && StartsWith(ns, parent.ns)) ns.resize(parent.ns.size() + 1);
    if (ns.size() == parent.ns.size() + 1 && StartsWith(ns, parent.ns)) found.insert(ns);
  }
  return std::vector<std::vector<std::string>>(found.begin(), found.end());
}

Result<std::map<std::string, std::string>> RepoTables::LoadNamespace(const NamespacePath& ns) {
  auto marker = catalog_->GetEntry(ns.repo, ns.ref, NamespaceMarker(ns.ns));
  if (IsNotFound(marker.status())) ARROW_RETURN_NOT_OK(RequireNamespace(ns));
  ARROW_RETURN_NOT_OK(marker.status());
  ARROW_ASSIGN_OR_RAISE(auto repo, catalog_->GetRepository(ns.repo));
  ARROW_ASSIGN_OR_RAISE(auto store, catalog_->RepositoryNamespace(repo));
  ARROW_ASSIGN_OR_RAISE(auto data, store->Get(marker->address));
  json doc = json::parse(data->ToString(), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("properties") || !doc["properties"].is_object()) {
    return InvalidArgument(
        fmt::format("namespace \"{}\": its object is not a namespace this catalog wrote", ns.Dotted()));
  }
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : doc["properties"].items()) out[k] = v.is_string() ? v.get<std::string>() : v.dump();
  return out;
}

Result<catalog::Entry> RepoTables::WriteNamespaceFile(const catalog::Repository& repo, const NamespacePath& ns,
                                                      const std::map<std::string, std::string>& properties) {
  std::string data = json{{"namespace", ns.ns}, {"properties", properties}}.dump();
  std::string address = std::string(kManagedDir) + "iceberg/namespaces/" + internal::NewUuid() + ".json";
  ARROW_ASSIGN_OR_RAISE(auto store, catalog_->RepositoryNamespace(repo));
  ARROW_RETURN_NOT_OK(store->Put(address, data));
  return internal::FileEntry(address, data, ToUnixMicros(clock_->Now()) / 1000000);
}

Status RepoTables::CreateNamespace(const NamespacePath& ns, const std::map<std::string, std::string>& properties) {
  if (ns.ns.empty()) return InvalidArgument("a namespace needs a name inside the ref");
  ARROW_ASSIGN_OR_RAISE(auto repo, WritableBranch(ns));
  ARROW_ASSIGN_OR_RAISE(auto entry, WriteNamespaceFile(repo, ns, properties));
  Status st = catalog_->SwapEntry(ns.repo, ns.ref, NamespaceMarker(ns.ns), entry, std::nullopt);
  if (IsPreconditionFailed(st)) return Conflict(fmt::format("namespace \"{}\" already exists", ns.Dotted()));
  return st;
}

Status RepoTables::DropNamespace(const NamespacePath& ns) {
  ARROW_RETURN_NOT_OK(WritableBranch(ns).status());
  auto marker = catalog_->GetEntry(ns.repo, ns.ref, NamespaceMarker(ns.ns));
  if (IsNotFound(marker.status())) ARROW_RETURN_NOT_OK(RequireNamespace(ns));
  ARROW_RETURN_NOT_OK(marker.status());
  ARROW_ASSIGN_OR_RAISE(auto tables, ListTables(ns));
  if (!tables.empty()) {
    return Conflict(fmt::format("namespace \"{}\" is not empty: it holds table \"{}\"", ns.Dotted(), tables.front()));
  }
  ARROW_ASSIGN_OR_RAISE(auto children, ListNamespaces(ns));
  if (!children.empty()) {
    return Conflict(fmt::format("namespace \"{}\" is not empty: it holds namespace \"{}\"", ns.Dotted(),
                                NamespacePath{ns.repo, ns.ref, children.front()}.Dotted()));
  }
  Status st = catalog_->SwapEntries(ns.repo, ns.ref, {{NamespaceMarker(ns.ns), std::nullopt, marker->address}});
  if (IsPreconditionFailed(st)) return Conflict(fmt::format("namespace \"{}\" changed meanwhile; retry", ns.Dotted()));
  return st;
}

Result<PropertiesChange> RepoTables::UpdateNamespace(const NamespacePath& ns,
                                                     const std::map<std::string, std::string>& updates,
                                                     const std::vector<std::string>& removals) {
  for (const auto& key : removals) {
    if (updates.count(key)) {
      return InvalidArgument(fmt::format("property \"{}\" is both set and removed in one request", key));
    }
  }
  ARROW_ASSIGN_OR_RAISE(auto repo, WritableBranch(ns));
  auto marker = catalog_->GetEntry(ns.repo, ns.ref, NamespaceMarker(ns.ns));
  if (IsNotFound(marker.status())) ARROW_RETURN_NOT_OK(RequireNamespace(ns));
  ARROW_RETURN_NOT_OK(marker.status());
  ARROW_ASSIGN_OR_RAISE(auto properties, LoadNamespace(ns));
  PropertiesChange change;
  for (const auto& key : removals) {
    (properties.erase(key) ? change.removed : change.missing).push_back(key);
  }
  for (const auto& [k, v] : updates) {
    properties[k] = v;
    change.updated.push_back(k);
  }
  ARROW_ASSIGN_OR_RAISE(auto entry, WriteNamespaceFile(repo, ns, properties));
  Status st = catalog_->SwapEntry(ns.repo, ns.ref, NamespaceMarker(ns.ns), entry, marker->address);
  if (IsPreconditionFailed(st)) return Conflict(fmt::format("namespace \"{}\" changed meanwhile; retry", ns.Dotted()));
  ARROW_RETURN_NOT_OK(st);
  return change;
}

Result<std::vector<std::string>> RepoTables::ListTables(const NamespacePath& ns) {
  ARROW_RETURN_NOT_OK(RequireNamespace(ns));
  std::string prefix = NamespaceDir(ns.ns) + "tables/";
  ARROW_ASSIGN_OR_RAISE(auto items, ListAll(catalog_, ns, prefix));
  std::vector<std::string> out;
  for (const auto& item : items) {
    if (!item.common_prefix) out.push_back(item.path.substr(prefix.size()));
  }
  return out;
}

}  // namespace sediment::repo_tables
