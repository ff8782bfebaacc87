// Kafka's Rate arithmetic: the measured span is at least samples-1 windows, old samples expire.
#include "quota/sampled_rate.h"

#include <gtest/gtest.h>

namespace tarn::quota {
namespace {

TEST(sampled_rate, a_first_burst_is_measured_over_ten_windows) {
  sampled_rate r;
  const rate_config c{11, 1000};
  r.record(c, 1000, 5000);
  EXPECT_EQ(r.window_size_ms(c, 5000), 10000);
  EXPECT_DOUBLE_EQ(r.measure(c, 5000), 100.0);
}

TEST(sampled_rate, samples_older_than_all_windows_are_forgotten) {
  sampled_rate r;
  const rate_config c{11, 1000};
  r.record(c, 1000, 0);
  r.record(c, 1000, 1000);
  // 1.5 s elapsed, one full window: 9 more are added to the span (10.5 s).
  EXPECT_DOUBLE_EQ(r.measure(c, 1500), 2000.0 / 10.5);
  EXPECT_DOUBLE_EQ(r.measure(c, 1000 + 11 * 1000), 0.0);
}

TEST(sampled_rate, a_steady_rate_is_measured_as_itself) {
  sampled_rate r;
  const rate_config c{11, 1000};
  int64_t now = 1'000'000;
  for (int i = 0; i < 100; ++i, now += 100) r.record(c, 50, now);  // 500 a second for 10 s
  EXPECT_NEAR(r.measure(c, now), 500.0, 500.0 * 0.06);
}

}  // namespace
}  // namespace tarn::quota
