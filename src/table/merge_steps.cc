// The merge's steps as worker tasks run them (merge_steps_internal.h).
#include <arrow/api.h>
#include <arrow/io/concurrency.h>
#include <arrow/io/interfaces.h>
#include <arrow/io/memory.h>
#include <arrow/util/future.h>
#include <fmt/format.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>
#include <parquet/schema.h>

#include <algorithm>
#include <cstring>

#include "table/chunk_encoder.h"
#include "table/columnwise_encode.h"
#include "table/merge_steps_internal.h"
#include "table/parquet_guard_internal.h"
#include "table/plain_decode.h"

namespace sediment::table::merge_internal {

Result<std::shared_ptr<arrow::Buffer>> StepBuffers::Take(int64_t size) {
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

void StepBuffers::Give(std::unique_ptr<arrow::ResizableBuffer> buffer) {
  std::lock_guard lock(mu_);
  if (free_.size() < keep_) {
    free_.push_back(std::move(buffer));  // no allocation: reserved
  } else {
    --held_;
  }
}

struct StepScratch {
  ChunkEncoder encoder;
  PlainColumnBuffers columns;
  std::unique_ptr<arrow::ResizableBuffer> chunk;  // a column chunk read from a local file
};

StepScratches::StepScratches(size_t keep) : keep_(keep) { free_.reserve(keep); }
StepScratches::~StepScratches() = default;

std::shared_ptr<StepScratch> StepScratches::Take() {
  std::unique_ptr<StepScratch> scratch;
  {
    std::lock_guard lock(mu_);
    if (!free_.empty()) {
      scratch = std::move(free_.back());
      free_.pop_back();
    }
  }
  if (!scratch) scratch = std::make_unique<StepScratch>();
  return std::shared_ptr<StepScratch>(
      scratch.release(), [self = shared_from_this()](StepScratch* s) { self->Give(std::unique_ptr<StepScratch>(s)); });
}

void StepScratches::Give(std::unique_ptr<StepScratch> scratch) {
  std::lock_guard lock(mu_);
  if (free_.size() < keep_) free_.push_back(std::move(scratch));  // no allocation: reserved
}

Status StepInputs::Named(size_t input, const Status& st) const {
  const std::string& path = (*inputs)[input].path;
  if (st.message().rfind(path + ": ", 0) == 0) return Status::IOError(st.message());  // named already
  return Status::IOError(fmt::format("{}: {}", path, st.message()));
}

namespace {

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

// One input file of a pages step: opened once, its bytes fetched whole or read by ranges.
struct PageSource {
  size_t input = 0;
  std::shared_ptr<arrow::io::RandomAccessFile> file;
  arrow::Future<std::shared_ptr<arrow::Buffer>> whole;  // valid if fetched whole
  std::unique_ptr<parquet::ParquetFileReader> reader;
};

// Local files read whole go into one buffer, one after another: a read
// from the page cache needs no other thread.
Status ReadLocalWholes(const StepInputs& in, const std::vector<size_t>& local_wholes, int64_t local_bytes,
                       std::vector<PageSource>& sources) {
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
  return Status::OK();
}

// Each input of a pages step, opened once: a small file (a head file) fetched
// whole, with its page index and bloom filters in the same request; a large
// one read by ranges.
Status OpenPageSources(const StepInputs& in, const Step& step, std::vector<PageSource>& sources) {
  std::vector<size_t> local_wholes;  // sources read whole from local files
  int64_t local_bytes = 0;
  for (const Piece& p : step.pieces) {
    if (!sources.empty() && sources.back().input == p.input) continue;
    const auto& s = (*in.inputs)[p.input];
    PageSource src;
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
  if (!local_wholes.empty()) return ReadLocalWholes(in, local_wholes, local_bytes, sources);
  return Status::OK();
}

// Row groups whose data pages become one row group. Each input's bytes are
// fetched once, all inputs at once (OpenPageSources). Bloom filters of the
// run are OR-ed or built from their column alone.
Result<Prepared> ProducePages(const StepInputs& in, const Step& step) {
  std::vector<PageSource> sources;
  ARROW_RETURN_NOT_OK(OpenPageSources(in, step, sources));
  Prepared out;
  out.run.emplace();
  std::vector<parquet::ParquetFileReader*> readers;
  size_t k = 0;
  for (const Piece& p : step.pieces) {
    while (sources[k].input != p.input) ++k;
    PageSource& src = sources[k];
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

// An encoded step's pieces: each row group fetched in one request, several in flight.
struct Fetch {
  std::shared_ptr<arrow::io::RandomAccessFile> file;
  int64_t begin = 0;
  arrow::Future<std::shared_ptr<arrow::Buffer>> bytes;
};

// Where a plain step's column chunks come from: each row group's bytes as
// fetched whole, or (no fetches: local files) each chunk read into the
// scratch's buffer when its column is decoded.
struct ChunkReads {
  const StepInputs& in;
  const Step& step;
  const std::vector<Fetch>& fetches;
  StepScratch* scratch;
  std::vector<std::shared_ptr<arrow::io::RandomAccessFile>> files{};  // per piece; empty when fetched

  Status OpenFiles() {
    files.resize(step.pieces.size());
    for (size_t k = 0; k < step.pieces.size(); ++k) {
      const size_t input = step.pieces[k].input;
      if (k > 0 && step.pieces[k - 1].input == input) {
        files[k] = files[k - 1];
        continue;
      }
      const auto& s = (*in.inputs)[input];
      auto file = in.blobs->OpenReaderSized(s.path, s.stored_bytes);
      if (!file.ok()) return in.Named(input, file.status());
      files[k] = std::move(*file);
    }
    return Status::OK();
  }

  // Piece k's chunk of column c (`rg` is its row group); `begin`: the file
  // offset the bytes start at.
  Result<std::string_view> Chunk(size_t k, int c, const parquet::RowGroupMetaData& rg, int64_t* begin) {
    if (files.empty()) {
      const auto& fetched = fetches[k].bytes.result();
      if (!fetched.ok()) return fetched.status();
      *begin = fetches[k].begin;
      return std::string_view(reinterpret_cast<const char*>((*fetched)->data()),
                              static_cast<size_t>((*fetched)->size()));
    }
    const auto cc = rg.ColumnChunk(c);
    const int64_t at = cc->data_page_offset(), size = cc->total_compressed_size();
    const int64_t file_bytes = (*in.inputs)[step.pieces[k].input].stored_bytes;
    const std::string& name = in.descr->Column(c)->name();
    if (at < 0 || size < 0 || at > file_bytes || size > file_bytes - at) {
      return Status::Invalid(fmt::format("column {}: its chunk of {} bytes at {} lies outside the file's {} bytes",
                                         name, size, at, file_bytes));
    }
    auto named = [&](const Status& st) {
      return Status::IOError(
          fmt::format("column {}: reading its chunk of {} bytes at {}: {}", name, size, at, st.message()));
    };
    auto& buffer = scratch->chunk;
    if (!buffer) {
      auto made = arrow::AllocateResizableBuffer(size);
      if (!made.ok()) return named(made.status());
      buffer = std::move(*made);
    }
    if (Status st = buffer->Resize(size, /*shrink_to_fit=*/false); !st.ok()) return named(st);
    auto n = files[k]->ReadAt(at, size, buffer->mutable_data());
    if (!n.ok()) return named(n.status());
    if (*n != size) return named(Status::IOError(fmt::format("read {} bytes", *n)));
    *begin = at;
    return std::string_view(reinterpret_cast<const char*>(buffer->data()), static_cast<size_t>(size));
  }
};

// Whether piece `p` is PLAIN pages that PlainTableBuilder reads.
bool PieceIsPlain(const StepInputs& in, const Piece& p) {
  const auto& footer = *(*in.footers)[p.input];
  return PlainDecodable(*footer.RowGroup(p.row_group), *footer.schema(), *in.descr, *in.stored_schema);
}

// Pieces [from, to) of `step`, all PieceIsPlain, decoded from their pages into one table.
Result<std::shared_ptr<arrow::Table>> DecodePlain(const StepInputs& in, const Step& step, size_t from, size_t to,
                                                  std::vector<Fetch>& fetches) {
  PlainTableBuilder builder(in.stored_schema, *in.descr);
  int64_t rows = 0;
  std::vector<int64_t> uncompressed(static_cast<size_t>(in.descr->num_columns()));
  for (size_t k = from; k < to; ++k) {
    auto rg = (*in.footers)[step.pieces[k].input]->RowGroup(step.pieces[k].row_group);
    rows += rg->num_rows();
    for (int c = 0; c < rg->num_columns(); ++c) uncompressed[c] += rg->ColumnChunk(c)->total_uncompressed_size();
  }
  if (Status st = builder.Reserve(rows, uncompressed); !st.ok()) return in.Named(step.pieces[from].input, st);
  for (size_t k = from; k < to; ++k) {
    const Piece& p = step.pieces[k];
    auto bytes = fetches[k].bytes.result();
    if (!bytes.ok()) return in.Named(p.input, bytes.status());
    const std::string_view view(reinterpret_cast<const char*>((*bytes)->data()), static_cast<size_t>((*bytes)->size()));
    Status st = builder.Append(*(*in.footers)[p.input]->RowGroup(p.row_group), view, fetches[k].begin);
    if (!st.ok()) return in.Named(p.input, st);
    fetches[k].bytes = {};  // decoded: its bytes can go
  }
  auto table = builder.Finish();
  if (!table.ok()) return in.Named(step.pieces[from].input, table.status());
  return table;
}

// Piece `k` of `step` decoded through Arrow's reader (any encoding, earlier schemas).
Result<std::shared_ptr<arrow::Table>> DecodeThroughArrow(const StepInputs& in, const Step& step, size_t k,
                                                         std::vector<Fetch>& fetches) {
  const Piece& p = step.pieces[k];
  const auto& s = (*in.inputs)[p.input];
  auto bytes = fetches[k].bytes.result();
  if (!bytes.ok()) return in.Named(p.input, bytes.status());
  auto window = std::make_shared<FetchedRange>(*bytes, fetches[k].begin,
                                               std::max(s.stored_bytes, fetches[k].begin + (*bytes)->size()));
  fetches[k].bytes = {};
  auto reader = SegmentFileReader::Open(window, s.path, false, (*in.footers)[p.input], false);
  if (!reader.ok()) return in.Named(p.input, reader.status());
  // Read and encoded again as stored: no conversion to the table's types and back.
  if (Status st = (*reader)->ReadStoredAs(in.schema); !st.ok()) return in.Named(p.input, st);
  auto t = (*reader)->ReadRowGroup(p.row_group);
  if (!t.ok()) return in.Named(p.input, t.status());
  // The stored schema exactly (a file's carries its own metadata).
  return arrow::Table::Make(in.stored_schema, (*t)->columns(), (*t)->num_rows());
}

// What a plain step's footers say it holds, added up with checks (a
// footer's sizes are not trusted).
struct StepSizes {
  int64_t rows = 0, uncompressed = 0;
  std::vector<int64_t> column_bytes;  // PLAIN bytes (uncompressed pages) per column
};

Result<StepSizes> SizesOf(const StepInputs& in, const Step& step) {
  StepSizes out;
  const int columns = in.descr->num_columns();
  out.column_bytes.resize(static_cast<size_t>(columns));
  for (const Piece& p : step.pieces) {
    auto rg = (*in.footers)[p.input]->RowGroup(p.row_group);
    bool bad = rg->num_rows() < 0 || __builtin_add_overflow(out.rows, rg->num_rows(), &out.rows);
    for (int c = 0; c < columns && !bad; ++c) {
      const int64_t b = rg->ColumnChunk(c)->total_uncompressed_size();
      bad = b < 0 || __builtin_add_overflow(out.column_bytes[c], b, &out.column_bytes[c]) ||
            __builtin_add_overflow(out.uncompressed, b, &out.uncompressed);
    }
    if (bad) return in.Named(p.input, Status::Invalid("row group sizes in the footer out of range"));
  }
  return out;
}

// A step of plain pieces only, decoded and encoded one column at a time
// (columnwise_encode.h): the column's values of every piece, then its
// chunks. Local files are read a column chunk at a time, as their column is
// decoded, so a step holds one column's bytes; on object storage each row
// group was fetched whole (`fetches`), a request costing more than its
// bytes, and is kept until the last column.
Result<std::vector<EncodedRowGroup>> EncodePlainStep(const StepInputs& in, const Step& step,
                                                     const std::vector<Fetch>& fetches) {
  ARROW_ASSIGN_OR_RAISE(const StepSizes sizes, SizesOf(in, step));
  // Sized by the PLAIN pages the planner added up (EncodeForSegment: Arrow's buffers).
  const int64_t rows_per_group = in.settings->RowsPerGroup(sizes.rows, sizes.uncompressed);
  std::shared_ptr<StepScratch> scratch = in.scratches->Take();
  ChunkReads reads{in, step, fetches, scratch.get()};
  if (fetches.empty()) ARROW_RETURN_NOT_OK(reads.OpenFiles());
  PlainTableBuilder builder(in.stored_schema, *in.descr);
  builder.ReuseBuffers(&scratch->columns);
  Status failed;  // a decode error, named by its input
  auto column = [&](int c) -> Result<std::shared_ptr<arrow::Array>> {
    failed = builder.ReserveColumn(c, sizes.rows, sizes.column_bytes[c]);
    if (!failed.ok()) return failed = in.Named(step.pieces.front().input, failed);
    for (size_t k = 0; k < step.pieces.size() && failed.ok(); ++k) {
      const Piece& p = step.pieces[k];
      const auto rg = (*in.footers)[p.input]->RowGroup(p.row_group);
      int64_t begin = 0;
      auto chunk = reads.Chunk(k, c, *rg, &begin);
      failed = chunk.ok() ? builder.AppendColumn(c, *rg, *chunk, begin) : chunk.status();
      if (!failed.ok()) failed = in.Named(p.input, failed);
    }
    if (!failed.ok()) return failed;
    return builder.FinishColumn(c);
  };
  // Room for the encoded chunks: the values' PLAIN bytes, a dictionary page
  // (at most its limit) and a compression bound per chunk. Bounded: the
  // sink grows if it must.
  const int64_t groups = std::min<int64_t>((sizes.rows + rows_per_group - 1) / rows_per_group, 1024);
  const int64_t room = std::min<int64_t>(sizes.uncompressed, int64_t{1} << 32) * 65 / 64 +
                       groups * in.descr->num_columns() * (in.props->dictionary_pagesize_limit() + (64 << 10));
  auto buffer = in.buffers->Take(room);
  if (!buffer.ok()) return in.Named(step.pieces.front().input, buffer.status());
  auto encoded = sediment::table::EncodeColumnwise(*in.descr, in.props, sizes.rows, rows_per_group, column,
                                                   std::move(*buffer), &scratch->encoder,
                                                   in.settings->store_incompressible ? kMinCompressionSaving : 0);
  if (!encoded.ok() && failed.ok()) return in.Named(step.pieces.front().input, encoded.status());
  return encoded;
}

// Row groups decoded together and encoded again. Plain pieces of local
// files are read a column chunk at a time (EncodePlainStep); otherwise all
// are fetched at once, one request each, several in flight, then decoded
// from memory: from their PLAIN pages where they are such (head files),
// else through Arrow.
Result<Prepared> ProduceEncoded(const StepInputs& in, const Step& step) {
  const bool plain =
      std::all_of(step.pieces.begin(), step.pieces.end(), [&](const Piece& p) { return PieceIsPlain(in, p); }) &&
      ColumnwiseEncodable(*in.descr, *in.props);
  Prepared out;
  std::vector<Fetch> fetches;
  // Plain pieces of local files are read by column chunks (EncodePlainStep).
  for (size_t k = 0; k < step.pieces.size() && (!plain || in.blobs->Remote()); ++k) {
    const Piece& p = step.pieces[k];
    const auto& s = (*in.inputs)[p.input];
    auto file = in.blobs->OpenReaderSized(s.path, s.stored_bytes);
    if (!file.ok()) return in.Named(p.input, file.status());
    auto [begin, end] = RowGroupByteRange(*(*in.footers)[p.input]->RowGroup(p.row_group));
    fetches.push_back(Fetch{*file, begin, (*file)->ReadAsync(arrow::io::default_io_context(), begin, end - begin)});
  }
  if (plain) {
    // A hostile size may throw (an allocation): an error naming the step's first input, not a crash.
    ARROW_ASSIGN_OR_RAISE(out.row_groups, ParquetGuard((*in.inputs)[step.pieces.front().input].path,
                                                       [&]() { return EncodePlainStep(in, step, fetches); }));
    out.plain_decoded += static_cast<int64_t>(step.pieces.size());
    return out;
  }
  // Runs of plain pieces into one table each, the others one by one.
  std::vector<std::shared_ptr<arrow::Table>> tables;
  for (size_t k = 0; k < step.pieces.size();) {
    size_t end = k;
    while (end < step.pieces.size() && PieceIsPlain(in, step.pieces[end])) ++end;
    if (end > k) {
      // A hostile size may throw (an allocation): an error naming the run's first input, not a crash.
      ARROW_ASSIGN_OR_RAISE(tables.emplace_back(), ParquetGuard((*in.inputs)[step.pieces[k].input].path, [&]() {
                              return DecodePlain(in, step, k, end, fetches);
                            }));
      out.plain_decoded += static_cast<int64_t>(end - k);
      k = end;
    } else {
      ARROW_ASSIGN_OR_RAISE(tables.emplace_back(), DecodeThroughArrow(in, step, k++, fetches));
    }
  }
  fetches.clear();
  ARROW_ASSIGN_OR_RAISE(auto table, tables.size() == 1 ? tables.front() : arrow::ConcatenateTables(tables));
  ARROW_ASSIGN_OR_RAISE(out.row_groups, EncodeForSegment(table, *in.settings, in.props));
  return out;
}

}  // namespace

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

}  // namespace sediment::table::merge_internal
