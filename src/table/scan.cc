#include "table/scan.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/compute/initialize.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <mutex>

#include "base/codec.h"
#include "table/parquet_io.h"
#include "table/table_service.h"

namespace sediment::table {
namespace {

Status InitCompute() {
  static std::once_flag once;
  static Status status;
  std::call_once(once, [] { status = arrow::compute::Initialize(); });
  return status;
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// The bytes of "0x" followed by hex digits of either case (people write both).
Result<std::string> FromHex(const std::string& text) {
  const std::string_view hex = std::string_view(text).substr(2);
  if (hex.size() % 2 != 0) return InvalidArgument(fmt::format("\"{}\": odd number of hex digits", text));
  auto bytes = HexDecode(hex, HexCase::kAny);
  if (!bytes) return InvalidArgument(fmt::format("\"{}\" is not hex", text));
  return std::move(*bytes);
}

// The filter's value as a scalar of the column's type.
Result<std::shared_ptr<arrow::Scalar>> MakeValue(const arrow::DataType& type, const std::string& text,
                                                 const std::string& column) {
  std::string v = text;
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
  auto bad = [&](const std::string& why) {
    return InvalidArgument(
        fmt::format("filter value \"{}\" for column {} ({}): {}", text, column, type.ToString(), why));
  };
  switch (type.id()) {
    case arrow::Type::BINARY:
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::FIXED_SIZE_BINARY: {
      if (v.rfind("0x", 0) != 0) return bad("binary values are written 0x followed by hex digits");
      auto bytes = FromHex(v);
      if (!bytes.ok()) return bad(bytes.status().message());
      if (type.id() == arrow::Type::FIXED_SIZE_BINARY) {
        int width = static_cast<const arrow::FixedSizeBinaryType&>(type).byte_width();
        if (static_cast<int>(bytes->size()) != width) return bad(fmt::format("needs exactly {} bytes", width));
        return std::make_shared<arrow::FixedSizeBinaryScalar>(arrow::Buffer::FromString(*bytes), type.GetSharedPtr());
      }
      return std::make_shared<arrow::BinaryScalar>(arrow::Buffer::FromString(*bytes));
    }
    case arrow::Type::STRING:
    case arrow::Type::LARGE_STRING:
      return arrow::MakeScalar(type.GetSharedPtr(), v);
    default:
      break;
  }
  if (!arrow::is_integer(type.id()) && !arrow::is_floating(type.id()) && type.id() != arrow::Type::BOOL) {
    return bad("this column type cannot be filtered");
  }
  auto scalar = arrow::Scalar::Parse(type.GetSharedPtr(), v);
  if (!scalar.ok()) return bad("not a valid value of that type");
  return *scalar;
}

}  // namespace

Result<Filter> ParseFilter(const std::string& text) {
  static const char* ops[] = {"!=", "<=", ">=", "=", "<", ">"};
  for (const char* op : ops) {
    auto pos = text.find(op);
    if (pos == std::string::npos) continue;
    Filter f{Trim(text.substr(0, pos)), op, Trim(text.substr(pos + std::strlen(op)))};
    if (f.column.empty() || f.value.empty()) break;
    for (char c : f.column) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) {
        return InvalidArgument(fmt::format("filter \"{}\": \"{}\" is not a column name", text, f.column));
      }
    }
    return f;
  }
  return InvalidArgument(
      fmt::format("filter \"{}\" is not of the form <column> <op> <value> with op one of = != < <= > >=", text));
}

Result<std::unique_ptr<Scan>> Scan::Open(TableService* tables, const TableId& id, const ScanRequest& request) {
  ARROW_RETURN_NOT_OK(InitCompute());
  if (request.from_block && request.to_block && *request.from_block > *request.to_block) {
    return InvalidArgument(fmt::format("from_block {} is after to_block {}", *request.from_block, *request.to_block));
  }
  if (request.limit && *request.limit < 0) return InvalidArgument("limit must not be negative");
  std::unique_ptr<Scan> scan(new Scan());
  scan->tables_ = tables;
  scan->request_ = request;
  ARROW_ASSIGN_OR_RAISE(TableInfo info, tables->GetTable(id));
  const arrow::Schema& schema = *info.schema;
  std::vector<int> wanted;
  if (request.columns.empty()) {
    for (int i = 0; i < schema.num_fields(); ++i) wanted.push_back(i);
  } else {
    for (const auto& c : request.columns) {
      int i = schema.GetFieldIndex(c);
      if (i < 0) {
        return InvalidArgument(fmt::format("table {} has no column \"{}\" (columns: {})", id.ToString(), c,
                                           fmt::join(schema.field_names(), ", ")));
      }
      // Each column once: the readers take a set of columns (a repeated one read past its batch).
      if (std::find(wanted.begin(), wanted.end(), i) != wanted.end()) {
        return InvalidArgument(fmt::format("columns names \"{}\" twice", c));
      }
      wanted.push_back(i);
    }
  }
  // Columns to read: the output ones, then block_num and the filter's if not among them.
  scan->read_columns_ = wanted;
  auto slot = [&](int file_col) {
    auto it = std::find(scan->read_columns_.begin(), scan->read_columns_.end(), file_col);
    if (it != scan->read_columns_.end()) return static_cast<int>(it - scan->read_columns_.begin());
    scan->read_columns_.push_back(file_col);
    return static_cast<int>(scan->read_columns_.size() - 1);
  };
  scan->block_column_ = slot(schema.GetFieldIndex("block_num"));
  if (request.filter) {
    int fc = schema.GetFieldIndex(request.filter->column);
    if (fc < 0) {
      return InvalidArgument(
          fmt::format("filter: table {} has no column \"{}\"", id.ToString(), request.filter->column));
    }
    ARROW_ASSIGN_OR_RAISE(scan->filter_value_,
                          MakeValue(*schema.field(fc)->type(), request.filter->value, request.filter->column));
    static const std::map<std::string, std::string> functions = {{"=", "equal"},   {"!=", "not_equal"},
                                                                 {"<", "less"},    {"<=", "less_equal"},
                                                                 {">", "greater"}, {">=", "greater_equal"}};
    scan->filter_function_ = functions.at(request.filter->op);
    scan->filter_column_ = slot(fc);
  }
  std::vector<std::shared_ptr<arrow::Field>> out_fields;
  for (size_t i = 0; i < wanted.size(); ++i) {
    scan->output_columns_.push_back(static_cast<int>(i));
    out_fields.push_back(schema.field(wanted[i]));
  }
  scan->output_schema_ = arrow::schema(out_fields);
  // A block range reads only the segment records that overlap it.
  ARROW_ASSIGN_OR_RAISE(
      scan->snapshot_, tables->OpenSnapshot(id, request.from_block.value_or(0), request.to_block.value_or(UINT64_MAX)));
  // The files outside the range were skipped without being looked at.
  int64_t outside = scan->snapshot_->table_files() - static_cast<int64_t>(scan->snapshot_->segments().size());
  scan->stats_.files += outside;
  scan->stats_.files_skipped += outside;
  return scan;
}

