// Importer: lakeFS's import API over the catalog. An import walks its sources
// (local directories, S3 prefixes, single objects), makes an entry per object
// pointing at it where it is (zero-copy: the import writes no object data and
// catalog GC never deletes what the repository did not write), then replaces
// the destination prefixes on the branch in one commit (Catalog::CommitImport).
//
// Jobs run in the background on the server that started them; their status
// is a KV record (c/imp/<repo>/<id>) any server answers from. A running job
// refreshes it every second (update_time, ingested_objects) and reads it back:
// a cancel (error "Canceled") stops the job there. A cancel and the commit
// race for one end marker (c/imp/<repo>/<id>/end), written in the batch that
// moves the branch: a cancel that wins leaves the branch as it was, one that
// loses is refused (409) — never both a cancel and a commit. A job whose
// server stopped shows an error once its record has not moved for kStale.
//
// Thread-safety: all methods are safe from many threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "catalog/catalog.h"

namespace sediment::kv {
class KvStore;
}

namespace sediment::catalog {

struct ImportLocation {
  std::string type;  // "common_prefix" or "object"
  std::string path;  // local:///abs/dir/, s3://bucket/prefix, or one object's address
  std::string destination;
};

struct ImportStatus {
  std::string branch;
  bool completed = false;
  int64_t update_time_us = 0;
  int64_t ingested_objects = 0;
  std::string metarange_id;
  std::string commit_id;
  std::string error;
};

class Importer {
 public:
  static constexpr int kMaxRunning = 4;
  static constexpr auto kStale = std::chrono::seconds(60);

  Importer(Catalog* catalog, std::shared_ptr<kv::KvStore> kv, std::shared_ptr<Clock> clock);
  ~Importer();  // Stop()
  // Stops the running jobs (their status says the server stopped) and waits for them.
  void Stop();

  // Checks the request (repository, branch and its protection, types,
  // sources), asks `authorize` about each location twice, as written
  // (`resolved` null) before its source is looked at, so a refused caller
  // learns nothing about it, then with the URI it resolves to (what will be
  // read); records the import and starts it; its id.
  // InvalidArgument naming what is wrong; Busy when kMaxRunning imports run
  // on this server.
  using Authorize = std::function<Status(const ImportLocation& location, const std::string* resolved)>;
  Result<std::string> Start(const std::string& repo, const std::string& branch, std::vector<ImportLocation> paths,
                            CommitParams commit, const Authorize& authorize);
  Result<ImportStatus> GetStatus(const std::string& repo, const std::string& id);
  // Conflict once completed (or failed); NotFound for an unknown id; again: OK.
  Status Cancel(const std::string& repo, const std::string& id);

 private:
  struct Job;
  // A job's life on its thread: walk the sources, record the count, commit,
  // record the end; a heartbeat thread runs beside it.
  void Run(std::shared_ptr<Job> job);
  // Every second until the job is done: the record's progress, and whether it says cancelled.
  void Heartbeat(Job& job);
  // The record's progress now; job.cancelled set if the record says cancelled.
  void RecordProgress(Job& job);
  void RecordError(Job& job, const std::string& message);
  // An entry per object of the job's sources, at its destination path.
  Status Walk(Job& job, std::map<std::string, Entry>* entries);
  // The entries, in one commit that replaces each prefix destination as a whole.
  Result<Commit> CommitWalked(Job& job, const std::map<std::string, Entry>& entries);
  // The record after the commit: completed with its ids, or the error (nothing for a cancel that won).
  void RecordEnd(Job& job, const Result<Commit>& commit, size_t objects);

  Catalog* catalog_;
  std::shared_ptr<kv::KvStore> kv_;
  std::shared_ptr<Clock> clock_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<std::pair<std::thread, std::shared_ptr<Job>>> threads_;  // GUARDED_BY(mu_)
  int running_ = 0;                                                    // GUARDED_BY(mu_)
};

}  // namespace sediment::catalog
