// combining_mutex: work handed off while the lock is held runs on the holder's thread before it
// releases, exactly once, and none is left behind when holders and hand-offs race.
#include "coordinator/combining_mutex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace tarn::coordinator {
namespace {

TEST(combining_mutex, free_lock_runs_the_work_here_with_its_after_callbacks) {
  combining_mutex mu;
  std::vector<int> order;
  const bool here = mu.run_or_hand_off([&](std::vector<std::function<void()>>& after) {
    order.push_back(1);
    after.push_back([&] { order.push_back(3); });
    order.push_back(2);
  });
  EXPECT_TRUE(here);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(mu.try_lock());  // released
  mu.unlock();
}

TEST(combining_mutex, held_lock_makes_the_holder_run_the_work_before_it_releases) {
  combining_mutex mu;
  mu.lock();
  std::thread::id ran_on;
  bool after_ran = false;
  bool held_when_run = false;
  std::thread other([&] {
    const bool here = mu.run_or_hand_off([&](std::vector<std::function<void()>>& after) {
      ran_on = std::this_thread::get_id();
      held_when_run = true;
      after.push_back([&] { after_ran = true; });
    });
    EXPECT_FALSE(here);
  });
  other.join();  // the other thread did not block on the held lock
  EXPECT_FALSE(held_when_run);
  mu.unlock();  // runs the handed-off work here, then its after callback
  EXPECT_TRUE(held_when_run);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(after_ran);
  EXPECT_TRUE(mu.try_lock());
  mu.unlock();
}

// Four threads each run 20,000 increments of a plain counter, half through lock_guard and half
// handed off: every one runs once, all under the lock (the counter is not atomic; TSan checks).
TEST(combining_mutex, racing_holders_and_hand_offs_run_every_work_once) {
  combining_mutex mu;
  int64_t counter = 0;
  std::atomic<int64_t> after_calls{0};
  constexpr int threads = 4;
  constexpr int per_thread = 20000;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        if ((i + t) % 2 == 0) {
          std::lock_guard lock(mu);
          ++counter;
        } else {
          mu.run_or_hand_off([&](std::vector<std::function<void()>>& after) {
            ++counter;
            after.push_back([&] { after_calls.fetch_add(1, std::memory_order_relaxed); });
          });
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  std::lock_guard lock(mu);
  EXPECT_EQ(counter, int64_t{threads} * per_thread);
  EXPECT_EQ(after_calls.load(), int64_t{threads} * per_thread / 2);
}

}  // namespace
}  // namespace tarn::coordinator
