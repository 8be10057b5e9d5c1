#include "server/tables/scan_api.h"

#include <arrow/api.h>
#include <arrow/io/interfaces.h>
#include <arrow/ipc/api.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <ctime>
#include <set>

#include "base/crypto.h"
#include "base/logging.h"
#include "server/http/errors.h"
#include "server/http/http_server.h"
#include "server/http/json_lines.h"
#include "server/http/routes.h"
#include "table/scan.h"
#include "table/table_service.h"

namespace sediment::server {
namespace {

// An Arrow output stream over an HTTP response being sent.
class SinkStream final : public arrow::io::OutputStream {
 public:
  explicit SinkStream(httplib::DataSink* sink) : sink_(sink) {}
  arrow::Status Write(const void* data, int64_t n) override {
    if (!sink_->write(static_cast<const char*>(data), static_cast<size_t>(n))) {
      return arrow::Status::IOError("the client went away");
    }
    position_ += n;
    return arrow::Status::OK();
  }
  arrow::Status Close() override {
    closed_ = true;
    return arrow::Status::OK();
  }
  arrow::Result<int64_t> Tell() const override { return position_; }
  bool closed() const override { return closed_; }

 private:
  httplib::DataSink* sink_;
  int64_t position_ = 0;
  bool closed_ = false;
};

Result<table::ScanRequest> ParseRequest(const httplib::Request& req) {
  // A misspelt parameter (from= for from_block=) would otherwise scan the whole table silently.
  static const std::set<std::string> kKnown = {"from_block", "to_block", "limit", "columns", "filter", "format"};
  for (const auto& [name, value] : req.params) {
    if (req.get_param_value_count(name) > 1) {
      return InvalidArgument(fmt::format("query parameter \"{}\" is given more than once", name));
    }
    if (!kKnown.count(name)) {
      return InvalidArgument(fmt::format(
          "unknown query parameter \"{}\" (a scan takes from_block, to_block, columns, filter, limit and format)",
          name));
    }
  }
  table::ScanRequest r;
  ARROW_ASSIGN_OR_RAISE(r.from_block, U64QueryParam(req, "from_block"));
  ARROW_ASSIGN_OR_RAISE(r.to_block, U64QueryParam(req, "to_block"));
  ARROW_ASSIGN_OR_RAISE(auto limit, U64QueryParam(req, "limit"));
  if (limit) r.limit = static_cast<int64_t>(*limit);
  if (req.has_param("columns")) {
    std::string cols = req.get_param_value("columns");
    size_t start = 0;
    while (start <= cols.size()) {
      size_t comma = cols.find(',', start);
      if (comma == std::string::npos) comma = cols.size();
      std::string c = cols.substr(start, comma - start);
      if (c.empty()) return InvalidArgument(fmt::format("columns=\"{}\" has an empty name", cols));
      r.columns.push_back(c);
      start = comma + 1;
    }
  }
  if (req.has_param("filter")) {
    ARROW_ASSIGN_OR_RAISE(auto f, table::ParseFilter(req.get_param_value("filter")));
    r.filter = f;
  }
  return r;
}

// The scan's rows as an Arrow IPC stream.
Status StreamArrow(table::Scan& scan, httplib::DataSink& sink) {
  auto stream = std::make_shared<SinkStream>(&sink);
  ARROW_ASSIGN_OR_RAISE(auto writer, arrow::ipc::MakeStreamWriter(stream, scan.schema()));
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto batch, scan.Next());
    if (!batch) break;
    ARROW_RETURN_NOT_OK(writer->WriteRecordBatch(*batch));
  }
  return writer->Close();
}

// The scan's rows as JSON lines, one object per row.
Status StreamJsonLines(table::Scan& scan, httplib::DataSink& sink) {
  std::string buf;
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto batch, scan.Next());
    if (!batch) return Status::OK();
    buf.clear();
    AppendJsonLines(*batch, JsonLinesStyle::Scan(), &buf);
    if (!sink.write(buf.data(), buf.size())) return Status::IOError("the client went away");
  }
}

// GET .../scan?format=arrow|jsonl&from_block=&to_block=&limit=&columns=&filter=: the table's rows in block order.
Status ScanTable(table::TableService* tables, const httplib::Request& req, httplib::Response& res) {
  ARROW_ASSIGN_OR_RAISE(auto id, table::MakeTableId(req.matches[1].str(), req.matches[2].str()));
  std::string format = req.has_param("format") ? req.get_param_value("format") : "jsonl";
  if (format != "arrow" && format != "jsonl") {
    return InvalidArgument(fmt::format("format \"{}\": use arrow or jsonl", format));
  }
  ARROW_ASSIGN_OR_RAISE(auto request, ParseRequest(req));
  // Everything that can be refused is refused here, before the first byte.
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<table::Scan> scan, table::Scan::Open(tables, id, request));
  std::string name = id.ToString();
  auto provider = [scan, format, name](size_t, httplib::DataSink& sink) {
    Status st = format == "arrow" ? StreamArrow(*scan, sink) : StreamJsonLines(*scan, sink);
    if (!st.ok()) {
      // The status line is gone: end the stream short, which the client sees as an error.
      spdlog::warn("scan of {} failed mid-stream: {}", name, st.ToString());
      return false;
    }
    sink.done();
    return true;
  };
  res.set_chunked_content_provider(format == "arrow" ? "application/vnd.apache.arrow.stream" : "application/x-ndjson",
                                   provider);
  return Status::OK();
}

}  // namespace

std::vector<Route> ScanRoutes(table::TableService* tables) {
  return {{"GET", "/api/v1/datasets/{dataset}/tables/{table}/scan", "tables ScanTable", Access::kAuthorized,
           Need("tables:ReadTable", "arn:sediment:tables:::{dataset}/{table}"), Bind(tables, ScanTable),
           &TablesProtocol()}};
}

}  // namespace sediment::server
