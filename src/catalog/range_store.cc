#include "catalog/range_store.h"

#include <arrow/buffer.h>
#include <fmt/format.h>
#include <rocksdb/cache.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "base/crypto.h"
#include "blob/blob.h"
#include "catalog/coding_internal.h"
#include "catalog/entry.h"

namespace sediment::catalog {
namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxOpenReaders = 1024;
constexpr size_t kMaxMetaRanges = 64;
constexpr char kMetaVersion = 1;

Status FromRocks(const rocksdb::Status& st, const std::string& what) {
  if (st.ok()) return Status::OK();
  return Status::IOError(fmt::format("{}: {}", what, st.ToString()));
}

using internal::GetLengthPrefixed;
using internal::GetVarint;
using internal::PutLengthPrefixed;
using internal::PutVarint;

std::string EncodeRangeInfo(const RangeInfo& r) {
  std::string out(1, kMetaVersion);
  PutLengthPrefixed(&out, r.id);
  PutLengthPrefixed(&out, r.min_key);
  PutVarint(&out, static_cast<uint64_t>(r.count));
  PutVarint(&out, static_cast<uint64_t>(r.bytes));
  return out;
}

bool DecodeRangeInfo(std::string_view in, RangeInfo* r) {
  if (in.empty() || in[0] != kMetaVersion) return false;
  in.remove_prefix(1);
  uint64_t count, bytes;
  if (!GetLengthPrefixed(&in, &r->id) || !GetLengthPrefixed(&in, &r->min_key) || !GetVarint(&in, &count) ||
      !GetVarint(&in, &bytes))
    return false;
  r->count = static_cast<int64_t>(count);
  r->bytes = static_cast<int64_t>(bytes);
  return in.empty();
}

// Content hash of a stream of (key, value) pairs, length-prefixed so no two
// different streams hash alike.
class ContentHash {
 public:
  void Add(std::string_view key, std::string_view value) {
    std::string len;
    PutVarint(&len, key.size());
    PutVarint(&len, value.size());
    digest_.Update(len);
    digest_.Update(key);
    digest_.Update(value);
  }
  std::string Hex() { return digest_.FinalHex(); }

