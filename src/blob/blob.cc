#include "blob/blob.h"

#include <arrow/buffer.h>
#include <arrow/filesystem/localfs.h>
#include <arrow/filesystem/s3fs.h>
#include <arrow/io/interfaces.h>
#include <arrow/util/future.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <optional>
#include <vector>

#include "base/crypto.h"
#include "base/xml.h"
#include "blob/s3_sign_internal.h"

namespace sediment::blob {
namespace {

// Unfinished local writes live in <root>/.sediment-tmp/ (same filesystem, so
// the publishing rename is atomic); opening a local store empties it.
constexpr std::string_view kTempPrefix = ".sediment-tmp";

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
class LocalAtomicOutputStream final : public arrow::io::OutputStream {
 public:
  LocalAtomicOutputStream(int fd, std::string temp, std::string target, std::string dir)
      : fd_(fd), temp_(std::move(temp)), target_(std::move(target)), dir_(std::move(dir)) {}
  ~LocalAtomicOutputStream() override {
    if (!closed_) (void)Abort();
  }

  Status Write(const void* data, int64_t nbytes) override {
    if (closed_) return Status::Invalid("write to closed stream for ", target_);
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
    Status st = FlushBuffer();
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

  Status WriteAll(const char* p, int64_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd_, p, static_cast<size_t>(n));
      if (w < 0) {
        if (errno == EINTR) continue;
        return Errno("write", target_, errno);
      }
      p += w;
      n -= w;
    }
    return Status::OK();
  }

  Status FlushBuffer() {
    Status st = WriteAll(buffer_.data(), static_cast<int64_t>(buffer_.size()));
    buffer_.clear();
    return st;
  }

  std::vector<char> buffer_;
  int fd_;
  const std::string temp_, target_, dir_;
  int64_t position_ = 0;
  bool closed_ = false;
};

// Remote writes: the inner stream publishes on Close; dropping this wrapper
// without Close aborts instead (Arrow's own streams close on destruction,
// which would publish a partial object).
class AbortUnlessClosedStream final : public arrow::io::OutputStream {
 public:
  explicit AbortUnlessClosedStream(std::shared_ptr<arrow::io::OutputStream> inner) : inner_(std::move(inner)) {}
  ~AbortUnlessClosedStream() override {
    if (!inner_->closed()) (void)inner_->Abort();
  }
  Status Write(const void* data, int64_t nbytes) override { return inner_->Write(data, nbytes); }
  Status Write(const std::shared_ptr<arrow::Buffer>& data) override { return inner_->Write(data); }
  Status Close() override { return inner_->Close(); }
  Status Abort() override { return inner_->Abort(); }
  Result<int64_t> Tell() const override { return inner_->Tell(); }
  bool closed() const override { return inner_->closed(); }

 private:
  std::shared_ptr<arrow::io::OutputStream> inner_;
};

TimePoint ToTimePoint(arrow::fs::TimePoint t) {
  return TimePoint(std::chrono::duration_cast<Duration>(t.time_since_epoch()));
}

// InvalidArgument unless [offset, offset + length) lies within `size` bytes.
Status CheckWithin(const std::string& path, int64_t offset, int64_t length, int64_t size) {
  if (offset >= 0 && length >= 0 && offset + length <= size) return Status::OK();
  return InvalidArgument(fmt::format("{}: [{}, {}) is not within its {} bytes", path, offset, offset + length, size));
}

Status NoClientMultipart(const BlobStore& store) {
  return NotImplemented(
      fmt::format("{}: multipart uploads by clients need S3 storage with a static key", store.Describe()));
}

class FsBlobStore final : public BlobStore {
 public:
  // `root` is the fs path of the store's root: "/abs/dir" locally, "bucket/prefix" on S3.
  FsBlobStore(std::shared_ptr<arrow::fs::FileSystem> fs, std::string root, bool local, std::string description)
      : fs_(std::move(fs)), root_(std::move(root)), local_(local), description_(std::move(description)) {}

