#include "catalog/importer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/crypto.h"
#include "blob/blob.h"
#include "catalog/keys.h"
#include "kv/kv.h"

namespace sediment::catalog {

using nlohmann::json;
namespace fs = std::filesystem;

struct Importer::Job {
  std::string repo, branch, id, key;
  std::vector<ImportLocation> paths;
  std::vector<NamespaceLocation> where;  // each path, resolved
  CommitParams commit;
  std::atomic<int64_t> ingested{0};
  std::atomic<bool> cancelled{false};  // the record says so, or the server stops
  std::atomic<bool> finished{false};
  std::mutex mu;  // one record update at a time
  std::condition_variable wake;
  bool done = false;  // GUARDED_BY(mu): the heartbeat ends
};

Importer::Importer(Catalog* catalog, std::shared_ptr<kv::KvStore> kv, std::shared_ptr<Clock> clock)
    : catalog_(catalog), kv_(std::move(kv)), clock_(std::move(clock)) {}

Importer::~Importer() { Stop(); }

void Importer::Stop() {
  stopping_ = true;
  std::vector<std::pair<std::thread, std::shared_ptr<Job>>> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads.swap(threads_);
  }
  for (auto& [t, job] : threads) {
    if (t.joinable()) t.join();
  }
}

Result<std::string> Importer::Start(const std::string& repo, const std::string& branch,
                                    std::vector<ImportLocation> paths, CommitParams commit,
                                    const Authorize& authorize) {
  if (paths.empty()) return InvalidArgument("paths must name at least one location to import");
  if (paths.size() > 10000) return InvalidArgument(fmt::format("at most 10000 paths per import, got {}", paths.size()));
  ARROW_ASSIGN_OR_RAISE(auto repository, catalog_->GetRepository(repo));
  ARROW_RETURN_NOT_OK(catalog_->GetBranch(repo, branch).status());
  ARROW_RETURN_NOT_OK(Catalog::CheckProtection(repository, branch, /*commit=*/true));
  auto job = std::make_shared<Job>();
  for (auto& p : paths) {
    if (p.type != "common_prefix" && p.type != "object") {
      return InvalidArgument(fmt::format("invalid import type: \"{}\" (common_prefix or object)", p.type));
    }
    const bool prefix = p.type == "common_prefix";
    if (prefix && !p.destination.empty() && p.destination.back() != '/') p.destination += '/';
    if (!prefix || !p.destination.empty()) {
      std::string dest = p.destination;
      if (prefix) dest.pop_back();
      if (Status st = Catalog::ValidatePath(dest); !st.ok()) {
        return InvalidArgument(fmt::format("import destination \"{}\": {}", p.destination, st.message()));
      }
    }
    if (authorize) ARROW_RETURN_NOT_OK(authorize(p, nullptr));
    ARROW_ASSIGN_OR_RAISE(auto where, catalog_->CheckImportSource(repository, p.path, prefix));
    if (authorize) {
      const std::string resolved = where.Uri() + (prefix ? "/" : "");
      ARROW_RETURN_NOT_OK(authorize(p, &resolved));
    }
    job->where.push_back(std::move(where));
  }
  job->repo = repo;
  job->branch = branch;
  job->paths = std::move(paths);
  job->commit = catalog_->WithImportHooks(repo, branch, std::move(commit));
  job->id = RandomHex(10);
  job->key = ImportKey(repo, job->id);
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return Busy("the server is stopping");
  if (running_ >= kMaxRunning) {
    return Busy(fmt::format("{} imports already run on this server; retry when one has ended", running_));
  }
  json record = {{"branch", branch}, {"update_time_us", ToUnixMicros(clock_->Now())}, {"ingested", 0}};
  kv::Batch b;
  b.Require(kv::Precondition::Absent(job->key)).Put(job->key, record.dump());
  ARROW_RETURN_NOT_OK(kv_->Apply(b));
  // Threads of imports that ended are joined here (and on Stop).
  for (auto it = threads_.begin(); it != threads_.end();) {
    if (it->second->finished) {
      it->first.join();
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
  ++running_;
  std::thread t([this, job] {
    try {
      Run(job);
    } catch (const std::exception& e) {
      spdlog::error("import {} of {}: {}", job->id, job->repo, e.what());
    }
    std::lock_guard<std::mutex> l(mu_);
    --running_;
    job->finished = true;
  });
  threads_.emplace_back(std::move(t), job);
  return job->id;
}

// Rewrites the job's record: progress and `change`, on the condition that it
// is as read. False (and `cancelled` set) when the record says the import was
// cancelled; the server stopping counts as that too.
namespace {
Result<bool> UpdateRecord(kv::KvStore* kv, Clock* clock, const std::string& key, int64_t ingested,
                          const std::function<void(json&)>& change) {
  for (int i = 0; i < 20; ++i) {
    ARROW_ASSIGN_OR_RAISE(auto raw, kv->Get(key));
    auto j = json::parse(raw, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return Status::IOError(fmt::format("corrupt import record {}", key));
    if (!j.value("error", "").empty()) return false;
    j["ingested"] = ingested;
    j["update_time_us"] = ToUnixMicros(clock->Now());
    if (change) change(j);
    Status st = kv->SetIf(key, j.dump(-1, ' ', false, json::error_handler_t::replace), raw);
    if (st.ok()) return true;
    if (!IsPreconditionFailed(st)) return st;
  }
  return Busy(fmt::format("import record {} kept changing", key));
}
}  // namespace

void Importer::Run(std::shared_ptr<Job> job) {
  std::thread heartbeat([this, job] { Heartbeat(*job); });
  auto end_heartbeat = [&] {
    {
      std::lock_guard<std::mutex> lock(job->mu);
      job->done = true;
    }
    job->wake.notify_all();
    if (heartbeat.joinable()) heartbeat.join();
  };
  // Whatever way Run ends (an exception included), the heartbeat thread ends and is joined.
  struct EndHeartbeat {
    std::function<void()> end;
    ~EndHeartbeat() { end(); }
  } guard{end_heartbeat};
  std::map<std::string, Entry> entries;
  Status st;
  try {
    st = Walk(*job, &entries);
  } catch (const std::exception& e) {
    st = Status::IOError(e.what());
  }
  if (!st.ok()) {
    end_heartbeat();
    if (stopping_) {
      RecordError(*job, "the server stopped while importing");
    } else if (!job->cancelled) {
      RecordError(*job, st.message());
    }
    return;
  }
  // The count is recorded before the commit: once the end marker says
  // committed, GetStatus reports completed from the record as it is.
  if (!job->cancelled) RecordProgress(*job);
  if (job->cancelled) {
    end_heartbeat();
    return;
  }
  Result<Commit> commit = CommitWalked(*job, entries);
  end_heartbeat();
  RecordEnd(*job, commit, entries.size());
}

// The heartbeat: update_time moves every second while the job runs, and a
// cancel recorded meanwhile is seen within a second.
void Importer::Heartbeat(Job& job) {
  std::unique_lock<std::mutex> lock(job.mu);
  while (!job.done) {
    job.wake.wait_for(lock, std::chrono::seconds(1));
    if (job.done) break;
    if (stopping_) job.cancelled = true;
    auto going = UpdateRecord(kv_.get(), clock_.get(), job.key, job.ingested, nullptr);
    if (going.ok() && !*going) job.cancelled = true;
  }
}

void Importer::RecordProgress(Job& job) {
  std::lock_guard<std::mutex> lock(job.mu);
  auto going = UpdateRecord(kv_.get(), clock_.get(), job.key, job.ingested, nullptr);
  if (going.ok() && !*going) job.cancelled = true;
}

void Importer::RecordError(Job& job, const std::string& message) {
  std::lock_guard<std::mutex> lock(job.mu);
  (void)UpdateRecord(kv_.get(), clock_.get(), job.key, job.ingested,
                     [&](json& j) { j["error"] = "import error: " + message; });
}

Result<Commit> Importer::CommitWalked(Job& job, const std::map<std::string, Entry>& entries) {
  // A prefix's destination is replaced as a whole; an object's, by that object.
  std::vector<std::string> destinations;
  for (const auto& p : job.paths) {
    if (p.type == "common_prefix") destinations.push_back(p.destination);
  }
  try {
    return catalog_->CommitImport(job.repo, job.branch, entries, destinations, job.commit, job.key,
                                  ImportEndKey(job.repo, job.id));
  } catch (const std::exception& e) {
    return Status::IOError(e.what());
  }
}

void Importer::RecordEnd(Job& job, const Result<Commit>& commit, size_t objects) {
  if (commit.status().IsCancelled()) return;  // a cancel won the race to the end marker: nothing was committed
  if (!commit.ok()) {
    RecordError(job, commit.status().message());
    return;
  }
  std::lock_guard<std::mutex> lock(job.mu);
  auto done = UpdateRecord(kv_.get(), clock_.get(), job.key, job.ingested, [&](json& j) {
    j["completed"] = true;
    j["commit_id"] = commit->id;
    j["metarange_id"] = commit->meta_range_id;
  });
  if (!done.ok()) {
    spdlog::error("import {} of {}: recording its end failed: {}", job.id, job.repo, done.status().ToString());
  }
  spdlog::info("import {} into {}/{}: {} object(s), commit {}", job.id, job.repo, job.branch, objects, commit->id);
}

namespace {

// Adds an object a walk found, at `path` on the branch.
using AddEntry = std::function<Status(const std::string& path, Entry e)>;

// A local source: one file, or every file under a directory.
Status WalkLocal(Catalog* catalog, const ImportLocation& p, const NamespaceLocation& where, const AddEntry& add) {
  if (p.type != "common_prefix") {
    ARROW_ASSIGN_OR_RAISE(auto e, catalog->ImportLocalFile(where.path));
    return add(p.destination, std::move(e));
  }
  const fs::path root(where.path);
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(root, ec))) {
    return NotFound(fmt::format("creating object-store walker on path {}: no such directory", p.path));
  }
  // Names starting with '.' are skipped; symbolic links are not followed
  // (and every file is opened through real directories only, whatever
  // changes during the walk: Catalog::ImportLocalFile).
  const std::string root_slash = where.path + "/";
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code entry_ec;
    const auto name = it->path().filename().string();
    const auto status = it->symlink_status(entry_ec);
    if (entry_ec) continue;  // gone meanwhile
    if (!name.empty() && name[0] == '.') {
      if (fs::is_directory(status)) it.disable_recursion_pending();
      continue;
    }
    if (!fs::is_regular_file(status)) continue;
    const std::string full = it->path().string();
    if (full.compare(0, root_slash.size(), root_slash) != 0) continue;
    auto e = catalog->ImportLocalFile(full);
    if (IsNotFound(e.status())) continue;  // removed during the walk
    if (!e.ok()) return Status::IOError(fmt::format("{}: {}", full, e.status().message()));
    ARROW_RETURN_NOT_OK(add(p.destination + full.substr(root_slash.size()), std::move(*e)));
  }
  if (ec) return Status::IOError(fmt::format("walking {}: {}", p.path, ec.message()));
  return Status::OK();
}

// An S3 source: one object, or every key under a prefix.
Status WalkS3(Catalog* catalog, const ImportLocation& p, const NamespaceLocation& where, const AddEntry& add) {
  // The bucket, and the key prefix as written (a string prefix, as S3's).
  const auto slash = where.path.find('/');
  const std::string bucket = where.path.substr(0, slash);
  const std::string after_bucket = p.path.substr(p.path.find("://") + 3 + bucket.size());
  const std::string key_prefix = after_bucket.empty() ? "" : after_bucket.substr(1);
  ARROW_ASSIGN_OR_RAISE(auto store, blob::OpenBlobStore("s3://" + bucket, catalog->s3_config()));
  auto s3_entry = [&](const blob::ObjectInfo& info) {
    Entry e;
    e.address = "s3://" + bucket + "/" + info.path;
    e.size = info.size;
    e.mtime = ToUnixMicros(info.mtime) / 1000000;
    // The listing gives no ETag: the object's identity is its address,
    // size and time (docs/lakefs-compat.md, "Import").
    e.checksum = Hex(Md5(fmt::format("{}|{}|{}", e.address, e.size, ToUnixMicros(info.mtime))));
    e.content_type = "application/octet-stream";
    return e;
  };
  if (p.type != "common_prefix") {
    ARROW_ASSIGN_OR_RAISE(auto info, store->Stat(key_prefix));
    return add(p.destination, s3_entry(info));
  }
  ARROW_ASSIGN_OR_RAISE(auto listed, store->List(key_prefix));
  for (const auto& info : listed) {
    // A string prefix may reach past the location checked: each key is held to the S3 prefixes.
    if (!catalog->S3Allowed("s3://" + bucket + "/" + info.path)) continue;
    ARROW_RETURN_NOT_OK(add(p.destination + info.path.substr(key_prefix.size()), s3_entry(info)));
  }
  return Status::OK();
}

}  // namespace