 private:
  Digest digest_;
};

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("cannot read ", path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class MetaRangeIterator : public ValueIterator {
 public:
  MetaRangeIterator(RangeStore* store, Namespace ns, std::shared_ptr<const MetaRange> mr,
                    std::shared_ptr<const std::unordered_set<std::string>> skip)
      : store_(store), ns_(std::move(ns)), mr_(std::move(mr)), skip_(std::move(skip)) {}

  bool Next() override {
    if (!status_.ok()) return false;
    while (true) {
      if (!it_) {
        while (idx_ < mr_->ranges.size() && skip_ && skip_->count(mr_->ranges[idx_].id)) ++idx_;
        if (idx_ >= mr_->ranges.size()) return false;
        auto it = store_->NewRangeIterator(ns_, mr_->ranges[idx_].id);
        if (!it.ok()) {
          status_ = it.status();
          return false;
        }
        it_ = std::move(*it);
        if (pending_seek_) it_->SeekGE(seek_key_);
        pending_seek_ = false;
      }
      if (it_->Next()) return true;
      if (!it_->status().ok()) {
        status_ = it_->status();
        return false;
      }
      it_.reset();
      ++idx_;
    }
  }
  void SeekGE(std::string_view key) override {
    auto it = std::lower_bound(mr_->ranges.begin(), mr_->ranges.end(), key,
                               [](const RangeInfo& r, std::string_view k) { return r.max_key < k; });
    size_t idx = static_cast<size_t>(it - mr_->ranges.begin());
    if (it_ && idx == idx_) {
      it_->SeekGE(key);  // same range: reuse its open iterator
      return;
    }
    idx_ = idx;
    it_.reset();
    pending_seek_ = true;
    seek_key_.assign(key);
  }
  const std::string& key() const override { return it_->key(); }
  const std::string& value() const override { return it_->value(); }
  Status status() const override { return status_; }

 private:
  RangeStore* store_;
  Namespace ns_;
  std::shared_ptr<const MetaRange> mr_;
  std::shared_ptr<const std::unordered_set<std::string>> skip_;
  size_t idx_ = 0;
  std::unique_ptr<ValueIterator> it_;
  bool pending_seek_ = false;
  std::string seek_key_;
  Status status_;
};

class SstIterator : public ValueIterator {
 public:
  SstIterator(std::shared_ptr<rocksdb::SstFileReader> reader, rocksdb::Iterator* it)
      : reader_(std::move(reader)), it_(it) {}
  bool Next() override {
    if (sought_) {
      sought_ = false;  // SeekGE already positioned us on the next key
    } else if (!started_) {
      it_->SeekToFirst();
    } else {
      it_->Next();
    }
    started_ = true;
    if (!it_->Valid()) return false;
    key_.assign(it_->key().data(), it_->key().size());
    value_.assign(it_->value().data(), it_->value().size());
    return true;
  }
  void SeekGE(std::string_view key) override {
    it_->Seek(rocksdb::Slice(key.data(), key.size()));
    sought_ = true;
  }
  const std::string& key() const override { return key_; }
  const std::string& value() const override { return value_; }
  Status status() const override {
    auto st = it_->status();
    return st.ok() ? Status::OK() : Status::IOError("range read: ", st.ToString());
  }

 private:
  std::shared_ptr<rocksdb::SstFileReader> reader_;
  std::unique_ptr<rocksdb::Iterator> it_;
  bool started_ = false;
  bool sought_ = false;
  std::string key_, value_;
};

}  // namespace

int64_t MetaRange::count() const {
  int64_t n = 0;
  for (const auto& r : ranges) n += r.count;
  return n;
}

std::string CommittedPath(const std::string& id) { return "_lakefs/" + id; }

// ---------------------------------------------------------------------------
// MetaRangeWriter

struct MetaRangeWriter::OpenRange {
  std::string path;
  rocksdb::SstFileWriter writer;
  ContentHash hash;
  RangeInfo info;
  OpenRange(const rocksdb::EnvOptions& env, const rocksdb::Options& options) : writer(env, options) {}
};

MetaRangeWriter::MetaRangeWriter(RangeStore* store, Namespace ns) : store_(store), ns_(std::move(ns)) {}

MetaRangeWriter::~MetaRangeWriter() {
  if (open_) {
    std::error_code ec;
    fs::remove(open_->path, ec);
  }
}

Status MetaRangeWriter::Add(std::string_view key, std::string_view value) {
  if (value.empty()) return Status::Invalid("MetaRangeWriter::Add: tombstones are not committed");
  if (!open_) {
    open_ = std::make_unique<OpenRange>(rocksdb::EnvOptions(), *store_->options_);
    open_->path = store_->TempPath();
    ARROW_RETURN_NOT_OK(FromRocks(open_->writer.Open(open_->path), "open range file " + open_->path));
    open_->info.min_key.assign(key);
  }
  ARROW_RETURN_NOT_OK(
      FromRocks(open_->writer.Put(rocksdb::Slice(key.data(), key.size()), rocksdb::Slice(value.data(), value.size())),
                "write range entry"));
  open_->hash.Add(key, value);
  open_->info.max_key.assign(key);
  open_->info.count++;
  open_->info.bytes += static_cast<int64_t>(key.size() + value.size());
  const auto& s = store_->settings_;
  if (open_->info.bytes >= s.max_bytes ||
      (open_->info.bytes >= s.min_bytes && StableHash(key) % s.split_modulus == 0)) {
    return FlushRange();
  }
  return Status::OK();
}

Status MetaRangeWriter::AddRange(const RangeInfo& range) {
  if (open_) return Status::Invalid("MetaRangeWriter::AddRange with an open range");
  ranges_.push_back(range);
  ranges_reused_++;
  return Status::OK();
}

Status MetaRangeWriter::FlushRange() {
  if (!open_) return Status::OK();
  std::unique_ptr<OpenRange> r = std::move(open_);
  rocksdb::ExternalSstFileInfo info;
  ARROW_RETURN_NOT_OK(FromRocks(r->writer.Finish(&info), "finish range file"));
  r->info.id = r->hash.Hex();
  ARROW_ASSIGN_OR_RAISE(auto data, ReadWholeFile(r->path));
  ARROW_RETURN_NOT_OK(ns_->Put(CommittedPath(r->info.id), data));
  ARROW_RETURN_NOT_OK(store_->Adopt(r->path, r->info.id, static_cast<int64_t>(data.size())));
  ranges_.push_back(std::move(r->info));
  ranges_written_++;
  return Status::OK();
}

Result<std::shared_ptr<const MetaRange>> MetaRangeWriter::Finish() {
  ARROW_RETURN_NOT_OK(FlushRange());
  auto mr = std::make_shared<MetaRange>();
  mr->ranges = std::move(ranges_);
  if (mr->ranges.empty()) {
    mr->id = kEmptyMetaRangeId;
    return std::shared_ptr<const MetaRange>(mr);
  }
  std::string path = store_->TempPath();
  rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), *store_->options_);
  ARROW_RETURN_NOT_OK(FromRocks(writer.Open(path), "open meta-range file " + path));
  ContentHash hash;
  for (const auto& r : mr->ranges) {
    std::string v = EncodeRangeInfo(r);
    ARROW_RETURN_NOT_OK(FromRocks(writer.Put(r.max_key, v), "write meta-range entry"));
    hash.Add(r.max_key, v);
  }
  rocksdb::ExternalSstFileInfo info;
  ARROW_RETURN_NOT_OK(FromRocks(writer.Finish(&info), "finish meta-range file"));
  mr->id = hash.Hex();
  ARROW_ASSIGN_OR_RAISE(auto data, ReadWholeFile(path));
  ARROW_RETURN_NOT_OK(ns_->Put(CommittedPath(mr->id), data));
  ARROW_RETURN_NOT_OK(store_->Adopt(path, mr->id, static_cast<int64_t>(data.size())));
  return std::shared_ptr<const MetaRange>(mr);
}

