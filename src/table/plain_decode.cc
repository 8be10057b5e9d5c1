#include "table/plain_decode.h"

#include <arrow/api.h>
#include <arrow/buffer_builder.h>
#include <arrow/util/bit_util.h>
#include <fmt/format.h>
#include <parquet/metadata.h>
#include <parquet/schema.h>

#include <climits>
#include <cstring>

#include "table/page_format.h"
#include "table/plain_pages.h"
#include "table/stored_types.h"

namespace sediment::table {
namespace {

// Whether `type` counts in seconds: Parquet has no such unit, and Arrow's
// writer stores those values as milliseconds (times 1,000).
bool InSeconds(const arrow::DataType& type) {
  if (type.id() == arrow::Type::TIMESTAMP) {
    return static_cast<const arrow::TimestampType&>(type).unit() == arrow::TimeUnit::SECOND;
  }
  return type.id() == arrow::Type::TIME32 &&
         static_cast<const arrow::Time32Type&>(type).unit() == arrow::TimeUnit::SECOND;
}

}  // namespace

int PlainWidth(const parquet::ColumnDescriptor& column, const arrow::DataType& type) {
  if (column.max_repetition_level() != 0 || column.max_definition_level() > 1 || InSeconds(type)) return -1;
  const auto id = type.id();
  switch (column.physical_type()) {
    case parquet::Type::INT32:
      return id == arrow::Type::INT32 || id == arrow::Type::DATE32 || id == arrow::Type::TIME32 ? 4 : -1;
    case parquet::Type::INT64:
      return id == arrow::Type::INT64 || id == arrow::Type::TIMESTAMP || id == arrow::Type::TIME64 ? 8 : -1;
    case parquet::Type::FLOAT:
      return id == arrow::Type::FLOAT ? 4 : -1;
    case parquet::Type::DOUBLE:
      return id == arrow::Type::DOUBLE ? 8 : -1;
    case parquet::Type::BYTE_ARRAY:
      return id == arrow::Type::BINARY || id == arrow::Type::STRING ? 0 : -1;
    case parquet::Type::FIXED_LEN_BYTE_ARRAY:
      return id == arrow::Type::FIXED_SIZE_BINARY &&
                     static_cast<const arrow::FixedSizeBinaryType&>(type).byte_width() == column.type_length() &&
                     column.type_length() > 0
                 ? column.type_length()
                 : -1;
    default:
      return -1;
  }
}

bool PlainDecodable(const parquet::RowGroupMetaData& rg, const parquet::SchemaDescriptor& descr,
                    const parquet::SchemaDescriptor& expected, const arrow::Schema& schema) {
  if (!descr.Equals(expected) || expected.num_columns() != schema.num_fields() ||
      rg.num_columns() != expected.num_columns()) {
    return false;
  }
  for (int c = 0; c < rg.num_columns(); ++c) {
    if (PlainWidth(*expected.Column(c), *schema.field(c)->type()) < 0) return false;
    auto cc = rg.ColumnChunk(c);
    const auto codec = cc->compression();
    if ((codec != arrow::Compression::ZSTD && codec != arrow::Compression::UNCOMPRESSED) || cc->has_dictionary_page()) {
      return false;
    }
    for (auto e : cc->encodings()) {
      if (e != parquet::Encoding::PLAIN && e != parquet::Encoding::RLE) return false;  // RLE: the levels
    }
  }
  return true;
}

// One column's arrays as they grow: validity bits (nullable columns),
// values, and offsets (binary).
struct PlainTableBuilder::Column {
  const parquet::ColumnDescriptor* descr = nullptr;
  std::shared_ptr<arrow::Field> field;
  int width = 0;              // bytes a value; 0: binary
  int32_t fixed_width = 0;    // a binary column's kFixedSizeKey: every value's length
  int64_t unsigned_max = -1;  // an integer column's kUnsignedKey bound (StoredUnsignedMax)
  bool nullable = false;      // one definition level
  arrow::TypedBufferBuilder<bool> validity;
  arrow::BufferBuilder values;
  arrow::TypedBufferBuilder<int32_t> offsets;
  int64_t length = 0, nulls = 0;
  std::vector<int16_t> levels;

