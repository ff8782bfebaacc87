// adaptive_mutex: mutual exclusion under contention, and try_lock while another thread holds it.
#include "client/adaptive_mutex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace tarn::client {
namespace {

TEST(adaptive_mutex, excludes_other_threads) {
  adaptive_mutex mutex;
  int64_t counter = 0;  // not atomic: only the lock keeps the increments whole
  int inside = 0;
  bool overlapped = false;
  constexpr int threads = 4, rounds = 100000;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (int i = 0; i < rounds; ++i) {
        std::lock_guard lock(mutex);
        if (++inside != 1) overlapped = true;
        ++counter;
        --inside;
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_FALSE(overlapped);
  EXPECT_EQ(counter, int64_t{threads} * rounds);
}

TEST(adaptive_mutex, try_lock_fails_while_another_thread_holds_it) {
  adaptive_mutex mutex;
  std::atomic<bool> held{false}, release{false};
  std::thread holder([&] {
    std::lock_guard lock(mutex);
    held = true;
    while (!release) std::this_thread::yield();
  });
  while (!held) std::this_thread::yield();
  EXPECT_FALSE(mutex.try_lock());
  release = true;
  holder.join();
  ASSERT_TRUE(mutex.try_lock());
  mutex.unlock();
}

}  // namespace
}  // namespace tarn::client
