#include "catalog/lakefs_sstable.h"

#include <fmt/format.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>
#include <rocksdb/table_properties.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "base/crypto.h"
#include "blob/blob.h"
#include "catalog/entry.h"

namespace sediment::catalog {
namespace {

// lakeFS's identity of an entry (catalog.EntryToValue, pkg/ident): SHA-256
// over typed fields, each a type byte, lengths and integers as an int64 field
// (type 2, the byte 8, 8 bytes big-endian): size, e_tag, the metadata sorted
// by key, the content type when there is one.
class IdentityWriter {
 public:
  IdentityWriter& Int64(int64_t v) {
    buf_.push_back(2);
    buf_.push_back(8);
    for (int shift = 56; shift >= 0; shift -= 8)
      buf_.push_back(static_cast<char>((static_cast<uint64_t>(v) >> shift) & 0xff));
    return *this;
  }
  IdentityWriter& String(std::string_view v) {
    buf_.push_back(1);
    Int64(static_cast<int64_t>(v.size()));
    buf_.append(v);
    return *this;
  }
  IdentityWriter& Map(const std::map<std::string, std::string>& m) {  // std::map: sorted by key
    buf_.push_back(4);
    Int64(static_cast<int64_t>(m.size()));
    for (const auto& [k, v] : m) String(k).String(v);
    return *this;
  }
  std::string Identity() const { return Sha256(buf_); }

