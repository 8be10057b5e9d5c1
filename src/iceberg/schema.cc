#include "iceberg/schema.h"

#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace sediment::iceberg {
namespace {

using nlohmann::json;

struct Mapper {
  int next_id = 0;
  bool micros_stored = false;  // the top-level column being mapped is stored in microseconds
  bool binary_stored = false;  // the top-level column being mapped, fixed binary, is stored as binary

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
        *bounds = BoundKind::kBytes;  // values of n bytes: exact bounds
        if (binary_stored) return json("binary");
        return json(fmt::format("fixed[{}]", static_cast<const arrow::FixedSizeBinaryType&>(type).byte_width()));
      case arrow::Type::DATE32:
        *bounds = BoundKind::kInt32;
        return json("date");
      case arrow::Type::TIMESTAMP: {
        const auto& ts = static_cast<const arrow::TimestampType&>(type);
        // Nanoseconds marked so are stored as microseconds (micros_key); other ones have no bounds.
        if (ts.unit() == arrow::TimeUnit::MICRO || (ts.unit() == arrow::TimeUnit::NANO && micros_stored)) {
          *bounds = BoundKind::kInt64;
        }
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

Result<IcebergSchema> ToIcebergSchema(const std::vector<std::shared_ptr<arrow::Schema>>& versions,
                                      const std::string& micros_key, const std::string& binary_key) {
  if (versions.empty()) return InvalidArgument("a table without a schema");
  const arrow::Schema& schema = *versions.back();
  Mapper mapper;
  IcebergSchema out;
  json fields = json::array(), mapping = json::array();
  std::vector<int> ends;
  int start = 0;
  for (const auto& v : versions) {
    const int end = v->num_fields();
    if (end < start) return InvalidArgument("a schema version with fewer columns than the one before");
    // This version's new columns take the next ids, then their nested fields the ones after.
    const int first_id = mapper.next_id + 1;
    mapper.next_id += end - start;
    for (int i = start; i < end; ++i) {
      const auto& f = *schema.field(i);
      const int id = first_id + (i - start);
      json children = json::array();
      IcebergColumn column{f.name(), id, "", BoundKind::kNone};
      mapper.micros_stored = !micros_key.empty() && f.metadata() && f.metadata()->Contains(micros_key);
      mapper.binary_stored = !binary_key.empty() && f.metadata() && f.metadata()->Contains(binary_key) &&
                             f.metadata()->Get(binary_key).ValueOr("") != "false";
      ARROW_ASSIGN_OR_RAISE(json type, mapper.TypeOf(f.name(), *f.type(), &children, &column.bounds));
      mapper.micros_stored = mapper.binary_stored = false;
      if (type.is_string()) column.type = type.get<std::string>();
      fields.push_back({{"id", id}, {"name", f.name()}, {"required", !f.nullable()}, {"type", type}});
      json m = {{"field-id", id}, {"names", {f.name()}}};
      if (!children.empty()) m["fields"] = children;
      mapping.push_back(m);
      out.columns.push_back(column);
    }
    ends.push_back(end);
    start = end;
  }
  for (size_t k = 0; k < ends.size(); ++k) {
    json version_fields(json::value_t::array);
    for (int i = 0; i < ends[k]; ++i) version_fields.push_back(fields[static_cast<size_t>(i)]);
    out.schemas.push_back(json{
        {"type", "struct"},
        {"schema-id", static_cast<int>(k)},
        {"identifier-field-ids", json::array()},
        {"fields",
         version_fields}}.dump());
  }
  out.schema_id = static_cast<int>(ends.size()) - 1;
  out.json = out.schemas.back();
  out.name_mapping = mapping.dump();
  out.last_column_id = mapper.next_id;
  return out;
}

Result<IcebergSchema> ToIcebergSchema(const arrow::Schema& schema, const std::string& micros_key,
                                      const std::string& binary_key) {
  return ToIcebergSchema(
      std::vector<std::shared_ptr<arrow::Schema>>{std::make_shared<arrow::Schema>(schema.fields(), schema.metadata())},
      micros_key, binary_key);
}

}  // namespace sediment::iceberg
