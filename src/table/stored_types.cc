#include "table/stored_types.h"

#include <arrow/api.h>
#include <arrow/compute/cast.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>
#include <arrow/util/base64.h>
#include <arrow/util/key_value_metadata.h>
#include <fmt/format.h>

#include <charconv>

namespace sediment::table {
namespace {

bool Marked(const arrow::Field& f) { return f.metadata() && f.metadata()->Contains(std::string(kUnsignedKey)); }
bool MarkedNanoseconds(const arrow::Field& f) {
  return f.metadata() && f.metadata()->Contains(std::string(kNanosecondsKey));
}

// `type` with `children` as its fields, for the nested types a table can hold.
std::shared_ptr<arrow::DataType> WithChildren(const std::shared_ptr<arrow::DataType>& type,
                                              const std::vector<std::shared_ptr<arrow::Field>>& children) {
  switch (type->id()) {
    case arrow::Type::LIST:
      return arrow::list(children[0]);
    case arrow::Type::LARGE_LIST:
      return arrow::large_list(children[0]);
    case arrow::Type::FIXED_SIZE_LIST:
      return arrow::fixed_size_list(children[0], static_cast<const arrow::FixedSizeListType&>(*type).list_size());
    case arrow::Type::STRUCT:
      return arrow::struct_(children);
    case arrow::Type::MAP: {
      const auto& entries = static_cast<const arrow::StructType&>(*children[0]->type());
      return std::make_shared<arrow::MapType>(entries.field(0), entries.field(1),
                                              static_cast<const arrow::MapType&>(*type).keys_sorted());
    }
    default:
      return type;  // unions and the like: stored as they are
  }
}

// The signed type that holds every value of unsigned `type`, or null.
std::shared_ptr<arrow::DataType> SignedHolder(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::UINT8:
    case arrow::Type::UINT16:
      return arrow::int32();
    case arrow::Type::UINT32:
    case arrow::Type::UINT64:  // the same bits: values from 2^63 read negative elsewhere
      return arrow::int64();
    default:
      return nullptr;
  }
}

std::shared_ptr<arrow::DataType> UnsignedNamed(const std::string& name) {
  if (name == "uint8") return arrow::uint8();
  if (name == "uint16") return arrow::uint16();
  if (name == "uint32") return arrow::uint32();
  if (name == "uint64") return arrow::uint64();
  return nullptr;
}

// Fixed binary stored as binary (kStoreBinaryKey), and back; null if `f` is neither.
std::shared_ptr<arrow::Field> ConvertFixedBinary(const std::shared_ptr<arrow::Field>& f, bool to_stored) {
  const auto& type = f->type();
  if (to_stored && StoresFixedAsBinary(*f)) {
    auto md = f->metadata()->Copy();
    md->Append(std::string(kFixedSizeKey),
               std::to_string(static_cast<const arrow::FixedSizeBinaryType&>(*type).byte_width()));
    return f->WithType(arrow::binary())->WithMetadata(md);
  }
  if (!to_stored) {
    if (int32_t width = StoredFixedWidth(*f); width > 0) {
      auto md = f->metadata()->Copy();
      (void)md->Delete(std::string(kFixedSizeKey));
      auto out = f->WithType(arrow::fixed_size_binary(width));
      return md->size() > 0 ? out->WithMetadata(md) : out->RemoveMetadata();
    }
  }
  return nullptr;
}

std::shared_ptr<arrow::Field> Convert(const std::shared_ptr<arrow::Field>& f, bool to_stored, bool top = false) {
  const auto& type = f->type();
  if (top) {
    if (auto converted = ConvertFixedBinary(f, to_stored)) return converted;
  }
  if (to_stored && type->id() == arrow::Type::TIMESTAMP &&
      static_cast<const arrow::TimestampType&>(*type).unit() == arrow::TimeUnit::NANO && f->metadata() &&
      f->metadata()->Contains(std::string(kStoreMicrosKey))) {
    auto md = f->metadata() ? f->metadata()->Copy() : std::make_shared<arrow::KeyValueMetadata>();
    md->Append(std::string(kNanosecondsKey), "true");
    const auto& tz = static_cast<const arrow::TimestampType&>(*type).timezone();
    return f->WithType(arrow::timestamp(arrow::TimeUnit::MICRO, tz))->WithMetadata(md);
  }
  if (!to_stored && MarkedNanoseconds(*f) && type->id() == arrow::Type::TIMESTAMP) {
    auto md = f->metadata()->Copy();
    (void)md->Delete(std::string(kNanosecondsKey));
    auto out = f->WithType(
        arrow::timestamp(arrow::TimeUnit::NANO, static_cast<const arrow::TimestampType&>(*type).timezone()));
    return md->size() > 0 ? out->WithMetadata(md) : out->RemoveMetadata();
  }
  if (to_stored) {
    if (auto held = SignedHolder(*type)) {
      auto md = f->metadata() ? f->metadata()->Copy() : std::make_shared<arrow::KeyValueMetadata>();
      md->Append(std::string(kUnsignedKey), type->ToString());
      return f->WithType(held)->WithMetadata(md);
    }
  } else if (Marked(*f)) {
    auto md = f->metadata()->Copy();
    auto name = md->Get(std::string(kUnsignedKey));
    auto unsigned_type = name.ok() ? UnsignedNamed(*name) : nullptr;
    if (unsigned_type && SignedHolder(*unsigned_type)->Equals(*type)) {
      (void)md->Delete(std::string(kUnsignedKey));
      auto out = f->WithType(unsigned_type);
      return md->size() > 0 ? out->WithMetadata(md) : out->RemoveMetadata();
    }
  }
  if (type->num_fields() == 0) return f;
  std::vector<std::shared_ptr<arrow::Field>> children;
  bool changed = false;
  for (const auto& child : type->fields()) {
    children.push_back(Convert(child, to_stored));
    changed |= children.back() != child;
  }
  if (!changed) return f;
  return f->WithType(WithChildren(type, children));
}

std::shared_ptr<arrow::Schema> ConvertSchema(const std::shared_ptr<arrow::Schema>& schema, bool to_stored) {
  std::vector<std::shared_ptr<arrow::Field>> fields;
  bool changed = false;
  for (const auto& f : schema->fields()) {
    fields.push_back(Convert(f, to_stored, /*top=*/true));
    changed |= fields.back() != f;
  }
  if (!changed) return schema;
  return arrow::schema(std::move(fields), schema->metadata());
}

// Whether `from` and `to` differ at most in the signedness of 64-bit integers
// (and are not equal): then the same buffers hold either.
bool SameBits(const arrow::DataType& from, const arrow::DataType& to) {
  auto is64 = [](const arrow::DataType& t) { return t.id() == arrow::Type::INT64 || t.id() == arrow::Type::UINT64; };
  if (is64(from) && is64(to)) return true;
  if (from.id() != to.id() || from.num_fields() == 0 || from.num_fields() != to.num_fields()) return false;
  if (from.id() == arrow::Type::FIXED_SIZE_LIST && static_cast<const arrow::FixedSizeListType&>(from).list_size() !=
                                                       static_cast<const arrow::FixedSizeListType&>(to).list_size()) {
    return false;
  }
  for (int i = 0; i < from.num_fields(); ++i) {
    const auto& a = *from.field(i);
    const auto& b = *to.field(i);
    if (a.name() != b.name() || a.nullable() != b.nullable()) return false;
    if (!a.type()->Equals(*b.type()) && !SameBits(*a.type(), *b.type())) return false;
  }
  return true;
}

std::shared_ptr<arrow::ArrayData> SwapTypes(const std::shared_ptr<arrow::ArrayData>& data,
                                            const std::shared_ptr<arrow::DataType>& to) {
  if (data->type->Equals(*to)) return data;
  auto out = data->Copy();
  out->type = to;
  for (size_t i = 0; i < out->child_data.size(); ++i) {
    out->child_data[i] = SwapTypes(data->child_data[i], to->field(static_cast<int>(i))->type());
  }
  return out;
}

}  // namespace

