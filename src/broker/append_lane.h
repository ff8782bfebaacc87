// The append lane: a connection's Produce appends run on a thread of the broker's append pool
// (num.io.threads) while the connection's event loop reads the next request, so the socket copy
// of one request overlaps the page-cache copy of the one before (Kafka's network/handler split).
// One lane per connection, a strand: its appends run one at a time, in the order they were
// handed over, so per-partition order on a connection is kept; the partition locks are taken as
// on the loop (docs/broker.md, "Partitions and locks").
#pragma once

#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/awaitable.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <asio/strand.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>
#include <cstddef>
#include <exception>
#include <functional>
#include <utility>

namespace tarn::broker {

class append_lane {
 public:
  explicit append_lane(asio::thread_pool& pool) : strand_(asio::make_strand(pool)) {}
  append_lane(const append_lane&) = delete;
  append_lane& operator=(const append_lane&) = delete;

  // Whether a request of `frame_bytes` goes to the lane. Large ones do (their page-cache copy is
  // worth the two wake-ups of the handover); a small one does only while an earlier one is
  // still on the lane, so that a connection's appends never overtake each other. On the
  // connection's loop only.
  bool takes(size_t frame_bytes) const { return in_flight_ > 0 || frame_bytes >= min_frame_bytes; }

  // Runs `work` on the lane and resumes the caller on its own executor once it ran. On the
  // connection's loop only; `work` runs on a pool thread and must touch only what is safe there.
  asio::awaitable<void> run(std::function<void()> work) {
    ++in_flight_;
    std::exception_ptr failed;  // thrown on the lane, rethrown here as if it ran inline
    co_await asio::async_initiate<const asio::use_awaitable_t<>, void()>(
        [this, &work, &failed](auto handler) {
          // The loop must not run out of work (and stop) while the append is on the lane.
          auto home = asio::make_work_guard(asio::get_associated_executor(handler));
          asio::post(strand_, [&work, &failed, handler = std::move(handler),
                               home = std::move(home)]() mutable {
            try {
              work();
            } catch (...) {
              failed = std::current_exception();
            }
            auto executor = home.get_executor();
            asio::post(executor, std::move(handler));
            home.reset();
          });
        },
        asio::use_awaitable);
    --in_flight_;
    if (failed) std::rethrow_exception(failed);
  }

  // Frames from this size go to the lane even when it is idle.
  static constexpr size_t min_frame_bytes = 256 * 1024;

 private:
  asio::strand<asio::thread_pool::executor_type> strand_;
  int in_flight_ = 0;  // handed over and not yet resumed; on the loop only
};

}  // namespace tarn::broker
