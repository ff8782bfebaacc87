// The request quota as the broker applies it to every API: the exempt APIs, the time-to-percentage
// arithmetic, and what a request recorded against `request_percentage` is throttled (Kafka's
// ClientRequestQuotaManager: the throttle bounded by one quota window).
#include "quota/request_quota.h"

#include <gtest/gtest.h>

#include "quota/client_quota_manager.h"
#include "quota/client_quotas.h"

namespace tarn::quota {
namespace {

entity_level named(const char* s) { return std::optional<std::string>(s); }

TEST(request_quota, cluster_actions_are_exempt_client_apis_are_not) {
  for (int16_t key : {4, 5, 6, 7, 27, 56}) EXPECT_TRUE(exempt_from_request_quota(key)) << key;
  // Produce, Fetch, ListOffsets, Metadata, ApiVersions, CreateTopics, DescribeQuorum,
  // UpdateFeatures, DescribeCluster, ConsumerGroupHeartbeat.
  for (int16_t key : {0, 1, 2, 3, 18, 19, 55, 57, 60, 68}) {
    EXPECT_FALSE(exempt_from_request_quota(key)) << key;
  }
}

TEST(request_quota, handling_time_is_a_percentage_of_one_thread_second) {
  EXPECT_DOUBLE_EQ(nanos_to_percentage(1'000'000'000), 100.0);
  EXPECT_DOUBLE_EQ(nanos_to_percentage(1'000'000), 0.1);
  EXPECT_DOUBLE_EQ(nanos_to_percentage(0), 0.0);
}

// 10 % of a thread, 11 windows of 1 s: a request of 50 ms is 5 (%·s), measured over at least
// 10 s, 0.5 % of a thread: within. Two more of 500 ms each: 105 / 10 s = 10.5 %: over by 5 %,
// which over the 10 s span is 500 ms of throttle.
TEST(request_quota, requests_within_the_percentage_pass_and_over_it_are_throttled) {
  client_quota_manager m(quota_type::request, {11, 1000});
  m.update_quota(std::nullopt, named("busy"), 10);
  const int64_t now = 1'700'000'000'000;
  EXPECT_EQ(m.record("ANONYMOUS", "busy", nanos_to_percentage(50'000'000), now), 0);
  EXPECT_EQ(m.record("ANONYMOUS", "busy", nanos_to_percentage(500'000'000), now), 0);
  EXPECT_EQ(m.record("ANONYMOUS", "busy", nanos_to_percentage(500'000'000), now), 500);
  // Another client has no quota: its requests are never throttled.
  EXPECT_EQ(m.record("ANONYMOUS", "idle", nanos_to_percentage(5'000'000'000), now), 0);
}

// A quota far below what one request takes: the throttle is bounded by one quota window
// (ClientRequestQuotaManager.throttleTime), whatever the overshoot; with quota.window.size 2 s,
// 2000 ms. This is what makes the broker's answer deterministic in the integration test.
TEST(request_quota, the_throttle_is_bounded_by_one_window) {
  client_quotas q({{11, 2000}, {11, 1000}});
  client_quota_manager& m = q.request();
  m.update_quota(std::nullopt, named("tiny"), 1e-9);
  const int64_t now = 1'700'000'000'000;
  EXPECT_EQ(m.record("ANONYMOUS", "tiny", nanos_to_percentage(20'000), now), 2000);
  EXPECT_EQ(m.record("ANONYMOUS", "tiny", nanos_to_percentage(1), now + 1500), 2000);
  // Produce bytes are not bounded so: the same overshoot is a far longer throttle.
  q.produce().update_quota(std::nullopt, named("tiny"), 1e-3);
  EXPECT_GT(q.produce().record("ANONYMOUS", "tiny", 1000, now), 1'000'000);
}

}  // namespace
}  // namespace tarn::quota
