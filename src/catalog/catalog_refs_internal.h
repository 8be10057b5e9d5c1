// Helpers shared by the refs files of the catalog (ref_manager.cc,
// ref_manager_history.cc, catalog_refs.cc, catalog_repositories.cc): JSON
// shapes, namespace spelling (their KV keys are keys.h's). Private to
// src/catalog.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>

#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "kv/kv.h"

namespace sediment::catalog::refs_internal {

using nlohmann::json;

inline constexpr int64_t kMaxPathBytes = 1024;
// The largest N of a ref's "~N" or "^N".
inline constexpr int64_t kMaxAncestorCount = 1'000'000;

inline json RepoJson(const Repository& r) {
  json j = {{"version", 1},
            {"storage_namespace", r.storage_namespace},
            {"location", r.location},
            {"default_branch", r.default_branch},
            {"creation_date", r.creation_date},
            {"read_only", r.read_only},
            {"protected_branches", r.protected_branches}};
  if (!r.metadata.empty()) j["metadata"] = r.metadata;
  if (r.gc_rules) {
    j["gc_rules"] = {{"default_retention_days", r.gc_rules->default_retention_days},
                     {"branches", r.gc_rules->branches}};
  }
  return j;
}

// Where a repository's files are; records from before `location` open the namespace as written.
inline const std::string& LocationOf(const Repository& r) {
  return r.location.empty() ? r.storage_namespace : r.location;
}

// The object CreateRepository writes to prove a namespace writable; a namespace
// holding nothing else is one whose creation was cut off, and may be used.
inline constexpr const char* kNamespaceMarker = "_lakefs/dummy";

inline json CommitBody(const Commit& c) {
  return {{"version", 1},
          {"parents", c.parents},
          {"committer", c.committer},
          {"message", c.message},
          {"creation_date", c.creation_date},
          {"meta_range_id", c.meta_range_id},
          {"metadata", c.metadata},
          {"generation", c.generation}};
}

inline Result<Commit> ParseCommit(const std::string& id, const std::string& raw) {
  try {
    auto j = json::parse(raw);
    Commit c;
    c.id = id;
    c.parents = j.at("parents").get<std::vector<std::string>>();
    c.committer = j.at("committer").get<std::string>();
    c.message = j.at("message").get<std::string>();
    c.creation_date = j.at("creation_date").get<int64_t>();
    c.meta_range_id = j.at("meta_range_id").get<std::string>();
    c.metadata = j.at("metadata").get<std::map<std::string, std::string>>();
    c.generation = j.at("generation").get<int64_t>();
    return c;
  } catch (const std::exception& e) {
    return Status::IOError(fmt::format("corrupt commit record {}: {}", id, e.what()));
  }
}

// Strips one trailing '/' so "s3://b/p/" and "s3://b/p" name the same namespace.
inline std::string NormalizeNamespace(std::string ns) {
  while (ns.size() > 1 && ns.back() == '/') ns.pop_back();
  return ns;
}

// Lists keys under `prefix` after `after` (exclusive), up to `amount`.
inline Result<Page<kv::KeyValue>> ListKeys(kv::KvStore& kv, const std::string& prefix, const std::string& name_prefix,
                                           const std::string& after, int64_t amount) {
  std::string from = prefix + name_prefix;
  if (!after.empty() && prefix + after >= from) from = prefix + after + '\0';
  ARROW_ASSIGN_OR_RAISE(auto page, kv.Scan(prefix + name_prefix, from, static_cast<size_t>(amount) + 1));
  Page<kv::KeyValue> out;
  out.has_more = page.items.size() > static_cast<size_t>(amount) || page.has_more;
  if (page.items.size() > static_cast<size_t>(amount)) page.items.resize(static_cast<size_t>(amount));
  out.items = std::move(page.items);
  return out;
}

}  // namespace sediment::catalog::refs_internal
