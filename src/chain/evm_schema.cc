// The evm tables' schemas — Amp's, the first source's, and the one a stored
// table is written with — and Rows, which fills whichever a table has
// (evm_decode.h, evm_columns_internal.h).
#include <arrow/api.h>
#include <arrow/util/key_value_metadata.h>
#include <fmt/format.h>

#include "chain/evm_columns_internal.h"
#include "chain/evm_decode.h"
#include "table/stored_types.h"

namespace sediment::chain {
namespace evm_internal {
namespace {

std::shared_ptr<arrow::Schema> SchemaOf(const std::vector<Column>& columns) {
  arrow::FieldVector fields;
  for (const auto& c : columns) fields.push_back(FieldOf(c, c.nullable));
  return arrow::schema(fields);
}

}  // namespace

// Block times are whole seconds; Iceberg v2 and Spark read no nanoseconds
// (table/stored_types.h).
std::shared_ptr<arrow::Field> FieldOf(const Column& c, bool nullable) {
  std::shared_ptr<const arrow::KeyValueMetadata> md;
  if (c.type->id() == arrow::Type::TIMESTAMP) {
    md = arrow::key_value_metadata({std::string(table::kStoreMicrosKey)}, {"true"});
  }
  return arrow::field(c.name, c.type, nullable, md);
}

bool IsLegacy(ChainTable t, const arrow::Schema& stored) {
  const auto& legacy = LegacyColumns(t);
  if (stored.num_fields() < static_cast<int>(legacy.size())) return false;
  for (size_t i = 0; i < legacy.size(); ++i) {
    const auto& f = *stored.field(static_cast<int>(i));
    if (f.name() != legacy[i].name || !f.type()->Equals(*legacy[i].type)) return false;
  }
  return true;
}

Result<const Column*> ColumnFor(ChainTable t, const arrow::Schema& schema, int i, bool legacy) {
  const auto& f = *schema.field(i);
  const std::vector<Column>& from =
      legacy && i < static_cast<int>(LegacyColumns(t).size()) ? LegacyColumns(t) : AmpColumns(t);
  for (const auto& c : from) {
    if (f.name() != c.name) continue;
    if (!f.type()->Equals(*c.type)) {
      return InvalidArgument(fmt::format("table {}: column \"{}\" has type {}; the evm-rpc source writes it as {}",
                                         TableName(t), f.name(), f.type()->ToString(), c.type->ToString()));
    }
    if (!f.nullable() && c.nullable) {
      return InvalidArgument(fmt::format(
          "table {}: column \"{}\" is not nullable; the evm-rpc source writes nulls in it", TableName(t), f.name()));
    }
    return &c;
  }
  return InvalidArgument(fmt::format("table {}: the evm-rpc source does not write a column \"{}\" ({})", TableName(t),
                                     f.name(), f.type()->ToString()));
}

Result<std::unique_ptr<Rows>> Rows::Make(ChainTable t, std::shared_ptr<arrow::Schema> schema) {
  auto rows = std::unique_ptr<Rows>(new Rows(std::move(schema)));
  const bool legacy = IsLegacy(t, *rows->schema_);
  for (int i = 0; i < rows->schema_->num_fields(); ++i) {
    ARROW_ASSIGN_OR_RAISE(const Column* c, ColumnFor(t, *rows->schema_, i, legacy));
    std::unique_ptr<arrow::ArrayBuilder> b;
    ARROW_RETURN_NOT_OK(arrow::MakeBuilder(arrow::default_memory_pool(), rows->schema_->field(i)->type(), &b));
    rows->columns_.push_back(c);
    rows->builders_.push_back(std::move(b));
  }
  return rows;
}

Result<std::shared_ptr<arrow::RecordBatch>> Rows::Finish() {
  std::vector<std::shared_ptr<arrow::Array>> cols;
  for (auto& b : builders_) {
    std::shared_ptr<arrow::Array> a;
    ARROW_RETURN_NOT_OK(b->Finish(&a));
    cols.push_back(std::move(a));
  }
  int64_t n = cols.empty() ? 0 : cols[0]->length();
  return arrow::RecordBatch::Make(schema_, n, cols);
}

}  // namespace evm_internal

std::shared_ptr<arrow::Schema> EvmSchema(ChainTable t) { return evm_internal::SchemaOf(evm_internal::AmpColumns(t)); }

std::shared_ptr<arrow::Schema> LegacyEvmSchema(ChainTable t) {
  return evm_internal::SchemaOf(evm_internal::LegacyColumns(t));
}

Result<std::shared_ptr<arrow::Schema>> EvmWriteSchema(ChainTable t, const std::shared_ptr<arrow::Schema>& stored) {
  using evm_internal::ColumnFor;
  if (!stored) return EvmSchema(t);
  const bool legacy = evm_internal::IsLegacy(t, *stored);
  arrow::FieldVector fields = stored->fields();
  for (int i = 0; i < stored->num_fields(); ++i) ARROW_RETURN_NOT_OK(ColumnFor(t, *stored, i, legacy).status());
  for (const auto& c : evm_internal::AmpColumns(t)) {
    if (stored->GetFieldIndex(c.name) < 0) fields.push_back(evm_internal::FieldOf(c, true));
  }
  if (fields.size() == stored->fields().size()) return stored;
  return arrow::schema(fields, stored->metadata());
}

EvmSchemas EvmSchemas::Amp() {
  return {EvmSchema(ChainTable::kBlocks), EvmSchema(ChainTable::kTransactions), EvmSchema(ChainTable::kLogs)};
}

}  // namespace sediment::chain
