// StagingManager: staged entries in tokens, retired tokens and their
// background drop (see staging_manager.h).
#include "catalog/staging_manager.h"

#include <fmt/format.h>

#include <charconv>
#include <string_view>

#include "base/executor.h"
#include "base/failpoint.h"
#include "catalog/keys.h"
#include "kv/kv.h"

namespace sediment::catalog {

namespace internal {

namespace {

Status DeletePrefixImpl(kv::KvStore& kv, const std::string& prefix, const std::optional<kv::Precondition>& still) {
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto page, kv.Scan(prefix, "", 1000));
    if (page.items.empty()) return Status::OK();
    kv::Batch b;
    if (still) b.Require(*still);
    for (const auto& item : page.items) b.Delete(item.key);
    ARROW_RETURN_NOT_OK(kv.Apply(b));
    if (!page.has_more) return Status::OK();
  }
}

}  // namespace

Status DeletePrefix(kv::KvStore& kv, const std::string& prefix) { return DeletePrefixImpl(kv, prefix, std::nullopt); }

Status DeletePrefixWhile(kv::KvStore& kv, const std::string& prefix, const kv::Precondition& still) {
  return DeletePrefixImpl(kv, prefix, still);
}

}  // namespace internal

namespace {

// Writes to the store in batches of up to 1,000 mutations (each batch atomic,
// the whole not).
class BatchedWrites {
 public:
  explicit BatchedWrites(kv::KvStore* kv) : kv_(kv) {}
  Status Put(const std::string& key, const std::string& value) {
    batch_.Put(key, value);
    return FlushIfFull();
  }
  Status Delete(const std::string& key) {
    batch_.Delete(key);
    return FlushIfFull();
  }
  Status Flush() {
    if (batch_.mutations.empty()) return Status::OK();
    ARROW_RETURN_NOT_OK(kv_->Apply(batch_));
    batch_ = {};
    return Status::OK();
  }

 private:
  Status FlushIfFull() { return batch_.mutations.size() >= 1000 ? Flush() : Status::OK(); }
  kv::KvStore* kv_;
  kv::Batch batch_;
};

// A drop record's value (DropKey): "" when a batch retires the token, then
// {"v":1,"seen_us":…} once the dropper has seen it (the grace runs from there).
std::string DropRecord(int64_t seen_us) { return fmt::format("{{\"v\":1,\"seen_us\":{}}}", seen_us); }
// The time a drop record was first seen, or -1 if not yet (or unreadable).
int64_t DropRecordTime(const std::string& value) {
  constexpr std::string_view kPrefix = "{\"v\":1,\"seen_us\":";
  if (value.rfind(kPrefix, 0) != 0 || value.back() != '}') return -1;
  int64_t t = -1;
  const char* end = value.data() + value.size() - 1;
  auto [p, ec] = std::from_chars(value.data() + kPrefix.size(), end, t);
  return ec == std::errc() && p == end ? t : -1;
}

}  // namespace

StagingManager::StagingManager(std::shared_ptr<kv::KvStore> kv, std::shared_ptr<Clock> clock,
                               Duration dropped_token_grace)
    : kv_(std::move(kv)), clock_(std::move(clock)), grace_(dropped_token_grace) {}

StagingManager::~StagingManager() { StopDropper(); }

void StagingManager::StartDropper(std::function<void()> pass) {
  dropper_ = std::make_unique<PeriodicTask>("catalog-drop", std::chrono::seconds(2), std::move(pass));
  dropper_->Start();
}

void StagingManager::StopDropper() {
  if (dropper_) dropper_->Stop();
  dropper_.reset();
}

void StagingManager::TriggerDrop() {
  if (dropper_) dropper_->Trigger();
}

void StagingManager::Retire(kv::Batch* batch, const std::string& token) { batch->Put(DropKey(token), ""); }

Status StagingManager::QueueDrop(const std::string& token) {
  ARROW_RETURN_NOT_OK(kv_->Set(DropKey(token), ""));
  TriggerDrop();
  return Status::OK();
}

