#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "actions/hook_pool_internal.h"

namespace sediment::actions {

HookPool::HookPool(size_t workers, size_t per_repository, size_t post_queue)
    : workers_(std::max<size_t>(workers, 1)),
      per_repository_(std::max<size_t>(per_repository, 1)),
      post_queue_(post_queue),
      post_slots_(std::max<size_t>(workers_ / 2, 1)) {  // workers >= 2 ([actions] hook_workers), so < workers
  for (size_t i = 0; i < workers_; ++i) threads_.emplace_back([this] { Loop(); });
}

HookPool::~HookPool() { Shutdown(); }

size_t HookPool::Running(const std::string& repo) const {
  auto it = running_.find(repo);
  return it == running_.end() ? 0 : it->second;
}

Status HookPool::RunAndWait(const std::string& repo, std::function<void()> fn) {
  bool done = false;
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) return Busy("the server is stopping; hooks no longer run");
  if (Running(repo) >= per_repository_) {
    return Busy(fmt::format(
        "repository \"{}\" has {} hook runs in progress, as many as [actions] hook_runs_per_repository allows; "
        "try again",
        repo, Running(repo)));
  }
  if (total_ >= workers_) {
    return Busy(fmt::format(
        "the server has {} hook runs in progress, as many as [actions] hook_workers allows; try again", total_));
  }
  ++running_[repo];  // the slot is this run's from now on
  ++total_;
  queue_.push_front(Task{repo, std::move(fn), false, &done});
  cv_.notify_all();
  cv_.wait(lock, [&] { return done; });
  return Status::OK();
}

Status HookPool::Submit(const std::string& repo, std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return Busy("the server is stopping; hooks no longer run");
  size_t queued =
      static_cast<size_t>(std::count_if(queue_.begin(), queue_.end(), [](const Task& t) { return t.post; }));
  if (queued >= post_queue_) return Busy(fmt::format("{} post-event runs wait already", queued));
  queue_.push_back(Task{repo, std::move(fn), true, nullptr});
  cv_.notify_all();
  return Status::OK();
}

int HookPool::RunnableLocked() const {
  for (size_t i = 0; i < queue_.size(); ++i) {
    const Task& t = queue_[i];
    if (!t.post) return static_cast<int>(i);  // admitted with its slot
    if (total_ < workers_ && post_running_ < post_slots_ && Running(t.repo) < per_repository_) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

void HookPool::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    int i = -1;
    cv_.wait(lock, [&] { return (i = RunnableLocked()) >= 0 || (stopping_ && queue_.empty()); });
    if (i < 0) return;
    Task task = std::move(queue_[static_cast<size_t>(i)]);
    queue_.erase(queue_.begin() + i);
    if (task.post) {
      ++running_[task.repo];
      ++total_;
      ++post_running_;
    }
    lock.unlock();
    try {
      task.fn();
    } catch (const std::exception& e) {  // a run's failure (a thread not created, memory), never the server's
      spdlog::error("actions: a hook run of repository {} failed: {}", task.repo, e.what());
    }
    task.fn = nullptr;  // what it captured goes before the slot does
    lock.lock();
    if (--running_[task.repo] == 0) running_.erase(task.repo);
    --total_;
    if (task.post) --post_running_;
    if (task.done != nullptr) *task.done = true;
    cv_.notify_all();
  }
}

void HookPool::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return queue_.empty() && total_ == 0; });
}

void HookPool::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace sediment::actions