  Result<std::shared_ptr<arrow::io::OutputStream>> OpenWriter(const std::string& path) override {
    ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
    std::string full = Full(path);
    if (!local_) {
      ARROW_ASSIGN_OR_RAISE(auto inner, fs_->OpenOutputStream(full));
      return std::make_shared<AbortUnlessClosedStream>(std::move(inner));
    }
    auto p = std::filesystem::path(full);
    std::string dir = p.parent_path().string();
    ARROW_RETURN_NOT_OK(EnsureDir(dir));
    std::string temp = root_ + "/" + std::string(kTempPrefix) + "/" + RandomHex(8) + "-" + p.filename().string();
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return Errno("cannot create", temp, errno);
    return std::make_shared<LocalAtomicOutputStream>(fd, temp, full, dir);
  }

  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenReader(const std::string& path) override {
    ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
    ARROW_ASSIGN_OR_RAISE(auto info, fs_->GetFileInfo(Full(path)));
    if (info.type() == arrow::fs::FileType::NotFound) return NotFound(fmt::format("object {} not found", path));
    if (info.type() != arrow::fs::FileType::File) return NotFound(fmt::format("{} is not an object", path));
    return fs_->OpenInputFile(info);
  }

  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenReaderSized(const std::string& path, int64_t size) override {
    if (local_ || size <= 0) return OpenReader(path);
    ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
    arrow::fs::FileInfo info(Full(path), arrow::fs::FileType::File);
    info.set_size(size);
    return fs_->OpenInputFile(info);
  }

  void SetPresigner(S3Presigner p) {
    presigner_ = std::move(p);
    const auto slash = root_.find('/');
    getter_ = std::make_unique<S3Getter>(*presigner_, root_.substr(0, slash));
  }

  Result<std::shared_ptr<arrow::Buffer>> ReadSized(const std::string& path, int64_t offset, int64_t length,
                                                   int64_t size) override {
    if (!getter_ || length == 0) return BlobStore::ReadSized(path, offset, length, size);
    ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
    ARROW_RETURN_NOT_OK(CheckWithin(path, offset, length, size));
    const std::string full = Full(path);
    return getter_->Get(full.substr(full.find('/') + 1), offset, length, size);
  }

  Result<std::string> PresignUrl(const std::string& path, const std::string& method, int64_t expires) override {
    ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
    if (!presigner_) return BlobStore::PresignUrl(path, method, expires);
    if (method != "GET" && method != "PUT") return InvalidArgument(fmt::format("cannot presign {}", method));
    if (expires < 1 || expires > 7 * 86400) return InvalidArgument("a presigned URL lasts 1 s to 7 days");
    const std::string full = Full(path);
    const auto slash = full.find('/');
    return Presign(*presigner_, full.substr(0, slash), full.substr(slash + 1), method, expires, std::time(nullptr));
  }

  bool ClientMultipart() const override { return presigner_.has_value(); }

  Result<std::string> CreateMultipartUpload(const std::string& path) override {
    ARROW_ASSIGN_OR_RAISE(auto where, MultipartTarget(path, "", 1));
    ARROW_ASSIGN_OR_RAISE(auto a, S3Call(*presigner_, "POST", where.first, where.second, {{"uploads", ""}}, {}, ""));
    std::string id = XmlText(a.body, "UploadId");
    if (id.empty()) return Status::IOError(fmt::format("{}: S3 gave no upload id for {}", description_, path));
    return id;
  }

  Result<std::string> PresignUploadPart(const std::string& path, const std::string& upload_id, int part,
                                        int64_t expires) override {
    ARROW_ASSIGN_OR_RAISE(auto where, MultipartTarget(path, upload_id, part));
    if (expires < 1 || expires > 7 * 86400) return InvalidArgument("a presigned URL lasts 1 s to 7 days");
    return Presign(*presigner_, where.first, where.second, "PUT", expires, std::time(nullptr),
                   {{"partNumber", std::to_string(part)}, {"uploadId", upload_id}});
  }

