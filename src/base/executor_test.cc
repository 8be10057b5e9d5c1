#include "base/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "base/test_util.h"

namespace sediment {
namespace {

TEST(ThreadPoolTest, RunsEverySubmittedTask) {
  ThreadPool pool("test", 2, 100);
  std::atomic<int> n{0};
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(pool.Submit([&] { n++; }).ok());
  pool.WaitIdle();
  EXPECT_EQ(n.load(), 50);
}

TEST(ThreadPoolTest, TrySubmitIsBusyWhenFull) {
  ThreadPool pool("test", 2, 0);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> started{0};
  auto blocker = [&] {
    started++;
    gate.wait();
  };
  // Wait for both workers to be idle and counted.
  while (true) {
    Status st = pool.TrySubmit(blocker);
    if (st.ok()) break;
  }
  while (!pool.TrySubmit(blocker).ok()) {
  }
  while (started.load() < 2) std::this_thread::yield();
  Status st = pool.TrySubmit(blocker);
  EXPECT_TRUE(IsBusy(st)) << st.ToString();
  release.set_value();
  pool.WaitIdle();
  EXPECT_TRUE(pool.TrySubmit([] {}).ok());
  pool.Shutdown();
  EXPECT_TRUE(IsBusy(pool.TrySubmit([] {})));
}

TEST(PeriodicTaskTest, TriggerRunsEarlyAndStopJoins) {
  std::atomic<int> runs{0};
  PeriodicTask task("tick", std::chrono::hours(1), [&] { runs++; });
  task.Start();
  task.Trigger();
  EXPECT_TRUE(testing::Eventually([&] { return runs.load() > 0; }));
  EXPECT_EQ(runs.load(), 1);
  task.Stop();  // must not wait an hour
}

}  // namespace
}  // namespace sediment