Status Importer::Walk(Job& job, std::map<std::string, Entry>* entries) {
  AddEntry add = [&](const std::string& key, Entry e) -> Status {
    if (Status st = Catalog::ValidatePath(key); !st.ok()) {
      return InvalidArgument(fmt::format("object path \"{}\" (from {}): {}", key, e.address, st.message()));
    }
    (*entries)[key] = std::move(e);
    ++job.ingested;
    if (job.cancelled || stopping_) return Status::Cancelled("Canceled");
    return Status::OK();
  };
  for (size_t i = 0; i < job.paths.size(); ++i) {
    const NamespaceLocation& where = job.where[i];
    ARROW_RETURN_NOT_OK(where.kind == NamespaceKind::kLocal ? WalkLocal(catalog_, job.paths[i], where, add)
                                                            : WalkS3(catalog_, job.paths[i], where, add));
  }
  return Status::OK();
}

Result<ImportStatus> Importer::GetStatus(const std::string& repo, const std::string& id) {
  const std::string key = ImportKey(repo, id);
  auto raw = kv_->Get(key);
  if (IsNotFound(raw.status())) return NotFound(fmt::format("import \"{}\" not found", id));
  ARROW_RETURN_NOT_OK(raw.status());
  auto j = json::parse(*raw, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::IOError(fmt::format("corrupt import record {}", id));
  ImportStatus s;
  s.branch = j.value("branch", "");
  s.completed = j.value("completed", false);
  s.update_time_us = j.value("update_time_us", int64_t{0});
  s.ingested_objects = j.value("ingested", int64_t{0});
  s.metarange_id = j.value("metarange_id", "");
  s.commit_id = j.value("commit_id", "");
  s.error = j.value("error", "");
  // The end marker decides: a commit made whose record was not updated yet
  // (or whose server stopped right after) is completed; a cancel is a cancel.
  auto end = kv_->Get(ImportEndKey(repo, id));
  if (end.ok() && end->rfind("committed:", 0) == 0 && !s.completed) {
    s.completed = true;
    s.commit_id = end->substr(10);
    s.error.clear();
  } else if (end.ok() && *end == "canceled" && s.error.rfind("Canceled", 0) != 0) {
    s.error = s.error.empty() ? "Canceled" : "Canceled; it had failed: " + s.error;
  }
  const auto quiet = clock_->Now() - FromUnixMicros(s.update_time_us);
  if (!s.completed && s.error.empty() && quiet > kStale) {
    s.error = fmt::format("import error: no progress for {} s: the server running the import stopped",
                          std::chrono::duration_cast<std::chrono::seconds>(quiet).count());
  }
  return s;
}

// The end marker (KV key <record>/end) settles a cancel racing the commit:
// whichever writes it first wins, in the same batch as the branch moves
// (Catalog::CommitImport). Then the record says "Canceled", and the job,
// which reads it every second, writes no more.
Status Importer::Cancel(const std::string& repo, const std::string& id) {
  const std::string key = ImportKey(repo, id), end = ImportEndKey(repo, id);
  auto raw = kv_->Get(key);
  if (IsNotFound(raw.status())) return NotFound(fmt::format("import \"{}\" not found", id));
  ARROW_RETURN_NOT_OK(raw.status());
  auto settled = [&](const std::string& marker) -> Status {
    if (marker.rfind("committed:", 0) == 0) return Conflict(fmt::format("import \"{}\" is completed", id));
    return Status::OK();  // cancelled already: nothing changes
  };
  if (auto marker = kv_->Get(end); marker.ok()) return settled(*marker);
  auto j = json::parse(*raw, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::IOError(fmt::format("corrupt import record {}", id));
  if (j.value("completed", false)) return Conflict(fmt::format("import \"{}\" is completed", id));
  // An import that failed can be cancelled (lakeFS's answer too): its status
  // says Canceled, and still why it had failed.
  kv::Batch b;
  b.Require(kv::Precondition::Absent(end)).Put(end, "canceled");
  Status st = kv_->Apply(b);
  if (IsPreconditionFailed(st)) {
    ARROW_ASSIGN_OR_RAISE(auto marker, kv_->Get(end));
    return settled(marker);
  }
  ARROW_RETURN_NOT_OK(st);
  for (int i = 0; i < 20; ++i) {
    ARROW_ASSIGN_OR_RAISE(auto now_raw, kv_->Get(key));
    auto rec = json::parse(now_raw, nullptr, false);
    if (rec.is_discarded() || !rec.is_object()) return Status::IOError(fmt::format("corrupt import record {}", id));
    const std::string error = rec.value("error", "");
    if (error.rfind("Canceled", 0) == 0) return Status::OK();
    rec["error"] = error.empty() ? "Canceled" : "Canceled; it had failed: " + error;
    rec["update_time_us"] = ToUnixMicros(clock_->Now());
    st = kv_->SetIf(key, rec.dump(-1, ' ', false, json::error_handler_t::replace), now_raw);
    if (!IsPreconditionFailed(st)) return st;
  }
  return Status::OK();  // the marker holds the cancel; GetStatus reports it
}

}  // namespace sediment::catalog
