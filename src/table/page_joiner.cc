#include "table/page_joiner.h"

#include <arrow/util/compression.h>
#include <fmt/format.h>
#include <parquet/schema.h>
#include <parquet/types.h>

#include <cstring>
#include <memory>

#include "table/page_format.h"

namespace sediment::table {
namespace {

// Orders encoded (PLAIN) minimums and maximums of one column as its
// statistics do: Arrow's comparator for the column's logical type.
class ValueOrder {
 public:
  explicit ValueOrder(const parquet::ColumnDescriptor& column)
      : type_(column.physical_type()), width_(column.type_length()), comparator_(parquet::Comparator::Make(&column)) {}

  // Whether `a` < `b`; false for values that do not decode (never chosen).
  bool Less(const std::string& a, const std::string& b) const {
    switch (type_) {
      case parquet::Type::BOOLEAN:
        return Fixed<parquet::BooleanType>(a, b);
      case parquet::Type::INT32:
        return Fixed<parquet::Int32Type>(a, b);
      case parquet::Type::INT64:
        return Fixed<parquet::Int64Type>(a, b);
      case parquet::Type::FLOAT:
        return Fixed<parquet::FloatType>(a, b);
      case parquet::Type::DOUBLE:
        return Fixed<parquet::DoubleType>(a, b);
      case parquet::Type::BYTE_ARRAY:
        return Typed<parquet::ByteArrayType>()->Compare(Bytes(a), Bytes(b));
      case parquet::Type::FIXED_LEN_BYTE_ARRAY:
        if (static_cast<int>(a.size()) != width_ || static_cast<int>(b.size()) != width_) return false;
        return Typed<parquet::FLBAType>()->Compare(parquet::FLBA(U8(a)), parquet::FLBA(U8(b)));
      default:
        return false;
    }
  }

 private:
  static const uint8_t* U8(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }
  static parquet::ByteArray Bytes(const std::string& s) {
    return parquet::ByteArray(static_cast<uint32_t>(s.size()), U8(s));
  }
  template <typename DType>
  const parquet::TypedComparator<DType>* Typed() const {
    return static_cast<const parquet::TypedComparator<DType>*>(comparator_.get());
  }
  template <typename DType>
  bool Fixed(const std::string& a, const std::string& b) const {
    using T = typename DType::c_type;
    if (a.size() != sizeof(T) || b.size() != sizeof(T)) return false;
    T x, y;
    std::memcpy(&x, a.data(), sizeof(T));
    std::memcpy(&y, b.data(), sizeof(T));
    return Typed<DType>()->Compare(x, y);
  }

  parquet::Type::type type_;
  int width_;
  std::shared_ptr<parquet::Comparator> comparator_;
};

Result<parquet::EncodedStatistics> Merge(const ValueOrder& order,
                                         const std::vector<const parquet::EncodedStatistics*>& parts) {
  parquet::EncodedStatistics out;
  bool nulls_known = true;
  int64_t nulls = 0;
  const parquet::EncodedStatistics *min = nullptr, *max = nullptr;
  for (const auto* s : parts) {
    nulls_known &= s->has_null_count;
    if (s->has_null_count) nulls += s->null_count;
    if (s->all_null_value) continue;
    if (!(s->has_min && s->has_max)) {
      return Status::Invalid("a part without bounds (only parts that have them, or are all null, merge)");
    }
    if (!min || order.Less(s->min(), min->min())) min = s;
    if (!max || order.Less(max->max(), s->max())) max = s;
  }
  if (nulls_known) out.set_null_count(nulls);
  if (!min) {
    out.all_null_value = !parts.empty();
  } else {
    out.set_min(min->min());
    out.set_max(max->max());
    out.is_min_value_exact = min->is_min_value_exact;
    out.is_max_value_exact = max->is_max_value_exact;
  }
  return out;
}

// Whether a page may join others: a data page v2 of PLAIN values that
// concatenate, in a codec whose compressed streams concatenate.
bool Joinable(const parquet::ColumnDescriptor& column, int codec, const PageHeader& h) {
  if (codec != arrow::Compression::ZSTD && codec != arrow::Compression::UNCOMPRESSED) return false;
  if (h.type != static_cast<int32_t>(parquet::PageType::DATA_PAGE_V2)) return false;
  if (h.encoding != static_cast<int32_t>(parquet::Encoding::PLAIN)) return false;
  switch (column.physical_type()) {
    case parquet::Type::INT32:
    case parquet::Type::INT64:
    case parquet::Type::FLOAT:
    case parquet::Type::DOUBLE:
    case parquet::Type::BYTE_ARRAY:
    case parquet::Type::FIXED_LEN_BYTE_ARRAY:
      return column.sort_order() != parquet::SortOrder::UNKNOWN;
    default:
      return false;  // booleans are bit-packed across the page; INT96 has no ordering
  }
}

struct Parsed {
  const SourcePage* page;
  PageHeader header;
  const uint8_t* body;
  int64_t header_bytes;
  bool joinable;
  int64_t levels() const { return int64_t{header.repetition_bytes} + header.definition_bytes; }
  int64_t values_compressed() const { return header.compressed - levels(); }
  int64_t values_uncompressed() const { return header.uncompressed - levels(); }
};

void AddHistogram(const std::vector<int64_t>& from, std::vector<int64_t>* into) {
  if (into->size() < from.size()) into->resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) (*into)[i] += from[i];
}

class Joiner {
 public:
  Joiner(const parquet::ColumnDescriptor& column, const JoinLimits& limits, std::vector<JoinedPage>* out)
      : column_(column), order_(column), limits_(limits), out_(out) {}