// ---------------------------------------------------------------------------
// RangeStore

RangeStore::RangeStore(std::string cache_dir, int64_t cache_bytes, RangeSettings settings)
    : cache_dir_(std::move(cache_dir)), cache_bytes_(cache_bytes), settings_(settings) {
  options_ = std::make_unique<rocksdb::Options>();
  block_cache_ = rocksdb::NewLRUCache(64 << 20);
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = block_cache_;
  table.block_size = 16 << 10;
  options_->table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  options_->compression = rocksdb::kLZ4Compression;
}

RangeStore::~RangeStore() = default;

Result<std::unique_ptr<RangeStore>> RangeStore::Open(const std::string& cache_dir, int64_t cache_bytes,
                                                     RangeSettings settings) {
  if (settings.min_bytes < 1 || settings.max_bytes < settings.min_bytes || settings.split_modulus < 1) {
    return InvalidArgument("range settings: need 1 <= min_bytes <= max_bytes and split_modulus >= 1");
  }
  std::error_code ec;
  fs::create_directories(cache_dir, ec);
  if (ec) return Status::IOError(fmt::format("cannot create range cache {}: {}", cache_dir, ec.message()));
  std::unique_ptr<RangeStore> store(new RangeStore(cache_dir, cache_bytes, settings));
  for (const auto& de : fs::directory_iterator(cache_dir, ec)) {
    std::string name = de.path().filename().string();
    if (name.rfind("tmp-", 0) == 0) {
      fs::remove(de.path(), ec);
    } else if (name.size() > 4 && name.ends_with(".sst")) {
      std::lock_guard<std::mutex> lock(store->mu_);
      store->TouchLocked(name.substr(0, name.size() - 4), static_cast<int64_t>(de.file_size(ec)));
    }
  }
  {
    std::lock_guard<std::mutex> lock(store->mu_);
    store->EvictLocked();
  }
  return store;
}

std::string RangeStore::TempPath() { return cache_dir_ + "/tmp-" + RandomHex(12); }
std::string RangeStore::CachePath(const std::string& id) const { return cache_dir_ + "/" + id + ".sst"; }

void RangeStore::TouchLocked(const std::string& id, int64_t bytes) {
  auto it = files_.find(id);
  if (it != files_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(id, bytes);
  files_[id] = lru_.begin();
  used_bytes_ += bytes;
}

void RangeStore::EvictLocked() {
  while (used_bytes_ > cache_bytes_ && lru_.size() > 1) {
    auto [id, bytes] = lru_.back();
    lru_.pop_back();
    files_.erase(id);
    used_bytes_ -= bytes;
    std::error_code ec;
    fs::remove(CachePath(id), ec);  // open readers keep their descriptor
  }
}

Status RangeStore::Adopt(const std::string& tmp_path, const std::string& id, int64_t bytes) {
  std::error_code ec;
  fs::rename(tmp_path, CachePath(id), ec);
  if (ec) return Status::IOError(fmt::format("cache {}: {}", id, ec.message()));
  std::lock_guard<std::mutex> lock(mu_);
  TouchLocked(id, bytes);
  EvictLocked();
  return Status::OK();
}

int64_t RangeStore::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_bytes_;
}

std::unique_ptr<MetaRangeWriter> RangeStore::NewWriter(Namespace ns) {
  return std::unique_ptr<MetaRangeWriter>(new MetaRangeWriter(this, std::move(ns)));
}

