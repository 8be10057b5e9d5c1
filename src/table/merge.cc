#include "table/merge.h"

#include <arrow/api.h>
#include <arrow/io/concurrency.h>
#include <arrow/io/interfaces.h>
#include <arrow/io/memory.h>
#include <arrow/util/future.h>
#include <arrow/util/key_value_metadata.h>
#include <fmt/format.h>
#include <parquet/arrow/schema.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>
#include <parquet/schema.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>

#include "table/parquet_assembler.h"
#include "table/parquet_guard_internal.h"
#include "table/run_on_internal.h"
#include "table/stored_types.h"

namespace sediment::table {
namespace {

// Every input's footer: read once, checked, kept for planning and for opening
// the file again without reading it twice. No file stays open between steps.
using Footers = std::vector<std::shared_ptr<parquet::FileMetaData>>;
// Small inputs on object storage, fetched whole when their footer was read
// (one request instead of two); null for the others.
using Wholes = std::vector<std::shared_ptr<arrow::Buffer>>;

// On object storage a head file is fetched whole to read its footer (its
// bytes then serve the merge): a request costs more than its bytes.
constexpr int64_t kFetchWholeBytes = 1 << 20;

struct FooterRead {
  std::shared_ptr<parquet::FileMetaData> footer;
  std::shared_ptr<arrow::Buffer> whole;
};

// Every input's footer, read metadata_concurrency at a time on the footer
// pool, a bounded distance ahead of the planning (so a merge of thousands of
// head files does not hold all their footers at once), and taken in input
// order as the merge plans: steps are planned, and run, while later footers
// are still being read. Each footer is checked against the registry; the
// first failure, by input order, names its file.
class FooterReads {
 public:
  FooterReads(const MergeContext& ctx, const TableInfo& table, const std::vector<SegmentRecord>& inputs)
      : ctx_(ctx), table_(table), inputs_(inputs), ahead_(static_cast<size_t>(std::max(ctx.workers, 1)) * 64) {
    // A file written with the table's schema stores exactly this: comparing
    // it spares converting each footer's schema to Arrow's.
    auto stored = StoredArrowSchema(*StoredSchema(table.schema));
    if (stored.ok()) stored_schema_ = std::move(*stored);
    opening_.resize(inputs.size());
    SubmitUpTo(ahead_);
  }
  ~FooterReads() {
    for (auto& f : opening_) {
      if (f.valid()) f.wait();
    }
  }

  // Input i's footer, checked (and its bytes, if fetched whole). Call in order.
  Result<FooterRead> Take(size_t i) {
    SubmitUpTo(i + ahead_);
    auto read = opening_[i].get();
    if (!read.ok()) return Status::IOError(fmt::format("{}: {}", inputs_[i].path, read.status().message()));
    const auto& md = read->footer;
    const auto& path = inputs_[i].path;
    auto kv = md->key_value_metadata();
    auto stored = kv ? kv->Get("ARROW:schema") : Result<std::string>(Status::KeyError(""));
    if (stored_schema_.empty() || !stored.ok() || *stored != stored_schema_) {
      std::shared_ptr<arrow::Schema> schema;
      ARROW_RETURN_NOT_OK(
          parquet::arrow::FromParquetSchema(md->schema(), parquet::ArrowReaderProperties(), kv, &schema));
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

 private:
  void SubmitUpTo(size_t end) {
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
            ARROW_ASSIGN_OR_RAISE(out.footer,
                                  ParquetGuard(path, [&]() -> Result<std::shared_ptr<parquet::FileMetaData>> {
                                    return parquet::ParquetFileReader::Open(std::move(file))->metadata();
                                  }));
            return out;
          });
    }
  }

