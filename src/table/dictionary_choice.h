// Which columns of the rows Sediment encodes get a dictionary, chosen before
// Arrow's writer sees them. Arrow's writer tries a dictionary on every column
// and drops it for the rest of the chunk once it outgrows
// dictionary_pagesize_limit (256 KiB here): a column of nearly unique values
// (a logs table's value, topic1, data) is hashed value by value until then,
// and its chunk keeps a full dictionary page and pages of indices in front of
// its plain pages, which every query then decodes too. A sample of each
// column predicts that drop; such columns are written plain from the start,
// as DuckDB writes them.
//
// The prediction errs towards keeping a dictionary: the number of distinct
// values is estimated from repeats within an evenly spaced sample (the
// birthday estimate), which skewed columns (hot addresses and topics) make
// smaller, never larger, and a dictionary is dropped only when its estimate
// is twice the limit. Deterministic: the same rows choose the same way.
//
// Thread-safety: a free function over the caller's values.
#pragma once

#include <cstdint>
#include <memory>

namespace arrow {
class Table;
}  // namespace arrow
namespace parquet {
class SchemaDescriptor;
class WriterProperties;
}  // namespace parquet

namespace sediment::table {

// `props` with dictionaries disabled for the top-level columns of `table`
// (written as `descr`) whose dictionary would outgrow twice props'
// dictionary_pagesize_limit in a row group of `rows_per_group` rows; `props`
// itself when none would (or dictionaries are off).
std::shared_ptr<parquet::WriterProperties> ChooseDictionaries(const arrow::Table& table,
                                                              const parquet::SchemaDescriptor& descr,
                                                              const std::shared_ptr<parquet::WriterProperties>& props,
                                                              int64_t rows_per_group);

}  // namespace sediment::table
