// The queued.max.request.bytes budget: see request_memory.h.
#include "broker/request_memory.h"

namespace tarn::broker {

request_memory::request_memory(int64_t limit_bytes) : limit_bytes_(limit_bytes) {}

bool request_memory::try_reserve(int64_t bytes, std::function<void()> on_available) {
  if (!bounded()) return true;
  std::lock_guard lock(mu_);
  if (used_bytes_ < limit_bytes_) {
    used_bytes_ += bytes;
    return true;
  }
  waiters_.push_back(std::move(on_available));
  return false;
}

void request_memory::release(int64_t bytes) {
  if (!bounded()) return;
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard lock(mu_);
    used_bytes_ -= bytes;
    if (used_bytes_ < limit_bytes_) wake.swap(waiters_);
  }
  // Every waiter retries; those that lose the race register again.
  for (auto& w : wake) w();
}

int64_t request_memory::used_bytes() const {
  std::lock_guard lock(mu_);
  return used_bytes_;
}

}  // namespace tarn::broker