  const MergeContext& ctx_;
  const TableInfo& table_;
  const std::vector<SegmentRecord>& inputs_;
  const size_t ahead_;
  size_t submitted_ = 0;
  std::string stored_schema_;
  std::vector<std::future<Result<FooterRead>>> opening_;
};

SegmentRecord OutputRecord(const TableInfo& table, const std::vector<SegmentRecord>& inputs, TimePoint now,
                           uint32_t writer_tag) {
  SegmentRecord out;
  out.id = NewSegmentId(inputs.front().start, writer_tag);
  out.path = TableRegistry::SegmentPath(table.id, out.id);
  out.start = inputs.front().start;
  out.end = inputs.back().end;
  out.end_hash = inputs.back().end_hash;
  out.parent_hash = inputs.front().parent_hash;
  for (const auto& s : inputs) {
    out.generation = std::max(out.generation, s.generation + 1);
    out.parents.push_back(s.id);
  }
  out.created_at_us = ToUnixMicros(now);
  return out;
}

// Buffers a step reads its local input files into: one a step, given back
// when the step's last slice is gone and taken again by a later step. A merge
// of thousands of head files then holds a few buffers, faulted in once,
// instead of thousands of freed ones that the allocator keeps resident for a
// while (the tiny head merge at 2 threads peaked at 147 MiB, now 125:
// bench/RESULTS.md). At most `keep` are held at once, free or in use: a step
// that fits in no free buffer replaces the largest one.
class StepBuffers : public std::enable_shared_from_this<StepBuffers> {
 public:
  explicit StepBuffers(size_t keep) : keep_(keep) { free_.reserve(keep); }

  // `size` bytes, uninitialised.
  Result<std::shared_ptr<arrow::Buffer>> Take(int64_t size) {
    std::unique_ptr<arrow::ResizableBuffer> buffer;
    {
      std::lock_guard lock(mu_);
      auto fits = free_.end(), largest = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        const int64_t c = (*it)->capacity();
        if (c >= size && (fits == free_.end() || c < (*fits)->capacity())) fits = it;
        if (largest == free_.end() || c > (*largest)->capacity()) largest = it;
      }
      if (fits != free_.end()) {
        buffer = std::move(*fits);
        free_.erase(fits);
      } else {
        if (largest != free_.end()) {  // too small: its memory goes to the new one
          free_.erase(largest);
          --held_;
        }
        most_held_ = std::max(most_held_, ++held_);
      }
    }
    if (!buffer) {
      // Room for a step a little larger than this one: steps vary in size.
      auto made = arrow::AllocateResizableBuffer(size + size / 8);
      if (!made.ok()) {
        std::lock_guard lock(mu_);
        --held_;
        return made.status();
      }
      buffer = std::move(*made);
    }
    ARROW_RETURN_NOT_OK(buffer->Resize(size, /*shrink_to_fit=*/false));
    return std::shared_ptr<arrow::Buffer>(buffer.release(), [self = shared_from_this()](arrow::Buffer* b) {
      self->Give(std::unique_ptr<arrow::ResizableBuffer>(static_cast<arrow::ResizableBuffer*>(b)));
    });
  }

  // The most buffers held at once.
  int64_t most_held() {
    std::lock_guard lock(mu_);
    return most_held_;
  }

 private:
  void Give(std::unique_ptr<arrow::ResizableBuffer> buffer) {
    std::lock_guard lock(mu_);
    if (free_.size() < keep_) {
      free_.push_back(std::move(buffer));  // no allocation: reserved
    } else {
      --held_;
    }
  }

  const size_t keep_;
  std::mutex mu_;
  std::vector<std::unique_ptr<arrow::ResizableBuffer>> free_;
  int64_t held_ = 0, most_held_ = 0;
};

// One row group of one input.
struct Piece {
  size_t input = 0;
  int row_group = 0;
};

// One step of the output, in order: a row group copied as it is, row groups
// whose data pages are concatenated into one, or row groups decoded together
// and encoded again.
enum class StepKind { kCopy, kPages, kEncode };
struct Step {
  StepKind kind = StepKind::kEncode;
  std::vector<Piece> pieces;
};

// What a step made, ready for the writer: row groups to copy, or a run of pages.
struct Prepared {
  std::vector<EncodedRowGroup> row_groups;
  std::optional<PageRun> run;
};

// Laid out and compressed as the output is.
bool SameLayout(const parquet::RowGroupMetaData& rg, const parquet::SchemaDescriptor& descr,
                const parquet::WriterProperties& props) {
  if (!rg.schema()->Equals(descr)) return false;
  for (int c = 0; c < rg.num_columns(); ++c) {
    if (rg.ColumnChunk(c)->compression() != props.compression(descr.Column(c)->path())) return false;
  }
  return true;
}

