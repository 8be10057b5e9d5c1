// Private to actions/: where hook runs execute. Threads of their own, never
// the HTTP workers', with two limits: `workers` runs at once on the server,
// `per_repository` at once for one repository. So slow or hostile hooks in
// one repository hold at most its own share, and the request workers that
// wait for pre-event runs are never more than `workers`.
//
//  - A pre-event run (RunAndWait) starts at once on a free slot, or is
//    refused at once (Busy, saying which limit): the operation it guards
//    answers 503 and changes nothing, and no request waits in a queue.
//  - A post-event run (Submit) waits in a bounded queue for a slot of its
//    repository; post runs use at most half the slots (at least one; the
//    pool has two at least), so pre-event runs always find room unless they
//    themselves fill it.
//
// Thread-safety: every method may be called from many threads.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"

namespace sediment::actions {

class HookPool {
 public:
  HookPool(size_t workers, size_t per_repository, size_t post_queue);
  ~HookPool();
  HookPool(const HookPool&) = delete;
  HookPool& operator=(const HookPool&) = delete;

  // Runs `fn` on a pool thread and returns when it is done (an exception it
  // throws is logged, and ends the run as if it had returned); Busy at once
  // when `repo` or the server has no free slot.
  Status RunAndWait(const std::string& repo, std::function<void()> fn);
  // Queues `fn`; Busy when the queue is full or the pool stopped.
  Status Submit(const std::string& repo, std::function<void()> fn);
  // Waits until nothing is queued or running.
  void WaitIdle();
  // Runs what is queued, takes nothing more, joins the threads.
  void Shutdown();

 private:
  struct Task {
    std::string repo;
    std::function<void()> fn;
    bool post = false;
    bool* done = nullptr;  // pre-event runs: set when fn returned
  };
  void Loop();
  // REQUIRES: mu_ held. The index of the first task that may start now, or -1.
  int RunnableLocked() const;
  size_t Running(const std::string& repo) const;  // REQUIRES: mu_ held

  const size_t workers_, per_repository_, post_queue_, post_slots_;
  std::mutex mu_;
  std::condition_variable cv_;             // tasks queued, slots freed, tasks done
  std::deque<Task> queue_;                 // GUARDED_BY(mu_)
  std::map<std::string, size_t> running_;  // GUARDED_BY(mu_): runs started or admitted, by repository
  size_t total_ = 0;                       // GUARDED_BY(mu_): all of them
  size_t post_running_ = 0;                // GUARDED_BY(mu_)
  bool stopping_ = false;                  // GUARDED_BY(mu_)
  std::vector<std::thread> threads_;
};

}  // namespace sediment::actions