  Status Invalid(const std::string& what) const {
    return Status::Invalid(fmt::format("column {}: {}", field->name(), what));
  }
  Status AddPage(const PlainPage& page);
  Status AddFixed(const PlainPage& page, const int16_t* defs, int64_t valid);
  Status CheckUnsigned(const uint8_t* values, int64_t count) const;
  Status AddBinary(const PlainPage& page, const int16_t* defs);
};

Status PlainTableBuilder::Column::AddPage(const PlainPage& page) {
  const int64_t n = page.num_values;
  int64_t page_nulls = 0;
  const int16_t* defs = nullptr;
  if (nullable) {
    if (page.num_nulls != 0) {  // data page v1 (-1) does not say: the levels do
      levels.clear();
      ARROW_RETURN_NOT_OK(DecodeLevels(page.levels, page.levels_size, 1, n, &levels));
      if (static_cast<int64_t>(levels.size()) != n) return Invalid("a page's levels do not cover its values");
      defs = levels.data();
      for (int16_t d : levels) page_nulls += d == 0;
    }
    ARROW_RETURN_NOT_OK(validity.Reserve(n));
    if (defs == nullptr) {
      validity.UnsafeAppend(n, true);
    } else {
      for (int64_t k = 0; k < n; ++k) validity.UnsafeAppend(defs[k] != 0);
    }
  }
  if (width > 0) {
    ARROW_RETURN_NOT_OK(AddFixed(page, defs, n - page_nulls));
  } else {
    ARROW_RETURN_NOT_OK(AddBinary(page, defs));
  }
  length += n;
  nulls += page_nulls;
  return Status::OK();
}

Status PlainTableBuilder::Column::AddFixed(const PlainPage& page, const int16_t* defs, int64_t valid) {
  const int64_t size = page.values_end - page.values;
  if (size != valid * width) {
    return Invalid(
        fmt::format("a page holds {} bytes of values where its {} values take {}", size, valid, valid * width));
  }
  if (unsigned_max >= 0) ARROW_RETURN_NOT_OK(CheckUnsigned(page.values, valid));
  if (defs == nullptr) return values.Append(page.values, size);
  // A null's slot holds zeros.
  ARROW_RETURN_NOT_OK(values.Reserve(page.num_values * width));
  const uint8_t* v = page.values;
  for (int64_t k = 0; k < page.num_values; ++k) {
    if (defs[k] != 0) {
      values.UnsafeAppend(v, width);
      v += width;
    } else {
      values.UnsafeAppend(width, 0);
    }
  }
  return Status::OK();
}

Status PlainTableBuilder::Column::CheckUnsigned(const uint8_t* values, int64_t count) const {
  for (int64_t k = 0; k < count; ++k) {
    int64_t v = 0;
    if (width == 4) {
      int32_t narrow;
      std::memcpy(&narrow, values + k * 4, 4);
      v = narrow;
    } else {
      std::memcpy(&v, values + k * 8, 8);
    }
    if (v < 0 || v > unsigned_max) {
      return Invalid(fmt::format("a value {} outside its unsigned type (at most {})", v, unsigned_max));
    }
  }
  return Status::OK();
}

Status PlainTableBuilder::Column::AddBinary(const PlainPage& page, const int16_t* defs) {
  ARROW_RETURN_NOT_OK(offsets.Reserve(page.num_values));
  const uint8_t* v = page.values;
  const uint8_t* end = page.values_end;
  for (int64_t k = 0; k < page.num_values; ++k) {
    if (defs == nullptr || defs[k] != 0) {
      uint32_t n;
      if (end - v < 4) return Invalid("a value runs past the end of its page");
      std::memcpy(&n, v, 4);
      v += 4;
      if (static_cast<uint64_t>(end - v) < n) return Invalid("a value runs past the end of its page");
      if (fixed_width != 0 && n != static_cast<uint32_t>(fixed_width)) {
        return Invalid(fmt::format("a value of {} bytes where its type, fixed_size_binary({}), holds {}", n,
                                   fixed_width, fixed_width));
      }
      if (values.length() + n > INT32_MAX) return Invalid("more than 2 GiB of values in one merge step");
      ARROW_RETURN_NOT_OK(values.Append(v, n));
      v += n;
    }
    offsets.UnsafeAppend(static_cast<int32_t>(values.length()));
  }
  if (v != end) return Invalid(fmt::format("{} bytes left after a page's values", end - v));
  return Status::OK();
}

PlainTableBuilder::PlainTableBuilder(std::shared_ptr<arrow::Schema> schema, const parquet::SchemaDescriptor& descr)
    : schema_(std::move(schema)) {
  for (int c = 0; c < schema_->num_fields(); ++c) {
    auto col = std::make_unique<Column>();
    col->descr = descr.Column(c);
    col->field = schema_->field(c);
    col->width = PlainWidth(*col->descr, *col->field->type());
    col->fixed_width = StoredFixedWidth(*col->field);
    if (col->width == 4 || col->width == 8) col->unsigned_max = StoredUnsignedMax(*col->field);
    col->nullable = col->descr->max_definition_level() == 1;
    columns_.push_back(std::move(col));
  }
}

PlainTableBuilder::~PlainTableBuilder() = default;

namespace {

// `kept` emptied for a builder to write into, or a new buffer if an array
// still holds it.
Result<arrow::BufferBuilder> EmptiedFor(std::shared_ptr<arrow::ResizableBuffer>& kept) {
  if (!kept || kept.use_count() > 1) {
    ARROW_ASSIGN_OR_RAISE(kept, arrow::AllocateResizableBuffer(0));
  }
  ARROW_RETURN_NOT_OK(kept->Resize(0, /*shrink_to_fit=*/false));
  return arrow::BufferBuilder(kept);
}

}  // namespace

Status PlainTableBuilder::ReserveColumn(int c, int64_t rows, int64_t uncompressed) {
  Column& col = *columns_[static_cast<size_t>(c)];
  if (rows < 0 || uncompressed < 0 || (col.width > 0 && rows > INT64_MAX / col.width)) {
    return col.Invalid(fmt::format("{} rows of {} bytes: more than can be held", rows, uncompressed));
  }
  if (reuse_ && col.length == 0) {
    if (col.nullable) {
      ARROW_ASSIGN_OR_RAISE(auto bits, EmptiedFor(reuse_->validity));
      col.validity = arrow::TypedBufferBuilder<bool>(std::move(bits));
    }
    ARROW_ASSIGN_OR_RAISE(col.values, EmptiedFor(reuse_->values));
    if (col.width == 0) {
      ARROW_ASSIGN_OR_RAISE(auto offsets, EmptiedFor(reuse_->offsets));
      col.offsets = arrow::TypedBufferBuilder<int32_t>(std::move(offsets));
    }
  }
  if (col.nullable) ARROW_RETURN_NOT_OK(col.validity.Reserve(rows));
  if (col.width > 0) return col.values.Reserve(rows * col.width);
  ARROW_RETURN_NOT_OK(col.offsets.Reserve(rows + 1));
  return col.values.Reserve(uncompressed);
}

Status PlainTableBuilder::Reserve(int64_t rows, const std::vector<int64_t>& uncompressed) {
  for (size_t c = 0; c < columns_.size(); ++c) {
    ARROW_RETURN_NOT_OK(ReserveColumn(static_cast<int>(c), rows, c < uncompressed.size() ? uncompressed[c] : 0));
  }
  return Status::OK();
}

Status PlainTableBuilder::AppendColumn(int c, const parquet::RowGroupMetaData& rg, std::string_view bytes,
                                       int64_t begin) {
  const int64_t rows = rg.num_rows();
  Column& col = *columns_[static_cast<size_t>(c)];
  if (col.width == 0 && col.offsets.length() == 0) ARROW_RETURN_NOT_OK(col.offsets.Append(0));
  auto cc = rg.ColumnChunk(c);
  const int64_t start = cc->data_page_offset();
  const int64_t size = cc->total_compressed_size();
  if (start < begin || size < 0 || start - begin > static_cast<int64_t>(bytes.size()) ||
      size > static_cast<int64_t>(bytes.size()) - (start - begin)) {
    return col.Invalid(fmt::format("its chunk of {} bytes at {} lies outside the bytes read", size, start));
  }
  const int64_t before = col.length;
  auto add = [&](const PlainPage& page) {
    // Before anything is decoded or reserved: a page claims no more values than the row group has rows.
    if (page.num_values > rows - (col.length - before)) {
      return col.Invalid(fmt::format("a page of {} values past the {} rows of its row group", page.num_values, rows));
    }
    return col.AddPage(page);
  };
  ARROW_ASSIGN_OR_RAISE(bool handled,
                        ForEachPlainPage(bytes.substr(static_cast<size_t>(start - begin), static_cast<size_t>(size)),
                                         *col.descr, static_cast<int>(cc->compression()), add));
  if (!handled) {
    return col.Invalid(
        "a page this reader does not handle (not PLAIN, or levels not RLE) where its chunk's "
        "metadata says PLAIN");
  }
  if (col.length - before != rows) {
    return col.Invalid(fmt::format("{} values in a row group of {} rows", col.length - before, rows));
  }
  return Status::OK();
}

Status PlainTableBuilder::Append(const parquet::RowGroupMetaData& rg, std::string_view bytes, int64_t begin) {
  for (size_t c = 0; c < columns_.size(); ++c) {
    ARROW_RETURN_NOT_OK(AppendColumn(static_cast<int>(c), rg, bytes, begin));
  }
  rows_ += rg.num_rows();
  return Status::OK();
}

Result<std::shared_ptr<arrow::Array>> PlainTableBuilder::FinishColumn(int c) {
  Column& col = *columns_[static_cast<size_t>(c)];
  if (col.width == 0 && col.offsets.length() == 0) ARROW_RETURN_NOT_OK(col.offsets.Append(0));
  std::shared_ptr<arrow::Buffer> bitmap, data, offsets;
  if (reuse_) {
    // Slices of the kept buffers: Finish would zero each from its end to
    // its capacity (the largest column's), column after column. A slice
    // holds its buffer, so the next column sees it taken until it goes.
    if (col.nullable && col.nulls > 0) {
      bitmap = arrow::SliceBuffer(reuse_->validity, 0, arrow::bit_util::BytesForBits(col.length));
    }
    data = arrow::SliceBuffer(reuse_->values, 0, col.values.length());
    if (col.width == 0) {
      offsets = arrow::SliceBuffer(reuse_->offsets, 0, col.offsets.length() * static_cast<int64_t>(sizeof(int32_t)));
    }
    col.validity.Reset();
    col.values.Reset();
    col.offsets.Reset();
  } else {
    if (col.nullable && col.nulls > 0) {
      ARROW_RETURN_NOT_OK(col.validity.Finish(&bitmap));
    } else {
      col.validity.Reset();
    }
    ARROW_RETURN_NOT_OK(col.values.Finish(&data));
    if (col.width == 0) ARROW_RETURN_NOT_OK(col.offsets.Finish(&offsets));
  }
  std::vector<std::shared_ptr<arrow::Buffer>> buffers = {bitmap, data};
  if (col.width == 0) buffers = {bitmap, offsets, data};
  auto array = arrow::MakeArray(arrow::ArrayData::Make(col.field->type(), col.length, std::move(buffers), col.nulls));
  col.length = col.nulls = 0;
  return array;
}

Result<std::shared_ptr<arrow::Table>> PlainTableBuilder::Finish() {
  arrow::ArrayVector arrays;
  for (size_t c = 0; c < columns_.size(); ++c) {
    ARROW_ASSIGN_OR_RAISE(arrays.emplace_back(), FinishColumn(static_cast<int>(c)));
  }
  return arrow::Table::Make(schema_, std::move(arrays), rows_);
}

}  // namespace sediment::table