// Whether a row group's encoded bytes can go into the output as they are:
// laid out and compressed as the output is, and carrying what the output
// must have (statistics, encodings, page index, the bloom filters asked for,
// and dictionaries if the output is final).
bool Compatible(const parquet::RowGroupMetaData& rg, const parquet::SchemaDescriptor& descr,
                const parquet::WriterProperties& props, const WriterSettings& settings, FileLayout layout) {
  if (rg.num_rows() > settings.max_row_group_rows || rg.total_byte_size() > settings.max_row_group_bytes) return false;
  if (!SameLayout(rg, descr, props)) return false;
  if (layout == FileLayout::kFinal && PagesCopyable(rg)) return false;
  for (int c = 0; c < rg.num_columns(); ++c) {
    auto cc = rg.ColumnChunk(c);
    auto path = descr.Column(c)->path();
    if (!cc->is_stats_set() || cc->encoding_stats().empty()) return false;
    if (!cc->GetColumnIndexLocation() || !cc->GetOffsetIndexLocation()) return false;
    if (props.column_properties(path).bloom_filter_enabled() && !cc->bloom_filter_offset()) return false;
  }
  return true;
}

// Full: half the row or byte limit, or more. A full compatible row group is
// copied; others are packed with their neighbours into full ones.
bool Full(const parquet::RowGroupMetaData& rg, const WriterSettings& settings) {
  return rg.num_rows() * 2 >= settings.max_row_group_rows || rg.total_byte_size() * 2 >= settings.max_row_group_bytes;
}

// Turns inputs' row groups, in order, into steps: full compatible row groups
// are copied; the others are packed into full ones, by concatenating their
// pages where they allow it and the output is not final, else by encoding
// (a lone one is copied).
class Planner {
 public:
  Planner(const parquet::SchemaDescriptor& descr, const parquet::WriterProperties& props,
          const WriterSettings& settings, FileLayout layout)
      : descr_(descr), props_(props), settings_(settings), layout_(layout) {}

  // Adds input i's row groups; steps that are complete go to `out`.
  void Add(size_t i, const parquet::FileMetaData& md, std::vector<Step>* out) {
    for (int r = 0; r < md.num_row_groups(); ++r) {
      auto rg = md.RowGroup(r);
      const bool compatible = Compatible(*rg, descr_, props_, settings_, layout_);
      if (compatible && Full(*rg, settings_)) {
        Flush(out);
        out->push_back(Step{StepKind::kCopy, {Piece{i, r}}});
        continue;
      }
      const StepKind kind = layout_ == FileLayout::kPages && SameLayout(*rg, descr_, props_) && PagesCopyable(*rg)
                                ? StepKind::kPages
                                : StepKind::kEncode;
      if (!pending_.pieces.empty() &&
          (kind != pending_.kind || pending_rows_ + rg->num_rows() > settings_.max_row_group_rows ||
           pending_bytes_ + rg->total_byte_size() > settings_.max_row_group_bytes)) {
        Flush(out);
      }
      if (pending_.pieces.empty()) {
        pending_compatible_ = compatible;
        pending_.kind = kind;
      }
      pending_.pieces.push_back(Piece{i, r});
      pending_rows_ += rg->num_rows();
      pending_bytes_ += rg->total_byte_size();
    }
  }

  // The first input a step not yet handed out may read, if any.
  std::optional<size_t> PendingFirstInput() const {
    if (pending_.pieces.empty()) return std::nullopt;
    return pending_.pieces.front().input;
  }

  void Flush(std::vector<Step>* out) {
    if (pending_.pieces.empty()) return;
    // A small row group with nothing to pack it with (a file's last one,
    // between full ones) would come out as it went in: copy it.
    if (pending_.pieces.size() == 1 && pending_compatible_) pending_.kind = StepKind::kCopy;
    out->push_back(std::move(pending_));
    pending_ = Step{};
    pending_rows_ = pending_bytes_ = 0;
  }

 private:
  const parquet::SchemaDescriptor& descr_;
  const parquet::WriterProperties& props_;
  const WriterSettings& settings_;
  const FileLayout layout_;
  Step pending_;
  bool pending_compatible_ = false;  // its one piece could be copied
  int64_t pending_rows_ = 0, pending_bytes_ = 0;
};

