// buffer.memory accounting. A send() that opens a batch reserves the batch's memory (batch.size,
// or the record's size if larger: what record's batch builder allocates, and what Java's default
// buffer.memory.allocation.strategy=full reserves) and blocks while the pool is exhausted, up to
// max.block.ms; a completed batch gives its memory back. Waiters are served first come, first
// served (as Java's BufferPool), so a large record is not starved by a stream of small ones.
// A blocked send() is woken only once a useful amount is free: its bytes and four batches' worth
// (4 x batch.size, at most an eighth of buffer.memory). Woken per released batch, as Java's pool
// does, a producer that outruns the network wakes its thread once per completed batch and appends
// one batch's records per wakeup; woken per eighth (4 MiB by default), it appends in bursts of
// hundreds of batches while the sender and the broker share the other core, and at 1 KiB records
// the machine idled a quarter of the time (docs/producer.md, "Memory").
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>

namespace tarn::client {

class buffer_pool {
 public:
  // `batch_bytes` is batch.size: it sets the wake threshold above.
  buffer_pool(int64_t total_bytes, int64_t batch_bytes)
      : total_bytes_(total_bytes),
        wake_floor_bytes_(std::min(4 * batch_bytes, total_bytes / 8)),
        free_bytes_(total_bytes) {}

  // Reserves `bytes` (at most total_bytes()), waiting until `deadline` for them to be freed.
  // False when the deadline passed first (nothing is reserved then).
  // Thread: any. Locks: mutex_.
  bool reserve(int64_t bytes, std::chrono::steady_clock::time_point deadline);

  // Gives back bytes reserved earlier. Thread: any. Locks: mutex_.
  void release(int64_t bytes);

  int64_t total_bytes() const { return total_bytes_; }
  int64_t available_bytes() const;
  // True while some send() is waiting for memory: the accumulator then sends every batch it
  // can, lingering or not, to free memory sooner (Java's "exhausted").
  bool has_waiters() const;
  // How many times release() woke a waiting reserve() (for tests and statistics).
  int64_t wakeups() const;

 private:
  const int64_t total_bytes_;
  const int64_t wake_floor_bytes_;
  mutable std::mutex mutex_;
  struct waiter {
    std::condition_variable* turn;
    int64_t bytes;
  };
  // What must be free before release() wakes a waiter that needs `bytes`.
  int64_t wake_bytes(int64_t bytes) const { return std::max(bytes, wake_floor_bytes_); }

  int64_t free_bytes_;
  std::deque<waiter> waiters_;  // FIFO; only the front may take bytes
  // !waiters_.empty(), for has_waiters() without the mutex (the sender asks every pass; each
  // time it takes the mutex an appending thread may wait on it).
  std::atomic<bool> has_waiters_{false};
  int64_t wakeups_ = 0;
};

}  // namespace tarn::client
