// What the stores over arrow::fs share: reads, Stat and List
// (fs_store_internal.h).
#include <arrow/filesystem/filesystem.h>
#include <fmt/format.h>

#include <algorithm>

#include "blob/fs_store_internal.h"

namespace sediment::blob {
namespace {

TimePoint ToTimePoint(arrow::fs::TimePoint t) {
  return TimePoint(std::chrono::duration_cast<Duration>(t.time_since_epoch()));
}

}  // namespace

Status CheckWithin(const std::string& path, int64_t offset, int64_t length, int64_t size) {
  if (offset >= 0 && length >= 0 && offset + length <= size) return Status::OK();
  return InvalidArgument(fmt::format("{}: [{}, {}) is not within its {} bytes", path, offset, offset + length, size));
}

Status NoClientMultipart(const BlobStore& store) {
  return NotImplemented(
      fmt::format("{}: multipart uploads by clients need S3 storage with a static key", store.Describe()));
}

Result<std::shared_ptr<arrow::io::RandomAccessFile>> FsBlobStore::OpenReader(const std::string& path) {
  ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
  ARROW_ASSIGN_OR_RAISE(auto info, fs_->GetFileInfo(Full(path)));
  if (info.type() == arrow::fs::FileType::NotFound) return NotFound(fmt::format("object {} not found", path));
  if (info.type() != arrow::fs::FileType::File) return NotFound(fmt::format("{} is not an object", path));
  return fs_->OpenInputFile(info);
}

Result<std::string> FsBlobStore::PresignUrl(const std::string& path, const std::string& method, int64_t expires) {
  ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
  return BlobStore::PresignUrl(path, method, expires);
}

Result<ObjectInfo> FsBlobStore::Stat(const std::string& path) {
  ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
  ARROW_ASSIGN_OR_RAISE(auto info, fs_->GetFileInfo(Full(path)));
  if (info.type() != arrow::fs::FileType::File) return NotFound(fmt::format("object {} not found", path));
  return ObjectInfo{path, info.size(), ToTimePoint(info.mtime())};
}

Result<std::vector<ObjectInfo>> FsBlobStore::List(const std::string& prefix) {
  if (prefix.find('\0') != std::string::npos || prefix.find("..") != std::string::npos ||
      (!prefix.empty() && prefix.front() == '/')) {
    return InvalidArgument(fmt::format("bad list prefix \"{}\"", prefix));
  }
  auto slash = prefix.rfind('/');
  std::string dir = slash == std::string::npos ? "" : prefix.substr(0, slash);
  arrow::fs::FileSelector sel;
  sel.base_dir = dir.empty() ? root_ : Full(dir);
  sel.recursive = true;
  sel.allow_not_found = true;
  ARROW_ASSIGN_OR_RAISE(auto infos, fs_->GetFileInfo(sel));
  std::vector<ObjectInfo> out;
  std::string root_slash = root_ + "/";
  for (const auto& info : infos) {
    if (info.type() != arrow::fs::FileType::File) continue;
    const std::string& p = info.path();
    if (p.compare(0, root_slash.size(), root_slash) != 0) continue;
    std::string rel = p.substr(root_slash.size());
    if (rel.rfind(kTempPrefix, 0) == 0) continue;
    if (rel.compare(0, prefix.size(), prefix) != 0) continue;
    out.push_back({rel, info.size(), ToTimePoint(info.mtime())});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return out;
}

}  // namespace sediment::blob
