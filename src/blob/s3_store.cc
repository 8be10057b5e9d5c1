// The S3 store: objects published by multipart uploads that complete on
// Close (Arrow's S3 filesystem); with a static key, also presigned URLs,
// multipart uploads run by clients, and ReadSized by one signed GET of our
// own (s3_sign_internal.h). Opening a store checks its bucket exists
// (fs_store_internal.h).
#include <arrow/buffer.h>
#include <arrow/filesystem/s3fs.h>
#include <arrow/io/interfaces.h>
#include <arrow/util/future.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <optional>
#include <vector>

#include "base/xml.h"
#include "blob/fs_store_internal.h"
#include "blob/s3_sign_internal.h"

namespace sediment::blob {
namespace {

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

class S3BlobStore final : public FsBlobStore {
 public:
  // `root` is "bucket/prefix"; `presigner` is there with a static key only.
  S3BlobStore(std::shared_ptr<arrow::fs::FileSystem> fs, std::string root, std::optional<S3Presigner> presigner)
      : FsBlobStore(std::move(fs), root, "s3://" + root) {
    if (!presigner) return;
    presigner_ = std::move(presigner);
    const auto slash = root_.find('/');
    getter_ = std::make_unique<S3Getter>(*presigner_, root_.substr(0, slash));
  }

  Result<std::shared_ptr<arrow::io::OutputStream>> OpenWriter(const std::string& path) override {
    ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
    ARROW_ASSIGN_OR_RAISE(auto inner, fs_->OpenOutputStream(Full(path)));
    return std::make_shared<AbortUnlessClosedStream>(std::move(inner));
  }

  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenReaderSized(const std::string& path, int64_t size) override {
    if (size <= 0) return OpenReader(path);
    ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
    arrow::fs::FileInfo info(Full(path), arrow::fs::FileType::File);
    info.set_size(size);
    return fs_->OpenInputFile(info);
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
    if (!presigner_) return FsBlobStore::PresignUrl(path, method, expires);
    ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
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
    auto* from = dynamic_cast<S3BlobStore*>(&source);
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

  Status Delete(const std::string& path) override {
    ARROW_RETURN_NOT_OK(ValidateObjectPath(path));
    std::string full = Full(path);
    Status st = fs_->DeleteFile(full);
    if (st.ok()) return st;
    auto info = fs_->GetFileInfo(full);
    if (info.ok() && info->type() == arrow::fs::FileType::NotFound) return Status::OK();
    return st;
  }

  bool Remote() const override { return true; }

 private:
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

}  // namespace

Result<std::shared_ptr<BlobStore>> OpenS3Store(const std::string& uri, const S3Config& config) {
  ARROW_ASSIGN_OR_RAISE(S3Root s3, ConnectS3(uri, config));
  return std::shared_ptr<BlobStore>(std::make_shared<S3BlobStore>(std::move(s3.fs), s3.root, std::move(s3.presigner)));
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

void FinalizeS3() {
  std::lock_guard<std::mutex> lock(s3_mu);
  if (s3_initialized) {
    (void)arrow::fs::FinalizeS3();
    s3_initialized = false;
  }
}

}  // namespace sediment::blob
