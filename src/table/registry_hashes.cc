// TableRegistry's block hashes (t/bh/): each block's hash within the reorg
// window, written by Commit in the same batch as the segments, read by
// reorg checks and pruned as blocks leave the window.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "table/keys.h"
#include "table/registry.h"
#include "table/registry_internal.h"

namespace sediment::table {
namespace {

using nlohmann::json;

Result<std::string> DecodeBlockHash(const std::string& key, const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("v", 0) != 1 || !j.contains("h") || !j["h"].is_string()) {
    return Status::IOError(fmt::format("{}: malformed block hash record", key));
  }
  return j["h"].get<std::string>();
}

}  // namespace

namespace registry_internal {

std::string EncodeBlockHash(const std::string& hex) { return json{{"v", 1}, {"h", hex}}.dump(); }

}  // namespace registry_internal

Result<std::optional<std::string>> TableRegistry::BlockHash(const TableId& id, uint64_t block) {
  std::string key = BlockHashKey(id, block);
  auto raw = kv_->Get(key);
  if (IsNotFound(raw.status())) return std::optional<std::string>();
  ARROW_RETURN_NOT_OK(raw.status());
  ARROW_ASSIGN_OR_RAISE(std::string hex, DecodeBlockHash(key, *raw));
  return std::optional<std::string>(std::move(hex));
}

Result<std::vector<uint64_t>> TableRegistry::HashedBlocksFrom(const TableId& id, uint64_t from) {
  std::vector<uint64_t> out;
  ARROW_RETURN_NOT_OK(
      kv_->ScanAll(BlockHashesPrefix(id), BlockHashKey(id, from), [&](const kv::KeyValue& kv) -> Result<bool> {
        std::optional<uint64_t> b = BlockOfHashKey(id, kv.key);
        if (!b) return Status::IOError(fmt::format("{}: malformed block hash key", kv.key));
        out.push_back(*b);
        return true;
      }));
  return out;
}

Status TableRegistry::PruneBlockHashes(const TableId& id, uint64_t before) {
  std::string end = BlockHashKey(id, before);
  std::vector<std::string> old;
  ARROW_RETURN_NOT_OK(kv_->ScanAll(BlockHashesPrefix(id), "", [&](const kv::KeyValue& kv) -> Result<bool> {
    if (kv.key >= end) return false;
    old.push_back(kv.key);
    return true;
  }));
  for (const auto& k : old) ARROW_RETURN_NOT_OK(kv_->Delete(k));
  return Status::OK();
}

}  // namespace sediment::table
