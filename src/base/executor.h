// Executors for background work.
//
// ThreadPool: a fixed number of workers and a bounded queue. TrySubmit never
// blocks: it returns Busy when every worker is taken and the queue is full, so
// an HTTP handler can answer 503 instead of waiting.
//
// PeriodicTask: runs a function every `interval` on its own thread until
// stopped; Trigger() runs it early. Stop() wakes and joins the thread.
//
// Thread-safety: all methods are safe from any thread. Shutdown()/Stop() must
// not be called from inside a task of the same executor.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"

namespace sediment {

class ThreadPool {
 public:
  // max_queued: tasks waiting beyond the busy workers; 0 = only idle workers accept.
  ThreadPool(std::string name, int threads, size_t max_queued);
  ~ThreadPool();  // Shutdown()
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  Status TrySubmit(std::function<void()> task);
  // Blocks while the queue is full. Fails only after Shutdown.
  Status Submit(std::function<void()> task);
  // Stops accepting work, finishes queued tasks, joins workers.
  void Shutdown();
  // Tasks queued or running.
  size_t Pending() const;
  // Blocks until nothing is queued or running.
  void WaitIdle();

 private:
  void WorkerLoop();

  const std::string name_;
  const size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;          // workers wait for tasks
  std::condition_variable space_cv_;         // Submit waits for room; WaitIdle for idle
  std::deque<std::function<void()>> queue_;  // GUARDED_BY(mu_)
  size_t idle_ = 0;                          // GUARDED_BY(mu_)
  size_t running_ = 0;                       // GUARDED_BY(mu_)
  bool stopping_ = false;                    // GUARDED_BY(mu_)
  std::vector<std::thread> workers_;
};

class PeriodicTask {
 public:
  PeriodicTask(std::string name, std::chrono::milliseconds interval, std::function<void()> fn);
  ~PeriodicTask();  // Stop()
  PeriodicTask(const PeriodicTask&) = delete;
  PeriodicTask& operator=(const PeriodicTask&) = delete;

  void Start();
  void Trigger();
  void Stop();

 private:
  void Loop();

  const std::string name_;
  const std::chrono::milliseconds interval_;
  const std::function<void()> fn_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool triggered_ = false;  // GUARDED_BY(mu_)
  bool stopping_ = false;   // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace sediment