// A file of which only bytes [begin, begin + bytes->size()) were fetched: a
// row group's column chunks, read in one request. Reads outside fail.
class FetchedRange final : public arrow::io::internal::RandomAccessFileConcurrencyWrapper<FetchedRange> {
 public:
  FetchedRange(std::shared_ptr<arrow::Buffer> bytes, int64_t begin, int64_t size)
      : bytes_(std::move(bytes)), begin_(begin), size_(size) {}
  bool closed() const override { return closed_; }

 protected:
  friend arrow::io::internal::RandomAccessFileConcurrencyWrapper<FetchedRange>;
  Status DoClose() {
    closed_ = true;
    return Status::OK();
  }
  Result<int64_t> DoTell() const { return pos_; }
  Status DoSeek(int64_t position) {
    pos_ = position;
    return Status::OK();
  }
  Result<int64_t> DoGetSize() { return size_; }
  Result<std::shared_ptr<arrow::Buffer>> DoReadAt(int64_t position, int64_t nbytes, bool allow_short_read = true) {
    (void)allow_short_read;
    if (position < begin_ || position + nbytes > begin_ + bytes_->size()) {
      return Status::IOError(fmt::format("read of [{}, {}) outside the fetched range [{}, {})", position,
                                         position + nbytes, begin_, begin_ + bytes_->size()));
    }
    return arrow::SliceBuffer(bytes_, position - begin_, nbytes);
  }
  Result<int64_t> DoReadAt(int64_t position, int64_t nbytes, bool allow_short_read, void* out) {
    ARROW_ASSIGN_OR_RAISE(auto b, DoReadAt(position, nbytes, allow_short_read));
    std::memcpy(out, b->data(), static_cast<size_t>(b->size()));
    return b->size();
  }
  Result<std::shared_ptr<arrow::Buffer>> DoRead(int64_t nbytes) {
    ARROW_ASSIGN_OR_RAISE(auto b, DoReadAt(pos_, nbytes));
    pos_ += b->size();
    return b;
  }
  Result<int64_t> DoRead(int64_t nbytes, void* out) {
    ARROW_ASSIGN_OR_RAISE(int64_t n, DoReadAt(pos_, nbytes, true, out));
    pos_ += n;
    return n;
  }

 private:
  std::shared_ptr<arrow::Buffer> bytes_;
  int64_t begin_, size_;
  int64_t pos_ = 0;
  bool closed_ = false;
};

// What a step reads and writes: shared by its worker tasks.
struct StepInputs {
  blob::BlobStore* blobs = nullptr;
  std::shared_ptr<StepBuffers> buffers;
  const Footers* footers = nullptr;
  const Wholes* wholes = nullptr;
  const std::vector<SegmentRecord>* inputs = nullptr;
  const WriterSettings* settings = nullptr;
  std::shared_ptr<parquet::WriterProperties> props;
  std::shared_ptr<arrow::Schema> schema;

  Status Named(size_t input, const Status& st) const {
    return Status::IOError(fmt::format("{}: {}", (*inputs)[input].path, st.message()));
  }
};

// A row group copied as it is.
Result<Prepared> ProduceCopy(const StepInputs& in, const Step& step) {
  const Piece& p = step.pieces.front();
  const auto& s = (*in.inputs)[p.input];
  auto file = in.blobs->OpenReaderSized(s.path, s.stored_bytes);
  if (!file.ok()) return in.Named(p.input, file.status());
  auto reader = SegmentFileReader::Open(*file, s.path, false, (*in.footers)[p.input], false);
  if (!reader.ok()) return in.Named(p.input, reader.status());
  ARROW_ASSIGN_OR_RAISE(auto rg, (*reader)->ReadEncoded(p.row_group));
  Prepared out;
  out.row_groups.push_back(std::move(rg));
  return out;
}

