#include "table/dictionary_choice.h"

#include <arrow/api.h>
#include <parquet/properties.h>
#include <parquet/schema.h>

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace sediment::table {
namespace {

constexpr int64_t kSample = 4096;

// The bytes value `i` of `array` takes in a dictionary page (PLAIN), and its
// bytes for counting repeats; false for a null or a type not sampled.
bool SampleValue(const arrow::Array& array, int64_t i, std::string_view* bytes, int64_t* plain_size) {
  if (array.IsNull(i)) return false;
  const auto& data = *array.data();
  switch (array.type_id()) {
    case arrow::Type::BINARY:
    case arrow::Type::STRING:
      *bytes = static_cast<const arrow::BinaryArray&>(array).GetView(i);
      *plain_size = static_cast<int64_t>(bytes->size()) + 4;
      return true;
    case arrow::Type::FIXED_SIZE_BINARY: {
      const auto& fixed = static_cast<const arrow::FixedSizeBinaryArray&>(array);
      *bytes =
          std::string_view(reinterpret_cast<const char*>(fixed.GetValue(i)), static_cast<size_t>(fixed.byte_width()));
      *plain_size = fixed.byte_width();
      return true;
    }
    default: {
      const auto* type = dynamic_cast<const arrow::FixedWidthType*>(array.type().get());
      const int width = type ? type->bit_width() / 8 : 0;
      if (width < 4 || data.buffers.size() < 2 || !data.buffers[1]) return false;
      *bytes = std::string_view(reinterpret_cast<const char*>(data.buffers[1]->data()) + (data.offset + i) * width,
                                static_cast<size_t>(width));
      *plain_size = width;
      return true;
    }
  }
}

// The bytes the dictionary of `column` would take in a row group of `rows` rows, estimated from a sample.
double EstimatedDictionaryBytes(const arrow::ChunkedArray& column, int64_t rows) {
  const int64_t length = column.length();
  const int64_t n = std::min(length, kSample);
  if (n == 0) return 0;
  std::unordered_map<std::string_view, int64_t> seen;
  seen.reserve(static_cast<size_t>(n));
  int64_t sampled = 0, bytes = 0;
  size_t chunk = 0;
  int64_t chunk_start = 0;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t row = k * length / n;
    while (row >= chunk_start + column.chunk(static_cast<int>(chunk))->length()) {
      chunk_start += column.chunk(static_cast<int>(chunk++))->length();
    }
    std::string_view value;
    int64_t size = 0;
    if (!SampleValue(*column.chunk(static_cast<int>(chunk)), row - chunk_start, &value, &size)) continue;
    ++seen[value];
    ++sampled;
    bytes += size;
  }
  if (sampled == 0) return 0;
  int64_t pairs = 0;
  for (const auto& [value, count] : seen) pairs += count * (count - 1) / 2;
  const double group = static_cast<double>(std::min(rows, length));
  // Sampled values per non-null row, scaled to the group; n^2 / 2 pairs when every value repeats nothing.
  const double present = group * static_cast<double>(sampled) / static_cast<double>(n);
  const double distinct =
      pairs == 0 ? present
                 : std::min(present, static_cast<double>(sampled) * static_cast<double>(sampled) / (2.0 * pairs));
  return distinct * static_cast<double>(bytes) / static_cast<double>(sampled);
}

}  // namespace

std::shared_ptr<parquet::WriterProperties> ChooseDictionaries(const arrow::Table& table,
                                                              const parquet::SchemaDescriptor& descr,
                                                              const std::shared_ptr<parquet::WriterProperties>& props,
                                                              int64_t rows_per_group) {
  const double limit = 2.0 * static_cast<double>(props->dictionary_pagesize_limit());
  std::unique_ptr<parquet::WriterProperties::Builder> without;
  for (int leaf = 0; leaf < descr.num_columns(); ++leaf) {
    const auto* column = descr.Column(leaf);
    if (!props->dictionary_enabled(column->path()) || column->physical_type() == parquet::Type::BOOLEAN) continue;
    const auto parts = column->path()->ToDotVector();
    const int field = parts.size() == 1 ? table.schema()->GetFieldIndex(parts[0]) : -1;
    if (field < 0 || EstimatedDictionaryBytes(*table.column(field), rows_per_group) <= limit) continue;
    if (!without) without = std::make_unique<parquet::WriterProperties::Builder>(*props);
    without->disable_dictionary(column->path());
  }
  return without ? without->build() : props;
}

}  // namespace sediment::table
