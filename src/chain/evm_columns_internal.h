// The columns of the evm tables — name, type, nullability and how a row
// fills it — as Amp's evm-rpc dataset has them (AmpColumns) and as
// Sediment's first evm-rpc source made them (LegacyColumns); and Rows, which
// builds one table's rows for whatever schema it has, a column at a time.
// Private to src/chain (evm_*.cc).
//
// Thread-safety: the column tables are immutable once made (on first use);
// a Rows is used by one thread.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "base/status.h"
#include "chain/evm_fields_internal.h"
#include "chain/generator.h"

namespace arrow {
class DataType;
class Field;
class RecordBatch;
class Schema;
}  // namespace arrow

namespace sediment::chain::evm_internal {

// A column: name, type, nullability (as the table has it when made), and how a row fills it.
struct Column {
  const char* name;
  std::shared_ptr<arrow::DataType> type;
  bool nullable;
  std::function<Status(Builder*, const Row&)> fill;
};

// Amp's evm-rpc columns of table t, in its order (less _block_num).
const std::vector<Column>& AmpColumns(ChainTable t);
// The columns of Sediment's first evm-rpc source, with their meanings then
// (still written so): Amp's where they are the same.
const std::vector<Column>& LegacyColumns(ChainTable t);

// The table's field of column c; timestamps are stored in microseconds.
std::shared_ptr<arrow::Field> FieldOf(const Column& c, bool nullable);
// True if `stored` begins with the legacy schema's columns (a table made by the first source).
bool IsLegacy(ChainTable t, const arrow::Schema& stored);
// The column that fills field i of `schema` (see EvmWriteSchema), or InvalidArgument.
Result<const Column*> ColumnFor(ChainTable t, const arrow::Schema& schema, int i, bool legacy);

// Builds rows of one table for `schema`, a column at a time.
class Rows {
 public:
  // InvalidArgument naming the column if the source does not write one of `schema`'s.
  static Result<std::unique_ptr<Rows>> Make(ChainTable t, std::shared_ptr<arrow::Schema> schema);
  // Appends row r to every column; InvalidArgument naming the row and field if one is malformed.
  Status Add(const Row& r) {
    for (size_t i = 0; i < columns_.size(); ++i) ARROW_RETURN_NOT_OK(columns_[i]->fill(builders_[i].get(), r));
    return Status::OK();
  }
  Result<std::shared_ptr<arrow::RecordBatch>> Finish();

 private:
  explicit Rows(std::shared_ptr<arrow::Schema> schema) : schema_(std::move(schema)) {}
  std::shared_ptr<arrow::Schema> schema_;
  std::vector<const Column*> columns_;
  std::vector<std::unique_ptr<arrow::ArrayBuilder>> builders_;
};

}  // namespace sediment::chain::evm_internal
