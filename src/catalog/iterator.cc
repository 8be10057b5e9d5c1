#include "catalog/iterator.h"

#include <algorithm>

#include "kv/kv.h"

namespace sediment::catalog {
namespace {

class VectorIterator : public ValueIterator {
 public:
  explicit VectorIterator(std::vector<KeyValueEntry> items) : items_(std::move(items)) {}
  bool Next() override {
    if (next_ >= items_.size()) return false;
    cur_ = next_++;
    return true;
  }
  void SeekGE(std::string_view key) override {
    auto it = std::lower_bound(items_.begin(), items_.end(), key,
                               [](const KeyValueEntry& e, std::string_view k) { return e.key < k; });
    next_ = static_cast<size_t>(it - items_.begin());
  }
  const std::string& key() const override { return items_[cur_].key; }
  const std::string& value() const override { return items_[cur_].value; }
  Status status() const override { return Status::OK(); }

 private:
  std::vector<KeyValueEntry> items_;
  size_t next_ = 0;
  size_t cur_ = 0;
};

class CombinedIterator : public ValueIterator {
 public:
  explicit CombinedIterator(std::vector<std::unique_ptr<ValueIterator>> sources) : sources_(std::move(sources)) {
    valid_.assign(sources_.size(), false);
    need_advance_.assign(sources_.size(), true);
  }

  bool Next() override {
    // Advance every source that yielded the previous key (or was just sought).
    for (size_t i = 0; i < sources_.size(); ++i) {
      if (need_advance_[i]) {
        valid_[i] = sources_[i]->Next();
        need_advance_[i] = false;
        if (!valid_[i] && !sources_[i]->status().ok()) {
          status_ = sources_[i]->status();
          return false;
        }
      }
    }
    int best = -1;
    for (size_t i = 0; i < sources_.size(); ++i) {
      if (valid_[i] && (best < 0 || sources_[i]->key() < sources_[best]->key())) best = static_cast<int>(i);
    }
    if (best < 0) return false;
    current_ = static_cast<size_t>(best);
    for (size_t i = 0; i < sources_.size(); ++i) {
      if (valid_[i] && sources_[i]->key() == sources_[best]->key()) need_advance_[i] = true;
    }
    return true;
  }
  void SeekGE(std::string_view key) override {
    for (size_t i = 0; i < sources_.size(); ++i) {
      sources_[i]->SeekGE(key);
      need_advance_[i] = true;
      valid_[i] = false;
    }
  }
  const std::string& key() const override { return sources_[current_]->key(); }
  const std::string& value() const override { return sources_[current_]->value(); }
  Status status() const override { return status_; }

 private:
  std::vector<std::unique_ptr<ValueIterator>> sources_;
  std::vector<bool> valid_;
  std::vector<bool> need_advance_;
  size_t current_ = 0;
  Status status_;
};

class TombstoneFilter : public ValueIterator {
 public:
  explicit TombstoneFilter(std::unique_ptr<ValueIterator> source) : source_(std::move(source)) {}
  bool Next() override {
    while (source_->Next()) {
      if (!source_->value().empty()) return true;
    }
    return false;
  }
  void SeekGE(std::string_view key) override { source_->SeekGE(key); }
  const std::string& key() const override { return source_->key(); }
  const std::string& value() const override { return source_->value(); }
  Status status() const override { return source_->status(); }

 private:
  std::unique_ptr<ValueIterator> source_;
};

class KvPrefixIterator : public ValueIterator {
 public:
  KvPrefixIterator(std::shared_ptr<kv::KvStore> kv, std::string prefix)
      : kv_(std::move(kv)), prefix_(std::move(prefix)), from_(prefix_) {}

  bool Next() override {
    if (!status_.ok()) return false;
    if (pos_ >= page_.items.size()) {
      if (fetched_ && !page_.has_more) return false;
      std::string from = fetched_ && !page_.items.empty() ? page_.items.back().key + '\0' : from_;
      auto page = kv_->Scan(prefix_, from, page_size_);
      if (!page.ok()) {
        status_ = page.status();
        return false;
      }
      page_ = std::move(*page);
      page_from_ = std::move(from);
      fetched_ = true;
      pos_ = 0;
      page_size_ = std::min<size_t>(page_size_ * 2, kMaxPage);
      if (page_.items.empty()) return false;
    }
    auto& kv = page_.items[pos_++];
    key_.assign(kv.key, prefix_.size());
    value_ = kv.value;
    return true;
  }
  void SeekGE(std::string_view key) override {
    std::string full = prefix_ + std::string(key);
    // The fetched page answers the seek if it covers the target: it starts at or
    // before it and either reaches past it or is the last page. A branch with
    // little or no staging then costs one scan per listing, not one per seek.
    if (fetched_ && full >= page_from_ &&
        (!page_.has_more || (!page_.items.empty() && full <= page_.items.back().key))) {
      auto it = std::lower_bound(page_.items.begin(), page_.items.end(), full,
                                 [](const kv::KeyValue& a, const std::string& k) { return a.key < k; });
      pos_ = static_cast<size_t>(it - page_.items.begin());
      return;
    }
    from_ = std::move(full);
    page_ = {};
    fetched_ = false;
    pos_ = 0;
    page_size_ = kFirstPage;
  }
  const std::string& key() const override { return key_; }
  const std::string& value() const override { return value_; }
  Status status() const override { return status_; }

 private:
  // Small first page: after a seek (delimited listings) usually one key is needed.
  static constexpr size_t kFirstPage = 16;
  static constexpr size_t kMaxPage = 4096;

  std::shared_ptr<kv::KvStore> kv_;
  std::string prefix_;
  std::string from_;       // where the next fresh scan starts
  std::string page_from_;  // where the fetched page's scan started
  kv::ScanPage page_;
  bool fetched_ = false;
  size_t pos_ = 0;
  size_t page_size_ = kFirstPage;
  std::string key_, value_;
  Status status_;
};

}  // namespace

std::unique_ptr<ValueIterator> NewVectorIterator(std::vector<KeyValueEntry> sorted) {
  return std::make_unique<VectorIterator>(std::move(sorted));
}

std::unique_ptr<ValueIterator> NewCombinedIterator(std::vector<std::unique_ptr<ValueIterator>> sources) {
  if (sources.size() == 1) return std::move(sources[0]);
  return std::make_unique<CombinedIterator>(std::move(sources));
}

std::unique_ptr<ValueIterator> NewTombstoneFilter(std::unique_ptr<ValueIterator> source) {
  return std::make_unique<TombstoneFilter>(std::move(source));
}

std::unique_ptr<ValueIterator> NewKvPrefixIterator(std::shared_ptr<kv::KvStore> kv, std::string prefix) {
  return std::make_unique<KvPrefixIterator>(std::move(kv), std::move(prefix));
}

}  // namespace sediment::catalog