Result<std::shared_ptr<rocksdb::SstFileReader>> RangeStore::Reader(const Namespace& ns, const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = readers_.find(id);
    if (it != readers_.end()) {
      reader_lru_.splice(reader_lru_.begin(), reader_lru_, it->second.second);
      return it->second.first;
    }
  }
  std::string path = CachePath(id);
  bool cached;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cached = files_.count(id) > 0;
    if (cached) TouchLocked(id, 0);
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!cached || attempt > 0) {
      auto data = ns->Get(CommittedPath(id));
      if (!data.ok()) {
        if (IsNotFound(data.status())) {
          return NotFound(fmt::format("committed file {} is missing from {}", id, ns->Describe()));
        }
        return data.status();
      }
      std::string tmp = TempPath();
      {
        std::ofstream out(tmp, std::ios::binary);
        out.write(reinterpret_cast<const char*>((*data)->data()), (*data)->size());
        if (!out) return Status::IOError("cannot write range cache file ", tmp);
      }
      ARROW_RETURN_NOT_OK(Adopt(tmp, id, (*data)->size()));
    }
    auto reader = std::make_shared<rocksdb::SstFileReader>(*options_);
    auto st = reader->Open(path);
    if (!st.ok()) {
      if (attempt == 0) continue;  // a damaged cache copy: fetch it again
      return Status::IOError(fmt::format("committed file {} is corrupt: {}", id, st.ToString()));
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto it = readers_.find(id);
    if (it != readers_.end()) return it->second.first;
    reader_lru_.push_front(id);
    readers_[id] = {reader, reader_lru_.begin()};
    while (readers_.size() > kMaxOpenReaders) {
      readers_.erase(reader_lru_.back());
      reader_lru_.pop_back();
    }
    return reader;
  }
  return Status::IOError("unreachable");
}

Result<std::unique_ptr<ValueIterator>> RangeStore::NewRangeIterator(const Namespace& ns, const std::string& range_id) {
  ARROW_ASSIGN_OR_RAISE(auto reader, Reader(ns, range_id));
  rocksdb::ReadOptions ro;
  ro.verify_checksums = true;
  rocksdb::Iterator* it = reader->NewIterator(ro);
  return std::unique_ptr<ValueIterator>(new SstIterator(std::move(reader), it));
}

Result<std::shared_ptr<const MetaRange>> RangeStore::LoadMetaRange(const Namespace& ns, const std::string& id) {
  if (IsEmptyMetaRange(id)) {
    auto mr = std::make_shared<MetaRange>();
    mr->id = id;
    return std::shared_ptr<const MetaRange>(mr);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = meta_ranges_.find(id);
    if (it != meta_ranges_.end()) return it->second;
  }
  ARROW_ASSIGN_OR_RAISE(auto it, NewRangeIterator(ns, id));
  auto mr = std::make_shared<MetaRange>();
  mr->id = id;
  while (it->Next()) {
    RangeInfo r;
    if (!DecodeRangeInfo(it->value(), &r)) {
      return Status::IOError(fmt::format("meta-range {}: corrupt entry at key \"{}\"", id, it->key()));
    }
    r.max_key = it->key();
    mr->ranges.push_back(std::move(r));
  }
  ARROW_RETURN_NOT_OK(it->status());
  std::lock_guard<std::mutex> lock(mu_);
  meta_ranges_[id] = mr;
  meta_lru_.push_front(id);
  if (meta_lru_.size() > kMaxMetaRanges) {
    meta_ranges_.erase(meta_lru_.back());
    meta_lru_.pop_back();
  }
  return std::shared_ptr<const MetaRange>(mr);
}

std::unique_ptr<ValueIterator> RangeStore::NewIterator(Namespace ns, std::shared_ptr<const MetaRange> mr,
                                                       std::shared_ptr<const std::unordered_set<std::string>> skip) {
  return std::make_unique<MetaRangeIterator>(this, std::move(ns), std::move(mr), std::move(skip));
}

Result<std::optional<std::string>> RangeStore::Get(const Namespace& ns, const MetaRange& mr, std::string_view key) {
  auto r = std::lower_bound(mr.ranges.begin(), mr.ranges.end(), key,
                            [](const RangeInfo& x, std::string_view k) { return x.max_key < k; });
  if (r == mr.ranges.end() || key < r->min_key) return std::optional<std::string>();
  ARROW_ASSIGN_OR_RAISE(auto it, NewRangeIterator(ns, r->id));
  it->SeekGE(key);
  if (it->Next() && it->key() == key) return std::optional<std::string>(it->value());
  ARROW_RETURN_NOT_OK(it->status());
  return std::optional<std::string>();
}

}  // namespace sediment::catalog