  Status Add(const Parsed& p) {
    if (!p.joinable) {
      ARROW_RETURN_NOT_OK(Flush());
      Emit(p);
      return Status::OK();
    }
    if (!group_.empty()) {
      const bool fits = rows_ + p.page->rows <= limits_.max_rows &&
                        uncompressed_ + p.values_uncompressed() <= limits_.max_uncompressed && CompressionAgrees(p);
      if (!fits) ARROW_RETURN_NOT_OK(Flush());
    }
    group_.push_back(p);
    rows_ += p.page->rows;
    uncompressed_ += p.values_uncompressed();
    return Status::OK();
  }

  Status Flush() {
    if (group_.empty()) return Status::OK();
    Status st = Status::OK();
    if (group_.size() == 1) {
      Emit(group_.front());
    } else {
      st = EmitJoined();
    }
    group_.clear();
    rows_ = uncompressed_ = 0;
    return st;
  }

 private:
  // Pages whose values are compressed and pages whose values are not do not
  // join; a page without value bytes (all null) joins either.
  bool CompressionAgrees(const Parsed& p) const {
    if (p.values_compressed() == 0) return true;
    for (const auto& q : group_) {
      if (q.values_compressed() > 0 && q.header.is_compressed != p.header.is_compressed) return false;
    }
    return true;
  }

  // One source page, as it was.
  void Emit(const Parsed& p) {
    JoinedPage page;
    page.parts.push_back(p.page->bytes);
    page.first_row = p.page->first_row;
    page.size = static_cast<int64_t>(p.page->bytes.size());
    page.uncompressed = p.header_bytes + p.header.uncompressed;
    page.encoding = p.header.encoding;
    page.stats = p.page->stats;
    page.sizes = p.page->sizes;
    page.unencoded_bytes = p.page->unencoded_bytes;
    out_->push_back(std::move(page));
  }

  // The group's levels of one kind (repetition first in the page, then
  // definition) decoded and encoded again as one run.
  Status JoinLevels(bool repetition, std::string* out, int32_t* bytes) {
    const int16_t max_level = repetition ? column_.max_repetition_level() : column_.max_definition_level();
    *bytes = 0;
    if (max_level == 0) return Status::OK();
    levels_.clear();
    for (const auto& p : group_) {
      const int64_t count = p.header.num_values;
      // A flat column's page without nulls: every level is the maximum.
      if (!repetition && column_.max_repetition_level() == 0 && p.header.num_nulls == 0) {
        levels_.insert(levels_.end(), static_cast<size_t>(count), max_level);
        continue;
      }
      const uint8_t* at = p.body + (repetition ? 0 : p.header.repetition_bytes);
      const int32_t size = repetition ? p.header.repetition_bytes : p.header.definition_bytes;
      ARROW_RETURN_NOT_OK(DecodeLevels(at, static_cast<size_t>(size), max_level, count, &levels_));
    }
    const size_t before = out->size();
    EncodeLevels(levels_, max_level, out);
    *bytes = static_cast<int32_t>(out->size() - before);
    return Status::OK();
  }

