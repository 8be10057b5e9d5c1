// RunOn: runs a function on a ThreadPool and returns its future. Private to
// src/table.
#pragma once

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

}  // namespace sediment::table
