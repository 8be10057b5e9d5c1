#include "iceberg/schema.h"

#include <arrow/type.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace sediment::iceberg {
namespace {

using nlohmann::json;

struct Mapper {
  int next_id = 0;

  // The Iceberg type of `type` (a string for primitives, an object for nested
  // ones), its name-mapping children, and how its statistics become bounds.
  Result<json> TypeOf(const std::string& column, const arrow::DataType& type, json* mapping_fields, BoundKind* bounds) {
    *bounds = BoundKind::kNone;
    switch (type.id()) {
      case arrow::Type::BOOL:
        return json("boolean");
      case arrow::Type::INT8:
      case arrow::Type::INT16:
      case arrow::Type::INT32:
      case arrow::Type::UINT8:
      case arrow::Type::UINT16:
        *bounds = BoundKind::kInt32;
        return json("int");
      case arrow::Type::UINT32:
        *bounds = BoundKind::kUInt32ToLong;
        return json("long");
      case arrow::Type::INT64:
      case arrow::Type::UINT64:
        *bounds = BoundKind::kInt64;
        return json("long");
      case arrow::Type::FLOAT:
        *bounds = BoundKind::kFloat;
        return json("float");
      case arrow::Type::DOUBLE:
        *bounds = BoundKind::kDouble;
        return json("double");
      case arrow::Type::STRING:
      case arrow::Type::LARGE_STRING:
        *bounds = BoundKind::kBytes;
        return json("string");
      case arrow::Type::BINARY:
      case arrow::Type::LARGE_BINARY:
        return json("binary");  // no bounds: values are long, and a truncated upper bound needs care
      case arrow::Type::FIXED_SIZE_BINARY:
        *bounds = BoundKind::kBytes;
        return json(fmt::format("fixed[{}]", static_cast<const arrow::FixedSizeBinaryType&>(type).byte_width()));
      case arrow::Type::DATE32:
        *bounds = BoundKind::kInt32;
        return json("date");
      case arrow::Type::TIMESTAMP: {
        const auto& ts = static_cast<const arrow::TimestampType&>(type);
        if (ts.unit() == arrow::TimeUnit::MICRO) *bounds = BoundKind::kInt64;
        return json(ts.timezone().empty() ? "timestamp" : "timestamptz");
      }
      case arrow::Type::DECIMAL128: {
        const auto& d = static_cast<const arrow::Decimal128Type&>(type);
        return json(fmt::format("decimal({},{})", d.precision(), d.scale()));
      }
      case arrow::Type::LIST:
      case arrow::Type::LARGE_LIST:
        return ListOf(column, *static_cast<const arrow::BaseListType&>(type).value_field(), mapping_fields);
      case arrow::Type::STRUCT:
        return StructOf(column, type, mapping_fields);
      default:
        return InvalidArgument(
            fmt::format("column {} has type {}, which has no Iceberg equivalent", column, type.ToString()));
    }
  }

  // A list: its element's id, type and name mapping ("element", or "item" as older writers call it).
  Result<json> ListOf(const std::string& column, const arrow::Field& field, json* mapping_fields) {
    int id = ++next_id;
    json child_mapping = json::array();
    BoundKind ignored;
    ARROW_ASSIGN_OR_RAISE(json element, TypeOf(column, *field.type(), &child_mapping, &ignored));
    json m = {{"field-id", id}, {"names", {"element", "item"}}};
    if (!child_mapping.empty()) m["fields"] = child_mapping;
    mapping_fields->push_back(m);
    return json{{"type", "list"}, {"element-id", id}, {"element-required", !field.nullable()}, {"element", element}};
  }

  // A struct: its fields' ids (this level first, then deeper ones), types and name mappings.
  Result<json> StructOf(const std::string& column, const arrow::DataType& type, json* mapping_fields) {
    json fields = json::array();
    std::vector<int> ids;
    for (int i = 0; i < type.num_fields(); ++i) ids.push_back(++next_id);
    for (int i = 0; i < type.num_fields(); ++i) {
      const auto& f = *type.field(i);
      json child_mapping = json::array();
      BoundKind ignored;
      ARROW_ASSIGN_OR_RAISE(json t, TypeOf(column + "." + f.name(), *f.type(), &child_mapping, &ignored));
      fields.push_back({{"id", ids[i]}, {"name", f.name()}, {"required", !f.nullable()}, {"type", t}});
      json m = {{"field-id", ids[i]}, {"names", {f.name()}}};
      if (!child_mapping.empty()) m["fields"] = child_mapping;
      mapping_fields->push_back(m);
    }
    return json{{"type", "struct"}, {"fields", fields}};
  }
};

}  // namespace

Result<IcebergSchema> ToIcebergSchema(const arrow::Schema& schema) {
  Mapper mapper;
  mapper.next_id = schema.num_fields();  // top-level columns take 1..N
  IcebergSchema out;
  json fields = json::array(), mapping = json::array();
  for (int i = 0; i < schema.num_fields(); ++i) {
    const auto& f = *schema.field(i);
    json children = json::array();
    IcebergColumn column{f.name(), i + 1, "", BoundKind::kNone};
    ARROW_ASSIGN_OR_RAISE(json type, mapper.TypeOf(f.name(), *f.type(), &children, &column.bounds));
    if (type.is_string()) column.type = type.get<std::string>();
    fields.push_back({{"id", i + 1}, {"name", f.name()}, {"required", !f.nullable()}, {"type", type}});
    json m = {{"field-id", i + 1}, {"names", {f.name()}}};
    if (!children.empty()) m["fields"] = children;
    mapping.push_back(m);
    out.columns.push_back(column);
  }
  out.json =
      json{{"type", "struct"}, {"schema-id", 0}, {"identifier-field-ids", json::array()}, {"fields", fields}}.dump();
  out.name_mapping = mapping.dump();
  out.last_column_id = mapper.next_id;
  return out;
}

}  // namespace sediment::iceberg
