// DiscardUnlessLive: deletes a file that was written for a change of the live
// set that failed — unless the live set references it after all. A commit
// whose outcome is unknown (the KV store gave up after retries) may have
// landed; deleting its file then would lose rows. So a file is deleted only
// when the live set is known not to hold it; when even that cannot be read,
// the file stays, for the start-up orphan sweep.
//
// Thread-safety: safe from many threads.
#pragma once

#include <string>

#include "base/status.h"
#include "blob/blob.h"
#include "table/registry.h"

namespace sediment::table {

// True if the file is live (kept); false if it was deleted (or already gone).
Result<bool> DiscardUnlessLive(TableRegistry* registry, blob::BlobStore* blobs, const TableId& id,
                               const std::string& path);

}  // namespace sediment::table