// Row groups whose data pages become one row group. Each input's bytes are
// fetched once, all inputs at once: a small file (a head file) whole, with
// its page index and bloom filters in the same request; a large one by
// ranges. Bloom filters of the run are OR-ed or built from their column alone.
Result<Prepared> ProducePages(const StepInputs& in, const Step& step) {
  struct Source {
    size_t input = 0;
    std::shared_ptr<arrow::io::RandomAccessFile> file;
    arrow::Future<std::shared_ptr<arrow::Buffer>> whole;  // valid if fetched whole
    std::unique_ptr<parquet::ParquetFileReader> reader;
  };
  std::vector<Source> sources;
  std::vector<size_t> local_wholes;  // sources read whole from local files
  int64_t local_bytes = 0;
  for (const Piece& p : step.pieces) {
    if (!sources.empty() && sources.back().input == p.input) continue;
    const auto& s = (*in.inputs)[p.input];
    Source src;
    src.input = p.input;
    if (const auto& whole = (*in.wholes)[p.input]) {  // fetched with its footer
      src.file = std::make_shared<arrow::io::BufferReader>(whole);
      sources.push_back(std::move(src));
      continue;
    }
    auto file = in.blobs->OpenReaderSized(s.path, s.stored_bytes);
    if (!file.ok()) return in.Named(p.input, file.status());
    src.file = *file;
    int64_t lo = INT64_MAX, hi = 0;
    for (const Piece& q : step.pieces) {
      if (q.input != p.input) continue;
      auto [b, e] = RowGroupByteRange(*(*in.footers)[p.input]->RowGroup(q.row_group));
      lo = std::min(lo, b);
      hi = std::max(hi, e);
    }
    if (s.stored_bytes <= std::max<int64_t>(1 << 20, 2 * (hi - lo))) {
      if (in.blobs->Remote()) {
        src.whole = src.file->ReadAsync(arrow::io::default_io_context(), 0, s.stored_bytes);
      } else {
        local_wholes.push_back(sources.size());
        local_bytes += s.stored_bytes;
      }
    }
    sources.push_back(std::move(src));
  }
  // Local files read whole go into one buffer, one after another: a read
  // from the page cache needs no other thread.
  if (!local_wholes.empty()) {
    auto taken = in.buffers->Take(local_bytes);
    if (!taken.ok()) return in.Named(sources[local_wholes.front()].input, taken.status());
    auto buffer = std::move(*taken);
    int64_t at = 0;
    for (size_t k : local_wholes) {
      const int64_t size = (*in.inputs)[sources[k].input].stored_bytes;
      auto got = sources[k].file->ReadAt(0, size, buffer->mutable_data() + at);
      if (got.ok() && *got != size) got = Status::IOError(fmt::format("read {} of its {} bytes", *got, size));
      if (!got.ok()) return in.Named(sources[k].input, got.status());
      sources[k].whole =
          arrow::Future<std::shared_ptr<arrow::Buffer>>::MakeFinished(arrow::SliceBuffer(buffer, at, size));
      at += size;
    }
  }
  Prepared out;
  out.run.emplace();
  std::vector<parquet::ParquetFileReader*> readers;
  size_t k = 0;
  for (const Piece& p : step.pieces) {
    while (sources[k].input != p.input) ++k;
    Source& src = sources[k];
    if (!src.reader) {
      if (src.whole.is_valid()) {
        auto bytes = src.whole.result();
        if (!bytes.ok()) return in.Named(p.input, bytes.status());
        src.file = std::make_shared<arrow::io::BufferReader>(*bytes);
      }
      auto opened =
          ParquetGuard((*in.inputs)[p.input].path, [&]() -> Result<std::unique_ptr<parquet::ParquetFileReader>> {
            return parquet::ParquetFileReader::Open(src.file, parquet::default_reader_properties(),
                                                    (*in.footers)[p.input]);
          });
      if (!opened.ok()) return opened.status();
      src.reader = std::move(*opened);
    }
    auto rg = ReadEncodedRowGroup(src.reader.get(), src.file.get(), p.row_group);
    if (!rg.ok()) return in.Named(p.input, rg.status());
    out.run->pieces.push_back(std::move(*rg));
    readers.push_back(src.reader.get());
  }
  const auto* descr = (*in.footers)[step.pieces.front().input]->schema();
  out.run->bloom_filter.resize(static_cast<size_t>(descr->num_columns()));
  for (int c = 0; c < descr->num_columns(); ++c) {
    auto options = in.props->bloom_filter_options(descr->Column(c)->path());
    if (!options) continue;
    ARROW_ASSIGN_OR_RAISE(out.run->bloom_filter[c], RunBloomFilter(out.run->pieces, readers, c, *options));
  }
  return out;
}

