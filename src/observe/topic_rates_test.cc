// topic_rates: rates over a window of samples built by hand (no server, no clock waits).
#include "observe/topic_rates.h"

#include <gtest/gtest.h>

namespace tarn::observe {
namespace {

using namespace std::chrono_literals;

topic_rates::sample at(std::chrono::steady_clock::time_point t0, std::chrono::milliseconds after,
                       uint64_t messages, uint64_t bytes_in, uint64_t bytes_out) {
  topic_rates::sample s;
  s.at = t0 + after;
  s.wall_ms = 1'000'000 + after.count();
  s.broker = {messages, bytes_in, bytes_out};
  s.topics["a"] = {messages, bytes_in, bytes_out};
  s.requests["Produce"] = messages / 10;
  s.requests["Fetch"] = messages / 50;
  return s;
}

TEST(topic_rates, nothing_before_two_samples) {
  topic_rates r;
  EXPECT_TRUE(r.topic_rates_over(10s).empty());
  EXPECT_EQ(r.broker_rate_over(10s).messages_in_per_sec, 0);
  r.add(at(std::chrono::steady_clock::now(), 0ms, 5, 5, 5));
  EXPECT_TRUE(r.topic_rates_over(10s).empty());
  EXPECT_TRUE(r.broker_series().empty());
}

TEST(topic_rates, rate_over_the_window_and_series) {
  const auto t0 = std::chrono::steady_clock::now();
  topic_rates r;
  // 100 messages a second for 20 s, then 300 a second for 10 s.
  uint64_t m = 0;
  for (int s = 0; s <= 30; ++s) {
    r.add(at(t0, std::chrono::seconds(s), m, m * 10, m * 20));
    m += s < 20 ? 100 : 300;
  }
  auto last10 = r.topic_rates_over(10s);
  ASSERT_TRUE(last10.contains("a"));
  EXPECT_DOUBLE_EQ(last10["a"].messages_in_per_sec, 300);
  EXPECT_DOUBLE_EQ(last10["a"].bytes_in_per_sec, 3000);
  EXPECT_DOUBLE_EQ(last10["a"].bytes_out_per_sec, 6000);
  // 30 s: 20 s at 100 and 10 at 300.
  EXPECT_NEAR(r.broker_rate_over(30s).messages_in_per_sec, (2000.0 + 3000.0) / 30, 1e-9);
  auto requests = r.request_rates_over(10s);
  EXPECT_DOUBLE_EQ(requests["Produce"], 30);
  EXPECT_DOUBLE_EQ(requests["Fetch"], 6);
  const auto series = r.broker_series();
  ASSERT_EQ(series.size(), 30u);
  EXPECT_DOUBLE_EQ(series.back().requests_per_sec, 36);
  EXPECT_DOUBLE_EQ(series.back().requests_per_sec_by_api.at("Produce"), 30);
  EXPECT_DOUBLE_EQ(series.back().requests_per_sec_by_api.at("Fetch"), 6);
  EXPECT_DOUBLE_EQ(series.front().requests_per_sec_by_api.at("Produce"), 10);
  EXPECT_EQ(series.front().requests_per_sec_by_api.size(), 2u);
  EXPECT_DOUBLE_EQ(series.front().broker.messages_in_per_sec, 100);
  EXPECT_DOUBLE_EQ(series.back().broker.messages_in_per_sec, 300);
  EXPECT_EQ(series.back().at_ms, 1'030'000);
}

TEST(topic_rates, ring_is_bounded_and_a_counter_going_back_reads_zero) {
  const auto t0 = std::chrono::steady_clock::now();
  topic_rates r;
  for (int s = 0; s < 500; ++s) r.add(at(t0, std::chrono::seconds(s), 10u * s, 0, 0));
  EXPECT_EQ(r.broker_series().size(), topic_rates::max_samples - 1);
  // A topic deleted and created again starts its cells at zero.
  r.add(at(t0, 500s, 0, 0, 0));
  EXPECT_EQ(r.broker_series().back().broker.messages_in_per_sec, 0);
  // An API that answered nothing in the interval (or whose count went back) is left out.
  EXPECT_TRUE(r.broker_series().back().requests_per_sec_by_api.empty());
}

}  // namespace
}  // namespace tarn::observe
