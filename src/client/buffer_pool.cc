// The producer's memory accounting with FIFO waiters.
#include "client/buffer_pool.h"

#include <algorithm>
#include <cassert>

namespace tarn::client {

bool buffer_pool::reserve(int64_t bytes, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  if (waiters_.empty() && free_bytes_ >= bytes) {
    free_bytes_ -= bytes;
    return true;
  }
  std::condition_variable turn;
  waiters_.push_back({&turn, bytes});
  has_waiters_.store(true, std::memory_order_relaxed);
  bool reserved = false;
  while (true) {
    if (waiters_.front().turn == &turn && free_bytes_ >= bytes) {
      free_bytes_ -= bytes;
      reserved = true;
      break;
    }
    if (turn.wait_until(lock, deadline) == std::cv_status::timeout) {
      if (waiters_.front().turn == &turn && free_bytes_ >= bytes) continue;  // freed just in time
      break;
    }
  }
  waiters_.erase(std::find_if(waiters_.begin(), waiters_.end(),
                              [&](const waiter& w) { return w.turn == &turn; }));
  has_waiters_.store(!waiters_.empty(), std::memory_order_relaxed);
  // The next waiter may be able to proceed with what is left (or now heads the queue): no
  // release may come to wake it, so it looks for itself.
  if (!waiters_.empty() && free_bytes_ >= waiters_.front().bytes) {
    waiters_.front().turn->notify_one();
  }
  return reserved;
}

void buffer_pool::release(int64_t bytes) {
  std::lock_guard lock(mutex_);
  free_bytes_ += bytes;
  assert(free_bytes_ <= total_bytes_ && "released more than was reserved");
  if (!waiters_.empty() && free_bytes_ >= wake_bytes(waiters_.front().bytes) &&
      free_bytes_ - bytes < wake_bytes(waiters_.front().bytes)) {
    ++wakeups_;
    waiters_.front().turn->notify_one();
  }
}

int64_t buffer_pool::available_bytes() const {
  std::lock_guard lock(mutex_);
  return free_bytes_;
}

int64_t buffer_pool::wakeups() const {
  std::lock_guard lock(mutex_);
  return wakeups_;
}

bool buffer_pool::has_waiters() const { return has_waiters_.load(std::memory_order_relaxed); }

}  // namespace tarn::client
