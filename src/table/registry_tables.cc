// TableRegistry's table records (t/tables/): a table's schema, as Arrow IPC in
// base64, and the schemas it had before; creating, evolving and listing them.
#include <arrow/type.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "table/keys.h"
#include "table/parquet_io.h"
#include "table/registry.h"
#include "table/stored_types.h"

namespace sediment::table {
namespace {

using nlohmann::json;
constexpr int kTableFormatVersion = 1;

Result<TableInfo> DecodeTable(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("v") || !j.contains("schema")) {
    return InvalidArgument("table record: malformed");
  }
  // Version 2: a record with a schema history (servers before it would misread such a table's files).
  if (j["v"] != kTableFormatVersion && j["v"] != 2) {
    return InvalidArgument(fmt::format("table record: format version {} is not supported", j["v"].dump()));
  }
  TableInfo t;
  t.id.dataset = j.value("dataset", "");
  t.id.table = j.value("table", "");
  t.created_at_us = j.value("created_at_us", int64_t{0});
  ARROW_ASSIGN_OR_RAISE(t.schema, ParseStoredArrowSchema(j["schema"].get<std::string>()));
  if (j.contains("history")) {
    if (!j["history"].is_array()) return InvalidArgument("table record: history is not a list");
    for (const auto& h : j["history"]) {
      if (!h.is_string()) return InvalidArgument("table record: a schema in history is not a string");
      ARROW_ASSIGN_OR_RAISE(auto old, ParseStoredArrowSchema(h.get<std::string>()));
      t.history.push_back(std::move(old));
    }
  }
  return t;
}

// InvalidArgument unless `next` is `current` with new nullable fields after its own.
Status CheckEvolution(const TableId& id, const arrow::Schema& current, const arrow::Schema& next) {
  const std::string table = id.ToString();
  for (int i = 0; i < current.num_fields(); ++i) {
    const auto& f = *current.field(i);
    if (i >= next.num_fields()) {
      return InvalidArgument(
          fmt::format("table {}: the new schema drops column \"{}\"; columns can only be added", table, f.name()));
    }
    const auto& g = *next.field(i);
    if (g.name() != f.name()) {
      return InvalidArgument(fmt::format(
          "table {}: column {} is \"{}\" in the new schema, \"{}\" now; columns can only be added after the last",
          table, i + 1, g.name(), f.name()));
    }
    if (!g.Equals(f, /*check_metadata=*/false)) {
      return InvalidArgument(fmt::format("table {}: column \"{}\" changes from {}{} to {}{}; columns cannot change",
                                         table, f.name(), f.type()->ToString(), f.nullable() ? "" : " not null",
                                         g.type()->ToString(), g.nullable() ? "" : " not null"));
    }
  }
  for (int i = current.num_fields(); i < next.num_fields(); ++i) {
    const auto& g = *next.field(i);
    if (!g.nullable()) {
      return InvalidArgument(
          fmt::format("table {}: new column \"{}\" must be nullable (the rows already written have no value in it)",
                      table, g.name()));
    }
    if (next.GetFieldIndex(g.name()) != i) {
      return InvalidArgument(fmt::format("table {}: column \"{}\" appears twice", table, g.name()));
    }
  }
  return Status::OK();
}

}  // namespace

Result<bool> TableRegistry::CreateTable(const TableId& id, const std::shared_ptr<arrow::Schema>& schema,
                                        TimePoint now) {
  ARROW_ASSIGN_OR_RAISE(std::string encoded, StoredArrowSchema(*schema));
  json j = {{"v", kTableFormatVersion},
            {"dataset", id.dataset},
            {"table", id.table},
            {"schema", encoded},
            {"created_at_us", ToUnixMicros(now)}};
  Status st = kv_->SetIf(TableKey(id), j.dump(), std::nullopt);
  if (st.ok()) return true;
  if (!IsPreconditionFailed(st)) return st;
  ARROW_ASSIGN_OR_RAISE(TableInfo existing, GetTable(id));
  if (SameSchema(*existing.schema, *schema)) return false;
  return Conflict(fmt::format("table {} exists with another schema: {}", id.ToString(), existing.schema->ToString()));
}

Result<bool> TableRegistry::EvolveTable(const TableId& id, const std::shared_ptr<arrow::Schema>& schema) {
  for (;;) {
    auto raw = kv_->Get(TableKey(id));
    if (IsNotFound(raw.status())) return NotFound(fmt::format("table {} not found", id.ToString()));
    ARROW_RETURN_NOT_OK(raw.status());
    ARROW_ASSIGN_OR_RAISE(TableInfo t, DecodeTable(*raw));
    if (SameSchema(*t.schema, *schema)) return false;
    ARROW_RETURN_NOT_OK(CheckEvolution(id, *t.schema, *schema));
    // The table's own fields as they are (their metadata says how files store them: stored_types.h),
    // then the new ones.
    arrow::FieldVector fields = t.schema->fields();
    for (int i = t.schema->num_fields(); i < schema->num_fields(); ++i) fields.push_back(schema->field(i));
    json j = json::parse(*raw);
    json history = j.contains("history") ? j["history"] : json::array();
    history.push_back(j["schema"]);
    ARROW_ASSIGN_OR_RAISE(std::string encoded, StoredArrowSchema(*arrow::schema(fields, t.schema->metadata())));
    j["schema"] = encoded;
    j["history"] = history;
    j["v"] = 2;
    Status st = kv_->SetIf(TableKey(id), j.dump(), *raw);
    if (st.ok()) return true;
    if (!IsPreconditionFailed(st)) return st;  // changed meanwhile: check against what it is now
  }
}

Result<TableInfo> TableRegistry::GetTable(const TableId& id) {
  auto raw = kv_->Get(TableKey(id));
  if (IsNotFound(raw.status())) return NotFound(fmt::format("table {} not found", id.ToString()));
  ARROW_RETURN_NOT_OK(raw.status());
  return DecodeCached(TableKey(id), *raw);
}

Result<TableInfo> TableRegistry::DecodeCached(const std::string& key, const std::string& raw) {
  std::lock_guard<std::mutex> lock(cache_mu_);
  auto& [text, info] = decoded_tables_[key];
  if (text != raw || !info.schema) {
    ARROW_ASSIGN_OR_RAISE(info, DecodeTable(raw));
    text = raw;
  }
  return info;
}

Result<std::vector<TableInfo>> TableRegistry::ListTables() {
  std::vector<TableInfo> out;
  ARROW_RETURN_NOT_OK(kv_->ScanAll(TablesPrefix(), "", [&](const kv::KeyValue& kv) -> Result<bool> {
    ARROW_ASSIGN_OR_RAISE(TableInfo t, DecodeCached(kv.key, kv.value));
    out.push_back(std::move(t));
    return true;
  }));
  return out;
}

Result<std::vector<TableInfo>> TableRegistry::ListTables(const std::string& after, const std::string& dataset,
                                                         size_t limit, bool* has_more) {
  std::vector<TableInfo> out;
  *has_more = false;
  std::string prefix = dataset.empty() ? TablesPrefix() : DatasetTablesPrefix(dataset);
  std::string from = after.empty() ? "" : TablesPrefix() + after + std::string(1, '\0');
  ARROW_RETURN_NOT_OK(kv_->ScanAll(prefix, from, [&](const kv::KeyValue& kv) -> Result<bool> {
    if (out.size() == limit) {
      *has_more = true;
      return false;
    }
    ARROW_ASSIGN_OR_RAISE(TableInfo t, DecodeCached(kv.key, kv.value));
    out.push_back(std::move(t));
    return true;
  }));
  return out;
}

}  // namespace sediment::table
