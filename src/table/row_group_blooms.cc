#include "table/row_group_blooms.h"

#include <arrow/api.h>
#include <parquet/bloom_filter.h>
#include <parquet/metadata.h>
#include <parquet/schema.h>

#include <string_view>

#include "table/parquet_assembler.h"
#include "table/plain_decode.h"
#include "table/plain_pages.h"

namespace sediment::table {
namespace {

// The hashes of `values`' non-null values, as Parquet hashes their physical values.
void HashArray(const arrow::Array& values, const parquet::BloomFilter& filter, std::vector<uint64_t>* out) {
  out->clear();
  const int64_t n = values.length();
  auto each = [&](auto hash) {
    for (int64_t i = 0; i < n; ++i) {
      if (values.IsValid(i)) out->push_back(hash(i));
    }
  };
  const auto* data = values.data().get();
  switch (values.type_id()) {
    case arrow::Type::INT32:
    case arrow::Type::DATE32:
    case arrow::Type::TIME32:
      each([&](int64_t i) { return filter.Hash(data->GetValues<int32_t>(1)[i]); });
      break;
    case arrow::Type::INT64:
    case arrow::Type::TIMESTAMP:
    case arrow::Type::TIME64:
      each([&](int64_t i) { return filter.Hash(data->GetValues<int64_t>(1)[i]); });
      break;
    case arrow::Type::FLOAT:
      each([&](int64_t i) { return filter.Hash(data->GetValues<float>(1)[i]); });
      break;
    case arrow::Type::DOUBLE:
      each([&](int64_t i) { return filter.Hash(data->GetValues<double>(1)[i]); });
      break;
    case arrow::Type::BINARY:
    case arrow::Type::STRING: {
      const auto& binary = static_cast<const arrow::BinaryArray&>(values);
      each([&](int64_t i) {
        const std::string_view v = binary.GetView(i);
        parquet::ByteArray ba(static_cast<uint32_t>(v.size()), reinterpret_cast<const uint8_t*>(v.data()));
        return filter.Hash(&ba);
      });
      break;
    }
    case arrow::Type::FIXED_SIZE_BINARY: {
      const auto& fixed = static_cast<const arrow::FixedSizeBinaryArray&>(values);
      const auto width = static_cast<uint32_t>(fixed.byte_width());
      each([&](int64_t i) {
        parquet::FLBA v(fixed.GetValue(i));
        return filter.Hash(&v, width);
      });
      break;
    }
    default:
      break;  // not planned (PlainWidth)
  }
}

// Whether every data page of `cc` is dictionary-encoded: its dictionary page then holds every value.
bool AllDictionaryEncoded(const parquet::ColumnChunkMetaData& cc) {
  if (!cc.has_dictionary_page()) return false;
  const auto stats = cc.encoding_stats();
  if (stats.empty()) return false;
  for (const auto& e : stats) {
    if (e.page_type == parquet::PageType::DICTIONARY_PAGE) continue;
    if (e.encoding != parquet::Encoding::RLE_DICTIONARY && e.encoding != parquet::Encoding::PLAIN_DICTIONARY) {
      return false;
    }
  }
  return true;
}

}  // namespace

BloomPlan PlanBloomFilters(const arrow::Schema& schema, const parquet::SchemaDescriptor& descr,
                           const std::shared_ptr<parquet::WriterProperties>& props) {
  BloomPlan plan;
  plan.max_row_group_rows = props->max_row_group_length();
  parquet::WriterProperties::Builder without(*props);
  for (int leaf = 0; leaf < descr.num_columns(); ++leaf) {
    const auto* column = descr.Column(leaf);
    auto options = props->bloom_filter_options(column->path());
    if (!options) continue;
    const auto parts = column->path()->ToDotVector();
    const int field = parts.size() == 1 ? schema.GetFieldIndex(parts[0]) : -1;
    // Hashed from Arrow values as they are stored (PlainWidth), or left to Arrow's writer.
    if (field < 0 || PlainWidth(*column, *schema.field(field)->type()) < 0) continue;
    plan.columns.push_back({leaf, field, *options});
    without.disable_bloom_filter(column->path());
  }
  plan.props = plan.columns.empty() ? props : without.build();
  return plan;
}

Status MakeBloomFilters(const BloomPlan& plan, const arrow::Table& rows, EncodedRowGroup* rg) {
  auto md = rg->source->RowGroup(rg->index);
  rg->bloom_filter.resize(static_cast<size_t>(md->num_columns()));
  std::vector<uint64_t> hashes;
  for (const auto& c : plan.columns) {
    auto filter = std::make_shared<parquet::BlockSplitBloomFilter>();
    filter->Init(parquet::BlockSplitBloomFilter::OptimalNumOfBytes(
        static_cast<uint64_t>(c.options.ndv.value_or(plan.max_row_group_rows)), c.options.fpp));
    auto cc = md->ColumnChunk(c.leaf);
    bool hashed = false;
    if (AllDictionaryEncoded(*cc)) {
      const int64_t start = cc->dictionary_page_offset() - rg->begin;
      if (start >= 0 && start + cc->total_compressed_size() <= rg->bytes->size()) {
        std::string_view chunk(reinterpret_cast<const char*>(rg->bytes->data() + start),
                               static_cast<size_t>(cc->total_compressed_size()));
        ARROW_ASSIGN_OR_RAISE(hashed, HashDictionaryPage(chunk, *rg->source->schema()->Column(c.leaf),
                                                         static_cast<int>(cc->compression()), filter.get()));
      }
    }
    if (!hashed) {
      for (const auto& chunk : rows.column(c.field)->chunks()) {
        HashArray(*chunk, *filter, &hashes);
        if (!hashes.empty()) filter->InsertHashes(hashes.data(), static_cast<int>(hashes.size()));
      }
    }
    if (c.options.fold) filter->FoldToTargetFpp(c.options.fpp);
    rg->bloom_filter[static_cast<size_t>(c.leaf)] = std::move(filter);
  }
  return Status::OK();
}

}  // namespace sediment::table
