// The local-disk store: an object is published by writing a temp file,
// fsyncing it, renaming it into place and fsyncing the directory
// (fs_store_internal.h).
#include <arrow/filesystem/localfs.h>
#include <arrow/io/interfaces.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "base/crypto.h"
#include "blob/fs_store_internal.h"

namespace sediment::blob {
namespace {

// A failed write, publish or delete: a server fault (500), whatever errno
// says. ENOENT here means the store's own directories are gone, not that
// what the client named is absent — a client that took it for "no such
// table" would stop. Absent objects are NotFound only on reads (OpenReader, Stat).
Status Errno(const std::string& what, const std::string& path, int err) {
  return Status::IOError(fmt::format("{} {}: {}", what, path, std::strerror(err)));
}

Status FsyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open directory", dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return Errno("fsync directory", dir, err);
  return Status::OK();
}

// Creates `dir` and any missing parents; each new directory's entry is made
// durable by an fsync of its parent.
Status EnsureDir(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Status::OK();
    return Status::IOError(fmt::format("{} exists and is not a directory", dir));
  }
  auto parent = std::filesystem::path(dir).parent_path().string();
  if (!parent.empty() && parent != dir) ARROW_RETURN_NOT_OK(EnsureDir(parent));
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return Errno("cannot create directory", dir, errno);
  return parent.empty() ? Status::OK() : FsyncDir(parent);
}

// Local writes: temp file in the target directory, fsync, rename, fsync dir.
// With `direct` (the file was opened O_DIRECT) the bytes are gathered in an
// aligned buffer and written in whole blocks around the page cache; the
// tail, shorter than a block, after O_DIRECT is turned off.
class LocalAtomicOutputStream final : public arrow::io::OutputStream {
 public:
  LocalAtomicOutputStream(int fd, std::string temp, std::string target, std::string dir, bool direct = false)
      : fd_(fd), temp_(std::move(temp)), target_(std::move(target)), dir_(std::move(dir)) {
    if (direct) {
      void* p = nullptr;
      if (::posix_memalign(&p, kBlock, kDirectBufferSize) == 0) {
        direct_.reset(static_cast<char*>(p));
      } else {
        (void)Buffered();
      }
    }
  }
  ~LocalAtomicOutputStream() override {
    if (!closed_) (void)Abort();
  }

  Status Write(const void* data, int64_t nbytes) override {
    if (closed_) return Status::Invalid("write to closed stream for ", target_);
    if (direct_) return WriteDirect(static_cast<const char*>(data), nbytes);
    // Parquet writes many small pieces: gather them into kBufferSize writes.
    if (buffer_.size() + static_cast<size_t>(nbytes) > kBufferSize) ARROW_RETURN_NOT_OK(FlushBuffer());
    if (static_cast<size_t>(nbytes) >= kBufferSize) {
      ARROW_RETURN_NOT_OK(WriteAll(static_cast<const char*>(data), nbytes));
    } else {
      buffer_.insert(buffer_.end(), static_cast<const char*>(data), static_cast<const char*>(data) + nbytes);
    }
    position_ += nbytes;
    return Status::OK();
  }

  Status Close() override {
    if (closed_) return Status::OK();
    Status st = direct_ ? FlushDirect() : FlushBuffer();
    closed_ = true;
    if (st.ok() && ::fsync(fd_) != 0) st = Errno("fsync", temp_, errno);
    if (::close(fd_) != 0 && st.ok()) st = Errno("close", temp_, errno);
    fd_ = -1;
    if (st.ok() && ::rename(temp_.c_str(), target_.c_str()) != 0) st = Errno("rename to", target_, errno);
    if (!st.ok()) {
      ::unlink(temp_.c_str());
      return st;
    }
    return FsyncDir(dir_);
  }

  Status Abort() override {
    if (closed_) return Status::OK();
    closed_ = true;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    ::unlink(temp_.c_str());
    return Status::OK();
  }

