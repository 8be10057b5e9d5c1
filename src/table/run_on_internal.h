// RunOn: runs a function on a ThreadPool and returns its future; and
// JoinTasksOnExit, a scope guard that waits for such futures. Private to
// src/table.
#pragma once

#include <deque>
#include <functional>
#include <future>
#include <memory>

#include "base/executor.h"

namespace sediment::table {

template <typename T>
std::future<T> RunOn(ThreadPool* pool, std::function<T()> fn) {
  auto task = std::make_shared<std::packaged_task<T()>>(std::move(fn));
  std::future<T> f = task->get_future();
  // Submit fails only once the pool shuts down: then run it here.
  if (!pool->Submit([task] { (*task)(); }).ok()) (*task)();
  return f;
}

// Waits, when it goes out of scope, for every task whose future is still in
// `tasks`: a future of RunOn does not wait when destroyed, so tasks that read
// their caller's data must be waited for on every way out of it, early
// returns included. Declare it after everything the tasks use (it is then
// destroyed, and waits, before any of that).
template <typename T>
class JoinTasksOnExit {
 public:
  explicit JoinTasksOnExit(std::deque<std::future<T>>& tasks) : tasks_(tasks) {}
  ~JoinTasksOnExit() {
    for (auto& f : tasks_) {
      if (f.valid()) f.wait();
    }
  }
  JoinTasksOnExit(const JoinTasksOnExit&) = delete;
  JoinTasksOnExit& operator=(const JoinTasksOnExit&) = delete;

 private:
  std::deque<std::future<T>>& tasks_;
};

}  // namespace sediment::table
