#include "catalog/committed.h"

#include "catalog/entry.h"

namespace sediment::catalog {

bool SameObject(const std::string& a, const std::string& b) {
  if (a == b) return true;
  if (a.empty() || b.empty()) return false;
  return EntryIdentity(a) == EntryIdentity(b);
}

Result<std::shared_ptr<const MetaRange>> ApplyChanges(RangeStore& store, const Namespace& ns,
                                                      const std::shared_ptr<const MetaRange>& base,
                                                      ValueIterator& changes, ApplyStats* stats) {
  auto writer = store.NewWriter(ns);
  int64_t n_changes = 0;
  bool has_change = changes.Next();
  ARROW_RETURN_NOT_OK(changes.status());
  const uint64_t modulus = store.settings().split_modulus;

  for (const RangeInfo& range : base->ranges) {
    bool touched = has_change && changes.key() <= range.max_key;
    if (!touched && !writer->range_open()) {
      ARROW_RETURN_NOT_OK(writer->AddRange(range));
      continue;
    }
    ARROW_ASSIGN_OR_RAISE(auto it, store.NewRangeIterator(ns, range.id));
    bool has_entry = it->Next();
    while (has_entry || (has_change && changes.key() <= range.max_key)) {
      bool take_change = has_change && changes.key() <= range.max_key && (!has_entry || changes.key() <= it->key());
      if (take_change) {
        if (has_entry && changes.key() == it->key()) has_entry = it->Next();
        if (!changes.value().empty()) ARROW_RETURN_NOT_OK(writer->Add(changes.key(), changes.value()));
        ++n_changes;
        has_change = changes.Next();
        ARROW_RETURN_NOT_OK(changes.status());
      } else {
        ARROW_RETURN_NOT_OK(writer->Add(it->key(), it->value()));
        has_entry = it->Next();
      }
    }
    ARROW_RETURN_NOT_OK(it->status());
    if (StableHash(range.max_key) % modulus == 0) ARROW_RETURN_NOT_OK(writer->FlushRange());
  }
  while (has_change) {
    if (!changes.value().empty()) ARROW_RETURN_NOT_OK(writer->Add(changes.key(), changes.value()));
    ++n_changes;
    has_change = changes.Next();
  }
  ARROW_RETURN_NOT_OK(changes.status());
  ARROW_ASSIGN_OR_RAISE(auto mr, writer->Finish());
  if (stats) {
    stats->changes += n_changes;
    stats->ranges_written += writer->ranges_written();
    stats->ranges_reused += writer->ranges_reused();
  }
  return mr;
}

namespace {

class MergeDiff : public DiffIterator {
 public:
  MergeDiff(std::unique_ptr<ValueIterator> left, std::unique_ptr<ValueIterator> right)
      : l_(std::move(left)), r_(std::move(right)) {}

  bool Next() override {
    while (true) {
      if (need_l_) {
        lv_ = l_->Next();
        need_l_ = false;
        if (!lv_ && !l_->status().ok()) return Fail(l_->status());
      }
      if (need_r_) {
        rv_ = r_->Next();
        need_r_ = false;
        if (!rv_ && !r_->status().ok()) return Fail(r_->status());
      }
      if (!lv_ && !rv_) return false;
      if (lv_ && (!rv_ || l_->key() < r_->key())) {
        need_l_ = true;
        if (l_->value().empty()) continue;
        Set(l_->key(), l_->value(), kEmpty);
        return true;
      }
      if (rv_ && (!lv_ || r_->key() < l_->key())) {
        need_r_ = true;
        if (r_->value().empty()) continue;
        Set(r_->key(), kEmpty, r_->value());
        return true;
      }
      need_l_ = need_r_ = true;
      if (SameObject(l_->value(), r_->value())) continue;
      Set(l_->key(), l_->value(), r_->value());
      return true;
    }
  }
  void SeekGE(std::string_view key) override {
    l_->SeekGE(key);
    r_->SeekGE(key);
    need_l_ = need_r_ = true;
    lv_ = rv_ = false;
  }
  const std::string& key() const override { return key_; }
  const std::string& left() const override { return left_; }
  const std::string& right() const override { return right_; }
  Status status() const override { return status_; }

 private:
  inline static const std::string kEmpty;
  bool Fail(Status st) {
    status_ = std::move(st);
    return false;
  }
  void Set(const std::string& k, const std::string& l, const std::string& r) {
    key_ = k;
    left_ = l;
    right_ = r;
  }
  std::unique_ptr<ValueIterator> l_, r_;
  bool need_l_ = true, need_r_ = true, lv_ = false, rv_ = false;
  std::string key_, left_, right_;
  Status status_;
};

class LookupDiff : public DiffIterator {
 public:
  LookupDiff(std::unique_ptr<ValueIterator> candidates, std::unique_ptr<ValueIterator> left)
      : c_(std::move(candidates)), l_(std::move(left)) {}

