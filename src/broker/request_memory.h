// queued.max.request.bytes: a broker-wide budget for the bytes of requests read but not yet
// answered. Like Kafka's SimpleMemoryPool (non-strict), a request may take its bytes while any
// budget is left, so the total can overshoot by one request; once the budget is spent,
// connections stop reading from their sockets until answers give bytes back.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace tarn::broker {

class request_memory {
 public:
  // limit_bytes <= 0: unbounded (Kafka's default -1); nothing is counted.
  explicit request_memory(int64_t limit_bytes);
  request_memory(const request_memory&) = delete;
  request_memory& operator=(const request_memory&) = delete;

  bool bounded() const { return limit_bytes_ > 0; }

  // Takes `bytes` if any budget is left and returns true. Otherwise registers `on_available`
  // (called once, from the thread that releases, when budget returns) and returns false; the
  // caller then waits and tries again.
  bool try_reserve(int64_t bytes, std::function<void()> on_available);
  void release(int64_t bytes);

  // Bytes currently taken (for tests and logs).
  int64_t used_bytes() const;

 private:
  const int64_t limit_bytes_;
  mutable std::mutex mu_;
  int64_t used_bytes_ = 0;
  std::vector<std::function<void()>> waiters_;
};

// Bytes taken from a request_memory, given back on destruction.
class request_memory_lease {
 public:
  request_memory_lease() = default;
  request_memory_lease(request_memory* pool, int64_t bytes) : pool_(pool), bytes_(bytes) {}
  request_memory_lease(request_memory_lease&& o) noexcept : pool_(o.pool_), bytes_(o.bytes_) {
    o.pool_ = nullptr;
  }
  request_memory_lease& operator=(request_memory_lease&& o) noexcept {
    if (this != &o) {
      reset();
      pool_ = o.pool_;
      bytes_ = o.bytes_;
      o.pool_ = nullptr;
    }
    return *this;
  }
  request_memory_lease(const request_memory_lease&) = delete;
  request_memory_lease& operator=(const request_memory_lease&) = delete;
  ~request_memory_lease() { reset(); }

  void reset() {
    if (pool_ != nullptr) pool_->release(bytes_);
    pool_ = nullptr;
  }

 private:
  request_memory* pool_ = nullptr;
  int64_t bytes_ = 0;
};

}  // namespace tarn::broker