Status StagingManager::DropRetiredTokens() {
  // A retired token stays readable for dropped_token_grace: a reader that
  // loaded the branch just before a commit or compaction swapped still reads
  // it. The grace runs from the dropper's first sight of the record, which it
  // stamps (records are written without a time by every retiring batch).
  std::vector<kv::KeyValue> records;
  const std::string drops_prefix = DropsPrefix();
  ARROW_RETURN_NOT_OK(kv_->ScanAll(drops_prefix, "", [&](const kv::KeyValue& item) -> Result<bool> {
    records.push_back(item);
    return true;
  }));
  const int64_t now_us = ToUnixMicros(clock_->Now());
  const int64_t grace_us = std::chrono::duration_cast<std::chrono::microseconds>(grace_).count();
  for (const auto& item : records) {
    int64_t seen_us = DropRecordTime(item.value);
    if (seen_us < 0) {
      if (grace_us > 0) {
        Status st = kv_->SetIf(item.key, DropRecord(now_us), item.value);
        if (!st.ok() && !IsPreconditionFailed(st)) return st;
        continue;
      }
    } else if (now_us - seen_us < grace_us) {
      continue;
    }
    std::string token = item.key.substr(drops_prefix.size());
    ARROW_RETURN_NOT_OK(internal::DeletePrefix(*kv_, StagingPrefix(token)));
    SEDIMENT_FAILPOINT("catalog.tokens.after_drop");
    // A writer that re-queued the token meanwhile (its late entry) keeps the record for the next round.
    kv::Batch done;
    done.Require(kv::Precondition::Equals(item.key, item.value)).Delete(item.key);
    Status st = kv_->Apply(done);
    if (!st.ok() && !IsPreconditionFailed(st)) return st;
  }
  return Status::OK();
}

Status StagingManager::Set(const std::string& token, const std::string& path, const std::string& value) {
  return kv_->Set(StagedEntryKey(token, path), value);
}

Status StagingManager::SetEntries(const std::string& token, const std::vector<std::pair<std::string, Entry>>& entries,
                                  size_t begin, size_t end) {
  kv::Batch batch;
  for (size_t j = begin; j < end; ++j) {
    batch.Put(StagedEntryKey(token, entries[j].first), EncodeEntry(entries[j].second));
  }
  return kv_->Apply(batch);
}

Result<std::optional<std::string>> StagingManager::Lookup(const Branch& branch, const std::string& path,
                                                          bool include_current) {
  std::vector<std::string> tokens;
  if (include_current) tokens.push_back(branch.staging_token);
  tokens.insert(tokens.end(), branch.sealed_tokens.begin(), branch.sealed_tokens.end());
  for (const auto& t : tokens) {
    auto v = kv_->Get(StagedEntryKey(t, path));
    if (v.ok()) return std::move(*v);  // "" (a tombstone) hides what is below
    if (!IsNotFound(v.status())) return v.status();
  }
  return std::nullopt;
}

std::unique_ptr<ValueIterator> StagingManager::View(const Branch& branch, bool include_current) {
  std::vector<std::unique_ptr<ValueIterator>> sources;
  if (include_current) sources.push_back(NewKvPrefixIterator(kv_, StagingPrefix(branch.staging_token)));
  for (const auto& t : branch.sealed_tokens) sources.push_back(NewKvPrefixIterator(kv_, StagingPrefix(t)));
  if (sources.empty()) return NewVectorIterator({});
  return NewCombinedIterator(std::move(sources));
}

Result<bool> StagingManager::HasStagedEntries(const Branch& branch, StagedProbe probe) {
  std::vector<std::string> tokens = branch.sealed_tokens;
  tokens.push_back(branch.staging_token);
  bool staged = false;
  for (const auto& t : tokens) {
    ARROW_ASSIGN_OR_RAISE(auto page, kv_->Scan(StagingPrefix(t), "", 1));
    staged = staged || !page.items.empty();
    if (staged && probe == StagedProbe::kStopAtFirst) return true;
  }
  return staged;
}

Status StagingManager::ForEachStaged(const std::string& token,
                                     const std::function<Status(const std::string& value)>& visit) {
  return kv_->ScanAll(StagingPrefix(token), "", [&](const kv::KeyValue& e) -> Result<bool> {
    ARROW_RETURN_NOT_OK(visit(e.value));
    return true;
  });
}

Status StagingManager::Unstage(const std::string& token, const std::string& path, bool prefix) {
  const std::string token_prefix = StagingPrefix(token);
  BatchedWrites batch(kv_.get());
  if (prefix) {
    ARROW_RETURN_NOT_OK(kv_->ScanAll(token_prefix + path, "", [&](const kv::KeyValue& item) -> Result<bool> {
      ARROW_RETURN_NOT_OK(batch.Delete(item.key));
      return true;
    }));
  } else {
    ARROW_RETURN_NOT_OK(batch.Delete(token_prefix + path));
  }
  return batch.Flush();
}

Status StagingManager::StageLeft(const std::string& token, DiffIterator& diff,
                                 const std::function<bool(const std::string&)>& in_scope) {
  const std::string token_prefix = StagingPrefix(token);
  BatchedWrites batch(kv_.get());
  while (diff.Next() && in_scope(diff.key())) {
    ARROW_RETURN_NOT_OK(batch.Put(token_prefix + diff.key(), diff.left()));  // "" (a tombstone) where not committed
  }
  ARROW_RETURN_NOT_OK(diff.status());
  return batch.Flush();
}

}  // namespace sediment::catalog
