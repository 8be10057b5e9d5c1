#include "server/tables/tables_api.h"

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "server/http/errors.h"
#include "server/http/http_server.h"
#include "server/http/routes.h"
#include "table/table_service.h"

namespace sediment::server {
namespace {

using nlohmann::json;
using table::SegmentRecord;
using table::TableId;
using table::TableService;

Result<TableId> IdFrom(const httplib::Request& req) {
  return table::MakeTableId(req.matches[1].str(), req.matches[2].str());
}

Result<uint64_t> U64Param(const httplib::Request& req, const char* name) {
  ARROW_ASSIGN_OR_RAISE(auto v, U64QueryParam(req, name));
  if (!v) return InvalidArgument(fmt::format("missing query parameter {}", name));
  return *v;
}

Result<std::string> StrParam(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) return InvalidArgument(fmt::format("missing query parameter {}", name));
  return req.get_param_value(name);
}

// ?force=true|false (default false): accept a reorg that cannot be proven.
Result<bool> ForceParam(const httplib::Request& req) {
  if (!req.has_param("force")) return false;
  std::string v = req.get_param_value("force");
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  return InvalidArgument(fmt::format("force must be true or false, not \"{}\"", v));
}

// Per-block hashes travel in the Arrow IPC stream's schema metadata:
// sediment.block_hashes = "<hex>,<hex>,..." for the segment's last blocks,
// ending with end_block's.
Result<std::vector<std::string>> BlockHashesOf(const arrow::Schema& schema) {
  std::vector<std::string> out;
  const auto& md = schema.metadata();
  if (!md) return out;
  int i = md->FindKey("sediment.block_hashes");
  if (i < 0) return out;
  std::string_view list = md->value(i);
  while (!list.empty()) {
    size_t comma = list.find(',');
    out.emplace_back(list.substr(0, comma));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

json SegmentJson(const SegmentRecord& s) {
  return {{"id", s.id},
          {"path", s.path},
          {"start_block", s.start},
          {"end_block", s.end},
          {"end_hash", s.end_hash},
          {"parent_hash", s.parent_hash},
          {"rows", s.rows},
          {"bytes", s.bytes},
          {"stored_bytes", s.stored_bytes},
          {"generation", s.generation},
          {"parents", s.parents.get()},
          {"created_at", FormatTime(s.created_at())}};
}

json SchemaJson(const arrow::Schema& schema) {
  json fields = json::array();
  for (const auto& f : schema.fields()) {
    fields.push_back({{"name", f->name()}, {"type", f->type()->ToString()}, {"nullable", f->nullable()}});
  }
  return fields;
}

json TableJson(const table::TableInfo& t, const table::TableState* state) {
  json j = {{"dataset", t.id.dataset},       {"table", t.id.table},
            {"name", t.id.ToString()},       {"schema", SchemaJson(*t.schema)},
            {"schema_version", t.version()}, {"created_at", FormatTime(FromUnixMicros(t.created_at_us))}};
  if (state != nullptr) {
    j["files"] = state->files;
    j["rows"] = state->rows;
    j["bytes"] = state->bytes;
    j["stored_bytes"] = state->stored_bytes;
    j["first_block"] = state->empty() ? json(nullptr) : json(state->first);
    j["last_block"] = state->empty() ? json(nullptr) : json(state->end);
  }
  return j;
}

json MergeJson(const table::MergeOutcome& m) {
  json j = {{"inputs", m.inputs}};
  if (m.output) j["output"] = SegmentJson(*m.output);
  if (!m.error.empty()) j["error"] = m.error;
  if (m.status == table::MergeStatus::kDiscarded) j["discarded"] = true;
  return j;
}

json HistogramJson(const table::HistogramReport& r) {
  json buckets = json::array();
  for (const auto& b : r.buckets) {
    buckets.push_back({{"label", b.label},
                       {"lower", b.lower},
                       {"upper", b.upper < 0 ? json(nullptr) : json(b.upper)},
                       {"files", b.files},
                       {"bytes", b.bytes}});
  }
  return {{"buckets", buckets},
          {"summary",
           {{"files", r.files},
            {"bytes", r.bytes},
            {"stored_bytes", r.stored_bytes},
            {"rows", r.rows},
            {"files_below_max_eager_bytes", r.below_eager},
            {"old_files_below_half_target", r.old_below_half_target},
            {"compression_ratio", r.compression_ratio},
            {"target_bytes", r.target_bytes},
            {"max_eager_bytes", r.max_eager_bytes}}}};
}

// A request body spooled to a temp file, so a large segment never sits in memory.
class SpooledBody {
 public:
  ~SpooledBody() {
    if (file_) std::fclose(file_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  Status Read(const httplib::ContentReader& reader) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sediment-body-XXXXXX").string();
    int fd = ::mkstemp(tmpl.data());
    if (fd < 0) return Status::IOError("cannot create a temp file for the request body");
    path_ = tmpl;
    file_ = ::fdopen(fd, "wb");
    bool ok = true;
    bool received = reader([&](const char* data, size_t n) {
      ok = std::fwrite(data, 1, n, file_) == n;
      size_ += n;
      return ok;
    });
    if (std::fclose(file_) != 0) ok = false;
    file_ = nullptr;
    if (!ok) return Status::IOError("cannot spool the request body to disk");
    if (!received) return InvalidArgument("the request body was cut off");
    return Status::OK();
  }
  Result<std::shared_ptr<arrow::RecordBatchReader>> OpenArrowStream() {
    ARROW_ASSIGN_OR_RAISE(auto file, arrow::io::ReadableFile::Open(path_));
    auto reader = arrow::ipc::RecordBatchStreamReader::Open(file);
    if (!reader.ok()) {
      return InvalidArgument(fmt::format("the body is not an Arrow IPC stream: {}", reader.status().message()));
    }
    return std::shared_ptr<arrow::RecordBatchReader>(*reader);
  }
  size_t size() const { return size_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  size_t size_ = 0;
};

// --- handlers, one per route -------------------------------------------------

// ?amount= (1..10000, default 1000): the size of a page of a listing.
Result<size_t> PageSize(const httplib::Request& req) {
  ARROW_ASSIGN_OR_RAISE(auto v, U64QueryParam(req, "amount"));
  if (!v) return size_t{1000};
  if (*v < 1 || *v > 10000) return InvalidArgument(fmt::format("amount must be from 1 to 10000, not {}", *v));
  return static_cast<size_t>(*v);
}

json PageJson(bool has_more, const std::string& next, size_t results, size_t max_per_page) {
  return {{"has_more", has_more},
          {"next_offset", has_more ? next : ""},
          {"results", results},
          {"max_per_page", max_per_page}};
}

// A page of the tables of `dataset` (every dataset if empty) after ?after=<dataset>/<table>, each with its live
// files' totals (one KV read per table).
Status ReplyTables(TableService* tables, const httplib::Request& req, const std::string& dataset,
                   httplib::Response& res) {
  ARROW_ASSIGN_OR_RAISE(size_t amount, PageSize(req));
  std::string after = req.has_param("after") ? req.get_param_value("after") : "";
  bool has_more = false;
  ARROW_ASSIGN_OR_RAISE(auto page, tables->ListTables(after, dataset, amount, &has_more));
  json out = json::array();
  for (const auto& t : page) {
    auto state = tables->State(t.id);
    out.push_back(TableJson(t, state.ok() ? &*state : nullptr));
  }
  size_t n = out.size();
  std::string next = page.empty() ? "" : page.back().id.dataset + "/" + page.back().id.table;
  ReplyJson(res, 200, {{"tables", std::move(out)}, {"pagination", PageJson(has_more, next, n, amount)}});
  return Status::OK();
}

Status ListTables(TableService* tables, const httplib::Request& req, httplib::Response& res) {
  return ReplyTables(tables, req, "", res);
}

Status ListDatasetTables(TableService* tables, const httplib::Request& req, httplib::Response& res) {
  ARROW_RETURN_NOT_OK(table::ValidateName("dataset", req.matches[1].str()));
  return ReplyTables(tables, req, req.matches[1].str(), res);
}

// Creates the table with the schema of the Arrow IPC stream in the body: 201, or 200 if it exists
// with it, or if the schema adds nullable columns after its own (a new schema version). 409 for any
// other schema, saying what differs.
Status PutTable(TableService* tables, const httplib::Request& req, httplib::Response& res,
                const httplib::ContentReader& reader) {
  ARROW_ASSIGN_OR_RAISE(auto id, IdFrom(req));
  SpooledBody body;
  ARROW_RETURN_NOT_OK(body.Read(reader));
  ARROW_ASSIGN_OR_RAISE(auto stream, body.OpenArrowStream());
  auto made = tables->CreateTable(id, stream->schema());
  if (IsConflict(made.status())) {
    auto evolved = tables->EvolveTable(id, stream->schema());
    if (IsInvalidArgument(evolved.status())) {
      std::string why = evolved.status().message();
      const std::string prefix = fmt::format("table {}: ", id.ToString());
      if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
      return Conflict(fmt::format("table {} exists with another schema: {}", id.ToString(), why));
    }
    ARROW_RETURN_NOT_OK(evolved.status());
    made = false;
  }
  ARROW_ASSIGN_OR_RAISE(bool created, made);
  ARROW_ASSIGN_OR_RAISE(auto info, tables->GetTable(id));
  ReplyJson(res, created ? 201 : 200, TableJson(info, nullptr));
  return Status::OK();
}

Status GetTable(TableService* tables, const httplib::Request& req, httplib::Response& res) {
  ARROW_ASSIGN_OR_RAISE(auto id, IdFrom(req));
  ARROW_ASSIGN_OR_RAISE(auto info, tables->GetTable(id));
  ARROW_ASSIGN_OR_RAISE(auto state, tables->State(id));
  ReplyJson(res, 200, TableJson(info, &state));
  return Status::OK();
}

// The block range and hashes of an append, from the query (?force= is read after the body).
Result<table::AppendRequest> AppendParams(const httplib::Request& req) {
  table::AppendRequest append;
  ARROW_ASSIGN_OR_RAISE(append.start_block, U64Param(req, "start_block"));
  ARROW_ASSIGN_OR_RAISE(append.end_block, U64Param(req, "end_block"));
  ARROW_ASSIGN_OR_RAISE(append.end_hash, StrParam(req, "end_hash"));
  ARROW_ASSIGN_OR_RAISE(append.parent_hash, StrParam(req, "parent_hash"));
  return append;
}

json AppendResultJson(const table::AppendResult& result) {
  json j = SegmentJson(result.segment);
  j["reorg"] = result.reorg;
  if (result.reorg) {
    json replaced = json::array();
    for (const auto& r : result.replaced) replaced.push_back(r.id);
    j["replaced"] = replaced;
    if (result.rewritten) j["rewritten"] = SegmentJson(*result.rewritten);
  }
  return j;
}

// Appends the segment in the body (an Arrow IPC stream): 201 with the new segment, and what a reorg replaced.
Status AppendSegment(TableService* tables, const httplib::Request& req, httplib::Response& res,
                     const httplib::ContentReader& reader) {
  ARROW_ASSIGN_OR_RAISE(auto id, IdFrom(req));
  ARROW_ASSIGN_OR_RAISE(auto append, AppendParams(req));
  // Unknown table: answer before reading the body.
  ARROW_RETURN_NOT_OK(tables->GetTable(id).status());
  SpooledBody body;
  ARROW_RETURN_NOT_OK(body.Read(reader));
  ARROW_ASSIGN_OR_RAISE(auto stream, body.OpenArrowStream());
  ARROW_ASSIGN_OR_RAISE(append.force, ForceParam(req));
  ARROW_ASSIGN_OR_RAISE(append.block_hashes, BlockHashesOf(*stream->schema()));
  ARROW_ASSIGN_OR_RAISE(auto result, tables->Append(id, append, stream.get()));
  ReplyJson(res, 201, AppendResultJson(result));
  return Status::OK();
}

// A page of the live files in block order, after ?after=<a file's start_block>, streamed as it is read
// from the registry a few hundred records at a time.
Status ListFiles(TableService* tables, const httplib::Request& req, httplib::Response& res) {
  ARROW_ASSIGN_OR_RAISE(auto id, IdFrom(req));
  ARROW_ASSIGN_OR_RAISE(size_t amount, PageSize(req));
  ARROW_ASSIGN_OR_RAISE(std::optional<uint64_t> after, U64QueryParam(req, "after"));
  static constexpr size_t kChunk = 256;
  // The first chunk is read before answering, so an unknown table is a 404.
  ARROW_ASSIGN_OR_RAISE(auto first, tables->ListSegments(id, after, std::min(kChunk, amount)));
  struct Stream {
    table::SegmentPage chunk;
    std::optional<uint64_t> after;
    size_t sent = 0;
    bool started = false;
  };
  auto st = std::make_shared<Stream>(Stream{std::move(first), after});
  res.status = 200;
  res.set_chunked_content_provider("application/json", [tables, id, amount, st](size_t, httplib::DataSink& sink) {
    std::string out = st->started ? "" : "{\"files\":[";
    st->started = true;
    for (const auto& s : st->chunk.segments) {
      if (st->sent > 0) out += ",";
      out += SegmentJson(s).dump(-1, ' ', false, json::error_handler_t::replace);
      st->sent++;
      st->after = s.start;
    }
    bool more = st->chunk.has_more;
    if (more && st->sent < amount) {
      auto next = tables->ListSegments(id, st->after, std::min(kChunk, amount - st->sent));
      if (!next.ok()) {
        spdlog::warn("table {}: listing files failed mid-stream: {}", id.ToString(), next.status().ToString());
        return false;  // the client sees a cut response, never a short list that looks whole
      }
      st->chunk = std::move(*next);
      sink.write(out.data(), out.size());
      return true;
    }
    std::string next_offset = st->after ? std::to_string(*st->after) : "";
    out += "],\"pagination\":" + PageJson(more, next_offset, st->sent, amount).dump() + "}";
    sink.write(out.data(), out.size());
    sink.done();
    return true;
  });
  return Status::OK();
}

// Runs a compaction pass and replies with its outcome once it is over.
Status ReplyCompactPass(TableService* tables, const TableId& id, httplib::Response& res) {
  ARROW_ASSIGN_OR_RAISE(auto pass, tables->CompactNow(id));
  json merges = json::array();
  for (const auto& m : pass.merges) merges.push_back(MergeJson(m));
  ReplyJson(
      res, 200,
      {{"ran", pass.ran}, {"files_considered", pass.files_considered}, {"merges", merges}, {"seconds", pass.seconds}});
  return Status::OK();
}

// Runs a compaction pass while the response is sent: JSON lines, one per event, as the pass goes.
void StreamCompactPass(TableService* tables, const TableId& id, httplib::Response& res) {
  res.set_chunked_content_provider("application/x-ndjson", [tables, id](size_t, httplib::DataSink& sink) {
    auto emit = [&](const json& j) {
      std::string line = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
      sink.write(line.data(), line.size());
    };
    auto pass = tables->CompactNow(id, [&](const table::PassProgress& p) {
      using K = table::PassProgress::Kind;
      if (p.kind == K::kPlanned) {
        emit({{"event", "planned"}, {"groups", p.groups}});
      } else {
        const char* names[] = {"planned", "merged", "failed", "discarded"};
        json j = MergeJson(*p.merge);
        j["event"] = names[static_cast<int>(p.kind)];
        emit(j);
      }
    });
    if (pass.ok()) {
      emit({{"event", "done"},
            {"ran", pass->ran},
            {"files_considered", pass->files_considered},
            {"seconds", pass->seconds}});
    } else {
      emit({{"event", "error"}, {"message", pass.status().message()}});
    }
    sink.done();
    return true;
  });
}

// ?stream=true: the pass's events as they happen; otherwise its outcome at the end.
Status Compact(TableService* tables, const httplib::Request& req, httplib::Response& res) {
  ARROW_ASSIGN_OR_RAISE(auto id, IdFrom(req));
  ARROW_RETURN_NOT_OK(tables->GetTable(id).status());
  if (req.get_param_value("stream") != "true") return ReplyCompactPass(tables, id, res);
  StreamCompactPass(tables, id, res);
  return Status::OK();
}

// ?bucket_s=N: the appends since `since_us` summed per N seconds (only buckets
// holding appends, oldest first), for charts of long windows.
Status ReplyHistoryBuckets(TableService* tables, const table::TableId& id, int64_t since, uint64_t bucket_s,
                           httplib::Response& res) {
  struct Bucket {
    int64_t t_us = 0, appends = 0, bytes = 0, stored_bytes = 0, rows = 0;
  };
  const int64_t width = static_cast<int64_t>(bucket_s) * 1'000'000;
  std::vector<Bucket> sums;
  std::string cursor;
  for (bool more = true; more;) {
    ARROW_ASSIGN_OR_RAISE(auto page, tables->AppendHistory(id, since, cursor, 10000, &more));
    for (const auto& a : page) {
      int64_t start = a.t_us - a.t_us % width;
      if (sums.empty() || sums.back().t_us != start) sums.push_back({start});
      Bucket& b = sums.back();
      ++b.appends;
      b.bytes += a.bytes;
      // Records from before the history kept stored sizes count their uncompressed size.
      b.stored_bytes += a.stored_bytes ? a.stored_bytes : a.bytes;
      b.rows += a.rows;
    }
    if (!page.empty()) cursor = page.back().cursor;
  }
  json buckets = json::array();
  for (const auto& b : sums) {
    buckets.push_back({{"t_us", b.t_us},
                       {"appends", b.appends},
                       {"bytes", b.bytes},
                       {"stored_bytes", b.stored_bytes},
                       {"rows", b.rows}});
  }
  ReplyJson(res, 200, {{"buckets", std::move(buckets)}, {"bucket_s", bucket_s}, {"since_us", since}});
  return Status::OK();
}

Status GetHistory(TableService* tables, const httplib::Request& req, httplib::Response& res) {
  ARROW_ASSIGN_OR_RAISE(auto id, IdFrom(req));
  ARROW_ASSIGN_OR_RAISE(auto since, U64QueryParam(req, "since_us"));
  ARROW_ASSIGN_OR_RAISE(auto bucket_s, U64QueryParam(req, "bucket_s"));
  if (bucket_s) {
    if (*bucket_s < 1 || *bucket_s > 86400) {
      return InvalidArgument(fmt::format("query parameter bucket_s={} is not in 1..86400 (seconds)", *bucket_s));
    }
    if (since.value_or(0) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return InvalidArgument("query parameter since_us is too large");
    }
    return ReplyHistoryBuckets(tables, id, static_cast<int64_t>(since.value_or(0)), *bucket_s, res);
  }
  ARROW_ASSIGN_OR_RAISE(size_t amount, PageSize(req));
  std::string after = req.has_param("after") ? req.get_param_value("after") : "";
  bool more = false;
  ARROW_ASSIGN_OR_RAISE(auto history,
                        tables->AppendHistory(id, static_cast<int64_t>(since.value_or(0)), after, amount, &more));
  json appends = json::array();
  for (const auto& a : history) {
    appends.push_back({{"t_us", a.t_us},
                       {"bytes", a.bytes},
                       {"stored_bytes", a.stored_bytes},
                       {"rows", a.rows},
                       {"start_block", a.start},
                       {"end_block", a.end}});
  }
  size_t n = appends.size();
  std::string next = history.empty() ? "" : history.back().cursor;
  // The settings the planner runs with here, so `sediment table simulate --from` replays with them.
  const WriterConfig& w = tables->writer_config();
  json settings = {{"writer.bytes", w.bytes},
                   {"writer.rows", w.rows},
                   {"writer.overflow", w.overflow},
                   {"writer.compactor.min_interval", w.compactor.min_interval},
                   {"writer.compactor.skip_latest_segments", w.compactor.skip_latest_segments},
                   {"writer.compactor.cooldown_duration", w.compactor.cooldown_duration},
                   {"writer.compactor.max_eager_bytes", w.compactor.max_eager_bytes},
                   {"writer.compactor.policy", w.compactor.policy},
                   {"writer.compactor.size_ratio", w.compactor.size_ratio}};
  ReplyJson(res, 200,
            {{"appends", std::move(appends)},
             {"settings", std::move(settings)},
             {"pagination", PageJson(more, next, n, amount)}});
  return Status::OK();
}

// Passes that planned merges, newest first (?since_us, ?after, ?amount).
Status GetPasses(TableService* tables, const httplib::Request& req, httplib::Response& res) {
  ARROW_ASSIGN_OR_RAISE(auto id, IdFrom(req));
  ARROW_ASSIGN_OR_RAISE(auto since, U64QueryParam(req, "since_us"));
  ARROW_ASSIGN_OR_RAISE(size_t amount, PageSize(req));
  std::string after = req.has_param("after") ? req.get_param_value("after") : "";
  bool more = false;
  ARROW_ASSIGN_OR_RAISE(auto passes,
                        tables->PassHistory(id, static_cast<int64_t>(since.value_or(0)), after, amount, &more));
  json out = json::array();
  for (const auto& p : passes) {
    json merges = json::array();
    for (const auto& m : p.merges) {
      json j = {{"outcome", m.outcome}, {"inputs", m.inputs},     {"start_block", m.start},
                {"end_block", m.end},   {"bytes_in", m.bytes_in}, {"bytes_out", m.bytes_out}};
      if (!m.error.empty()) j["error"] = m.error;
      merges.push_back(std::move(j));
    }
    out.push_back({{"t_us", p.t_us},
                   {"seconds", p.seconds},
                   {"server", p.server},
                   {"files_considered", p.files_considered},
                   {"files_after", p.files_after},
                   {"stored_bytes_after", p.stored_bytes_after},
                   {"merges_total", p.merges_total},
                   {"merges", std::move(merges)},
                   {"error", p.error.empty() ? json(nullptr) : json(p.error)}});
  }
  size_t n = out.size();
  std::string next = passes.empty() ? "" : passes.back().cursor;
  ReplyJson(res, 200, {{"passes", std::move(out)}, {"pagination", PageJson(more, next, n, amount)}});
  return Status::OK();
}

// Files waiting for GC.
Status GetGcBacklog(TableService* tables, const httplib::Request& req, httplib::Response& res) {
  ARROW_ASSIGN_OR_RAISE(auto id, IdFrom(req));
  ARROW_ASSIGN_OR_RAISE(auto b, tables->GcBacklogOf(id));
  ReplyJson(res, 200,
            {{"files", b.files},
             {"due", b.due},
             {"oldest_removed_us", b.oldest_removed_us},
             {"grace_seconds", b.grace_seconds}});
  return Status::OK();
}

Status GetHistogram(TableService* tables, const httplib::Request& req, httplib::Response& res) {
  ARROW_ASSIGN_OR_RAISE(auto id, IdFrom(req));
  ARROW_ASSIGN_OR_RAISE(auto h, tables->Histogram(id));
  json j = HistogramJson(h);
  j["table"] = id.ToString();
  j["cooldown_duration"] = tables->writer_config().compactor.cooldown_duration;
  ReplyJson(res, 200, j);
  return Status::OK();
}

}  // namespace

const Protocol& TablesProtocol() {
  static const Protocol kTables{"tables", ReplyError, nullptr, /*open_until_set_up=*/true, /*json_bodies=*/false};
  return kTables;
}

// Every route of the tables API.
std::vector<Route> TablesRoutes(TableService* tables) {
  const std::string tbl = "/api/v1/datasets/{dataset}/tables/{table}";
  const auto read = Need("tables:ReadTable", "arn:sediment:tables:::{dataset}/{table}");
  const auto write = Need("tables:WriteTable", "arn:sediment:tables:::{dataset}/{table}");
  const Protocol* p = &TablesProtocol();
  const Access a = Access::kAuthorized;
  // clang-format off
  std::vector<Route> rows = {
      {"GET",  "/api/v1/tables",                   "tables ListTables",   a, Need("tables:ReadTable", "arn:sediment:tables:::*/*"),
       Bind(tables, ListTables), p},
      {"GET",  "/api/v1/datasets/{dataset}/tables", "tables ListDatasetTables", a,
       Need("tables:ReadTable", "arn:sediment:tables:::{dataset}/*"), Bind(tables, ListDatasetTables), p},
      {"PUT",  tbl,                  "tables PutTable",      a, write, Bind(tables, PutTable),      p, /*streamed=*/true},
      {"GET",  tbl,                  "tables GetTable",      a, read,  Bind(tables, GetTable),      p},
      {"POST", tbl + "/segments",    "tables AppendSegment", a, write, Bind(tables, AppendSegment), p, /*streamed=*/true},
      {"GET",  tbl + "/files",       "tables ListFiles",     a, read,  Bind(tables, ListFiles),     p},
      {"POST", tbl + "/compact",     "tables Compact",       a, write, Bind(tables, Compact),       p},
      {"GET",  tbl + "/history",     "tables GetHistory",    a, read,  Bind(tables, GetHistory),    p},
      {"GET",  tbl + "/histogram",   "tables GetHistogram",  a, read,  Bind(tables, GetHistogram),  p},
      {"GET",  tbl + "/passes",      "tables GetPasses",     a, read,  Bind(tables, GetPasses),     p},
      {"GET",  tbl + "/gc",          "tables GetGcBacklog",  a, read,  Bind(tables, GetGcBacklog),  p},
  };
  // clang-format on
  return rows;
}

}  // namespace sediment::server