int32_t StoredFixedWidth(const arrow::Field& f) {
  if (!f.metadata() || f.type()->id() != arrow::Type::BINARY) return 0;
  auto n = f.metadata()->Get(std::string(kFixedSizeKey));
  if (!n.ok()) return 0;
  int32_t width = 0;
  auto [end, ec] = std::from_chars(n->data(), n->data() + n->size(), width);
  return ec == std::errc() && end == n->data() + n->size() && width > 0 ? width : 0;
}

bool StoresFixedAsBinary(const arrow::Field& field) {
  if (field.type()->id() != arrow::Type::FIXED_SIZE_BINARY || !field.metadata()) return false;
  auto v = field.metadata()->Get(std::string(kStoreBinaryKey));
  return v.ok() && *v != "false";
}

std::shared_ptr<arrow::Schema> MarkNewColumns(const std::shared_ptr<arrow::Schema>& schema) {
  arrow::FieldVector fields = schema->fields();
  bool changed = false;
  for (auto& f : fields) {
    if (f->type()->id() != arrow::Type::FIXED_SIZE_BINARY) continue;
    if (f->metadata() && f->metadata()->Contains(std::string(kStoreBinaryKey))) continue;
    auto md = f->metadata() ? f->metadata()->Copy() : std::make_shared<arrow::KeyValueMetadata>();
    md->Append(std::string(kStoreBinaryKey), "true");
    f = f->WithMetadata(md);
    changed = true;
  }
  return changed ? arrow::schema(std::move(fields), schema->metadata()) : schema;
}

