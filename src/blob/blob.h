// BlobStore: object storage for immutable files (segments, ranges,
// meta-ranges, object data), over arrow::fs.
//
// A store is rooted at a URI: a local path (or file:// / local:// URI) or
// s3://bucket/prefix. Object paths are relative to the root, '/'-separated.
//
// Publishing is atomic: a writer's Close() makes the whole object visible at
// once, or fails and leaves nothing. Abort(), or dropping the writer without
// Close(), discards it. On local disk that is write-to-temp, fsync file,
// rename, fsync directory; on S3 it is a multipart upload completed on Close.
//
// Thread-safety: a BlobStore is safe to use from many threads. A writer or
// reader it returns is used by one thread at a time.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/config.h"
#include "base/status.h"

namespace arrow {
class Buffer;
namespace io {
class OutputStream;
class RandomAccessFile;
}  // namespace io
}  // namespace arrow

namespace sediment::blob {

struct ObjectInfo {
  std::string path;  // relative to the store's root
  int64_t size = 0;
  TimePoint mtime;
};

class BlobStore {
 public:
  virtual ~BlobStore() = default;

  // A stream whose Close() publishes `path` atomically (replacing any object there).
  virtual Result<std::shared_ptr<arrow::io::OutputStream>> OpenWriter(const std::string& path) = 0;
  // The same for a large object written once and read later (a merge's
  // final file): the local store writes it around the page cache (O_DIRECT),
  // which spares the copy into new cache pages that a write costs otherwise.
  virtual Result<std::shared_ptr<arrow::io::OutputStream>> OpenLargeWriter(const std::string& path) {
    return OpenWriter(path);
  }
  // NotFound if absent.
  virtual Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenReader(const std::string& path) = 0;
  // The same for an object whose size the caller knows (the registry keeps
  // it): on object storage no metadata request is made; an absent object
  // fails at the first read.
  virtual Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenReaderSized(const std::string& path, int64_t size) {
    (void)size;
    return OpenReader(path);
  }
  virtual Result<ObjectInfo> Stat(const std::string& path) = 0;
  // Every object whose path starts with `prefix`, sorted by path. Temporary
  // files of unfinished writes are never listed.
  virtual Result<std::vector<ObjectInfo>> List(const std::string& prefix) = 0;
  // Deleting an absent object is not an error.
  virtual Status Delete(const std::string& path) = 0;
  // "local:/abs/path" or "s3://bucket/prefix".
  virtual std::string Describe() const = 0;
  // Whether a read is a network request (object storage): readers then
  // coalesce ranges into fewer, larger reads.
  virtual bool Remote() const { return false; }
  // The file an object is on a local filesystem, for readers that open files
  // themselves (the query engine); nullopt on object storage.
  virtual std::optional<std::string> LocalFile(const std::string& /*path*/) const { return std::nullopt; }
  // A URL that lets its holder `method` ("GET" or "PUT") the object at `path`
  // directly on the object store for `expires` seconds (S3's presigned URLs,
  // signature V4 in the query). NotImplemented where there is no such thing
  // (local disk) or no static key to sign with.
  virtual Result<std::string> PresignUrl(const std::string& /*path*/, const std::string& /*method*/,
                                         int64_t /*expires*/) {
    return NotImplemented(fmt::format("{}: presigned URLs need S3 storage", Describe()));
  }

  // Multipart uploads whose parts a client sends to the object store itself
  // (lakeFS's presigned multipart API): S3 with a static key only,
  // NotImplemented elsewhere. What S3 refuses comes back as its code and
  // message: NotFound for an unknown upload, InvalidArgument for parts it
  // will not assemble.
  struct Part {
    int number = 0;
    std::string etag;  // as the part's upload answered it
  };
  virtual bool ClientMultipart() const { return false; }
  // Starts an upload of `path`; its id.
  virtual Result<std::string> CreateMultipartUpload(const std::string& path);
  // A URL to PUT part `part` (1..10000) of the upload to, for `expires` seconds.
  virtual Result<std::string> PresignUploadPart(const std::string& path, const std::string& upload_id, int part,
                                                int64_t expires);
  // Part `part` is bytes [first, last] of `source_path` in `source` (all of
  // it without a range), copied by the object store; the part's ETag.
  virtual Result<std::string> UploadPartCopy(const std::string& path, const std::string& upload_id, int part,
                                             BlobStore& source, const std::string& source_path,
                                             std::optional<std::pair<int64_t, int64_t>> range);
  // Assembles the parts into the object at `path`; the object's ETag,
  // without quotes.
  virtual Result<std::string> CompleteMultipartUpload(const std::string& path, const std::string& upload_id,
                                                      const std::vector<Part>& parts);
  virtual Status AbortMultipartUpload(const std::string& path, const std::string& upload_id);

  // Bytes [offset, offset + length) of the object at `path`, whose size is
  // known to be `size` (from a record: nothing is asked to learn it), in one
  // request. On S3 with a static key it is one signed GET outside the AWS
  // SDK, whose per-request CPU costs more than a small object's bytes.
  virtual Result<std::shared_ptr<arrow::Buffer>> ReadSized(const std::string& path, int64_t offset, int64_t length,
                                                           int64_t size);

  // Conveniences over the primitives above.
  Status Put(const std::string& path, std::string_view data);
  Result<std::shared_ptr<arrow::Buffer>> Get(const std::string& path);
  Result<std::shared_ptr<arrow::Buffer>> ReadRange(const std::string& path, int64_t offset, int64_t length);
};

// Opens the store at `uri`. Local roots are created if missing; S3 settings
// come from `s3` with the standard AWS environment variables as fallback.
Result<std::shared_ptr<BlobStore>> OpenBlobStore(const std::string& uri, const S3Config& s3);

// The path, relative to `uri`, of some object stored under `uri` that is not
// in `ignore`, or nullopt when there is none. Creates and changes nothing: a
// missing local directory holds nothing, and directories alone are no objects
// (a symbolic link is one). Lists no further than the first find.
Result<std::optional<std::string>> FindStoredObject(const std::string& uri, const S3Config& s3,
                                                    const std::vector<std::string>& ignore = {});

// InvalidArgument unless `path` is a clean relative object path: not empty,
// no leading '/', no empty, '.' or '..' components, no NUL or backslash.
Status ValidateObjectPath(const std::string& path);

// Copies bytes [offset, offset + length) of `in` to `out`, 1 MiB per read,
// handing each chunk to `each` too when given. Neither closes nor aborts `out`.
Status CopyBytes(arrow::io::RandomAccessFile* in, int64_t offset, int64_t length, arrow::io::OutputStream* out,
                 const std::function<void(const arrow::Buffer&)>& each = nullptr);

// Call once before exit if any s3:// store was opened.
void FinalizeS3();

}  // namespace sediment::blob
