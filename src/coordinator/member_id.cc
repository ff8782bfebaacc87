// Random member ids (member_id.h).
#include "coordinator/member_id.h"

#include <fmt/format.h>

#include <mutex>
#include <random>

namespace tarn::coordinator {

std::string random_uuid_string() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  uint64_t hi = 0;
  uint64_t lo = 0;
  {
    std::lock_guard lock(mu);
    hi = rng();
    lo = rng();
  }
  hi = (hi & ~0xf000ULL) | 0x4000ULL;              // version 4
  lo = (lo & ~(0xc0ULL << 56)) | (0x80ULL << 56);  // IETF variant
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xffff,
                     hi & 0xffff, lo >> 48, lo & 0xffffffffffffULL);
}

}  // namespace tarn::coordinator
