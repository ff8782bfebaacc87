// An answer a handler waits for from another thread (a coordinator completing a rebalance, the
// transaction verifier): the handler's coroutine suspends on a timer of its own loop; the
// callback (any thread, at most once) posts the value to that loop and cancels the timer, as
// fetch_waiters.h wakes a long-polling Fetch. The callback holds the state by shared_ptr, so a
// connection closed while the handler waits leaves nothing dangling: the answer then lands in a
// state nobody reads and goes with it.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "broker/handler.h"

namespace tarn::broker {

template <class T>
class pending_reply : public std::enable_shared_from_this<pending_reply<T>> {
 public:
  explicit pending_reply(const asio::any_io_executor& executor)
      : timer_(executor, asio::steady_timer::time_point::max()) {}

  // The answering side's callback: safe from any thread.
  std::function<void(T)> callback() {
    return [self = this->shared_from_this()](T value) {
      asio::post(self->timer_.get_executor(), [self, value = std::move(value)]() mutable {
        self->value_.emplace(std::move(value));
        self->timer_.cancel();
      });
    };
  }

  // On the handler's loop: true once the answer is there, false if the handler was cancelled
  // (its connection closed) first. The time waited is not the request's handling time
  // (quota_excluded_wait).
  asio::awaitable<bool> wait(request_context& request) {
    quota_excluded_wait waiting(request);
    while (!value_) {
      asio::error_code ec;  // operation_aborted is the wake-up itself
      co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      auto cs = co_await asio::this_coro::cancellation_state;
      if (cs.cancelled() != asio::cancellation_type::none) co_return false;
    }
    co_return true;
  }

  const T& value() const { return *value_; }
  T& value() { return *value_; }

 private:
  asio::steady_timer timer_;
  std::optional<T> value_;  // touched only on the loop
};

}  // namespace tarn::broker
