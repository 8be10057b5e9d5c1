// The merge's footer reads (merge_footers_internal.h).
#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/util/key_value_metadata.h>
#include <fmt/format.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>

#include <algorithm>

#include "table/merge_footers_internal.h"
#include "table/parquet_assembler.h"
#include "table/parquet_guard_internal.h"
#include "table/parquet_io.h"
#include "table/run_on_internal.h"
#include "table/stored_types.h"

namespace sediment::table::merge_internal {
namespace {

// On object storage a head file is fetched whole to read its footer (its
// bytes then serve the merge): a request costs more than its bytes.
constexpr int64_t kFetchWholeBytes = 1 << 20;

}  // namespace

FooterReads::FooterReads(const MergeContext& ctx, const TableInfo& table, const std::vector<SegmentRecord>& inputs)
    : ctx_(ctx), table_(table), inputs_(inputs), ahead_(static_cast<size_t>(std::max(ctx.workers, 1)) * 64) {
  // A file written with the table's schema stores exactly this: comparing
  // it spares converting each footer's schema to Arrow's.
  auto stored = StoredArrowSchema(*StoredSchema(table.schema));
  if (stored.ok()) stored_schema_ = std::move(*stored);
  opening_.resize(inputs.size());
  SubmitUpTo(ahead_);
}

FooterReads::~FooterReads() {
  for (auto& f : opening_) {
    if (f.valid()) f.wait();
  }
}

Result<FooterRead> FooterReads::Take(size_t i) {
  SubmitUpTo(i + ahead_);
  auto read = opening_[i].get();
  if (!read.ok()) return Status::IOError(fmt::format("{}: {}", inputs_[i].path, read.status().message()));
  const auto& md = read->footer;
  const auto& path = inputs_[i].path;
  auto kv = WithStoredSchema(md->key_value_metadata());
  auto stored = kv ? kv->Get("ARROW:schema") : Result<std::string>(Status::KeyError(""));
  if (stored_schema_.empty() || !stored.ok() || *stored != stored_schema_) {
    ARROW_ASSIGN_OR_RAISE(auto schema, FooterStoredSchema(path, *md));
    // The table's schema, or an earlier version of it (its columns first): those read with nulls added.
    auto own = TableSchemaOf(schema);
    bool earlier = own->num_fields() <= table_.schema->num_fields();
    for (int c = 0; earlier && c < own->num_fields(); ++c) {
      earlier = own->field(c)->Equals(*table_.schema->field(c), /*check_metadata=*/false);
    }
    if (!earlier) {
      return Status::IOError(fmt::format("{}: schema {} differs from the table's", path, schema->ToString()));
    }
  }
  if (md->num_rows() != inputs_[i].rows) {
    return Status::IOError(
        fmt::format("{}: {} rows in the file, {} in the registry", path, md->num_rows(), inputs_[i].rows));
  }
  return std::move(*read);
}

void FooterReads::SubmitUpTo(size_t end) {
  for (; submitted_ < std::min(end, inputs_.size()); ++submitted_) {
    const auto& s = inputs_[submitted_];
    const bool whole = ctx_.blobs->Remote() && s.stored_bytes <= kFetchWholeBytes;
    opening_[submitted_] = RunOn<Result<FooterRead>>(
        ctx_.footer_pool, [blobs = ctx_.blobs, path = s.path, size = s.stored_bytes, whole]() -> Result<FooterRead> {
          // One request for the footer: the registry knows the size.
          FooterRead out;
          std::shared_ptr<arrow::io::RandomAccessFile> file;
          if (whole) {
            ARROW_ASSIGN_OR_RAISE(out.whole, blobs->ReadSized(path, 0, size, size));
            file = std::make_shared<arrow::io::BufferReader>(out.whole);
          } else {
            ARROW_ASSIGN_OR_RAISE(file, blobs->OpenReaderSized(path, size));
          }
          ARROW_ASSIGN_OR_RAISE(out.footer, ParquetGuard(path, [&]() -> Result<std::shared_ptr<parquet::FileMetaData>> {
                                  return parquet::ParquetFileReader::Open(std::move(file))->metadata();
                                }));
          return out;
        });
  }
}

}  // namespace sediment::table::merge_internal