  Result<std::string> UploadPartCopy(const std::string& path, const std::string& upload_id, int part, BlobStore& source,
                                     const std::string& source_path,
                                     std::optional<std::pair<int64_t, int64_t>> range) override {
    ARROW_ASSIGN_OR_RAISE(auto where, MultipartTarget(path, upload_id, part));
    auto* from = dynamic_cast<FsBlobStore*>(&source);
    if (from == nullptr || !from->presigner_ || from->presigner_->endpoint != presigner_->endpoint ||
        from->presigner_->scheme != presigner_->scheme) {
      return InvalidArgument(fmt::format("{}: a part can be copied only from the same object store, not from {}",
                                         description_, source.Describe()));
    }
    ARROW_RETURN_NOT_OK(ValidateObjectPath(source_path));
    Query headers = {{"x-amz-copy-source", PercentEncode(from->Full(source_path), PercentSet::kUnreservedAndSlash)}};
    if (range) {
      if (range->first < 0 || range->second < range->first) {
        return InvalidArgument(fmt::format("bad copy range [{}, {}]", range->first, range->second));
      }
      headers.emplace_back("x-amz-copy-source-range", fmt::format("bytes={}-{}", range->first, range->second));
    }
    ARROW_ASSIGN_OR_RAISE(auto a, S3Call(*presigner_, "PUT", where.first, where.second,
                                         {{"partNumber", std::to_string(part)}, {"uploadId", upload_id}}, headers, ""));
    std::string etag = XmlText(a.body, "ETag");
    if (etag.empty()) return Status::IOError(fmt::format("{}: S3 gave no ETag for a copied part", description_));
    return etag;
  }

  Result<std::string> CompleteMultipartUpload(const std::string& path, const std::string& upload_id,
                                              const std::vector<Part>& parts) override {
    ARROW_ASSIGN_OR_RAISE(auto where, MultipartTarget(path, upload_id, 1));
    if (parts.empty()) return InvalidArgument("a multipart upload is completed with at least one part");
    std::string xml = "<CompleteMultipartUpload>";
    for (const auto& part : parts) {
      if (part.number < 1 || part.number > 10000) {
        return InvalidArgument(fmt::format("part number {} is not within 1..10000", part.number));
      }
      xml += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", part.number, XmlEscape(part.etag));
    }
    xml += "</CompleteMultipartUpload>";
    ARROW_ASSIGN_OR_RAISE(auto a,
                          S3Call(*presigner_, "POST", where.first, where.second, {{"uploadId", upload_id}}, {}, xml));
    std::string etag = XmlText(a.body, "ETag");
    if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
    if (etag.empty()) return Status::IOError(fmt::format("{}: S3 gave no ETag completing {}", description_, path));
    return etag;
  }

  Status AbortMultipartUpload(const std::string& path, const std::string& upload_id) override {
    ARROW_ASSIGN_OR_RAISE(auto where, MultipartTarget(path, upload_id, 1));
    return S3Call(*presigner_, "DELETE", where.first, where.second, {{"uploadId", upload_id}}, {}, "").status();
  }

  Result<ObjectInfo> Stat(const std::string& path) override {
    ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
    ARROW_ASSIGN_OR_RAISE(auto info, fs_->GetFileInfo(Full(path)));
    if (info.type() != arrow::fs::FileType::File) return NotFound(fmt::format("object {} not found", path));
    return ObjectInfo{path, info.size(), ToTimePoint(info.mtime())};
  }