  Result<int64_t> Tell() const override { return position_; }
  bool closed() const override { return closed_; }

 private:
  static constexpr size_t kBufferSize = 1 << 20;
  static constexpr size_t kBlock = 4096;  // O_DIRECT's alignment of memory, offsets and sizes
  static constexpr size_t kDirectBufferSize = 4 << 20;

  struct Free {
    void operator()(char* p) const { std::free(p); }
  };

  // Turns O_DIRECT off: the rest of the file goes through the page cache.
  Status Buffered() {
    int flags = ::fcntl(fd_, F_GETFL);
    if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) != 0) return Errno("fcntl", temp_, errno);
    return Status::OK();
  }

  Status WriteAll(const char* p, int64_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd_, p, static_cast<size_t>(n));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && errno == EINVAL && direct_) {
        // A file system that took O_DIRECT at open but not these writes.
        ARROW_RETURN_NOT_OK(Buffered());
        continue;
      }
      if (w < 0) return Errno("write", target_, errno);
      // After a short direct write the next one would be misaligned.
      if (w < n && direct_) ARROW_RETURN_NOT_OK(Buffered());
      p += w;
      n -= w;
    }
    return Status::OK();
  }

  Status WriteDirect(const char* p, int64_t n) {
    position_ += n;
    while (n > 0) {
      size_t take = std::min(static_cast<size_t>(n), kDirectBufferSize - fill_);
      std::memcpy(direct_.get() + fill_, p, take);
      fill_ += take;
      p += take;
      n -= static_cast<int64_t>(take);
      if (fill_ == kDirectBufferSize) {
        ARROW_RETURN_NOT_OK(WriteAll(direct_.get(), static_cast<int64_t>(fill_)));
        fill_ = 0;
      }
    }
    return Status::OK();
  }

  // The whole blocks direct, then the tail through the page cache.
  Status FlushDirect() {
    const size_t whole = fill_ / kBlock * kBlock;
    ARROW_RETURN_NOT_OK(WriteAll(direct_.get(), static_cast<int64_t>(whole)));
    if (fill_ > whole) {
      ARROW_RETURN_NOT_OK(Buffered());
      ARROW_RETURN_NOT_OK(WriteAll(direct_.get() + whole, static_cast<int64_t>(fill_ - whole)));
    }
    fill_ = 0;
    return Status::OK();
  }

  Status FlushBuffer() {
    Status st = WriteAll(buffer_.data(), static_cast<int64_t>(buffer_.size()));
    buffer_.clear();
    return st;
  }

  std::vector<char> buffer_;
  std::unique_ptr<char, Free> direct_;  // the aligned buffer of direct writes, null if buffered
  size_t fill_ = 0;
  int fd_;
  const std::string temp_, target_, dir_;
  int64_t position_ = 0;
  bool closed_ = false;
};

class LocalBlobStore final : public FsBlobStore {
 public:
  explicit LocalBlobStore(std::string root)
      : FsBlobStore(std::make_shared<arrow::fs::LocalFileSystem>(), root, "local:" + root) {}

  std::optional<std::string> LocalFile(const std::string& path) const override {
    if (!ValidateObjectPath(path).ok()) return std::nullopt;
    return Full(path);
  }

  Result<std::shared_ptr<arrow::io::OutputStream>> OpenWriter(const std::string& path) override {
    return Create(path, /*direct=*/false);
  }

  Result<std::shared_ptr<arrow::io::OutputStream>> OpenLargeWriter(const std::string& path) override {
    return Create(path, /*direct=*/true);
  }

  Status Delete(const std::string& path) override {
    ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
    std::string full = Full(path);
    if (::unlink(full.c_str()) != 0 && errno != ENOENT) return Errno("cannot delete", full, errno);
    return Status::OK();
  }