std::shared_ptr<arrow::Schema> StoredSchema(const std::shared_ptr<arrow::Schema>& schema) {
  return ConvertSchema(schema, true);
}

std::shared_ptr<arrow::Schema> TableSchemaOf(const std::shared_ptr<arrow::Schema>& stored) {
  return ConvertSchema(stored, false);
}

Result<std::shared_ptr<arrow::Table>> Retype(const std::shared_ptr<arrow::Table>& table,
                                             const std::shared_ptr<arrow::Schema>& schema) {
  if (table->schema() == schema) return table;
  if (table->num_columns() != schema->num_fields()) {
    return Status::Invalid(
        fmt::format("{} columns where the schema has {}", table->num_columns(), schema->num_fields()));
  }
  std::vector<std::shared_ptr<arrow::ChunkedArray>> columns;
  for (int i = 0; i < table->num_columns(); ++i) {
    const auto& type = schema->field(i)->type();
    const auto& column = table->column(i);
    if (column->type()->Equals(*type)) {
      columns.push_back(column);
      continue;
    }
    if (!SameBits(*column->type(), *type)) {
      // Widened (uint32 as int64, uint8 as int32), nanoseconds kept as
      // microseconds, fixed binary as binary (and back): a checked cast, so a
      // value the table's type cannot hold is an error, not a wrapped number.
      auto cast = arrow::compute::Cast(column, type, arrow::compute::CastOptions::Safe());
      if (!cast.ok()) {
        return Status::Invalid(fmt::format("column {}: {}", schema->field(i)->name(), cast.status().message()));
      }
      columns.push_back(cast->chunked_array());
      continue;
    }
    arrow::ArrayVector chunks;
    for (const auto& chunk : column->chunks()) chunks.push_back(arrow::MakeArray(SwapTypes(chunk->data(), type)));
    columns.push_back(std::make_shared<arrow::ChunkedArray>(std::move(chunks), type));
  }
  return arrow::Table::Make(schema, std::move(columns), table->num_rows());
}

int64_t StoredUnsignedMax(const arrow::Field& stored) {
  if (!Marked(stored)) return -1;
  auto name = stored.metadata()->Get(std::string(kUnsignedKey));
  if (!name.ok()) return -1;
  if (*name == "uint8") return 255;
  if (*name == "uint16") return 65535;
  if (*name == "uint32") return 4294967295;
  return -1;  // uint64: the same bits as int64
}

