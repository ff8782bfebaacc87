// The long-poll waiting room: partition -> waiting fetches, woken across loops by a post.
#include "broker/fetch_waiters.h"

#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include "broker/handler.h"

namespace tarn::broker {

void fetch_waiter::notify() {
  asio::post(timer_.get_executor(), [self = shared_from_this()] {
    self->pending_ = true;
    self->timer_.cancel();
  });
}

asio::awaitable<bool> fetch_waiter::wait_for_append(request_context& request,
                                                    std::chrono::steady_clock::time_point until) {
  if (take_pending()) co_return true;
  timer_.expires_at(until);
  asio::error_code ec;  // operation_aborted is the wake-up itself
  {
    quota_excluded_wait waiting(request);
    co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  auto cs = co_await asio::this_coro::cancellation_state;
  if (cs.cancelled() != asio::cancellation_type::none) co_return false;
  take_pending();
  co_return true;
}

void fetch_waiters::add(const std::shared_ptr<fetch_waiter>& w,
                        const std::vector<storage::topic_partition>& tps) {
  std::lock_guard lock(mu_);
  for (const auto& tp : tps) by_partition_[tp].insert(w);
}

void fetch_waiters::remove(const std::shared_ptr<fetch_waiter>& w,
                           const std::vector<storage::topic_partition>& tps) {
  std::lock_guard lock(mu_);
  for (const auto& tp : tps) {
    auto it = by_partition_.find(tp);
    if (it == by_partition_.end()) continue;
    it->second.erase(w);
    if (it->second.empty()) by_partition_.erase(it);
  }
}

void fetch_waiters::notify(const storage::topic_partition& tp) {
  std::lock_guard lock(mu_);
  auto it = by_partition_.find(tp);
  if (it == by_partition_.end()) return;
  for (const auto& w : it->second) w->notify();
}

size_t fetch_waiters::waiting() const {
  std::lock_guard lock(mu_);
  std::set<fetch_waiter*> all;
  for (const auto& [tp, ws] : by_partition_) {
    for (const auto& w : ws) all.insert(w.get());
  }
  return all.size();
}

}  // namespace tarn::broker
