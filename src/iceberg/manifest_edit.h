// Reading and re-writing manifests and manifest lists that other writers made
// (PyIceberg, Spark, DuckDB), of any partition spec: what a logical merge of
// two appends needs (repo_tables/table_merge.cc, and
// docs/research/iceberg-rest-writes.md §7). Records are copied as their
// writer encoded them (avro-c generic values of the file's own schema); only
// the fields a merge must change are set.
//
// Thread-safety: pure functions over bytes.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"

namespace sediment::iceberg {

// One manifest_file of a manifest list.
struct ListedManifest {
  std::string path;
  int32_t content = 0;  // 0 data, 1 deletes
};
Result<std::vector<ListedManifest>> ReadManifestList(const std::string& avro);

// The live (ADDED or EXISTING) data files of a manifest.
struct LiveFile {
  std::string path;
  int64_t records = 0;
  int64_t size = 0;
};
Result<std::vector<LiveFile>> ReadLiveFiles(const std::string& avro);

// A manifest of the live entries of `avro` whose file paths are in `paths`,
// each as ADDED by `snapshot_id` with its sequence numbers left to inherit
// (the new snapshot's), same schema and header. `*added`: what it holds.
struct CopiedManifest {
  std::string avro;
  int32_t files = 0;
  int64_t records = 0;
  int64_t size = 0;
};
Result<CopiedManifest> CopyAsAdded(const std::string& avro, const std::set<std::string>& paths, int64_t snapshot_id);

// A manifest list: every manifest of `list` (another snapshot's) as it is,
// then each of `added` (written for snapshot `snapshot_id`, sequence
// `sequence`), with the list's schema and its header's ids set for the new
// snapshot.
struct NewManifest {
  std::string path;
  int64_t length = 0;
  int32_t spec_id = 0;
  CopiedManifest counts;
};
Result<std::string> ExtendManifestList(const std::string& list, const std::vector<NewManifest>& added,
                                       int64_t snapshot_id, int64_t parent_id, int64_t sequence);

}  // namespace sediment::iceberg
