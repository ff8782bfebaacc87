// The waiting room of long-polling fetches (Kafka's fetch purgatory): a Fetch whose min_bytes is
// not met registers the partitions it reads, and every append to one of them (storage's
// append_listener, so any append path triggers it) wakes it on its own event loop, where it
// re-reads and either answers or waits again until max_wait_ms.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "storage/checkpoint_file.h"

namespace tarn::broker {

struct request_context;

// One waiting fetch. Lives on its handler's loop; notify() may be called from any thread.
class fetch_waiter : public std::enable_shared_from_this<fetch_waiter> {
 public:
  explicit fetch_waiter(const asio::any_io_executor& executor) : timer_(executor) {}

  // Wakes the waiter on its own loop (safe from any thread).
  void notify();
  // On the waiter's loop: whether an append happened since the last call (and forget it).
  bool take_pending() {
    bool p = pending_;
    pending_ = false;
    return p;
  }
  asio::steady_timer& timer() { return timer_; }

  // The one wait of every waiting room (Fetch, ShareFetch, acks=all, a coordinator's write):
  // unless an append happened since the last check, sleeps until one does or `until`, the time
  // left out of the request's handling time (quota_excluded_wait). True when the caller should
  // check again; false when the handler was cancelled (its connection closed). The append that
  // woke it is forgotten here: the caller's next check sees it.
  asio::awaitable<bool> wait_for_append(request_context& request,
                                        std::chrono::steady_clock::time_point until);

 private:
  asio::steady_timer timer_;
  bool pending_ = false;  // touched only on the waiter's loop
};

class fetch_waiters {
 public:
  void add(const std::shared_ptr<fetch_waiter>& w,
           const std::vector<storage::topic_partition>& tps);
  void remove(const std::shared_ptr<fetch_waiter>& w,
              const std::vector<storage::topic_partition>& tps);
  // An append to `tp` happened: wake everyone waiting on it. Called from the appending thread.
  void notify(const storage::topic_partition& tp);
  size_t waiting() const;

 private:
  mutable std::mutex mu_;
  std::map<storage::topic_partition, std::set<std::shared_ptr<fetch_waiter>>> by_partition_;
};

// Registers on construction, unregisters on destruction (also when the handler is cancelled).
class fetch_waiter_registration {
 public:
  fetch_waiter_registration(fetch_waiters& room, std::shared_ptr<fetch_waiter> w,
                            std::vector<storage::topic_partition> tps)
      : room_(room), waiter_(std::move(w)), tps_(std::move(tps)) {
    room_.add(waiter_, tps_);
  }
  fetch_waiter_registration(const fetch_waiter_registration&) = delete;
  fetch_waiter_registration& operator=(const fetch_waiter_registration&) = delete;
  ~fetch_waiter_registration() { room_.remove(waiter_, tps_); }

 private:
  fetch_waiters& room_;
  std::shared_ptr<fetch_waiter> waiter_;
  std::vector<storage::topic_partition> tps_;
};

}  // namespace tarn::broker
