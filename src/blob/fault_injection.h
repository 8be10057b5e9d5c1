// FaultInjectingBlobStore: wraps a BlobStore and makes chosen operations fail,
// so tests can prove that every failure leaves a consistent state.
//
//   auto faulty = std::make_shared<FaultInjectingBlobStore>(store);
//   faulty->FailNth(BlobOp::kPublish, 1);  // the next Close() of a writer fails
//
// A failed kWrite fails one Write() call on a writer; a failed kPublish fails
// the writer's Close() and leaves nothing published (the inner writer is
// aborted), as a failed rename or multipart completion would.
//
// Thread-safety: safe from many threads.
#pragma once

#include <array>
#include <atomic>
#include <mutex>

#include "blob/blob.h"

namespace sediment::blob {

enum class BlobOp { kWrite = 0, kPublish, kRead, kStat, kList, kDelete, kCount };

class FaultInjectingBlobStore final : public BlobStore {
 public:
  explicit FaultInjectingBlobStore(std::shared_ptr<BlobStore> base);

  // The n-th (1-based) next operation of kind `op` fails; later ones succeed.
  void FailNth(BlobOp op, int64_t n);
  // Every operation of kind `op` fails until Reset().
  void FailAlways(BlobOp op);
  void Reset();
  // Operations of kind `op` attempted since construction (failed ones included).
  int64_t Count(BlobOp op) const;
  // Injected failures so far.
  int64_t Injected() const { return injected_.load(); }

  Result<std::shared_ptr<arrow::io::OutputStream>> OpenWriter(const std::string& path) override;
  Result<std::shared_ptr<arrow::io::OutputStream>> OpenLargeWriter(const std::string& path) override;
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenReader(const std::string& path) override;
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenReaderSized(const std::string& path, int64_t size) override;
  Result<ObjectInfo> Stat(const std::string& path) override;
  Result<std::vector<ObjectInfo>> List(const std::string& prefix) override;
  Status Delete(const std::string& path) override;
  std::string Describe() const override { return "faulty(" + base_->Describe() + ")"; }
  bool Remote() const override { return base_->Remote(); }
  std::optional<std::string> LocalFile(const std::string& path) const override { return base_->LocalFile(path); }

  // Called by writers; public for them only.
  Status MaybeFail(BlobOp op, const std::string& path);

 private:
  std::shared_ptr<BlobStore> base_;
  mutable std::mutex mu_;
  std::array<int64_t, static_cast<size_t>(BlobOp::kCount)> counts_{};    // GUARDED_BY(mu_)
  std::array<int64_t, static_cast<size_t>(BlobOp::kCount)> fail_at_{};   // GUARDED_BY(mu_); 0 = none
  std::array<bool, static_cast<size_t>(BlobOp::kCount)> fail_always_{};  // GUARDED_BY(mu_)
  std::atomic<int64_t> injected_{0};
};

}  // namespace sediment::blob