  bool Next() override {
    while (c_->Next()) {
      const std::string& k = c_->key();
      if (!l_valid_ || l_->key() < k) {
        l_->SeekGE(k);
        l_valid_ = l_->Next();
        if (!l_valid_ && !l_->status().ok()) {
          status_ = l_->status();
          return false;
        }
      }
      const std::string& lv = (l_valid_ && l_->key() == k) ? l_->value() : kEmpty;
      if (SameObject(lv, c_->value())) continue;
      key_ = k;
      left_ = lv;
      right_ = c_->value();
      return true;
    }
    status_ = c_->status();
    return false;
  }
  void SeekGE(std::string_view key) override {
    c_->SeekGE(key);
    l_valid_ = false;
  }
  const std::string& key() const override { return key_; }
  const std::string& left() const override { return left_; }
  const std::string& right() const override { return right_; }
  Status status() const override { return status_; }

 private:
  inline static const std::string kEmpty;
  std::unique_ptr<ValueIterator> c_, l_;
  bool l_valid_ = false;
  std::string key_, left_, right_;
  Status status_;
};

class CompareIterator : public DiffIterator {
 public:
  CompareIterator(std::unique_ptr<DiffIterator> diff, std::unique_ptr<ValueIterator> base)
      : d_(std::move(diff)), b_(std::move(base)) {}

  bool Next() override {
    while (d_->Next()) {
      const std::string& k = d_->key();
      if (!b_valid_ || b_->key() < k) {
        b_->SeekGE(k);
        b_valid_ = b_->Next();
        if (!b_valid_ && !b_->status().ok()) {
          status_ = b_->status();
          return false;
        }
      }
      const std::string& base = (b_valid_ && b_->key() == k) ? b_->value() : kEmpty;
      const std::string &l = d_->left(), &r = d_->right();
      conflict_ = false;
      if (l.empty()) {  // added on the right
        if (!base.empty() && SameObject(base, r)) continue;
        conflict_ = !base.empty();
      } else if (r.empty()) {  // removed on the right
        if (base.empty()) continue;
        conflict_ = !SameObject(base, l);
      } else {  // changed
        if (!base.empty() && SameObject(base, r)) continue;
        conflict_ = base.empty() || !SameObject(base, l);
      }
      key_ = k;
      left_ = l;
      right_ = r;
      return true;
    }
    status_ = d_->status();
    return false;
  }
  void SeekGE(std::string_view key) override {
    d_->SeekGE(key);
    b_valid_ = false;
  }
  const std::string& key() const override { return key_; }
  const std::string& left() const override { return left_; }
  const std::string& right() const override { return right_; }
  Status status() const override { return status_; }
  bool conflict() const override { return conflict_; }

 private:
  inline static const std::string kEmpty;
  std::unique_ptr<DiffIterator> d_;
  std::unique_ptr<ValueIterator> b_;
  bool b_valid_ = false, conflict_ = false;
  std::string key_, left_, right_;
  Status status_;
};

class ChangesIterator : public ValueIterator {
 public:
  explicit ChangesIterator(std::unique_ptr<DiffIterator> d) : d_(std::move(d)) {}
  bool Next() override { return d_->Next(); }
  void SeekGE(std::string_view key) override { d_->SeekGE(key); }
  const std::string& key() const override { return d_->key(); }
  const std::string& value() const override { return d_->right(); }
  Status status() const override { return d_->status(); }

 private:
  std::unique_ptr<DiffIterator> d_;
};

}  // namespace

std::unique_ptr<DiffIterator> NewDiffIterator(std::unique_ptr<ValueIterator> left,
                                              std::unique_ptr<ValueIterator> right) {
  return std::make_unique<MergeDiff>(std::move(left), std::move(right));
}

std::unique_ptr<DiffIterator> DiffMetaRanges(RangeStore& store, const Namespace& ns,
                                             const std::shared_ptr<const MetaRange>& left,
                                             const std::shared_ptr<const MetaRange>& right) {
  // A range id present on both sides holds exactly the same keys on both: ranges
  // partition the key space, so nothing else on either side falls inside it.
  auto shared = std::make_shared<std::unordered_set<std::string>>();
  std::unordered_set<std::string> left_ids;
  for (const auto& r : left->ranges) left_ids.insert(r.id);
  for (const auto& r : right->ranges) {
    if (left_ids.count(r.id)) shared->insert(r.id);
  }
  return NewDiffIterator(store.NewIterator(ns, left, shared), store.NewIterator(ns, right, shared));
}

std::unique_ptr<DiffIterator> NewLookupDiff(std::unique_ptr<ValueIterator> candidates,
                                            std::unique_ptr<ValueIterator> left) {
  return std::make_unique<LookupDiff>(std::move(candidates), std::move(left));
}

std::unique_ptr<DiffIterator> NewCompareIterator(std::unique_ptr<DiffIterator> diff,
                                                 std::unique_ptr<ValueIterator> base) {
  return std::make_unique<CompareIterator>(std::move(diff), std::move(base));
}

std::unique_ptr<ValueIterator> DiffAsChanges(std::unique_ptr<DiffIterator> diff) {
  return std::make_unique<ChangesIterator>(std::move(diff));
}

}  // namespace sediment::catalog
