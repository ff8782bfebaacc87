// metric_cells: the histogram's bucket layout and quantiles, the counter.
#include "base/metric_cells.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace tarn {
namespace {

TEST(latency_histogram, buckets_are_ordered_and_cover_their_values) {
  for (uint64_t us :
       {0ull, 1ull, 2ull, 3ull, 5ull, 7ull, 8ull, 100ull, 1000ull, 12345ull, (1ull << 39) + 5}) {
    const int b = latency_histogram::bucket_of(us);
    EXPECT_LE(latency_histogram::lower_bound(b), static_cast<double>(us)) << us;
    if (b + 1 < latency_histogram::bucket_count) {
      EXPECT_GT(latency_histogram::lower_bound(b + 1), static_cast<double>(us)) << us;
    }
  }
  for (int b = 1; b < latency_histogram::bucket_count; ++b) {
    EXPECT_LT(latency_histogram::lower_bound(b - 1), latency_histogram::lower_bound(b)) << b;
  }
  EXPECT_EQ(latency_histogram::bucket_of(uint64_t{1} << 45), latency_histogram::bucket_count - 1);
}

TEST(latency_histogram, quantiles_within_a_bucket_of_the_truth) {
  latency_histogram h;
  for (uint64_t us = 1; us <= 10000; ++us) h.record_us(us);
  const auto s = h.read();
  EXPECT_EQ(s.count, 10000u);
  EXPECT_EQ(s.sum_us, 10000ull * 10001 / 2);
  for (double q : {0.5, 0.75, 0.95, 0.99, 0.999}) {
    const double truth = q * 10000;
    EXPECT_NEAR(s.quantile_us(q), truth, truth * 0.25) << q;
  }
  EXPECT_EQ(latency_histogram().read().quantile_us(0.99), 0);
}

TEST(metric_counter, concurrent_adds_all_count) {
  metric_counter c;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&c] {
      for (int i = 0; i < 100000; ++i) c.add(2);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 800000u);
}

}  // namespace
}  // namespace tarn
