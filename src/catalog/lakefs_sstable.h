// Committed metadata in lakeFS's on-disk form, for clients that read it
// (GET .../metadata/object/{meta_range|range}/{id}: lakeFS's Spark metadata
// client, its system tests). Sediment's range files are its own (RocksDB SST
// files of EncodeEntry values, docs/formats.md); these are made from them on
// request:
//
// - a pebble-readable SST: RocksDB table format version 2, CRC32c checksums,
//   no compression, the bytewise comparator (what pebble's reader accepts);
// - each value in lakeFS's wrapping: signed (zig-zag) varint length and the
//   identity, the same for the data;
// - a meta-range: key = a range's last path, identity = the range's id, data
//   = graveler's RangeData protobuf (min_key 1, max_key 2, estimated_size 3,
//   count 4);
// - a range: key = the object's path, identity = lakeFS's (SHA-256 over size,
//   e_tag, metadata and content type, typed as lakeFS's pkg/ident writes
//   them), data = lakeFS's catalog Entry protobuf (address 1, last_modified
//   2, size 3, e_tag 4, metadata 5, address_type 6, content_type 7);
// - the user property "type": "metaranges" or "ranges", as lakeFS's writer
//   sets it.
//
// Thread-safety: pure functions (each writes its own temporary file).
#pragma once

#include <string>

#include "base/status.h"
#include "catalog/entry.h"
#include "catalog/iterator.h"
#include "catalog/range_store.h"

namespace sediment::catalog {

// The SST bytes of meta-range (`kind` "meta_range") or range ("range") `id`
// of namespace `ns`, made in `temp_dir`. InvalidArgument for a kind or id
// that is none; NotFound for a file that is not in `ns` or is of the other
// kind, and for the empty meta-range (which has no file, and an SST holds
// at least one record).
// lakeFS's identity of an entry (32 bytes; what it compares in diffs and merges).
std::string LakeFsEntryIdentity(const Entry& e);

// InvalidArgument unless `kind` is meta_range or range and `id` a range id
// (64 lowercase hexadecimal digits).
Status CheckLakeFsMetadataName(const std::string& kind, const std::string& id);

Result<std::string> LakeFsMetadataObject(RangeStore& store, const Namespace& ns, const std::string& kind,
                                         const std::string& id, const std::string& temp_dir);

}  // namespace sediment::catalog