// Row groups decoded together and encoded again. All are fetched at once,
// one request each, several in flight, then decoded from memory.
Result<Prepared> ProduceEncoded(const StepInputs& in, const Step& step) {
  struct Fetch {
    std::shared_ptr<arrow::io::RandomAccessFile> file;
    int64_t begin = 0;
    arrow::Future<std::shared_ptr<arrow::Buffer>> bytes;
  };
  std::vector<Fetch> fetches;
  for (const Piece& p : step.pieces) {
    const auto& s = (*in.inputs)[p.input];
    auto file = in.blobs->OpenReaderSized(s.path, s.stored_bytes);
    if (!file.ok()) return in.Named(p.input, file.status());
    auto [begin, end] = RowGroupByteRange(*(*in.footers)[p.input]->RowGroup(p.row_group));
    fetches.push_back(Fetch{*file, begin, (*file)->ReadAsync(arrow::io::default_io_context(), begin, end - begin)});
  }
  std::vector<std::shared_ptr<arrow::Table>> tables;
  for (size_t k = 0; k < step.pieces.size(); ++k) {
    const Piece& p = step.pieces[k];
    const auto& s = (*in.inputs)[p.input];
    auto bytes = fetches[k].bytes.result();
    if (!bytes.ok()) return in.Named(p.input, bytes.status());
    auto window = std::make_shared<FetchedRange>(*bytes, fetches[k].begin,
                                                 std::max(s.stored_bytes, fetches[k].begin + (*bytes)->size()));
    auto reader = SegmentFileReader::Open(window, s.path, false, (*in.footers)[p.input], false);
    if (!reader.ok()) return in.Named(p.input, reader.status());
    if (Status st = (*reader)->ReadAs(in.schema); !st.ok()) return in.Named(p.input, st);
    auto t = (*reader)->ReadRowGroup(p.row_group);
    if (!t.ok()) return in.Named(p.input, t.status());
    // The table's schema exactly (a file's carries its own metadata).
    tables.push_back(arrow::Table::Make(in.schema, (*t)->columns(), (*t)->num_rows()));
  }
  fetches.clear();
  ARROW_ASSIGN_OR_RAISE(auto table, arrow::ConcatenateTables(tables));
  Prepared out;
  ARROW_ASSIGN_OR_RAISE(out.row_groups, EncodeForSegment(table, *in.settings, in.props));
  return out;
}

// Runs on a worker: the step, ready for the writer.
Result<Prepared> Produce(const StepInputs& in, const Step& step) {
  switch (step.kind) {
    case StepKind::kCopy:
      return ProduceCopy(in, step);
    case StepKind::kPages:
      return ProducePages(in, step);
    case StepKind::kEncode:
      return ProduceEncoded(in, step);
  }
  return Status::Invalid("unknown step");
}

}  // namespace

