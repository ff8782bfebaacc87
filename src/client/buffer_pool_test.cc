// buffer_pool: FIFO waiters, deadlines, and the wake threshold (a blocked reserve() is woken once
// its bytes and four batches' worth, at most an eighth of the pool, are free, not by every
// release).
#include "client/buffer_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace tarn::client {
namespace {

using namespace std::chrono_literals;

auto far_deadline() { return std::chrono::steady_clock::now() + 30s; }

// Waits (bounded) until `pool` has a waiter.
void wait_for_waiter(const buffer_pool& pool) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!pool.has_waiters() && std::chrono::steady_clock::now() < until) {
    std::this_thread::yield();
  }
  ASSERT_TRUE(pool.has_waiters());
}

TEST(buffer_pool, reserves_and_releases_without_waiting) {
  buffer_pool pool(1000, 100);
  ASSERT_TRUE(pool.reserve(600, far_deadline()));
  EXPECT_EQ(pool.available_bytes(), 400);
  pool.release(600);
  EXPECT_EQ(pool.available_bytes(), 1000);
  EXPECT_EQ(pool.wakeups(), 0);
}

TEST(buffer_pool, a_waiter_is_woken_once_four_batches_are_free_not_per_release) {
  buffer_pool pool(64000, 1000);  // four batches: 4000 bytes, under the eighth (8000)
  for (int i = 0; i < 640; ++i) ASSERT_TRUE(pool.reserve(100, far_deadline()));
  EXPECT_EQ(pool.available_bytes(), 0);
  std::atomic<bool> got{false};
  std::thread blocked([&] { got = pool.reserve(100, far_deadline()); });
  wait_for_waiter(pool);
  // 39 releases free 3900 bytes: enough for the waiter's 100, but short of four batches.
  for (int i = 0; i < 39; ++i) pool.release(100);
  EXPECT_EQ(pool.wakeups(), 0);
  EXPECT_TRUE(pool.has_waiters());
  pool.release(100);  // 4000 free: one wakeup
  blocked.join();
  EXPECT_TRUE(got);
  EXPECT_EQ(pool.wakeups(), 1);
  EXPECT_EQ(pool.available_bytes(), 3900);
}

TEST(buffer_pool, the_threshold_is_at_most_an_eighth_of_the_pool) {
  buffer_pool pool(8000, 1000);  // four batches (4000) would be half the pool: an eighth, 1000
  for (int i = 0; i < 80; ++i) ASSERT_TRUE(pool.reserve(100, far_deadline()));
  std::atomic<bool> got{false};
  std::thread blocked([&] { got = pool.reserve(100, far_deadline()); });
  wait_for_waiter(pool);
  for (int i = 0; i < 9; ++i) pool.release(100);
  EXPECT_EQ(pool.wakeups(), 0);
  pool.release(100);  // 1000 free: one wakeup
  blocked.join();
  EXPECT_TRUE(got);
  EXPECT_EQ(pool.wakeups(), 1);
  EXPECT_EQ(pool.available_bytes(), 900);
}

TEST(buffer_pool, a_waiter_needing_more_than_the_threshold_is_woken_when_its_bytes_are_free) {
  buffer_pool pool(8000, 1000);
  ASSERT_TRUE(pool.reserve(8000, far_deadline()));
  std::atomic<bool> got{false};
  std::thread blocked([&] { got = pool.reserve(3000, far_deadline()); });
  wait_for_waiter(pool);
  pool.release(2000);
  EXPECT_EQ(pool.wakeups(), 0);
  pool.release(1000);
  blocked.join();
  EXPECT_TRUE(got);
  EXPECT_EQ(pool.available_bytes(), 0);
}

TEST(buffer_pool, the_deadline_ends_the_wait_and_reserves_nothing) {
  buffer_pool pool(800, 100);
  ASSERT_TRUE(pool.reserve(800, far_deadline()));
  pool.release(50);  // free, but less than asked
  EXPECT_FALSE(pool.reserve(100, std::chrono::steady_clock::now() + 20ms));
  EXPECT_EQ(pool.available_bytes(), 50);
  EXPECT_FALSE(pool.has_waiters());
}

TEST(buffer_pool, waiters_are_served_first_come_first_served) {
  buffer_pool pool(800, 100);
  ASSERT_TRUE(pool.reserve(800, far_deadline()));
  std::atomic<int> served{0};
  std::thread big([&] {
    ASSERT_TRUE(pool.reserve(500, far_deadline()));
    ++served;
  });
  wait_for_waiter(pool);
  std::thread small([&] {
    ASSERT_TRUE(pool.reserve(100, far_deadline()));
    ++served;
  });
  // The small one queues behind the big one; 300 free would fit it, but not the big one.
  std::this_thread::sleep_for(20ms);
  pool.release(300);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(served.load(), 0) << "the small request must not overtake the big one";
  pool.release(300);  // 600 free: the big one takes 500, then hands the 100 on
  big.join();
  small.join();
  EXPECT_EQ(served.load(), 2);
  EXPECT_EQ(pool.available_bytes(), 0);
}

}  // namespace
}  // namespace tarn::client
