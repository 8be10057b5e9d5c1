// Tables' metadata files as read, by location: a metadata file is written
// once under a fresh name and never changed, so what was read (and checked)
// stays true. loadTable then reads the pointer and hands out the cached text
// (no file read, no JSON parse or print); a commit starts from the cached
// document. Bounded by the files' bytes; least recently used go first.
//
// Thread-safety: safe from many threads.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

namespace sediment::repo_tables {

struct MetadataFile {
  std::string text;     // as stored
  nlohmann::json json;  // parsed, checked to be table metadata located in its repository's namespace
};

class MetadataCache {
 public:
  explicit MetadataCache(int64_t max_bytes) : max_bytes_(max_bytes) {}

  std::shared_ptr<const MetadataFile> Get(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }

  void Put(const std::string& key, std::shared_ptr<const MetadataFile> file) {
    std::lock_guard<std::mutex> lock(mu_);
    if (index_.count(key)) return;
    bytes_ += Cost(*file);
    order_.emplace_front(key, std::move(file));
    index_[key] = order_.begin();
    while (bytes_ > max_bytes_ && order_.size() > 1) {
      bytes_ -= Cost(*order_.back().second);
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }

 private:
  // The text and its parsed document, which takes several times the text's bytes.
  static int64_t Cost(const MetadataFile& f) { return static_cast<int64_t>(f.text.size()) * 5; }
  using Item = std::pair<std::string, std::shared_ptr<const MetadataFile>>;
  const int64_t max_bytes_;
  std::mutex mu_;
  std::list<Item> order_;  // most recently used first
  std::unordered_map<std::string, std::list<Item>::iterator> index_;
  int64_t bytes_ = 0;
};

}  // namespace sediment::repo_tables
