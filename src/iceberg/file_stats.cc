#include "iceberg/file_stats.h"

#include <fmt/format.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/schema.h>
#include <parquet/statistics.h>

#include <cstring>

#include "blob/blob.h"

namespace sediment::iceberg {
namespace {

// The Iceberg bytes of a Parquet plain-encoded min or max, or nullopt.
std::optional<std::string> ToBound(BoundKind kind, const std::string& plain) {
  switch (kind) {
    case BoundKind::kInt32:
    case BoundKind::kFloat:
      if (plain.size() != 4) return std::nullopt;
      return plain;
    case BoundKind::kUInt32ToLong:  // files store it as an 8-byte long (older ones: 4 bytes, zero-extended)
      if (plain.size() == 8) return plain;
      if (plain.size() != 4) return std::nullopt;
      return plain + std::string(4, '\0');
    case BoundKind::kInt64:
    case BoundKind::kDouble:
      if (plain.size() != 8) return std::nullopt;
      return plain;
    case BoundKind::kBytes:
      if (plain.size() > 64) return std::nullopt;  // a truncated upper bound would need rounding up
      return plain;
    case BoundKind::kNone:
      return std::nullopt;
  }
  return std::nullopt;
}

// Whether bound `a` orders before `b` for the column's type.
bool Less(BoundKind kind, const std::string& a, const std::string& b) {
  switch (kind) {
    case BoundKind::kInt32: {
      int32_t x, y;
      std::memcpy(&x, a.data(), 4);
      std::memcpy(&y, b.data(), 4);
      return x < y;
    }
    case BoundKind::kUInt32ToLong:
    case BoundKind::kInt64: {
      int64_t x, y;
      std::memcpy(&x, a.data(), 8);
      std::memcpy(&y, b.data(), 8);
      return x < y;
    }
    case BoundKind::kFloat: {
      float x, y;
      std::memcpy(&x, a.data(), 4);
      std::memcpy(&y, b.data(), 4);
      return x < y;
    }
    case BoundKind::kDouble: {
      double x, y;
      std::memcpy(&x, a.data(), 8);
      std::memcpy(&y, b.data(), 8);
      return x < y;
    }
    default:
      return a < b;  // unsigned byte order
  }
}

// Folds one row group's chunk into the column's figures; `bounded` turns false
// once a chunk has no usable min/max.
void Fold(const parquet::ColumnChunkMetaData& chunk, BoundKind kind, ColumnStats* s, bool* bounded) {
  s->size += chunk.total_compressed_size();
  s->values += chunk.num_values();
  auto stats = chunk.statistics();
  if (!stats || !stats->HasNullCount()) s->nulls = -1;  // unknown from here on
  if (!stats) {
    *bounded = false;
    return;
  }
  if (s->nulls >= 0) s->nulls += stats->null_count();
  if (!*bounded || !stats->HasMinMax()) {
    *bounded = false;
    return;
  }
  auto lo = ToBound(kind, stats->EncodeMin()), hi = ToBound(kind, stats->EncodeMax());
  if (!lo || !hi) {
    *bounded = false;
    return;
  }
  if (!s->lower || Less(kind, *lo, *s->lower)) s->lower = lo;
  if (!s->upper || Less(kind, *s->upper, *hi)) s->upper = hi;
}

}  // namespace

Result<std::map<int, ColumnStats>> ReadColumnStats(blob::BlobStore* blobs, const std::string& path, int64_t size,
                                                   const IcebergSchema& schema) {
  ARROW_ASSIGN_OR_RAISE(auto file, blobs->OpenReaderSized(path, size));
  try {
    return StatsOf(*parquet::ParquetFileReader::Open(file)->metadata(), schema);
  } catch (const std::exception& e) {  // Parquet reports a bad footer by throwing
    return arrow::Status::IOError(fmt::format("{}: reading the footer: {}", path, e.what()));
  }
}

Result<std::map<int, ColumnStats>> StatsOf(const parquet::FileMetaData& footer, const IcebergSchema& schema) {
  const parquet::FileMetaData* meta = &footer;
  // Top-level primitive columns: a leaf whose path has one element.
  std::map<std::string, int> leaf_of;
  for (int i = 0; i < meta->num_columns(); ++i) {
    auto p = meta->schema()->Column(i)->path()->ToDotVector();
    if (p.size() == 1) leaf_of[p[0]] = i;
  }
  std::map<int, ColumnStats> out;
  for (const IcebergColumn& c : schema.columns) {
    auto leaf = leaf_of.find(c.name);
    if (c.type.empty() || leaf == leaf_of.end()) continue;
    ColumnStats s;
    bool bounded = c.bounds != BoundKind::kNone;
    for (int rg = 0; rg < meta->num_row_groups(); ++rg) {
      Fold(*meta->RowGroup(rg)->ColumnChunk(leaf->second), c.bounds, &s, &bounded);
    }
    if (!bounded) s.lower = s.upper = std::nullopt;
    out[c.field_id] = std::move(s);
  }
  return out;
}

}  // namespace sediment::iceberg
