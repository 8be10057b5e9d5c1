// RocksDB KvStore: the embedded default.
//
// RocksDB writes are atomic per WriteBatch but have no compare-and-swap. We
// serialize every write to a key through one of kStripes mutexes chosen by the
// key's hash; a conditional batch takes the stripes of all keys it reads or
// writes, in index order (no deadlock), checks its preconditions, then writes
// one WriteBatch. Plain writes take their one stripe, so no write can slip
// between a batch's check and its write. Reads take no lock.
#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <functional>
#include <mutex>

#include "kv/kv.h"
#include "kv/kv_internal.h"

namespace sediment::kv {
namespace {

Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::OK();
  if (s.IsNotFound()) return NotFound(fmt::format("{}: {}", what, s.ToString()));
  if (s.IsBusy() || s.IsTimedOut() || s.IsTryAgain()) return Busy(fmt::format("{}: {}", what, s.ToString()));
  return Status::IOError(fmt::format("{}: {}", what, s.ToString()));
}

class RocksDbStore final : public KvStore {
 public:
  RocksDbStore(std::unique_ptr<rocksdb::DB> db, std::string path, bool sync)
      : db_(std::move(db)), path_(std::move(path)) {
    write_options_.sync = sync;
  }

  ~RocksDbStore() override {
    if (db_) {
      rocksdb::Status s = db_->Close();
      (void)s;  // nothing useful to do on shutdown; the WAL is intact
    }
  }

  Result<std::string> Get(std::string_view key) override {
    std::string value;
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), rocksdb::Slice(key.data(), key.size()), &value);
    if (s.IsNotFound()) return NotFound(fmt::format("key \"{}\" not found", Printable(key)));
    ARROW_RETURN_NOT_OK(FromRocks(s, "rocksdb get"));
    return value;
  }

  Status Set(std::string_view key, std::string_view value) override {
    std::lock_guard<std::mutex> lock(stripes_[Stripe(key)]);
    return FromRocks(db_->Put(write_options_, Slice(key), Slice(value)), "rocksdb put");
  }

  Status Delete(std::string_view key) override {
    std::lock_guard<std::mutex> lock(stripes_[Stripe(key)]);
    return FromRocks(db_->Delete(write_options_, Slice(key)), "rocksdb delete");
  }

  Result<ScanPage> Scan(std::string_view prefix, std::string_view from, size_t limit) override {
    ScanPage page;
    std::string upper = PrefixEnd(prefix);
    rocksdb::Slice upper_slice(upper);
    rocksdb::ReadOptions ro;
    if (!upper.empty()) ro.iterate_upper_bound = &upper_slice;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
    std::string_view start = from > prefix ? from : prefix;
    for (it->Seek(Slice(start)); it->Valid(); it->Next()) {
      if (page.items.size() == limit) {
        page.has_more = true;
        break;
      }
      page.items.push_back({it->key().ToString(), it->value().ToString()});
    }
    ARROW_RETURN_NOT_OK(FromRocks(it->status(), "rocksdb scan"));
    return page;
  }

  Result<std::optional<KeyValue>> Floor(std::string_view prefix, std::string_view at) override {
    rocksdb::Slice lower_slice(prefix.data(), prefix.size());
    rocksdb::ReadOptions ro;
    ro.iterate_lower_bound = &lower_slice;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
    it->SeekForPrev(Slice(at));
    ARROW_RETURN_NOT_OK(FromRocks(it->status(), "rocksdb floor"));
    if (!it->Valid() || !it->key().starts_with(Slice(prefix))) return std::optional<KeyValue>();
    return std::optional<KeyValue>(KeyValue{it->key().ToString(), it->value().ToString()});
  }

  Status Apply(const Batch& batch) override {
    std::vector<size_t> stripes;
    for (const auto& p : batch.preconditions) stripes.push_back(Stripe(p.key));
    for (const auto& m : batch.mutations) stripes.push_back(Stripe(m.key));
    std::sort(stripes.begin(), stripes.end());
    stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
    for (size_t s : stripes) stripes_[s].lock();
    Status st = ApplyLocked(batch);
    for (auto it = stripes.rbegin(); it != stripes.rend(); ++it) stripes_[*it].unlock();
    return st;
  }

  std::string Describe() const override { return "rocksdb:" + path_; }

 private:
  static constexpr size_t kStripes = 256;

  static rocksdb::Slice Slice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }
  static size_t Stripe(std::string_view key) { return std::hash<std::string_view>()(key) % kStripes; }

  // REQUIRES: the stripes of every key in `batch` held.
  Status ApplyLocked(const Batch& batch) {
    for (const auto& p : batch.preconditions) {
      std::string value;
      rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), Slice(p.key), &value);
      if (!s.ok() && !s.IsNotFound()) return FromRocks(s, "rocksdb get");
      ARROW_RETURN_NOT_OK(CheckPrecondition(p, s.IsNotFound() ? nullptr : &value));
    }
    rocksdb::WriteBatch wb;
    for (const auto& m : batch.mutations) {
      rocksdb::Status s =
          m.kind == Mutation::Kind::kPut ? wb.Put(Slice(m.key), Slice(m.value)) : wb.Delete(Slice(m.key));
      ARROW_RETURN_NOT_OK(FromRocks(s, "rocksdb batch"));
    }
    return FromRocks(db_->Write(write_options_, &wb), "rocksdb write");
  }

  std::unique_ptr<rocksdb::DB> db_;
  const std::string path_;
  rocksdb::WriteOptions write_options_;
  std::array<std::mutex, kStripes> stripes_;
};

}  // namespace

Result<std::shared_ptr<KvStore>> OpenRocksDb(const std::string& path, bool sync) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::IOError(fmt::format("cannot create KV directory {}: {}", path, ec.message()));
  rocksdb::Options options;
  options.create_if_missing = true;
  options.IncreaseParallelism(2);
  options.OptimizeLevelStyleCompaction();
  rocksdb::BlockBasedTableOptions table;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, path, &raw);
  if (!s.ok()) {
    if (s.ToString().find("lock") != std::string::npos) {
      return Busy(fmt::format("KV store {} is in use by another process: {}", path, s.ToString()));
    }
    return Status::IOError(fmt::format("cannot open KV store {}: {}", path, s.ToString()));
  }
  return std::shared_ptr<KvStore>(std::make_shared<RocksDbStore>(std::unique_ptr<rocksdb::DB>(raw), path, sync));
}

}  // namespace sediment::kv
