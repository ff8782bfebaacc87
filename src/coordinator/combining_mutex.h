// A shard's lock that a network thread never has to sleep on for a hot request: the request's
// work is handed to whichever thread holds the lock, which runs it before it lets the lock go
// (flat combining). The two network loops then never convoy on one group's shard: the one that
// finds it busy goes back to its other connections instead of blocking them all in a futex wait.
#pragma once

#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace tarn::coordinator {

class combining_mutex {
 public:
  // Work run under the lock. It may add callbacks to `after`, which run once the lock is free
  // (run_in_shard's deferred callbacks: answers to waiting requests).
  using work = std::function<void(std::vector<std::function<void()>>& after)>;

  // BasicLockable, for std::lock_guard: lock() blocks as std::mutex does.
  void lock() { mu_.lock(); }
  bool try_lock() { return mu_.try_lock(); }
  // Runs the work other threads handed off while this thread held the lock, then releases it,
  // then runs their `after` callbacks. Only ever releases with no handed-off work waiting.
  void unlock() {
    std::vector<std::function<void()>> after;
    release(after);
    for (auto& f : after) f();
  }

  // Runs `w` under the lock: on this thread at once if the lock is free, else on the thread
  // that holds it, before that thread releases it. Returns true if it ran here (its `after`
  // callbacks have run too), false if it was handed off (it runs soon, on the holder's thread).
  bool run_or_hand_off(work w) {
    if (mu_.try_lock()) {
      std::vector<std::function<void()>> after;
      w(after);
      release(after);
      for (auto& f : after) f();
      return true;
    }
    {
      std::lock_guard q(queue_mu_);
      queue_.push_back(std::move(w));
    }
    // The holder may have released between our try_lock and the push: then nobody would run
    // it. Whoever holds the lock now runs it when it releases; if nobody does, we do.
    if (mu_.try_lock()) unlock();
    return false;
  }

 private:
  void release(std::vector<std::function<void()>>& after) {
    for (;;) {
      std::vector<work> batch;
      {
        std::lock_guard q(queue_mu_);
        if (queue_.empty()) {
          // Released while the queue is locked and empty: a work pushed after this is followed
          // by its pusher's try_lock (run_or_hand_off), so none is left behind.
          mu_.unlock();
          return;
        }
        batch.swap(queue_);
      }
      for (auto& w : batch) w(after);
    }
  }

  std::mutex mu_;
  std::mutex queue_mu_;
  std::vector<work> queue_;  // guarded by queue_mu_
};

}  // namespace tarn::coordinator
