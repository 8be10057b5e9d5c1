#include "server/query/query_api.h"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include "server/http/http_server.h"
#include "server/http/json_lines.h"
#include "server/query/amp_format.h"

namespace sediment::server {
namespace {

constexpr const char* kEmptyText = "the query text is empty: send the SQL as the request body";

// A failure before the first byte, in Amp's format.
Status Reply(httplib::Response& res, const Status& st, QueryStep step) {
  res.status = AmpHttpStatus(st);
  res.set_content(AmpErrorJson(AmpErrorCode(st, step), st.message()), "application/json");
  return Status::OK();
}

// The protocol's answer for what the router refuses: a failed log-in or
// permission, and the SQL the `{@table}` derivation could not parse.
void ReplyQueryError(httplib::Response& res, const Status& st) {
  QueryStep step = st.message() == kEmptyText ? QueryStep::kText : QueryStep::kParse;
  res.status = AmpHttpStatus(st);
  res.set_content(AmpErrorJson(AmpErrorCode(st, step), st.message()), "application/json");
}

const Protocol& QueryProtocol() {
  static const Protocol kQuery{"query", ReplyQueryError, nullptr, /*open_until_set_up=*/true, /*json_bodies=*/false};
  return kQuery;
}

bool Blank(const std::string& text) { return text.find_first_not_of(" \t\r\n;") == std::string::npos; }

// `{@table}`: "<dataset>/<table>" of each table the SQL names; "*/*" when it names none.
DeriveFn TablesOfQuery(const QueryServices* s) {
  return [s](const httplib::Request& req) -> Result<Derived> {
    if (Blank(req.body)) return InvalidArgument(kEmptyText);
    ARROW_ASSIGN_OR_RAISE(auto parsed, s->engine->Parse(req.body));
    Derived d;
    for (const auto& t : parsed.tables) d["table"].push_back(t.dataset + "/" + t.table);
    if (d["table"].empty()) d["table"].push_back("*/*");
    return d;
  };
}

std::string Marker(const query::BlockSpan* span, bool complete, bool reorg) {
  return "{\"@metadata\":" + RangesJson(span, complete, reorg) + "}\n";
}

// A batch query's rows; false ends the response short (an error line first, if any).
bool SendRows(query::QueryRun& run, const std::shared_ptr<arrow::Schema>* conform_to, httplib::DataSink& sink,
              const std::function<void()>& before_first = nullptr) {
  std::string buf;
  bool first = true;
  auto gone = [&sink] { return !sink.is_writable(); };
  while (true) {
    auto batch = run.Next(gone);
    if (batch.ok() && *batch != nullptr && conform_to != nullptr) batch = query::Conform(*batch, *conform_to);
    if (!batch.ok()) {
      buf = AmpErrorJson("QUERY_ERROR", batch.status().message()) + "\n";
      sink.write(buf.data(), buf.size());
      return false;
    }
    if (*batch == nullptr) return true;
    if (first && before_first) before_first();
    first = false;
    buf.clear();
    AppendJsonLines(**batch, JsonLinesStyle::Amp(), &buf);
    if (!sink.write(buf.data(), buf.size())) return false;  // the client went away: the run is cancelled
  }
}

Status StartBatch(const QueryServices* s, const query::ParsedQuery& parsed, httplib::Response& res) {
  auto run = s->engine->Run(parsed);
  if (!run.ok()) return Reply(res, run.status(), QueryStep::kPlan);
  auto schema = (*run)->Schema();  // a query DuckDB cannot bind fails here, before the status line
  if (!schema.ok()) return Reply(res, schema.status(), QueryStep::kPlan);
  std::shared_ptr<query::QueryRun> shared = std::move(*run);
  res.set_chunked_content_provider("application/x-ndjson", [shared](size_t, httplib::DataSink& sink) {
    if (!SendRows(*shared, nullptr, sink)) return false;
    sink.done();
    return true;
  });
  return Status::OK();
}

// The cursor for the stream's network from amp-resume, if one is sent.
Result<std::optional<query::StreamCursor>> CursorOf(const httplib::Request& req, const query::ParsedQuery& parsed) {
  std::string header = req.get_header_value("amp-resume");
  if (header.empty() || parsed.tables.empty()) return std::optional<query::StreamCursor>();
  ARROW_ASSIGN_OR_RAISE(auto cursors, ParseResume(header));
  const std::string& network = parsed.tables[0].dataset;
  auto it = cursors.find(network);
  if (it == cursors.end()) {
    return InvalidArgument(fmt::format("amp-resume has no cursor for network \"{}\", which the query reads", network));
  }
  return std::optional<query::StreamCursor>(it->second);
}

// One microbatch: its rows between a start marker (when it has rows) and its end marker.
bool SendMicrobatch(query::QueryStream& stream, query::Microbatch& mb, httplib::DataSink& sink) {
  const query::BlockSpan& span = mb.span;
  bool reorg = mb.reorg;
  auto start = [&] {
    std::string m = Marker(&span, false, reorg);
    sink.write(m.data(), m.size());
  };
  if (!SendRows(*mb.run, &stream.schema(), sink, start)) return false;
  std::string end = Marker(&span, true, reorg);
  return sink.write(end.data(), end.size());
}

Status StartStream(const QueryServices* s, const query::ParsedQuery& parsed, const httplib::Request& req,
                   httplib::Response& res, bool own_port) {
  auto cursor = CursorOf(req, parsed);
  if (!cursor.ok()) return Reply(res, cursor.status(), QueryStep::kStreamCheck);
  // The port's share of its workers, given back with the stream.
  std::atomic<int>* open = own_port ? s->jsonl_port_streams : s->api_port_streams;
  if (open->fetch_add(1) >= StreamsAllowed(own_port)) {
    open->fetch_sub(1);
    return Reply(res,
                 Busy(fmt::format("{} streaming queries are open on this port, its most (each holds one of its "
                                  "workers); stream over Flight SQL ([query] flight_listen)",
                                  StreamsAllowed(own_port))),
                 QueryStep::kStreamCheck);
  }
  std::shared_ptr<std::atomic<int>> slot(open, [](std::atomic<int>* p) { p->fetch_sub(1); });
  auto stream = query::QueryStream::Open(s->engine, s->tables, s->watch, parsed, *cursor, s->stream);
  if (!stream.ok()) return Reply(res, stream.status(), QueryStep::kStreamCheck);
  std::shared_ptr<query::QueryStream> shared = std::move(*stream);
  res.set_chunked_content_provider("application/x-ndjson", [s, shared, slot](size_t, httplib::DataSink& sink) {
    auto gone = [&] { return !sink.is_writable() || s->stopping->load(); };
    while (true) {
      auto mb = shared->Next(gone);
      if (!mb.ok()) {
        if (!gone()) {
          std::string line = AmpErrorJson("QUERY_ERROR", mb.status().message());
          line += "\n";
          sink.write(line.data(), line.size());
        }
        return false;
      }
      if (mb->run == nullptr) {  // a keep-alive: the last range again, complete (Amp's watermark)
        const query::BlockSpan* last = mb->span.network.empty() ? nullptr : &mb->span;
        std::string m = Marker(last, last != nullptr, false);
        if (!sink.write(m.data(), m.size())) return false;
        continue;
      }
      if (!SendMicrobatch(*shared, *mb, sink)) return false;
    }
  });
  return Status::OK();
}

Status ServeQuery(const QueryServices* s, const Call& c, bool own_port) {
  if (Blank(c.req.body)) return Reply(c.res, InvalidArgument(kEmptyText), QueryStep::kText);
  auto parsed = s->engine->Parse(c.req.body);
  if (!parsed.ok()) return Reply(c.res, parsed.status(), QueryStep::kParse);
  auto header = ParseStreamHeader(c.req.get_header_value("amp-stream"));
  if (!header.ok()) return Reply(c.res, header.status(), QueryStep::kStreamCheck);
  if (header->value_or(parsed->stream)) return StartStream(s, *parsed, c.req, c.res, own_port);
  return StartBatch(s, *parsed, c.res);
}

}  // namespace

int StreamsAllowed(bool own_port) { return own_port ? static_cast<int>(HttpWorkers() / 2) : 4; }

std::vector<Route> QueryRoutes(const QueryServices* s, bool own_port) {
  const auto read = Need("tables:ReadTable", "arn:sediment:tables:::{@table}");
  auto run = [s, own_port](const Call& c) { return ServeQuery(s, c, own_port); };
  const Protocol* p = &QueryProtocol();
  if (!own_port) {
    return {{"POST", "/api/v1/query", kQueryOperation, Access::kAuthorized, read, run, p, false, TablesOfQuery(s)}};
  }
  auto health = [](const Call& c) {
    c.res.set_content("ok\n", "text/plain");
    return Status::OK();
  };
  return {{"POST", "/", kQueryOperation, Access::kAuthorized, read, run, p, false, TablesOfQuery(s)},
          {"GET", "/health", "query Health", Access::kPublic, {}, health, p}};
}

}  // namespace sediment::server