namespace {

// Invalid, naming the column and row, if an integer column of `stored` marked
// as a narrower unsigned type holds a value outside it.
template <typename T>
Status CheckUnsignedRange(const arrow::Field& field, const arrow::ChunkedArray& column, int64_t max) {
  int64_t row = 0;
  for (const auto& chunk : column.chunks()) {
    const T* values = chunk->data()->GetValues<T>(1);
    for (int64_t k = 0; k < chunk->length(); ++k) {
      if ((values[k] < 0 || static_cast<int64_t>(values[k]) > max) && chunk->IsValid(k)) {
        return Status::Invalid(fmt::format("column {}: row {} holds {}, outside its type, {}", field.name(), row + k,
                                           static_cast<int64_t>(values[k]),
                                           *field.metadata()->Get(std::string(kUnsignedKey))));
      }
    }
    row += chunk->length();
  }
  return Status::OK();
}

}  // namespace

Status CheckStoredValues(const arrow::Table& stored) {
  for (int i = 0; i < stored.num_columns(); ++i) {
    const auto& field = *stored.schema()->field(i);
    if (const int64_t max = StoredUnsignedMax(field); max >= 0) {
      const auto id = stored.column(i)->type()->id();
      if (id == arrow::Type::INT32) ARROW_RETURN_NOT_OK(CheckUnsignedRange<int32_t>(field, *stored.column(i), max));
      if (id == arrow::Type::INT64) ARROW_RETURN_NOT_OK(CheckUnsignedRange<int64_t>(field, *stored.column(i), max));
    }
    const int32_t width = StoredFixedWidth(*stored.schema()->field(i));
    if (width == 0 || stored.column(i)->type()->id() != arrow::Type::BINARY) continue;
    int64_t row = 0;
    for (const auto& chunk : stored.column(i)->chunks()) {
      const auto& values = static_cast<const arrow::BinaryArray&>(*chunk);
      const int32_t* offsets = values.raw_value_offsets();
      for (int64_t k = 0; k < values.length(); ++k) {
        const int32_t length = offsets[k + 1] - offsets[k];
        if (length != width && values.IsValid(k)) {
          return Status::Invalid(
              fmt::format("column {}: row {} holds {} bytes where its type, fixed_size_binary({}), "
                          "holds {}",
                          stored.schema()->field(i)->name(), row + k, length, width, width));
        }
      }
      row += values.length();
    }
  }
  return Status::OK();
}

Result<std::string> StoredArrowSchema(const arrow::Schema& schema) {
  ARROW_ASSIGN_OR_RAISE(auto ipc, arrow::ipc::SerializeSchema(schema));
  return arrow::util::base64_encode(
      std::string_view(reinterpret_cast<const char*>(ipc->data()), static_cast<size_t>(ipc->size())));
}

Result<std::shared_ptr<arrow::Schema>> ParseStoredArrowSchema(const std::string& b64) {
  ARROW_ASSIGN_OR_RAISE(std::string raw, arrow::util::base64_decode(b64));
  arrow::io::BufferReader reader(std::make_shared<arrow::Buffer>(raw));
  arrow::ipc::DictionaryMemo memo;
  return arrow::ipc::ReadSchema(&reader, &memo);
}

Status AppendSchemaKeys(const arrow::Schema& stored, arrow::KeyValueMetadata* kv) {
  arrow::FieldVector plain;
  bool marked = false;
  for (const auto& f : stored.fields()) {
    marked |= f->HasMetadata();
    plain.push_back(f->HasMetadata() ? f->RemoveMetadata() : f);
  }
  ARROW_ASSIGN_OR_RAISE(auto arrow_schema, StoredArrowSchema(arrow::Schema(plain, stored.metadata())));
  kv->Append("ARROW:schema", std::move(arrow_schema));
  if (marked) {
    ARROW_ASSIGN_OR_RAISE(auto whole, StoredArrowSchema(stored));
    kv->Append(std::string(kStoredSchemaKey), std::move(whole));
  }
  return Status::OK();
}

std::shared_ptr<const arrow::KeyValueMetadata> WithStoredSchema(
    const std::shared_ptr<const arrow::KeyValueMetadata>& kv) {
  if (!kv) return kv;
  auto whole = kv->Get(std::string(kStoredSchemaKey));
  if (!whole.ok()) return kv;
  auto out = kv->Copy();
  (void)out->Set("ARROW:schema", *whole);
  return out;
}

}  // namespace sediment::table