  Status EmitJoined() {
    JoinedPage page;
    PageHeader h;
    h.type = static_cast<int32_t>(parquet::PageType::DATA_PAGE_V2);
    h.encoding = group_.front().header.encoding;
    h.num_values = h.num_nulls = h.num_rows = 0;
    h.is_compressed = false;
    int64_t values_compressed = 0, values_uncompressed = 0;
    std::vector<const parquet::EncodedStatistics*> stats;
    bool unencoded_known = true;
    int64_t unencoded = 0;
    for (const auto& p : group_) {
      h.num_values += p.header.num_values;
      h.num_nulls += p.header.num_nulls;
      h.num_rows += p.header.num_rows;
      if (p.values_compressed() > 0) h.is_compressed |= p.header.is_compressed;
      values_compressed += p.values_compressed();
      values_uncompressed += p.values_uncompressed();
      stats.push_back(&p.page->stats);
      AddHistogram(p.page->sizes.definition_level_histogram, &page.sizes.definition_level_histogram);
      AddHistogram(p.page->sizes.repetition_level_histogram, &page.sizes.repetition_level_histogram);
      unencoded_known &= p.page->unencoded_bytes.has_value();
      if (p.page->unencoded_bytes) unencoded += *p.page->unencoded_bytes;
    }
    std::string levels;
    ARROW_RETURN_NOT_OK(JoinLevels(true, &levels, &h.repetition_bytes));
    ARROW_RETURN_NOT_OK(JoinLevels(false, &levels, &h.definition_bytes));
    const int64_t level_bytes = static_cast<int64_t>(levels.size());
    h.compressed = level_bytes + values_compressed;
    h.uncompressed = level_bytes + values_uncompressed;
    if (h.compressed > kMaxPageBytes || h.uncompressed > kMaxPageBytes) {
      return Status::Invalid("a joined page past the largest page size");  // limits prevent it
    }
    page.head = DataPageV2Header(h);
    const int64_t header_bytes = static_cast<int64_t>(page.head.size());
    page.head += levels;
    for (const auto& p : group_) {
      if (p.values_compressed() == 0) continue;
      page.parts.emplace_back(reinterpret_cast<const char*>(p.body + p.levels()),
                              static_cast<size_t>(p.values_compressed()));
    }
    page.first_row = group_.front().page->first_row;
    page.size = static_cast<int64_t>(page.head.size()) + values_compressed;
    page.uncompressed = header_bytes + h.uncompressed;
    page.encoding = h.encoding;
    ARROW_ASSIGN_OR_RAISE(page.stats, Merge(order_, stats));
    if (unencoded_known) page.unencoded_bytes = unencoded;
    out_->push_back(std::move(page));
    return Status::OK();
  }

  const parquet::ColumnDescriptor& column_;
  ValueOrder order_;
  const JoinLimits& limits_;
  std::vector<JoinedPage>* out_;
  std::vector<Parsed> group_;
  int64_t rows_ = 0, uncompressed_ = 0;
  std::vector<int16_t> levels_;
};

}  // namespace

Result<parquet::EncodedStatistics> MergeEncodedStatistics(const parquet::ColumnDescriptor& column,
                                                          const std::vector<const parquet::EncodedStatistics*>& parts) {
  if (column.sort_order() == parquet::SortOrder::UNKNOWN) {
    return Status::Invalid(fmt::format("column {} has no ordering to merge statistics by", column.name()));
  }
  auto merged = Merge(ValueOrder(column), parts);
  if (!merged.ok()) return Status::Invalid(fmt::format("column {}: {}", column.name(), merged.status().message()));
  merged->set_is_signed(column.sort_order() == parquet::SortOrder::SIGNED);
  return merged;
}

Result<std::vector<JoinedPage>> JoinPages(const parquet::ColumnDescriptor& column, int codec,
                                          const std::vector<SourcePage>& pages, const JoinLimits& limits) {
  std::vector<JoinedPage> out;
  out.reserve(pages.size());
  Joiner joiner(column, limits, &out);
  for (size_t i = 0; i < pages.size(); ++i) {
    const auto* p = reinterpret_cast<const uint8_t*>(pages[i].bytes.data());
    const auto* end = p + pages[i].bytes.size();
    Parsed parsed{&pages[i], {}, nullptr, 0, false};
    if (!ReadPageHeader(p, end, &parsed.header, &parsed.body) || parsed.body + parsed.header.compressed != end) {
      return Status::Invalid(
          fmt::format("column {}: page {} of the run has a malformed header or does not fill its "
                      "{} bytes",
                      column.path()->ToDotString(), i, pages[i].bytes.size()));
    }
    parsed.header_bytes = parsed.body - p;
    // Its statistics must allow a merge (bounds, or all null) to join.
    const auto& s = pages[i].stats;
    parsed.joinable = Joinable(column, codec, parsed.header) && (s.all_null_value || (s.has_min && s.has_max)) &&
                      pages[i].rows == parsed.header.num_rows;
    ARROW_RETURN_NOT_OK(joiner.Add(parsed));
  }
  ARROW_RETURN_NOT_OK(joiner.Flush());
  return out;
}

}  // namespace sediment::table