  Result<std::vector<ObjectInfo>> List(const std::string& prefix) override {
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

  Status Delete(const std::string& path) override {
    ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
    std::string full = Full(path);
    if (local_) {
      if (::unlink(full.c_str()) != 0 && errno != ENOENT) return Errno("cannot delete", full, errno);
      return Status::OK();
    }
    Status st = fs_->DeleteFile(full);
    if (st.ok()) return st;
    auto info = fs_->GetFileInfo(full);
    if (info.ok() && info->type() == arrow::fs::FileType::NotFound) return Status::OK();
    return st;
  }

  std::string Describe() const override { return description_; }
  bool Remote() const override { return !local_; }

 private:
  std::string Full(const std::string& path) const { return root_ + "/" + path; }

  // The bucket and key of `path`, once the path, upload id and part number
  // are checked (an empty id: one is being made).
  Result<std::pair<std::string, std::string>> MultipartTarget(const std::string& path, const std::string& upload_id,
                                                              int part) const {
    if (!presigner_) return NoClientMultipart(*this);
    ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
    if (part < 1 || part > 10000) return InvalidArgument(fmt::format("part number {} is not within 1..10000", part));
    if (upload_id.size() > 1024 || upload_id.find_first_of(std::string_view("\0\r\n", 3)) != std::string::npos) {
      return InvalidArgument("not an upload id");
    }
    const std::string full = Full(path);
    const auto slash = full.find('/');
    return std::make_pair(full.substr(0, slash), full.substr(slash + 1));
  }

  std::optional<S3Presigner> presigner_;  // S3 stores with a static key
  std::unique_ptr<S3Getter> getter_;      // with presigner_
  std::shared_ptr<arrow::fs::FileSystem> fs_;
  const std::string root_;
  const bool local_;
  const std::string description_;
};

std::mutex s3_mu;
bool s3_initialized = false;  // GUARDED_BY(s3_mu)

Status InitS3() {
  std::lock_guard<std::mutex> lock(s3_mu);
  if (s3_initialized) return Status::OK();
  arrow::fs::S3GlobalOptions options = arrow::fs::S3GlobalOptions::Defaults();
  options.log_level = arrow::fs::S3LogLevel::Fatal;
  ARROW_RETURN_NOT_OK(arrow::fs::InitializeS3(options));
  s3_initialized = true;
  return Status::OK();
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

struct S3Root {
  std::shared_ptr<arrow::fs::S3FileSystem> fs;
  std::string root;                      // "bucket/prefix"
  std::optional<S3Presigner> presigner;  // with a static key only
};

// An S3 filesystem for `uri`, once its bucket is known to exist.
Result<S3Root> ConnectS3(const std::string& uri, const S3Config& config) {
  std::string rest = uri.substr(5);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.empty() || rest.front() == '/') {
    return InvalidArgument(fmt::format("\"{}\": expected s3://bucket or s3://bucket/prefix", uri));
  }
  std::string bucket = rest.substr(0, rest.find('/'));
  ARROW_RETURN_NOT_OK(InitS3());

  arrow::fs::S3Options options = arrow::fs::S3Options::Defaults();
  options.region = config.region;
  std::string endpoint = config.endpoint;
  if (endpoint.empty()) endpoint = Env("AWS_ENDPOINT_URL_S3");
  if (endpoint.empty()) endpoint = Env("AWS_ENDPOINT_URL");
  options.scheme = config.scheme;
  for (const char* scheme : {"http", "https"}) {
    std::string p = std::string(scheme) + "://";
    if (endpoint.rfind(p, 0) == 0) {
      options.scheme = scheme;
      endpoint = endpoint.substr(p.size());
    }
  }
  options.endpoint_override = endpoint;
  options.force_virtual_addressing = !config.path_style;
  std::string key = config.access_key_id.empty() ? Env("AWS_ACCESS_KEY_ID") : config.access_key_id;
  std::string secret = config.secret_access_key.empty() ? Env("AWS_SECRET_ACCESS_KEY") : config.secret_access_key;
  if (!key.empty()) options.ConfigureAccessKey(key, secret, Env("AWS_SESSION_TOKEN"));
  options.connect_timeout = 5;
  options.request_timeout = 30;

  ARROW_ASSIGN_OR_RAISE(auto fs, arrow::fs::S3FileSystem::Make(options));
  auto info = fs->GetFileInfo(bucket);
  if (!info.ok()) {
    return Unavailable(fmt::format("cannot reach bucket {} at {}: {}", bucket, endpoint.empty() ? "AWS" : endpoint,
                                   info.status().message()));
  }
  if (info->type() == arrow::fs::FileType::NotFound) {
    return InvalidArgument(fmt::format("bucket {} does not exist ({})", bucket, uri));
  }
  std::optional<S3Presigner> presigner;
  if (!key.empty()) {
    presigner =
        S3Presigner{options.scheme, endpoint, config.region, key, secret, Env("AWS_SESSION_TOKEN"), config.path_style};
  }
  return S3Root{std::move(fs), rest, std::move(presigner)};
}

Result<std::shared_ptr<BlobStore>> OpenS3(const std::string& uri, const S3Config& config) {
  ARROW_ASSIGN_OR_RAISE(S3Root s3, ConnectS3(uri, config));
  auto store = std::make_shared<FsBlobStore>(std::move(s3.fs), s3.root, /*local=*/false, "s3://" + s3.root);
  if (s3.presigner) store->SetPresigner(std::move(*s3.presigner));
  return std::shared_ptr<BlobStore>(std::move(store));
}

// The first object under bucket/prefix not in `ignore`; stops listing there.
Result<std::optional<std::string>> FindS3Object(const std::string& uri, const S3Config& config,
                                                const std::vector<std::string>& ignore) {
  ARROW_ASSIGN_OR_RAISE(S3Root s3, ConnectS3(uri, config));
  arrow::fs::FileSelector sel;
  sel.base_dir = s3.root;
  sel.recursive = true;
  sel.allow_not_found = true;
  auto pages = s3.fs->GetFileInfoGenerator(sel);
  const std::string root_slash = s3.root + "/";
  while (true) {
    auto next = pages();
    const auto& listed = next.result();  // waits for the page
    ARROW_RETURN_NOT_OK(listed.status());
    const arrow::fs::FileInfoVector& page = *listed;
    if (page.empty()) return std::nullopt;  // the end of the listing
    for (const auto& info : page) {
      if (info.type() != arrow::fs::FileType::File) continue;
      std::string rel = info.path().rfind(root_slash, 0) == 0 ? info.path().substr(root_slash.size()) : info.path();
      if (std::find(ignore.begin(), ignore.end(), rel) == ignore.end()) return rel;
    }
  }
}

Result<std::optional<std::string>> FindLocalObject(const std::string& root, const std::vector<std::string>& ignore) {
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
  if (uri.rfind("s3://", 0) == 0) return OpenS3(uri, s3);
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
  std::shared_ptr<BlobStore> store = std::make_shared<FsBlobStore>(std::make_shared<arrow::fs::LocalFileSystem>(), root,
                                                                   /*local=*/true, "local:" + root);
  return store;
}

Result<std::optional<std::string>> FindStoredObject(const std::string& uri, const S3Config& s3,
                                                    const std::vector<std::string>& ignore) {
  if (uri.rfind("s3://", 0) == 0) return FindS3Object(uri, s3, ignore);
  std::string path = uri;
  for (const char* scheme : {"file://", "local://"}) {
    if (uri.rfind(scheme, 0) == 0) path = uri.substr(std::strlen(scheme));
  }
  if (path.empty() || path.front() != '/' || path.find("://") != std::string::npos) {
    return InvalidArgument(fmt::format("\"{}\" is not an absolute local path or s3:// URI", uri));
  }
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return FindLocalObject(path, ignore);
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

void FinalizeS3() {
  std::lock_guard<std::mutex> lock(s3_mu);
  if (s3_initialized) {
    (void)arrow::fs::FinalizeS3();
    s3_initialized = false;
  }
}

}  // namespace sediment::blob
