// The catalog's side of an Iceberg commit (the REST catalog's updateTable and
// createTable, apache/iceberg open-api/rest-catalog-open-api.yaml,
// `CommitTableRequest`), as a pure function of the table's current metadata,
// the request's requirements and updates, and the time: the rules of the spec
// written once, tested rule by rule (table_commit_test.cc), for the catalog of
// tables in repositories (docs/iceberg-repositories.md) to call.
//
// Rules it implements:
// - Every requirement is checked against the current metadata before any
//   update is applied; one that fails is Conflict ("Requirement failed: ..."),
//   the REST API's 409 CommitFailedException, and nothing changes.
// - An unknown requirement type or update action, or a malformed one, is
//   InvalidArgument (400), naming its index in the request and what is wrong.
// - Updates apply in order; the catalog assigns schema, spec and sort-order
//   ids (an equal one already there is reused) and "-1" names the one the
//   request added last.
// - add-snapshot: a new id; in format version 2 a sequence number above the
//   table's last one (unless it has no parent); its manifest list inside the
//   table's location (a commit cannot adopt another table's or repository's
//   files). set-snapshot-ref on `main` moves current-snapshot-id and appends to
//   snapshot-log (kept in timestamp order).
// - The metadata file being replaced joins metadata-log (at most
//   `write.metadata.previous-versions-max`, 100 unless the table says).
// - Format versions 1 and 2 only; the v3 and encryption actions are refused.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/status.h"

namespace sediment::iceberg {

struct TableCommit {
  // The table's current metadata; nullopt when it does not exist (a create:
  // the request must then say assert-create).
  std::optional<nlohmann::json> current;
  std::string current_location;  // the metadata file `current` was read from ("" for a create)
  nlohmann::json requirements = nlohmann::json::array();
  nlohmann::json updates = nlohmann::json::array();
  int64_t now_ms = 0;
};

// The table's new metadata (equal to the current one when the updates change
// nothing), or the error the REST API answers with (see above).
Result<nlohmann::json> ApplyTableCommit(const TableCommit& commit);

}  // namespace sediment::iceberg
