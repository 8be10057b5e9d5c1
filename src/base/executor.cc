#include "base/executor.h"

#include <fmt/format.h>
#include <pthread.h>

namespace sediment {
namespace {

void NameThread(const std::string& name) {
  std::string short_name = name.substr(0, 15);  // the kernel's limit
  pthread_setname_np(pthread_self(), short_name.c_str());
}

}  // namespace

ThreadPool::ThreadPool(std::string name, int threads, size_t max_queued)
    : name_(std::move(name)), max_queued_(max_queued) {
  // Workers count as idle from the start, so a TrySubmit right after
  // construction finds them even before their threads run.
  idle_ = static_cast<size_t>(std::max(1, threads));
  for (int i = 0; i < std::max(1, threads); ++i) {
    workers_.emplace_back([this] {
      NameThread(name_);
      WorkerLoop();
    });
  }
}

ThreadPool::~ThreadPool() { Shutdown(); }

Status ThreadPool::TrySubmit(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return Busy(fmt::format("{}: shutting down", name_));
  // Room = idle workers not yet claimed by queued tasks, plus queue allowance.
  size_t capacity = idle_ + max_queued_;
  if (queue_.size() >= capacity) {
    return Busy(fmt::format("{}: all {} workers are busy", name_, workers_.size()));
  }
  queue_.push_back(std::move(task));
  work_cv_.notify_one();
  return Status::OK();
}

Status ThreadPool::Submit(std::function<void()> task) {
  std::unique_lock<std::mutex> lock(mu_);
  space_cv_.wait(lock, [&] { return stopping_ || queue_.size() < idle_ + max_queued_; });
  if (stopping_) return Busy(fmt::format("{}: shutting down", name_));
  queue_.push_back(std::move(task));
  work_cv_.notify_one();
  return Status::OK();
}

void ThreadPool::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and drained
    auto task = std::move(queue_.front());
    queue_.pop_front();
    --idle_;
    ++running_;
    lock.unlock();
    task();
    lock.lock();
    --running_;
    ++idle_;
    space_cv_.notify_all();
  }
}

void ThreadPool::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
  }
  work_cv_.notify_all();
  space_cv_.notify_all();
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
  workers_.clear();
}

size_t ThreadPool::Pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size() + running_;
}

void ThreadPool::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  space_cv_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
}

PeriodicTask::PeriodicTask(std::string name, std::chrono::milliseconds interval, std::function<void()> fn)
    : name_(std::move(name)), interval_(interval), fn_(std::move(fn)) {}

PeriodicTask::~PeriodicTask() { Stop(); }

void PeriodicTask::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] {
    NameThread(name_);
    Loop();
  });
}

void PeriodicTask::Trigger() {
  std::lock_guard<std::mutex> lock(mu_);
  triggered_ = true;
  cv_.notify_all();
}

void PeriodicTask::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void PeriodicTask::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, interval_, [&] { return stopping_ || triggered_; });
    if (stopping_) break;
    triggered_ = false;
    lock.unlock();
    fn_();
    lock.lock();
  }
}

}  // namespace sediment