 private:
  std::string buf_;
};

}  // namespace

std::string LakeFsEntryIdentity(const Entry& e) {
  IdentityWriter w;
  w.Int64(e.size).String(e.checksum).Map(e.metadata);
  if (!e.content_type.empty()) w.String(e.content_type);
  return w.Identity();
}

namespace {

// --- protobuf wire format, as much as these two messages need ---------------

void PutUvarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutTag(std::string* out, int field, int wire_type) {
  PutUvarint(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
}

// proto3 leaves default values out.
void PutVarintField(std::string* out, int field, int64_t v) {
  if (v == 0) return;
  PutTag(out, field, 0);
  PutUvarint(out, static_cast<uint64_t>(v));
}

void PutBytesField(std::string* out, int field, std::string_view bytes, bool keep_empty = false) {
  if (bytes.empty() && !keep_empty) return;
  PutTag(out, field, 2);
  PutUvarint(out, bytes.size());
  out->append(bytes);
}

// graveler's RangeData.
std::string RangeData(const RangeInfo& r) {
  std::string out;
  PutBytesField(&out, 1, r.min_key);
  PutBytesField(&out, 2, r.max_key);
  PutVarintField(&out, 3, r.bytes);
  PutVarintField(&out, 4, r.count);
  return out;
}

// lakeFS's catalog Entry.
std::string EntryProto(const Entry& e) {
  std::string out, ts, pair;
  const bool full = e.address.find("://") != std::string::npos;
  PutBytesField(&out, 1, e.address);
  PutVarintField(&ts, 1, e.mtime);
  PutBytesField(&out, 2, ts, /*keep_empty=*/true);
  PutVarintField(&out, 3, e.size);
  PutBytesField(&out, 4, e.checksum);
  for (const auto& [k, v] : e.metadata) {
    pair.clear();
    PutBytesField(&pair, 1, k, /*keep_empty=*/true);
    PutBytesField(&pair, 2, v, /*keep_empty=*/true);
    PutBytesField(&out, 5, pair, /*keep_empty=*/true);
  }
  PutVarintField(&out, 6, full ? 2 : 1);  // FULL, RELATIVE
  PutBytesField(&out, 7, e.content_type);
  return out;
}

// graveler's value wrapping: each part after its length as a Go signed
// varint (zig-zag: a length L is written as the unsigned varint of 2L).
std::string WrapValue(std::string_view identity, std::string_view data) {
  std::string out;
  PutUvarint(&out, 2 * static_cast<uint64_t>(identity.size()));
  out.append(identity);
  PutUvarint(&out, 2 * static_cast<uint64_t>(data.size()));
  out.append(data);
  return out;
}

Status FromRocks(const rocksdb::Status& st, const std::string& what) {
  if (st.ok()) return Status::OK();
  return Status::IOError(fmt::format("{}: {}", what, st.ToString()));
}

// The user property lakeFS's writer puts in every file: "type", "ranges" or
// "metaranges" (its Spark input format skips files without it).
class TypeProperty final : public rocksdb::TablePropertiesCollector {
 public:
  explicit TypeProperty(std::string type) : type_(std::move(type)) {}
  rocksdb::Status AddUserKey(const rocksdb::Slice&, const rocksdb::Slice&, rocksdb::EntryType, rocksdb::SequenceNumber,
                             uint64_t) override {
    return rocksdb::Status::OK();
  }
  rocksdb::Status Finish(rocksdb::UserCollectedProperties* properties) override {
    (*properties)["type"] = type_;
    return rocksdb::Status::OK();
  }
  rocksdb::UserCollectedProperties GetReadableProperties() const override { return {{"type", type_}}; }
  const char* Name() const override { return "lakefs-type"; }

 private:
  const std::string type_;
};

class TypePropertyFactory final : public rocksdb::TablePropertiesCollectorFactory {
 public:
  explicit TypePropertyFactory(std::string type) : type_(std::move(type)) {}
  rocksdb::TablePropertiesCollector* CreateTablePropertiesCollector(
      rocksdb::TablePropertiesCollectorFactory::Context) override {
    return new TypeProperty(type_);
  }
  const char* Name() const override { return "lakefs-type"; }

 private:
  const std::string type_;
};

// An SST file pebble reads (the header), written to a temporary file under
// `temp_dir` and returned as bytes.
class SstBuilder {
 public:
  SstBuilder(const std::string& temp_dir, const std::string& type)
      : path_(fmt::format("{}/lakefs-sst-{}", temp_dir, RandomHex(8))), writer_(rocksdb::EnvOptions(), Options(type)) {}
  ~SstBuilder() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  Status Open() {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
    return FromRocks(writer_.Open(path_), "open " + path_);
  }
  Status Put(std::string_view key, std::string_view value) {
    ++records_;
    return FromRocks(writer_.Put(rocksdb::Slice(key.data(), key.size()), rocksdb::Slice(value.data(), value.size())),
                     "write " + path_);
  }
  Result<std::string> Finish() {
    if (records_ == 0) return InvalidArgument("nothing to write: an SST file holds at least one record");
    ARROW_RETURN_NOT_OK(FromRocks(writer_.Finish(), "finish " + path_));
    std::ifstream in(path_, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (!in.good() && !in.eof()) return Status::IOError(fmt::format("read back {}", path_));
    return bytes.str();
  }

 private:
  static rocksdb::Options Options(const std::string& type) {
    rocksdb::Options o;
    o.table_properties_collector_factories.push_back(std::make_shared<TypePropertyFactory>(type));
    rocksdb::BlockBasedTableOptions t;
    t.format_version = 2;  // pebble reads RocksDB's footer version 2 only
    t.checksum = rocksdb::kCRC32c;
    t.index_type = rocksdb::BlockBasedTableOptions::kBinarySearch;
    t.filter_policy = nullptr;
    o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
    o.compression = rocksdb::kNoCompression;
    return o;
  }

  const std::string path_;
  rocksdb::SstFileWriter writer_;
  int64_t records_ = 0;
};

}  // namespace

Status CheckLakeFsMetadataName(const std::string& kind, const std::string& id) {
  if (kind != "meta_range" && kind != "range") {
    return InvalidArgument(fmt::format("type \"{}\" is not meta_range or range", kind.substr(0, 40)));
  }
  if (!IsRangeId(id)) {
    return InvalidArgument(fmt::format("\"{}\" is not a {} id (64 hexadecimal digits)", id.substr(0, 80), kind));
  }
  return Status::OK();
}

Result<std::string> LakeFsMetadataObject(RangeStore& store, const Namespace& ns, const std::string& kind,
                                         const std::string& id, const std::string& temp_dir) {
  ARROW_RETURN_NOT_OK(CheckLakeFsMetadataName(kind, id));
  auto missing = [&](const char* why) { return NotFound(fmt::format("{} {} not found{}", kind, id, why)); };
  // The range store's caches are keyed by id alone: the file must be in this
  // namespace, or another repository's metadata would be served from them.
  auto here = ns->Stat("_lakefs/" + id);
  if (IsNotFound(here.status())) return missing("");
  ARROW_RETURN_NOT_OK(here.status());
  auto it = store.NewRangeIterator(ns, id);
  if (IsNotFound(it.status())) return missing("");
  ARROW_RETURN_NOT_OK(it.status());
  // Both kinds are SST files at _lakefs/<id>; their values tell them apart
  // (an encoded entry never decodes as a range's record, nor the reverse).
  if (!(*it)->Next()) {
    ARROW_RETURN_NOT_OK((*it)->status());
    return missing(": it holds nothing");
  }
  const bool is_range = DecodeEntry((*it)->value()).ok();
  if (is_range != (kind == "range")) return missing(is_range ? ": it is a range" : ": it is a meta-range");
  SstBuilder sst(temp_dir, kind == "range" ? "ranges" : "metaranges");
  ARROW_RETURN_NOT_OK(sst.Open());
  if (kind == "meta_range") {
    ARROW_ASSIGN_OR_RAISE(auto mr, store.LoadMetaRange(ns, id));
    for (const auto& r : mr->ranges) ARROW_RETURN_NOT_OK(sst.Put(r.max_key, WrapValue(r.id, RangeData(r))));
    return sst.Finish();
  }
  do {
    ARROW_ASSIGN_OR_RAISE(auto e, DecodeEntry((*it)->value()));
    ARROW_RETURN_NOT_OK(sst.Put((*it)->key(), WrapValue(LakeFsEntryIdentity(e), EntryProto(e))));
  } while ((*it)->Next());
  ARROW_RETURN_NOT_OK((*it)->status());
  return sst.Finish();
}

}  // namespace sediment::catalog
