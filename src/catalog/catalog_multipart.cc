// The records of S3 multipart uploads in progress: c/mp/<repo>/<id> holds the
// upload, c/mp/<repo>/<id>/<part, 5 digits> each part. A part is recorded only
// while its upload's record exists (one batch), and completing or aborting
// removes the upload and its parts in one batch that requires the upload, so
// of two racing completions exactly one wins.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/crypto.h"
#include "catalog/catalog.h"
#include "catalog/catalog_internal.h"
#include "catalog/keys.h"
#include "kv/kv.h"

namespace sediment::catalog {
namespace {

using nlohmann::json;

constexpr int kMaxPartNumber = 10000;

Result<MultipartUpload> ParseUpload(const std::string& id, const std::string& raw) {
  try {
    auto j = json::parse(raw);
    MultipartUpload u;
    u.id = id;
    u.branch = j.at("branch");
    u.path = j.at("path");
    u.content_type = j.value("content_type", "");
    u.metadata = j.value("metadata", std::map<std::string, std::string>{});
    u.initiator = j.value("initiator", "");
    u.created = j.value("created", int64_t{0});
    return u;
  } catch (const std::exception& e) {
    return Status::IOError(fmt::format("corrupt multipart upload record {}: {}", id, e.what()));
  }
}

Result<UploadedPart> ParsePart(const std::string& raw) {
  try {
    auto j = json::parse(raw);
    return UploadedPart{j.at("n"), j.at("etag"), j.at("size"), j.at("address"), j.value("mtime", int64_t{0})};
  } catch (const std::exception& e) {
    return Status::IOError(fmt::format("corrupt multipart part record: {}", e.what()));
  }
}

Status NoSuchUpload(const std::string& id) {
  return NotFound(fmt::format("multipart upload \"{}\" not found (completed, aborted, or never created)", id));
}

}  // namespace

Result<MultipartUpload> Catalog::CreateMultipartUpload(const Repository& repo, MultipartUpload upload) {
  ARROW_RETURN_NOT_OK(CheckWritable(repo));
  ARROW_RETURN_NOT_OK(ValidatePath(upload.path));
  ARROW_RETURN_NOT_OK(GetBranch(repo.id, upload.branch).status());
  upload.id = RandomHex(16);
  upload.created = ToUnixMicros(clock_->Now()) / 1000000;
  json j = {{"branch", upload.branch},     {"path", upload.path},           {"content_type", upload.content_type},
            {"metadata", upload.metadata}, {"initiator", upload.initiator}, {"created", upload.created}};
  kv::Batch b;
  b.Require(kv::Precondition::Absent(UploadKey(repo.id, upload.id))).Put(UploadKey(repo.id, upload.id), j.dump());
  ARROW_RETURN_NOT_OK(kv_->Apply(b));
  return upload;
}

Result<MultipartUpload> Catalog::GetMultipartUpload(const std::string& repo, const std::string& id) {
  auto raw = kv_->Get(UploadKey(repo, id));
  if (IsNotFound(raw.status())) return NoSuchUpload(id);
  ARROW_RETURN_NOT_OK(raw.status());
  return ParseUpload(id, *raw);
}

Result<std::optional<std::string>> Catalog::PutUploadPart(const std::string& repo, const std::string& id,
                                                          const UploadedPart& part) {
  if (part.number < 1 || part.number > kMaxPartNumber) {
    return InvalidArgument(fmt::format("part number {} is out of range 1-{}", part.number, kMaxPartNumber));
  }
  std::string key = UploadPartKey(repo, id, part.number);
  json j = {
      {"n", part.number}, {"etag", part.etag}, {"size", part.size}, {"address", part.address}, {"mtime", part.mtime}};
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::optional<std::string> replaced;
    kv::Batch b;
    b.Require(kv::Precondition::Present(UploadKey(repo, id)));
    auto old = kv_->Get(key);
    if (old.ok()) {
      ARROW_ASSIGN_OR_RAISE(auto p, ParsePart(*old));
      replaced = p.address;
      b.Require(kv::Precondition::Equals(key, *old));
    } else if (IsNotFound(old.status())) {
      b.Require(kv::Precondition::Absent(key));
    } else {
      return old.status();
    }
    b.Put(key, j.dump());
    Status st = kv_->Apply(b);
    if (st.ok()) return replaced;
    if (!IsPreconditionFailed(st)) return st;
    if (IsNotFound(kv_->Get(UploadKey(repo, id)).status())) return NoSuchUpload(id);
    // The same part was uploaded again meanwhile: read it and replace it.
  }
  return Busy(fmt::format("part {} of upload {} kept changing; retry", part.number, id));
}

Result<Page<UploadedPart>> Catalog::ListUploadParts(const std::string& repo, const std::string& id, int after,
                                                    int64_t amount) {
  ARROW_RETURN_NOT_OK(GetMultipartUpload(repo, id).status());
  Page<UploadedPart> page;
  std::string prefix = UploadPartsPrefix(repo, id);
  std::string from = after > 0 ? UploadPartKey(repo, id, after) + '\0' : prefix;
  size_t want = amount > 0 ? static_cast<size_t>(amount) : SIZE_MAX;
  while (page.items.size() < want) {
    size_t left = want - page.items.size();
    ARROW_ASSIGN_OR_RAISE(auto scan, kv_->Scan(prefix, from, left >= 1000 ? 1000 : left + 1));
    for (const auto& kv : scan.items) {
      if (page.items.size() == want) {
        page.has_more = true;
        return page;
      }
      ARROW_ASSIGN_OR_RAISE(auto p, ParsePart(kv.value));
      page.items.push_back(std::move(p));
      from = kv.key + '\0';
    }
    if (!scan.has_more) break;
  }
  return page;
}

Result<Page<MultipartUpload>> Catalog::ListMultipartUploads(const std::string& repo, const std::string& after,
                                                            int64_t amount) {
  Page<MultipartUpload> page;
  std::string prefix = UploadsPrefix(repo);
  std::string from = after.empty() ? prefix : UploadKey(repo, after) + '\x01';
  int64_t want = internal::ClampAmount(amount);
  while (static_cast<int64_t>(page.items.size()) < want) {
    ARROW_ASSIGN_OR_RAISE(auto scan, kv_->Scan(prefix, from, 1000));
    for (const auto& kv : scan.items) {
      std::string rest = kv.key.substr(prefix.size());
      from = kv.key + '\0';
      if (rest.find('/') != std::string::npos) continue;  // a part
      if (static_cast<int64_t>(page.items.size()) == want) {
        page.has_more = true;
        return page;
      }
      ARROW_ASSIGN_OR_RAISE(auto u, ParseUpload(rest, kv.value));
      page.items.push_back(std::move(u));
    }
    if (!scan.has_more) break;
  }
  return page;
}

Status Catalog::DeleteMultipartUpload(const std::string& repo, const std::string& id) {
  // Parts are at most 10,000: one batch takes them all with the upload.
  kv::Batch b;
  b.Require(kv::Precondition::Present(UploadKey(repo, id))).Delete(UploadKey(repo, id));
  std::string prefix = UploadPartsPrefix(repo, id), from = prefix;
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto scan, kv_->Scan(prefix, from, 1000));
    for (const auto& kv : scan.items) {
      b.Delete(kv.key);
      from = kv.key + '\0';
    }
    if (!scan.has_more) break;
  }
  Status st = kv_->Apply(b);
  if (IsPreconditionFailed(st)) return NoSuchUpload(id);
  return st;
}

}  // namespace sediment::catalog
