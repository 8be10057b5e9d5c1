#include "blob/fault_injection.h"

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <fmt/format.h>

namespace sediment::blob {
namespace {

const char* OpName(BlobOp op) {
  static const char* names[] = {"write", "publish", "read", "stat", "list", "delete"};
  return names[static_cast<int>(op)];
}

class FaultyWriter final : public arrow::io::OutputStream {
 public:
  FaultyWriter(std::shared_ptr<arrow::io::OutputStream> inner, FaultInjectingBlobStore* store, std::string path)
      : inner_(std::move(inner)), store_(store), path_(std::move(path)) {}
  ~FaultyWriter() override {
    if (!inner_->closed()) (void)inner_->Abort();
  }
  Status Write(const void* data, int64_t nbytes) override {
    ARROW_RETURN_NOT_OK(store_->MaybeFail(BlobOp::kWrite, path_));
    return inner_->Write(data, nbytes);
  }
  Status Close() override {
    if (inner_->closed()) return Status::OK();
    Status st = store_->MaybeFail(BlobOp::kPublish, path_);
    if (!st.ok()) {
      (void)inner_->Abort();
      return st;
    }
    return inner_->Close();
  }
  Status Abort() override { return inner_->Abort(); }
  Result<int64_t> Tell() const override { return inner_->Tell(); }
  bool closed() const override { return inner_->closed(); }

 private:
  std::shared_ptr<arrow::io::OutputStream> inner_;
  FaultInjectingBlobStore* store_;
  const std::string path_;
};

}  // namespace

FaultInjectingBlobStore::FaultInjectingBlobStore(std::shared_ptr<BlobStore> base) : base_(std::move(base)) {}

void FaultInjectingBlobStore::FailNth(BlobOp op, int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  auto i = static_cast<size_t>(op);
  fail_at_[i] = counts_[i] + n;
}

void FaultInjectingBlobStore::FailAlways(BlobOp op) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_always_[static_cast<size_t>(op)] = true;
}

void FaultInjectingBlobStore::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  fail_at_.fill(0);
  fail_always_.fill(false);
}

int64_t FaultInjectingBlobStore::Count(BlobOp op) const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_[static_cast<size_t>(op)];
}

Status FaultInjectingBlobStore::MaybeFail(BlobOp op, const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto i = static_cast<size_t>(op);
  int64_t n = ++counts_[i];
  if (fail_always_[i] || fail_at_[i] == n) {
    ++injected_;
    return Status::IOError(fmt::format("injected {} failure #{} on {}", OpName(op), n, path));
  }
  return Status::OK();
}

Result<std::shared_ptr<arrow::io::OutputStream>> FaultInjectingBlobStore::OpenWriter(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(auto inner, base_->OpenWriter(path));
  return std::make_shared<FaultyWriter>(std::move(inner), this, path);
}

Result<std::shared_ptr<arrow::io::OutputStream>> FaultInjectingBlobStore::OpenLargeWriter(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(auto inner, base_->OpenLargeWriter(path));
  return std::make_shared<FaultyWriter>(std::move(inner), this, path);
}

Result<std::shared_ptr<arrow::io::RandomAccessFile>> FaultInjectingBlobStore::OpenReader(const std::string& path) {
  ARROW_RETURN_NOT_OK(MaybeFail(BlobOp::kRead, path));
  return base_->OpenReader(path);
}

Result<std::shared_ptr<arrow::io::RandomAccessFile>> FaultInjectingBlobStore::OpenReaderSized(const std::string& path,
                                                                                              int64_t size) {
  ARROW_RETURN_NOT_OK(MaybeFail(BlobOp::kRead, path));
  return base_->OpenReaderSized(path, size);
}

Result<ObjectInfo> FaultInjectingBlobStore::Stat(const std::string& path) {
  ARROW_RETURN_NOT_OK(MaybeFail(BlobOp::kStat, path));
  return base_->Stat(path);
}

Result<std::vector<ObjectInfo>> FaultInjectingBlobStore::List(const std::string& prefix) {
  ARROW_RETURN_NOT_OK(MaybeFail(BlobOp::kList, prefix));
  return base_->List(prefix);
}

Status FaultInjectingBlobStore::Delete(const std::string& path) {
  ARROW_RETURN_NOT_OK(MaybeFail(BlobOp::kDelete, path));
  return base_->Delete(path);
}

}  // namespace sediment::blob
