// Bloom filters of the row groups Sediment encodes, made after Arrow's
// writer instead of by it (EncodeRowGroups, parquet_assembler.h). Arrow's
// writer hashes every value of a column; a column chunk whose data pages are
// all dictionary-encoded holds each distinct value once, in its dictionary
// page, and only those are hashed here (a logs table's address and topic0: a
// few thousand values for 131,072 rows). A chunk that fell back to PLAIN is
// hashed from its Arrow values, as Arrow's writer does. Filters are sized and
// folded as Arrow's writer sizes and folds them: the same bits.
//
// Thread-safety: free functions over the caller's values.
#pragma once

#include <parquet/properties.h>

#include <memory>
#include <vector>

#include "base/status.h"

namespace arrow {
class Schema;
class Table;
}  // namespace arrow
namespace parquet {
class SchemaDescriptor;
}  // namespace parquet

namespace sediment::table {

struct EncodedRowGroup;

struct BloomPlan {
  // What to encode with: the properties without the filters made here.
  std::shared_ptr<parquet::WriterProperties> props;
  struct Column {
    int leaf = 0;   // in the Parquet schema
    int field = 0;  // in the Arrow schema
    parquet::BloomFilterOptions options;
  };
  std::vector<Column> columns;
  int64_t max_row_group_rows = 0;  // the ndv of filters whose options give none
};

// Which of `props`' bloom filters for `schema` (written as `descr`) are made
// here: those of top-level columns of integer, floating-point, date, time,
// timestamp, binary, string and fixed-size binary types. Others stay Arrow's.
BloomPlan PlanBloomFilters(const arrow::Schema& schema, const parquet::SchemaDescriptor& descr,
                           const std::shared_ptr<parquet::WriterProperties>& props);

// Sets rg->bloom_filter of each planned column; `rows` are rg's rows, in the
// schema the plan was made for.
Status MakeBloomFilters(const BloomPlan& plan, const arrow::Table& rows, EncodedRowGroup* rg);

}  // namespace sediment::table
