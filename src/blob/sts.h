// Temporary credentials from the S3 service's STS (AssumeRole), limited by an
// inline session policy: what the repositories' Iceberg catalog vends to
// engines so they reach one table's files and nothing else
// (docs/iceberg-repositories.md, "Credentials"). AWS needs a role ARN the
// server's key may assume; MinIO takes the server's own key and any ARN.
//
// Thread-safety: a pure function over its arguments (one HTTPS request).
#pragma once

#include <cstdint>
#include <string>

#include "base/config.h"
#include "base/status.h"

namespace sediment::blob {

struct TemporaryCredentials {
  std::string access_key_id, secret_access_key, session_token;
  std::string expiration;  // as STS wrote it (ISO 8601)
};

// AssumeRole at `s3`'s endpoint (AWS: sts.<region>.amazonaws.com) signed with
// `s3`'s key, for `duration_s` seconds (900..43200), limited by
// `policy_json`. An error names STS's code and message.
Result<TemporaryCredentials> AssumeRole(const S3Config& s3, const std::string& role_arn, const std::string& policy_json,
                                        int64_t duration_s);

// The session policy of an S3 prefix (s3://bucket/prefix): read and list
// everything under it and, with `write`, put objects under prefix/data/ and
// prefix/metadata/ (never delete: the files may be shared with other
// branches and commits). InvalidArgument for a prefix with characters IAM
// reads as wildcards or variables (*, ?, $).
Result<std::string> PrefixPolicy(const std::string& s3_uri, bool write);

}  // namespace sediment::blob
