// BlobStore's own behaviour — object paths, the conveniences over the
// primitives, what a store without client multipart uploads answers — and
// opening the store a URI names: local disk (local_store.cc) or S3
// (s3_store.cc), both over arrow::fs (fs_store_internal.h).
#include "blob/blob.h"

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <fmt/format.h>

#include <algorithm>

#include "blob/fs_store_internal.h"

namespace sediment::blob {

Status ValidateObjectPath(const std::string& path) {
  if (path.empty()) return InvalidArgument("object path is empty");
  if (path.front() == '/') return InvalidArgument(fmt::format("object path \"{}\" must be relative", path));
  if (path.find('\0') != std::string::npos) return InvalidArgument("object path contains a NUL byte");
  if (path.find('\\') != std::string::npos) {
    return InvalidArgument(fmt::format("object path \"{}\" contains a backslash", path));
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string_view part(path.data() + start, end - start);
    if (part.empty() || part == "." || part == "..") {
      return InvalidArgument(fmt::format("object path \"{}\" has an empty, '.' or '..' component", path));
    }
    if (part.rfind(kTempPrefix, 0) == 0) {
      return InvalidArgument(fmt::format("object path \"{}\" uses the reserved prefix {}", path, kTempPrefix));
    }
    start = end + 1;
  }
  return Status::OK();
}

Status BlobStore::Put(const std::string& path, std::string_view data) {
  ARROW_ASSIGN_OR_RAISE(auto out, OpenWriter(path));
  Status st = out->Write(data.data(), static_cast<int64_t>(data.size()));
  if (!st.ok()) {
    (void)out->Abort();
    return st;
  }
  return out->Close();
}

Result<std::shared_ptr<arrow::Buffer>> BlobStore::Get(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(auto in, OpenReader(path));
  ARROW_ASSIGN_OR_RAISE(int64_t size, in->GetSize());
  return in->ReadAt(0, size);
}

Result<std::shared_ptr<arrow::Buffer>> BlobStore::ReadSized(const std::string& path, int64_t offset, int64_t length,
                                                            int64_t size) {
  ARROW_RETURN_NOT_OK(CheckWithin(path, offset, length, size));
  ARROW_ASSIGN_OR_RAISE(auto in, OpenReaderSized(path, size));
  // Where the reader knows the object's size (local disk), it must be `size`.
  ARROW_ASSIGN_OR_RAISE(int64_t actual, in->GetSize());
  if (actual != size) {
    return Status::IOError(fmt::format("{}: the object has {} bytes, {} expected", path, actual, size));
  }
  ARROW_ASSIGN_OR_RAISE(auto bytes, in->ReadAt(offset, length));
  if (bytes->size() != length) return Status::IOError(fmt::format("{}: a short read", path));
  return bytes;
}

Result<std::string> BlobStore::CreateMultipartUpload(const std::string&) { return NoClientMultipart(*this); }
Result<std::string> BlobStore::PresignUploadPart(const std::string&, const std::string&, int, int64_t) {
  return NoClientMultipart(*this);
}
Result<std::string> BlobStore::UploadPartCopy(const std::string&, const std::string&, int, BlobStore&,
                                              const std::string&, std::optional<std::pair<int64_t, int64_t>>) {
  return NoClientMultipart(*this);
}
Result<std::string> BlobStore::CompleteMultipartUpload(const std::string&, const std::string&,
                                                       const std::vector<Part>&) {
  return NoClientMultipart(*this);
}
Status BlobStore::AbortMultipartUpload(const std::string&, const std::string&) { return NoClientMultipart(*this); }

Result<std::shared_ptr<arrow::Buffer>> BlobStore::ReadRange(const std::string& path, int64_t offset, int64_t length) {
  if (offset < 0 || length < 0) return InvalidArgument("negative offset or length");
  ARROW_ASSIGN_OR_RAISE(auto in, OpenReader(path));
  ARROW_ASSIGN_OR_RAISE(int64_t size, in->GetSize());
  if (offset > size) {
    return InvalidArgument(fmt::format("offset {} is past the end of {} ({} bytes)", offset, path, size));
  }
  return in->ReadAt(offset, std::min(length, size - offset));
}

Result<std::shared_ptr<BlobStore>> OpenBlobStore(const std::string& uri, const S3Config& s3) {
  if (uri.rfind("s3://", 0) == 0) return OpenS3Store(uri, s3);
  return OpenLocalStore(uri);
}

Result<std::optional<std::string>> FindStoredObject(const std::string& uri, const S3Config& s3,
                                                    const std::vector<std::string>& ignore) {
  if (uri.rfind("s3://", 0) == 0) return FindS3Object(uri, s3, ignore);
  return FindLocalObject(uri, ignore);
}

Status CopyBytes(arrow::io::RandomAccessFile* in, int64_t offset, int64_t length, arrow::io::OutputStream* out,
                 const std::function<void(const arrow::Buffer&)>& each) {
  constexpr int64_t kChunk = 1 << 20;
  for (int64_t done = 0; done < length; done += kChunk) {
    ARROW_ASSIGN_OR_RAISE(auto buf, in->ReadAt(offset + done, std::min(kChunk, length - done)));
    if (buf->size() == 0) return Status::IOError(fmt::format("data ends {} bytes short", length - done));
    ARROW_RETURN_NOT_OK(out->Write(buf->data(), buf->size()));
    if (each) each(*buf);
  }
  return Status::OK();
}

}  // namespace sediment::blob
