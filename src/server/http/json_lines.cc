#include "server/http/json_lines.h"

#include <arrow/api.h>
#include <fmt/format.h>

#include <charconv>
#include <ctime>

#include "base/codec.h"
#include "base/logging.h"

namespace sediment::server {
namespace {

void QuotedHex(const uint8_t* p, int64_t n, const JsonLinesStyle& style, std::string* out) {
  out->append(style.hex_prefix ? "\"0x" : "\"");
  AppendHex(p, static_cast<size_t>(n), out);
  out->push_back('"');
}

void Value(const arrow::Array& a, int64_t i, const JsonLinesStyle& style, std::string* out);

// An integer in decimal, written in place (no string of its own).
template <typename ArrayType>
void AppendInteger(const arrow::Array& a, int64_t i, std::string* out) {
  char buf[24];
  out->append(buf, std::to_chars(buf, buf + sizeof buf, static_cast<const ArrayType&>(a).Value(i)).ptr);
}

void AppendList(const arrow::Array& a, int64_t i, const JsonLinesStyle& style, std::string* out) {
  const auto& l = static_cast<const arrow::ListArray&>(a);
  out->push_back('[');
  for (int32_t k = l.value_offset(i); k < l.value_offset(i + 1); ++k) {
    if (k > l.value_offset(i)) out->push_back(',');
    Value(*l.values(), k, style, out);
  }
  out->push_back(']');
}

void AppendStruct(const arrow::Array& a, int64_t i, const JsonLinesStyle& style, std::string* out) {
  const auto& st = static_cast<const arrow::StructArray&>(a);
  out->push_back('{');
  for (int f = 0; f < st.num_fields(); ++f) {
    if (f > 0) out->push_back(',');
    out->append("\"" + JsonEscape(st.type()->field(f)->name()) + "\":");
    Value(*st.field(f), i, style, out);
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
void AppendScalar(const arrow::Array& a, int64_t i, const JsonLinesStyle& style, std::string* out) {
  auto scalar = a.GetScalar(i);
  std::string text = scalar.ok() ? (*scalar)->ToString() : "?";
  const bool number = arrow::is_floating(a.type_id()) || (style.decimals_as_numbers && arrow::is_decimal(a.type_id()));
  if (number) {
    // NaN and infinities have no JSON form.
    bool finite = !text.empty() && text.find_first_not_of("0123456789-+.eE") == std::string::npos;
    out->append(finite ? text : "null");
  } else {
    out->append("\"" + JsonEscape(text) + "\"");
  }
}

// Row `i` of column `a` as JSON, appended to `out`. Called per value of a JSON
// lines scan: one switch on the type id (no virtual call), and numbers need no
// allocation.
void Value(const arrow::Array& a, int64_t i, const JsonLinesStyle& style, std::string* out) {
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
      QuotedHex(reinterpret_cast<const uint8_t*>(v.data()), static_cast<int64_t>(v.size()), style, out);
      return;
    }
    case arrow::Type::FIXED_SIZE_BINARY: {
      const auto& f = static_cast<const arrow::FixedSizeBinaryArray&>(a);
      QuotedHex(f.GetValue(i), f.byte_width(), style, out);
      return;
    }
    case arrow::Type::LIST:
      return AppendList(a, i, style, out);
    case arrow::Type::STRUCT:
      return AppendStruct(a, i, style, out);
    case arrow::Type::TIMESTAMP:
      return AppendTimestamp(a, i, out);
    default:
      return AppendScalar(a, i, style, out);
  }
}

}  // namespace

void AppendJsonLines(const arrow::RecordBatch& batch, const JsonLinesStyle& style, std::string* out) {
  const auto& fields = batch.schema()->fields();
  std::vector<std::string> keys;
  for (const auto& f : fields) keys.push_back("\"" + JsonEscape(f->name()) + "\":");
  for (int64_t row = 0; row < batch.num_rows(); ++row) {
    out->push_back('{');
    bool first = true;
    for (int c = 0; c < batch.num_columns(); ++c) {
      const arrow::Array& column = *batch.column(c);
      if (style.omit_nulls && column.IsNull(row)) continue;
      if (!first) out->push_back(',');
      first = false;
      out->append(keys[c]);
      Value(column, row, style, out);
    }
    out->append("}\n");
  }
}

}  // namespace sediment::server