Scan::~Scan() = default;

Result<std::shared_ptr<arrow::RecordBatch>> Scan::Next() {
  const auto& segments = snapshot_->segments();
  uint64_t from = request_.from_block.value_or(0);
  uint64_t to = request_.to_block.value_or(UINT64_MAX);
  while (true) {
    if (request_.limit && emitted_ >= *request_.limit) return nullptr;
    if (!reader_) {
      if (file_ >= segments.size()) return nullptr;
      const auto& seg = segments[file_];
      if (seg.end < from || seg.start > to) {
        stats_.files++;
        stats_.files_skipped++;
        ++file_;
        continue;
      }
      if (seg.start > to) return nullptr;
      ARROW_ASSIGN_OR_RAISE(reader_, SegmentFileReader::Open(&tables_->blobs(), seg.path));
      // A file of an earlier schema version reads with nulls in the columns added since.
      ARROW_RETURN_NOT_OK(reader_->ReadAs(snapshot_->schema()));
      stats_.files++;
      row_group_ = 0;
    }
    if (row_group_ >= reader_->num_row_groups()) {
      reader_.reset();
      ++file_;
      continue;
    }
    int rg = row_group_++;
    stats_.row_groups++;
    uint64_t lo, hi;
    int file_block_col = read_columns_[block_column_];
    if (reader_->RowGroupUInt64Range(rg, file_block_col, &lo, &hi) && (hi < from || lo > to)) {
      stats_.row_groups_skipped++;
      continue;
    }
    // A block range reads only the pages that hold it (the page index says which).
    ARROW_ASSIGN_OR_RAISE(auto table, request_.from_block || request_.to_block
                                          ? reader_->ReadRowGroupBlocks(rg, read_columns_, file_block_col, from, to)
                                          : reader_->ReadRowGroup(rg, read_columns_));
    ARROW_ASSIGN_OR_RAISE(auto batch, table->CombineChunksToBatch());
    ARROW_ASSIGN_OR_RAISE(auto out, Process(batch));
    if (out && out->num_rows() > 0) return out;
  }
}

Result<std::shared_ptr<arrow::RecordBatch>> Scan::Process(std::shared_ptr<arrow::RecordBatch> batch) {
  // Rows are in block order: the range is a slice.
  const auto& blocks = static_cast<const arrow::UInt64Array&>(*batch->column(block_column_));
  const uint64_t* v = blocks.raw_values();
  int64_t n = blocks.length();
  uint64_t from = request_.from_block.value_or(0);
  uint64_t to = request_.to_block.value_or(UINT64_MAX);
  int64_t begin = std::lower_bound(v, v + n, from) - v;
  int64_t end = std::upper_bound(v, v + n, to) - v;
  if (begin >= end) return nullptr;
  batch = batch->Slice(begin, end - begin);
  if (filter_value_) {
    ARROW_ASSIGN_OR_RAISE(
        auto mask, arrow::compute::CallFunction(filter_function_, {batch->column(filter_column_), filter_value_}));
    ARROW_ASSIGN_OR_RAISE(auto filtered, arrow::compute::Filter(batch, mask));
    batch = filtered.record_batch();
  }
  ARROW_ASSIGN_OR_RAISE(batch, batch->SelectColumns(output_columns_));
  if (request_.limit) {
    int64_t room = *request_.limit - emitted_;
    if (batch->num_rows() > room) batch = batch->Slice(0, room);
  }
  emitted_ += batch->num_rows();
  stats_.rows += batch->num_rows();
  return batch;
}

}  // namespace sediment::table