 private:
  // A temp file beside the store's others; `direct`: O_DIRECT where the file system takes it.
  Result<std::shared_ptr<arrow::io::OutputStream>> Create(const std::string& path, bool direct) {
    ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
    std::string full = Full(path);
    auto p = std::filesystem::path(full);
    std::string dir = p.parent_path().string();
    ARROW_RETURN_NOT_OK(EnsureDir(dir));
    std::string temp = root_ + "/" + std::string(kTempPrefix) + "/" + RandomHex(8) + "-" + p.filename().string();
    const int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
    int fd = ::open(temp.c_str(), flags | (direct ? O_DIRECT : 0), 0644);
    if (fd < 0 && direct && errno == EINVAL) {  // no O_DIRECT here (it may have made the file first)
      ::unlink(temp.c_str());
      direct = false;
      fd = ::open(temp.c_str(), flags, 0644);
    }
    if (fd < 0) return Errno("cannot create", temp, errno);
    return std::make_shared<LocalAtomicOutputStream>(fd, temp, full, dir, direct);
  }
};

// The first object under `root` not in `ignore`; stops there.
Result<std::optional<std::string>> FirstObjectUnder(const std::string& root, const std::vector<std::string>& ignore) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::symlink_status(root, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return Status::IOError(fmt::format("cannot look at {}: {}", root, ec.message()));
  }
  if (!fs::exists(st)) return std::nullopt;
  if (!fs::is_directory(st)) return InvalidArgument(fmt::format("{} exists and is not a directory", root));
  // Links are not followed: a link is itself something stored here.
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (fs::is_directory(it->symlink_status(ec))) continue;  // directories alone are no data
    std::string rel = fs::path(it->path()).lexically_relative(root).string();
    if (std::find(ignore.begin(), ignore.end(), rel) == ignore.end()) return rel;
  }
  if (ec) return Status::IOError(fmt::format("cannot list {}: {}", root, ec.message()));
  return std::nullopt;
}

}  // namespace

Result<std::shared_ptr<BlobStore>> OpenLocalStore(const std::string& uri) {
  std::string path = uri;
  for (const char* scheme : {"file://", "local://"}) {
    if (uri.rfind(scheme, 0) == 0) path = uri.substr(std::strlen(scheme));
  }
  if (path.find("://") != std::string::npos) {
    return InvalidArgument(fmt::format("unsupported storage URI \"{}\" (use a path, file://, local:// or s3://)", uri));
  }
  if (path.empty()) return InvalidArgument("storage path is empty");
  std::error_code ec;
  std::string root = std::filesystem::absolute(path, ec).lexically_normal().string();
  if (ec) return Status::IOError(fmt::format("bad storage path {}: {}", path, ec.message()));
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  ARROW_RETURN_NOT_OK(EnsureDir(root));
  if (::access(root.c_str(), W_OK) != 0) return Errno("objects directory is not writable:", root, errno);
  // Whatever is in the temp directory was left by a process that died mid-write.
  std::string temp_dir = root + "/" + std::string(kTempPrefix);
  std::filesystem::remove_all(temp_dir, ec);
  if (ec) return Status::IOError(fmt::format("cannot clear {}: {}", temp_dir, ec.message()));
  ARROW_RETURN_NOT_OK(EnsureDir(temp_dir));
  std::shared_ptr<BlobStore> store = std::make_shared<LocalBlobStore>(root);
  return store;
}

Result<std::optional<std::string>> FindLocalObject(const std::string& uri, const std::vector<std::string>& ignore) {
  std::string path = uri;
  for (const char* scheme : {"file://", "local://"}) {
    if (uri.rfind(scheme, 0) == 0) path = uri.substr(std::strlen(scheme));
  }
  if (path.empty() || path.front() != '/' || path.find("://") != std::string::npos) {
    return InvalidArgument(fmt::format("\"{}\" is not an absolute local path or s3:// URI", uri));
  }
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return FirstObjectUnder(path, ignore);
}

}  // namespace sediment::blob
