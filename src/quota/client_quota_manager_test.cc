// The quota arithmetic and lookup against the vectors of Kafka 4.4's own ClientQuotaManagerTest
// (testQuotaViolation, testQuotaConfigPrecedence), plus the token bucket of controller mutations.
#include "quota/client_quota_manager.h"

#include <gtest/gtest.h>

#include <limits>

namespace tarn::quota {
namespace {

const entity_level default_level = std::optional<std::string>();
entity_level named(const char* s) { return std::optional<std::string>(s); }

TEST(client_quota_manager, no_quota_means_no_throttle_and_no_sensor) {
  client_quota_manager m(quota_type::produce, {});
  EXPECT_FALSE(m.enabled());
  EXPECT_EQ(m.record("ANONYMOUS", "c", 1e12, 1000), 0);
  EXPECT_EQ(m.sensor_count(), 0u);
  EXPECT_EQ(m.max_value_in_window("ANONYMOUS", "c"), std::numeric_limits<double>::max());
}

// Kafka's testQuotaViolation: 500 B/s on the default client-id, 11 windows of 1 s.
TEST(client_quota_manager, a_spike_is_throttled_as_kafka_throttles_it) {
  client_quota_manager m(quota_type::produce, {11, 1000});
  m.update_quota(std::nullopt, default_level, 500);
  int64_t now = 1'700'000'000'000;
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(m.record("ANONYMOUS", "unknown", 400, now), 0) << i;
    now += 1000;
  }
  // 400*10 + 2300 = 6300 bytes over 10.5 s = 600 B/s; (600-500)/500 * 10.5 s = 2100 ms.
  now += 500;
  const int32_t throttle = m.record("ANONYMOUS", "unknown", 2300, now);
  EXPECT_EQ(throttle, 2100);
  now += throttle;
  for (int i = 0; i < 10; ++i) {
    m.record("ANONYMOUS", "unknown", 400, now);
    now += 1000;
  }
  EXPECT_EQ(m.record("ANONYMOUS", "unknown", 0, now), 0) << "the burst has rolled over";
}

// Kafka's checkQuota: the bound, the window maximum, then a record of value*11.
void check_quota(client_quota_manager& m, const char* user, const char* client, double bound,
                 double value, bool expect_throttle, int64_t now) {
  SCOPED_TRACE(testing::Message() << user << "/" << client);
  auto q = m.quota_for(user, client);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(*q, bound);
  EXPECT_NEAR(m.max_value_in_window(user, client), 10 * bound, 0.01);
  const int32_t t = m.record(user, client, value * 11, now);
  if (expect_throttle) {
    EXPECT_GT(t, 0);
  } else {
    EXPECT_EQ(t, 0);
  }
}

// Kafka's testQuotaConfigPrecedence, every step.
TEST(client_quota_manager, the_eight_levels_take_precedence_as_in_kafka) {
  client_quota_manager m(quota_type::produce, {11, 1000});
  const int64_t now = 1'700'000'000'000;
  m.update_quota(default_level, std::nullopt, 1000);
  m.update_quota(std::nullopt, default_level, 2000);
  m.update_quota(default_level, default_level, 3000);
  m.update_quota(named("userA"), std::nullopt, 4000);
  m.update_quota(named("userA"), named("client1"), 5000);
  m.update_quota(named("userB"), std::nullopt, 6000);
  m.update_quota(named("userB"), named("client1"), 7000);
  m.update_quota(named("userB"), default_level, 8000);
  m.update_quota(named("userC"), std::nullopt, 10000);
  m.update_quota(std::nullopt, named("client1"), 9000);

  check_quota(m, "userA", "client1", 5000, 4500, false, now);
  check_quota(m, "userA", "client2", 4000, 4500, true, now);
  check_quota(m, "userA", "client3", 4000, 0, true, now);  // <user> shared by its clients
  check_quota(m, "userA", "client1", 5000, 0, false, now);

  check_quota(m, "userB", "client1", 7000, 8000, true, now);
  check_quota(m, "userB", "client2", 8000, 7000, false, now);
  check_quota(m, "userB", "client3", 8000, 7000, false, now);

  check_quota(m, "userD", "client1", 3000, 3500, true, now);
  check_quota(m, "userD", "client2", 3000, 2500, false, now);
  check_quota(m, "userE", "client1", 3000, 2500, false, now);

  m.update_quota(default_level, default_level, std::nullopt);
  check_quota(m, "userD", "client1", 1000, 0, false, now);  // tags changed: a new sensor
  check_quota(m, "userE", "client4", 1000, 1500, true, now);
  check_quota(m, "userF", "client4", 1000, 800, false, now);
  check_quota(m, "userF", "client5", 1000, 800, true, now);

  m.update_quota(default_level, std::nullopt, std::nullopt);
  check_quota(m, "userF", "client4", 2000, 0, false, now);
  check_quota(m, "userF", "client5", 2000, 0, false, now);
  check_quota(m, "userF", "client5", 2000, 2500, true, now);
  check_quota(m, "userG", "client5", 2000, 0, true, now);

  m.update_quota(named("userA"), std::nullopt, 8000);
  m.update_quota(named("userA"), named("client1"), 10000);
  check_quota(m, "userA", "client2", 8000, 0, false, now);
  check_quota(m, "userA", "client2", 8000, 4500, true, now);
  check_quota(m, "userA", "client1", 10000, 0, false, now);
  check_quota(m, "userA", "client1", 10000, 6000, true, now);
  m.update_quota(named("userA"), named("client1"), std::nullopt);
  check_quota(m, "userA", "client6", 8000, 0, true, now);
  m.update_quota(named("userA"), named("client6"), 11000);
  check_quota(m, "userA", "client6", 11000, 8500, false, now);
  m.update_quota(named("userA"), default_level, 12000);
  m.update_quota(named("userA"), named("client6"), std::nullopt);
  check_quota(m, "userA", "client6", 12000, 4000, true, now);
}

TEST(client_quota_manager, the_request_quota_throttles_at_most_one_window) {
  client_quota_manager m(quota_type::request, {11, 1000});
  m.update_quota(std::nullopt, named("c"), 10);  // 10 % of a thread
  EXPECT_EQ(m.record("ANONYMOUS", "c", 1e6, 1000), 1000);
}

TEST(client_quota_manager, controller_mutations_strict_refuses_once_in_debt) {
  // 2 partitions a second, a burst of 11 * 2 = 22; the bucket starts full (Kafka's TokenBucket
  // refills from time 0 on its first use).
  client_quota_manager m(quota_type::controller_mutation, {11, 1000});
  m.update_quota(std::nullopt, named("admin"), 2);
  int64_t now = 1'700'000'000'000;
  EXPECT_EQ(m.record("ANONYMOUS", "admin", 10, now, true), 0) << "22 - 10 tokens left";
  // Permissive (older request versions): recorded, then throttled by the debt.
  EXPECT_EQ(m.record("ANONYMOUS", "admin", 20, now, true), 4000);  // -8 tokens / 2 a second
  // Strict: in debt, refused with the time until the bucket is back at zero; nothing taken.
  EXPECT_EQ(m.record("ANONYMOUS", "admin", 1, now, false), 4000);
  now += 4000;
  EXPECT_EQ(m.record("ANONYMOUS", "admin", 30, now, false), 0) << "at zero: accepted (into debt)";
  EXPECT_EQ(m.record("ANONYMOUS", "admin", 1, now, false), 15000);
}

TEST(client_quota_manager, idle_sensors_expire_after_an_hour) {
  client_quota_manager m(quota_type::fetch, {11, 1000});
  m.update_quota(std::nullopt, default_level, 1000);
  const int64_t t0 = 1'700'000'000'000;
  m.record("ANONYMOUS", "a", 1, t0);
  m.record("ANONYMOUS", "b", 1, t0);
  EXPECT_EQ(m.sensor_count(), 2u);
  m.record("ANONYMOUS", "b", 1, t0 + client_quota_manager::inactive_sensor_expiration_ms);
  m.record("ANONYMOUS", "b", 1, t0 + client_quota_manager::inactive_sensor_expiration_ms + 120'000);
  EXPECT_EQ(m.sensor_count(), 1u);
}

}  // namespace
}  // namespace tarn::quota
