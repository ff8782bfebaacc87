// Lock-free metric cells that the modules update on their hot paths: a counter and a latency
// histogram, each a handful of relaxed atomics (no lock, no allocation, no clock read of their
// own). src/observe reads them at scrape time and exports them; see docs/http-api.md.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>

namespace tarn {

// A monotonically increasing count. Relaxed: a scrape may see increments of different cells out
// of order, which a rate over seconds cannot tell apart.
class metric_counter {
 public:
  void add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// Durations in microseconds in log-linear buckets: four per power of two (a bucket's width is at
// most a quarter of its lower bound, so a quantile read from it is within 25 % of the truth),
// from 1 us to 2^40 us (12.7 days); longer durations land in the last bucket.
class latency_histogram {
 public:
  static constexpr int sub_buckets = 4;
  static constexpr int octaves = 40;
  static constexpr int bucket_count = octaves * sub_buckets + 1;

  void record_us(uint64_t us) {
    buckets_[static_cast<size_t>(bucket_of(us))].fetch_add(1, std::memory_order_relaxed);
    sum_us_.fetch_add(us, std::memory_order_relaxed);
  }

  // A copy of the cells. The count is the sum of the buckets read, so the two always agree.
  struct snapshot {
    std::array<uint64_t, bucket_count> buckets{};
    uint64_t count = 0;
    uint64_t sum_us = 0;

    // The q-quantile (0 <= q <= 1) in microseconds, interpolated inside its bucket; 0 when empty.
    double quantile_us(double q) const {
      if (count == 0) return 0;
      const double rank = q * static_cast<double>(count);
      uint64_t seen = 0;
      for (int i = 0; i < bucket_count; ++i) {
        const uint64_t n = buckets[static_cast<size_t>(i)];
        if (n == 0) continue;
        if (static_cast<double>(seen + n) >= rank) {
          const double lo = lower_bound(i);
          const double hi = lower_bound(i + 1);
          const double within = (rank - static_cast<double>(seen)) / static_cast<double>(n);
          return lo + (hi - lo) * (within < 0 ? 0 : within);
        }
        seen += n;
      }
      return lower_bound(bucket_count);
    }
  };

  snapshot read() const {
    snapshot s;
    for (size_t i = 0; i < buckets_.size(); ++i) {
      s.buckets[i] = buckets_[i].load(std::memory_order_relaxed);
      s.count += s.buckets[i];
    }
    s.sum_us = sum_us_.load(std::memory_order_relaxed);
    return s;
  }

  // Bucket 0 holds 0 us; bucket 1 + 4k + j holds [2^k (1 + j/4), 2^k (1 + (j+1)/4)).
  static int bucket_of(uint64_t us) {
    if (us == 0) return 0;
    const int k = std::bit_width(us) - 1;
    if (k >= octaves) return bucket_count - 1;
    const int j =
        k >= 2 ? static_cast<int>((us >> (k - 2)) & 3) : static_cast<int>((us << (2 - k)) & 3);
    return 1 + k * sub_buckets + j;
  }
  // Bounds are fractional below 4 us (1, 1.25, 1.5, ...): a bucket's integer values then all
  // lie inside it.
  static double lower_bound(int bucket) {
    if (bucket <= 0) return 0;
    const int k = (bucket - 1) / sub_buckets;
    const int j = (bucket - 1) % sub_buckets;
    if (k >= octaves) return static_cast<double>(uint64_t{1} << octaves);
    return static_cast<double>(uint64_t{1} << k) * (1.0 + static_cast<double>(j) / sub_buckets);
  }

 private:
  std::array<std::atomic<uint64_t>, bucket_count> buckets_{};
  std::atomic<uint64_t> sum_us_{0};
};

}  // namespace tarn