Result<SegmentRecord> MergeSegments(const MergeContext& ctx, const TableInfo& table,
                                    const std::vector<SegmentRecord>& inputs, TimePoint now, FileLayout layout,
                                    MergeStats* stats) {
  SegmentRecord out = OutputRecord(table, inputs, now, ctx.writer_tag);
  ARROW_ASSIGN_OR_RAISE(auto writer, SegmentFileWriter::Open(ctx.blobs, out.path, table.schema, *ctx.file_settings,
                                                             layout, EncodeSegmentFileMetadata(out)));
  const auto props = writer->properties();
  ARROW_ASSIGN_OR_RAISE(auto descr, ParquetSchemaFor(*StoredSchema(table.schema), *props));
  // Footers are filled in input order; a task reads only those of its step's
  // inputs, filled before the step was planned.
  auto footers = std::make_shared<Footers>(inputs.size());
  auto wholes = std::make_shared<Wholes>(inputs.size());
  FooterReads reads(ctx, table, inputs);
  Planner planner(*descr, *props, *ctx.file_settings, layout);
  // Workers fill `window` steps and this thread writes one: buffers for all of them.
  const size_t window = static_cast<size_t>(ctx.workers + 1);
  StepInputs step_inputs{ctx.blobs,     std::make_shared<StepBuffers>(window + 1),
                         footers.get(), wholes.get(),
                         &inputs,       ctx.file_settings,
                         props,         table.schema};
  std::vector<Step> steps;
  size_t planned = 0;  // inputs whose footers were taken

  // Inputs are adjacent and each is in block order: their row groups in
  // order are the block order. Workers read, decode and encode up to
  // `window` (workers + 1) steps ahead; this thread copies them into the
  // output in order.
  std::deque<std::future<Result<Prepared>>> ahead;
  size_t next = 0;
  // Every task submitted is waited for before returning: they read `inputs`.
  auto drain = [&] {
    for (auto& f : ahead) f.wait();
  };
  // Submits steps until the window is full, planning more as footers arrive.
  auto fill = [&]() -> Status {
    while (ahead.size() < window) {
      if (next < steps.size()) {
        ahead.push_back(RunOn<Result<Prepared>>(
            ctx.worker_pool,
            [step_inputs, footers, wholes, step = steps[next++]]() { return Produce(step_inputs, step); }));
      } else if (planned < inputs.size()) {
        ARROW_ASSIGN_OR_RAISE(FooterRead read, reads.Take(planned));
        (*footers)[planned] = std::move(read.footer);
        (*wholes)[planned] = std::move(read.whole);
        planner.Add(planned, *(*footers)[planned], &steps);
        if (++planned == inputs.size()) planner.Flush(&steps);
      } else {
        break;
      }
    }
    return Status::OK();
  };
  if (Status st = fill(); !st.ok()) {
    drain();
    return st;
  }
  int64_t rows = 0;
  size_t done = 0;      // steps taken from `ahead`, in order
  size_t released = 0;  // inputs whose footers were dropped
  while (!ahead.empty()) {
    if (*ctx.stopping) {
      drain();
      return Status::Cancelled("server stopping");
    }
    auto ready = ahead.front().get();
    ahead.pop_front();
    if (!ready.ok()) {
      drain();
      return ready.status();
    }
    const StepKind kind = steps[done++].kind;
    if (Status st = fill(); !st.ok()) {
      drain();
      return st;
    }
    // Footers no step left will read are dropped: a merge of thousands of
    // head files holds the footers of the files it is at, not all of them.
    size_t keep_from = planned;
    if (done < steps.size()) keep_from = std::min(keep_from, steps[done].pieces.front().input);
    if (auto pending = planner.PendingFirstInput()) keep_from = std::min(keep_from, *pending);
    for (; released < keep_from; ++released) {
      (*footers)[released].reset();
      (*wholes)[released].reset();
    }
    if (stats) {
      const auto made = static_cast<int64_t>(ready->run ? 1 : ready->row_groups.size());
      (kind == StepKind::kCopy    ? stats->row_groups_copied
       : kind == StepKind::kPages ? stats->row_groups_from_pages
                                  : stats->row_groups_reencoded) += made;
    }
    if (ready->run) {
      if (Status st = writer->AppendPages(*ready->run); !st.ok()) {
        drain();
        return st;
      }
      rows += ready->run->rows();
    }
    for (const auto& rg : ready->row_groups) {
      Status st = writer->Append(rg);
      if (!st.ok()) {
        drain();
        return st;
      }
      rows += rg.rows();
    }
  }
  if (stats) stats->step_buffers = std::max(stats->step_buffers, step_inputs.buffers->most_held());
  ARROW_ASSIGN_OR_RAISE(FileFacts facts, writer->Finish());
  out.rows = facts.rows;
  // A merge moves rows, it does not change them: the output's measured size
  // is its inputs' (what the planner added up), whatever encoding it got.
  out.bytes = 0;
  for (const auto& s : inputs) out.bytes += s.bytes;
  out.stored_bytes = facts.stored_bytes;
  int64_t expected = 0;
  for (const auto& s : inputs) expected += s.rows;
  if (rows != out.rows || rows != expected) {
    (void)ctx.blobs->Delete(out.path);
    return Status::IOError(
        fmt::format("merged {} rows from {} in the inputs but the output has {}", rows, expected, out.rows));
  }
  return out;
}

}  // namespace sediment::table
