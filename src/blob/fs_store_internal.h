// Private to blob/: the stores over arrow::fs. FsBlobStore holds what local
// disk and S3 share — reads, Stat and List through arrow::fs — and each kind
// of store adds how it publishes and deletes:
//   LocalBlobStore (local_store.cc): temp file, fsync, rename, fsync dir.
//   S3BlobStore (s3_store.cc): multipart upload completed on Close; with a
//     static key also presigned URLs, client multipart uploads and ReadSized
//     by Sediment's own signed GET (s3_sign_internal.h).
// blob.cc opens the right one for a URI.
//
// Thread-safety: as BlobStore (blob.h).
#pragma once

#include <arrow/filesystem/filesystem.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/config.h"
#include "blob/blob.h"

namespace sediment::blob {

// Unfinished local writes live in <root>/.sediment-tmp/ (same filesystem, so
// the publishing rename is atomic); opening a local store empties it. No
// object path may start with it (ValidateObjectPath), and List skips it.
inline constexpr std::string_view kTempPrefix = ".sediment-tmp";

// InvalidArgument unless [offset, offset + length) lies within `size` bytes.
Status CheckWithin(const std::string& path, int64_t offset, int64_t length, int64_t size);

// NotImplemented: `store` cannot run multipart uploads for clients.
Status NoClientMultipart(const BlobStore& store);

class FsBlobStore : public BlobStore {
 public:
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenReader(const std::string& path) override;
  Result<ObjectInfo> Stat(const std::string& path) override;
  Result<std::vector<ObjectInfo>> List(const std::string& prefix) override;
  // The path is checked first (InvalidArgument) on every store.
  Result<std::string> PresignUrl(const std::string& path, const std::string& method, int64_t expires) override;
  std::string Describe() const override { return description_; }

 protected:
  // `root` is the fs path of the store's root: "/abs/dir" locally, "bucket/prefix" on S3.
  FsBlobStore(std::shared_ptr<arrow::fs::FileSystem> fs, std::string root, std::string description)
      : fs_(std::move(fs)), root_(std::move(root)), description_(std::move(description)) {}

  std::string Full(const std::string& path) const { return root_ + "/" + path; }

  std::shared_ptr<arrow::fs::FileSystem> fs_;
  const std::string root_;
  const std::string description_;
};

// The store at a local path, or a file:// or local:// URI (local_store.cc).
Result<std::shared_ptr<BlobStore>> OpenLocalStore(const std::string& uri);
// FindStoredObject for the same (local_store.cc).
Result<std::optional<std::string>> FindLocalObject(const std::string& uri, const std::vector<std::string>& ignore);

// The store at s3://bucket[/prefix] (s3_store.cc).
Result<std::shared_ptr<BlobStore>> OpenS3Store(const std::string& uri, const S3Config& config);
// FindStoredObject for the same (s3_store.cc).
Result<std::optional<std::string>> FindS3Object(const std::string& uri, const S3Config& config,
                                                const std::vector<std::string>& ignore);

}  // namespace sediment::blob
