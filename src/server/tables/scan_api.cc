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

void QuotedHex(const uint8_t* p, int64_t n, std::string* out) {
  out->append("\"0x");
  AppendHex(p, static_cast<size_t>(n), out);
  out->push_back('"');
}

void Value(const arrow::Array& a, int64_t i, std::string* out);

// An integer in decimal, written in place (no string of its own).
template <typename ArrayType>
void AppendInteger(const arrow::Array& a, int64_t i, std::string* out) {
  char buf[24];
  out->append(buf, std::to_chars(buf, buf + sizeof buf, static_cast<const ArrayType&>(a).Value(i)).ptr);
}

void AppendList(const arrow::Array& a, int64_t i, std::string* out) {
  const auto& l = static_cast<const arrow::ListArray&>(a);
  out->push_back('[');
  for (int32_t k = l.value_offset(i); k < l.value_offset(i + 1); ++k) {
    if (k > l.value_offset(i)) out->push_back(',');
    Value(*l.values(), k, out);
  }
  out->push_back(']');
}

void AppendStruct(const arrow::Array& a, int64_t i, std::string* out) {
  const auto& st = static_cast<const arrow::StructArray&>(a);
  out->push_back('{');
  for (int f = 0; f < st.num_fields(); ++f) {
    if (f > 0) out->push_back(',');
    out->append("\"" + JsonEscape(st.type()->field(f)->name()) + "\":");
    Value(*st.field(f), i, out);
  }
  out->push_back('}');
}

// RFC 3339 in UTC, with as many fraction digits as the unit has.
void AppendTimestamp(const arrow::Array& a, int64_t i, std::string* out) {
  const auto& type = static_cast<const arrow::TimestampType&>(*a.type());
  const int64_t v = static_cast<const arrow::TimestampArray&>(a).Value(i);
  int digits = 0;
  int64_t per_second = 1;
  switch (type.unit()) {
    case arrow::TimeUnit::SECOND:
      break;
    case arrow::TimeUnit::MILLI:
      digits = 3, per_second = 1000;
      break;
    case arrow::TimeUnit::MICRO:
      digits = 6, per_second = 1000000;
      break;
    case arrow::TimeUnit::NANO:
      digits = 9, per_second = 1000000000;
      break;
  }
  int64_t seconds = v / per_second, fraction = v % per_second;
  if (fraction < 0) seconds -= 1, fraction += per_second;
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  out->append("\"").append(buf);
  if (fraction != 0) out->append(fmt::format(".{:0{}}", fraction, digits));
  out->append(type.timezone().empty() ? "\"" : "Z\"");
}

// Any other type, through Arrow's scalar: floating point as a number, the rest as a string.
void AppendScalar(const arrow::Array& a, int64_t i, std::string* out) {
  auto scalar = a.GetScalar(i);
  std::string text = scalar.ok() ? (*scalar)->ToString() : "?";
  if (arrow::is_floating(a.type_id())) {
    out->append(text);
  } else {
    out->append("\"" + JsonEscape(text) + "\"");
  }
}

// Row `i` of column `a` as JSON, appended to `out`. Called per value of a JSON
// lines scan: one switch on the type id (no virtual call), and numbers need no
// allocation.
void Value(const arrow::Array& a, int64_t i, std::string* out) {
  if (a.IsNull(i)) {
    out->append("null");
    return;
  }
  switch (a.type_id()) {
    case arrow::Type::UINT8:
      return AppendInteger<arrow::UInt8Array>(a, i, out);
    case arrow::Type::UINT16:
      return AppendInteger<arrow::UInt16Array>(a, i, out);
    case arrow::Type::UINT32:
      return AppendInteger<arrow::UInt32Array>(a, i, out);
    case arrow::Type::UINT64:
      return AppendInteger<arrow::UInt64Array>(a, i, out);
    case arrow::Type::INT8:
      return AppendInteger<arrow::Int8Array>(a, i, out);
    case arrow::Type::INT16:
      return AppendInteger<arrow::Int16Array>(a, i, out);
    case arrow::Type::INT32:
      return AppendInteger<arrow::Int32Array>(a, i, out);
    case arrow::Type::INT64:
      return AppendInteger<arrow::Int64Array>(a, i, out);
    case arrow::Type::BOOL:
      out->append(static_cast<const arrow::BooleanArray&>(a).Value(i) ? "true" : "false");
      return;
    case arrow::Type::STRING: {
      auto v = static_cast<const arrow::StringArray&>(a).GetView(i);
      out->append("\"" + JsonEscape(std::string(v)) + "\"");
      return;
    }
    case arrow::Type::BINARY: {
      auto v = static_cast<const arrow::BinaryArray&>(a).GetView(i);
      QuotedHex(reinterpret_cast<const uint8_t*>(v.data()), static_cast<int64_t>(v.size()), out);
      return;
    }
    case arrow::Type::FIXED_SIZE_BINARY: {
      const auto& f = static_cast<const arrow::FixedSizeBinaryArray&>(a);
      QuotedHex(f.GetValue(i), f.byte_width(), out);
      return;
    }
    case arrow::Type::LIST:
      return AppendList(a, i, out);
    case arrow::Type::STRUCT:
      return AppendStruct(a, i, out);
    case arrow::Type::TIMESTAMP:
      return AppendTimestamp(a, i, out);
    default:
      return AppendScalar(a, i, out);
  }
}

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
    AppendJsonLines(*batch, &buf);
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

void AppendJsonLines(const arrow::RecordBatch& batch, std::string* out) {
  const auto& fields = batch.schema()->fields();
  std::vector<std::string> keys;
  for (const auto& f : fields) keys.push_back("\"" + JsonEscape(f->name()) + "\":");
  for (int64_t row = 0; row < batch.num_rows(); ++row) {
    out->push_back('{');
    for (int c = 0; c < batch.num_columns(); ++c) {
      if (c > 0) out->push_back(',');
      out->append(keys[c]);
      Value(*batch.column(c), row, out);
    }
    out->append("}\n");
  }
}

std::vector<Route> ScanRoutes(table::TableService* tables) {
  return {{"GET", "/api/v1/datasets/{dataset}/tables/{table}/scan", "tables ScanTable", Access::kAuthorized,
           Need("tables:ReadTable", "arn:sediment:tables:::{dataset}/{table}"), Bind(tables, ScanTable),
           &TablesProtocol()}};
}

}  // namespace sediment::server
