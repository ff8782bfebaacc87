// Topic creation off the event loop: the control worker runs work on its own thread while the
// loop that asked goes on (and resumes there with the result or the exception), one piece of
// work at a time; and the topic manager's creation marks, which keep a topic out of Metadata
// until it is ready.
#include "broker/control_worker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "broker/topic_manager.h"
#include "storage/test_batches.h"

namespace tarn::broker {
namespace {

using namespace std::chrono_literals;

TEST(control_worker, runs_work_on_its_thread_and_resumes_the_caller_on_its_loop) {
  asio::io_context loop{1};
  control_worker worker;
  const std::thread::id loop_thread = std::this_thread::get_id();  // loop.run() below
  std::thread::id worked_on, resumed_on;
  int answer = 0;
  asio::co_spawn(
      loop,
      [&]() -> asio::awaitable<void> {
        answer = co_await worker.run([&] {
          worked_on = std::this_thread::get_id();
          return 42;
        });
        resumed_on = std::this_thread::get_id();
      },
      asio::detached);
  loop.run();  // returns once the coroutine is done: the work kept the loop running
  EXPECT_EQ(answer, 42);
  EXPECT_NE(worked_on, loop_thread);
  EXPECT_EQ(resumed_on, loop_thread);
}

TEST(control_worker, the_loop_serves_other_work_while_the_worker_blocks) {
  // The work waits for something only the loop does after it was handed over: it comes only if
  // the loop is free meanwhile (on the loop itself it would wait its 10 s out, and fail).
  asio::io_context loop{1};
  control_worker worker;
  std::promise<void> served;
  std::future<void> served_future = served.get_future();
  bool saw_it = false;
  asio::co_spawn(
      loop,
      [&]() -> asio::awaitable<void> {
        saw_it = co_await worker.run(
            [&] { return served_future.wait_for(10s) == std::future_status::ready; });
      },
      asio::detached);
  asio::post(loop, [&] { served.set_value(); });
  loop.run();
  EXPECT_TRUE(saw_it);
}

TEST(control_worker, work_runs_one_at_a_time_in_the_order_handed_over) {
  asio::io_context loop{1};
  control_worker worker;
  std::vector<int> order;  // written by the worker only, read after it
  int running = 0, most = 0;
  for (int i = 0; i < 8; ++i) {
    asio::co_spawn(
        loop,
        [&, i]() -> asio::awaitable<void> {
          co_await worker.run([&, i] {
            most = std::max(most, ++running);
            std::this_thread::sleep_for(1ms);
            order.push_back(i);
            --running;
          });
        },
        asio::detached);
  }
  loop.run();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(most, 1);
}

TEST(control_worker, an_exception_of_the_work_reaches_the_caller) {
  asio::io_context loop{1};
  control_worker worker;
  std::string caught;
  asio::co_spawn(
      loop,
      [&]() -> asio::awaitable<void> {
        try {
          co_await worker.run([]() -> int { throw std::runtime_error("no room"); });
        } catch (const std::runtime_error& e) {
          caught = e.what();
        }
      },
      asio::detached);
  loop.run();
  EXPECT_EQ(caught, "no room");
}

TEST(creation_mark, a_topic_is_being_created_while_its_mark_lives) {
  storage::testing::temp_dir dir;
  auto config = make_broker_config({}, {});
  ASSERT_TRUE(config.has_value()) << config.error();
  auto topics = topic_manager::open(*config, dir.path());
  ASSERT_TRUE(topics.has_value()) << topics.error();
  topic_manager& t = **topics;
  EXPECT_FALSE(t.being_created("orders"));
  {
    topic_manager::creation_mark mark(t, "orders");
    EXPECT_TRUE(t.being_created("orders"));
    EXPECT_FALSE(t.being_created("orders2"));
  }
  EXPECT_FALSE(t.being_created("orders"));
}

}  // namespace
}  // namespace tarn::broker
