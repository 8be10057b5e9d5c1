// TableRegistry's block hashes (t/bh/): each block's hash within the reorg
// window, written by Commit in the same batch as the segments, read by
// reorg checks and pruned as blocks leave the window; and the hashes a reorg
// replaced (t/fork/), pruned with them.
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

std::string EncodeAbandonedBlock(const AbandonedBlock& b) {
  json j = {{"v", 1}, {"b", b.block}};
  if (b.ancestor) j["a"] = *b.ancestor, j["ah"] = b.ancestor_hash;
  return j.dump();
}

Result<AbandonedBlock> DecodeAbandonedBlock(const std::string& key, const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("v", 0) != 1 || !j.contains("b") || !j["b"].is_number_unsigned() ||
      (j.contains("a") && !j["a"].is_number_unsigned())) {
    return Status::IOError(fmt::format("{}: malformed abandoned block record", key));
  }
  AbandonedBlock out;
  out.block = j["b"].get<uint64_t>();
  if (j.contains("a")) out.ancestor = j["a"].get<uint64_t>();
  if (j.contains("ah") && j["ah"].is_string()) out.ancestor_hash = j["ah"].get<std::string>();
  return out;
}

}  // namespace registry_internal

Result<std::optional<std::string>> TableRegistry::BlockHash(const TableId& id, uint64_t block) {
  std::string key = BlockHashKey(id, block);
  auto raw = kv_->Get(key);
  if (IsNotFound(raw.status())) return std::optional<std::string>();
  ARROW_RETURN_NOT_OK(raw.status());
  ARROW_ASSIGN_OR_RAISE(std::string hex, DecodeBlockHash(key, *raw));
  return std::optional<std::string>(std::move(hex));
}

Result<std::vector<std::pair<uint64_t, std::string>>> TableRegistry::HashesFrom(const TableId& id, uint64_t from) {
  std::vector<std::pair<uint64_t, std::string>> out;
  ARROW_RETURN_NOT_OK(
      kv_->ScanAll(BlockHashesPrefix(id), BlockHashKey(id, from), [&](const kv::KeyValue& kv) -> Result<bool> {
        std::optional<uint64_t> b = BlockOfHashKey(id, kv.key);
        if (!b) return Status::IOError(fmt::format("{}: malformed block hash key", kv.key));
        ARROW_ASSIGN_OR_RAISE(std::string hex, DecodeBlockHash(kv.key, kv.value));
        out.emplace_back(*b, std::move(hex));
        return true;
      }));
  return out;
}

Result<std::optional<AbandonedBlock>> TableRegistry::Abandoned(const TableId& id, const std::string& hash) {
  std::string key = AbandonedBlockKey(id, hash);
  auto raw = kv_->Get(key);
  if (IsNotFound(raw.status())) return std::optional<AbandonedBlock>();
  ARROW_RETURN_NOT_OK(raw.status());
  ARROW_ASSIGN_OR_RAISE(auto block, registry_internal::DecodeAbandonedBlock(key, *raw));
  block.hash = hash;
  return std::optional<AbandonedBlock>(std::move(block));
}

Status TableRegistry::PruneBlockHashes(const TableId& id, uint64_t before) {
  std::string end = BlockHashKey(id, before);
  std::vector<std::string> old;
  const std::string prefix = BlockHashesPrefix(id);
  const ScanFloors::Ticket ticket = floors_.Start(prefix);
  ARROW_RETURN_NOT_OK(kv_->ScanAll(prefix, ticket.from, [&](const kv::KeyValue& kv) -> Result<bool> {
    if (kv.key >= end) return false;
    old.push_back(kv.key);
    return true;
  }));
  // Abandoned blocks are few (only reorgs write them): all are read.
  ARROW_RETURN_NOT_OK(kv_->ScanAll(AbandonedBlocksPrefix(id), "", [&](const kv::KeyValue& kv) -> Result<bool> {
    auto block = registry_internal::DecodeAbandonedBlock(kv.key, kv.value);
    if (!block.ok() || block->block < before) old.push_back(kv.key);
    return true;
  }));
  for (const auto& k : old) ARROW_RETURN_NOT_OK(kv_->Delete(k));
  // Nothing is left below `end` (a window that moved back keeps its floor).
  if (ticket.from < end) floors_.Finish(prefix, ticket, end);
  return Status::OK();
}

}  // namespace sediment::table
