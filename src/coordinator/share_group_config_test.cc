// The share.* group configs: Kafka 4.4's validation messages (printed by its kafka-configs.sh
// against the reference broker), the settings a group runs with, and what DescribeConfigs lists.
#include "coordinator/share_group_config.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace tarn::coordinator {
namespace {

std::string error_of(std::string_view name, std::string_view value) {
  return validate_share_group_config(share_config{}, name, value).value_or("valid");
}

// A value of a group config and Kafka 4.4's answer to it: its message, or "valid".
struct verdict {
  std::string_view name;
  std::string_view value;
  std::string_view answer;
};

// Each row's answer from `check` (error_of and the like).
template <class Check>
void expect_verdicts(Check check, std::initializer_list<verdict> rows) {
  for (const verdict& row : rows) {
    EXPECT_EQ(check(row.name, row.value), row.answer) << row.name << "=" << row.value;
  }
}

TEST(share_group_config, values_are_checked_with_kafkas_messages) {
  expect_verdicts(
      error_of,
      {{"share.record.lock.duration.ms", "20000", "valid"},
       {"share.record.lock.duration.ms", "1000",
        "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
       {"share.record.lock.duration.ms", "70000",
        "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
       {"share.record.lock.duration.ms", "abc",
        "Invalid value abc for configuration share.record.lock.duration.ms: Not a number of "
        "type INT"},
       {"share.delivery.count.limit", "1",
        "Invalid value 1 for configuration share.delivery.count.limit: Value must be at "
        "least 2"},
       {"share.delivery.count.limit", "11",
        "share.delivery.count.limit must be in the range 2 to 10 inclusive."},
       {"share.heartbeat.interval.ms", "1000",
        "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."},
       {"share.session.timeout.ms", "70000",
        "share.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
       {"share.partition.max.record.locks", "50",
        "Invalid value 50 for configuration share.partition.max.record.locks: Value must be "
        "at least 100"},
       {"share.partition.max.record.locks", "20000",
        "share.partition.max.record.locks must be in the range 100 to 4000 inclusive."},
       {"share.auto.offset.reset", "earliest", "valid"},
       {"share.auto.offset.reset", "foo",
        "Invalid value foo for configuration share.auto.offset.reset: Invalid value `foo` for "
        "configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' "
        "or of the format 'by_duration:<PnDTnHnMn.nS>'."},
       {"share.isolation.level", "read_committed", "valid"},
       {"share.isolation.level", "foo",
        "Invalid value foo for configuration share.isolation.level: String must be one of: "
        "read_committed, read_uncommitted"},
       {"nosuch.key", "1", "Unknown group config name: nosuch.key"},
       {"consumer.session.timeout.ms", "45000", "valid"},
       {"streams.session.timeout.ms", "45000",
        "Group config streams.session.timeout.ms is not supported by tarn"}});
}

// share.auto.offset.reset's by_duration as Kafka's ShareGroupAutoOffsetResetStrategy reads it
// (java.time.Duration.parse), and share.renew.acknowledge.enable as a ConfigDef BOOLEAN.
TEST(share_group_config, by_duration_and_renew_acknowledge_enable) {
  EXPECT_EQ(parse_iso8601_duration_ms("PT1H"), 3600000);
  EXPECT_EQ(parse_iso8601_duration_ms("P2D"), 2 * 86400000);
  EXPECT_EQ(parse_iso8601_duration_ms("p1dt2h3m4.5s"), 86400000 + 7200000 + 180000 + 4500);
  EXPECT_EQ(parse_iso8601_duration_ms("PT0.0005S"), 1);  // rounded up: reaches back 1 ms
  EXPECT_EQ(parse_iso8601_duration_ms("PT-1.5S"), -1500);
  EXPECT_EQ(parse_iso8601_duration_ms("-PT1M"), -60000);
  EXPECT_EQ(parse_iso8601_duration_ms("PT1,25S"), 1250);
  EXPECT_EQ(parse_iso8601_duration_ms("PT1.S"), 1000);
  for (std::string_view bad : {"", "P", "PT", "1H", "PT1H2", "PT1S1M", "P1H", "PT1.0123456789S",
                               "P1DT", "PT 1H", "P99999999999999999999D"}) {
    EXPECT_FALSE(parse_iso8601_duration_ms(bad)) << bad;
  }
  EXPECT_EQ(error_of("share.auto.offset.reset", "by_duration:PT12H"), "valid");
  EXPECT_EQ(error_of("share.auto.offset.reset", "by_duration:P0D"), "valid");
  const std::string message =
      "The value must be either 'earliest', 'latest' or of the format "
      "'by_duration:<PnDTnHnMn.nS>'.";
  for (std::string_view bad : {"by_duration:-PT1H", "by_duration:", "by_duration", "by_duration:1h",
                               "BY_DURATION:PT1H", "LATEST", "none"}) {
    EXPECT_NE(error_of("share.auto.offset.reset", bad).find(message), std::string::npos) << bad;
  }
  auto s = effective_share_group_settings(share_config{},
                                          {{"share.auto.offset.reset", "by_duration:PT1M"}});
  EXPECT_EQ(s.auto_offset_reset_duration_ms, 60000);
  EXPECT_FALSE(effective_share_group_settings(share_config{}, {}).auto_offset_reset_duration_ms);

  EXPECT_EQ(error_of("share.renew.acknowledge.enable", "false"), "valid");
  EXPECT_EQ(error_of("share.renew.acknowledge.enable", "TRUE"), "valid");
  EXPECT_EQ(error_of("share.renew.acknowledge.enable", "yes"),
            "Invalid value yes for configuration share.renew.acknowledge.enable: Expected value "
            "to be either true or false");
  EXPECT_TRUE(effective_share_group_settings(share_config{}, {}).renew_acknowledge_enabled);
  EXPECT_FALSE(
      effective_share_group_settings(share_config{}, {{"share.renew.acknowledge.enable", "False"}})
          .renew_acknowledge_enabled);
  auto d = describe_share_group_configs(share_config{}, {});
  auto renew = std::find_if(
      d.begin(), d.end(), [](const auto& e) { return e.name == "share.renew.acknowledge.enable"; });
  ASSERT_NE(renew, d.end());
  EXPECT_TRUE(renew->is_bool);
  EXPECT_EQ(renew->value, "true");
  // share.assignment.interval.ms (KIP-1263): at least 0, within
  // group.share.min/max.assignment.interval.ms (0 to 15000 by default).
  EXPECT_EQ(error_of("share.assignment.interval.ms", "0"), "valid");
  EXPECT_EQ(error_of("share.assignment.interval.ms", "15000"), "valid");
  EXPECT_EQ(error_of("share.assignment.interval.ms", "-1"),
            "Invalid value -1 for configuration share.assignment.interval.ms: Value must be at "
            "least 0");
  EXPECT_EQ(error_of("share.assignment.interval.ms", "15001"),
            "share.assignment.interval.ms must be in the range 0 to 15000 inclusive.");
  EXPECT_EQ(effective_share_group_settings(share_config{}, {}).assignment_interval_ms, 1000);
  EXPECT_EQ(effective_share_group_settings(share_config{}, {{"share.assignment.interval.ms", "0"}})
                .assignment_interval_ms,
            0);
  // Accepted as a BOOLEAN (Kafka's internal key); the assignor still runs in the heartbeat.
  EXPECT_EQ(error_of("share.assignor.offload.enable", "true"), "valid");
  EXPECT_EQ(error_of("share.assignor.offload.enable", "maybe"),
            "Invalid value maybe for configuration share.assignor.offload.enable: Expected value "
            "to be either true or false");
}

TEST(share_group_config, bounds_come_from_the_broker) {
  share_config broker;
  broker.group_share_max_record_lock_duration_ms = 90000;
  EXPECT_FALSE(validate_share_group_config(broker, "share.record.lock.duration.ms", "80000"));
}

TEST(share_group_config, overrides_replace_the_broker_defaults) {
  share_config broker;
  broker.group_share_delivery_count_limit = 7;
  auto s = effective_share_group_settings(broker, {{"share.record.lock.duration.ms", "20000"},
                                                   {"share.auto.offset.reset", "earliest"}});
  EXPECT_EQ(s.record_lock_duration_ms, 20000);
  EXPECT_EQ(s.delivery_count_limit, 7);
  EXPECT_EQ(s.auto_offset_reset, "earliest");
  EXPECT_EQ(s.heartbeat_interval_ms, 5000);
  EXPECT_FALSE(s.read_committed);
  EXPECT_TRUE(effective_share_group_settings(broker, {{"share.isolation.level", "read_committed"}})
                  .read_committed);
}

TEST(share_group_config, described_in_name_order_with_their_default_synonyms) {
  auto d = describe_share_group_configs(share_config{}, {{"share.delivery.count.limit", "3"}});
  ASSERT_FALSE(d.empty());
  for (size_t i = 1; i < d.size(); ++i) EXPECT_LT(d[i - 1].name, d[i].name);
  auto find = [&](std::string_view name) {
    return *std::find_if(d.begin(), d.end(), [&](const auto& e) { return e.name == name; });
  };
  EXPECT_EQ(find("share.delivery.count.limit").value, "3");
  EXPECT_TRUE(find("share.delivery.count.limit").overridden);
  EXPECT_EQ(find("share.delivery.count.limit").default_name, "group.share.delivery.count.limit");
  EXPECT_EQ(find("share.delivery.count.limit").default_value, "5");
  EXPECT_EQ(find("share.auto.offset.reset").value, "latest");
  EXPECT_EQ(find("share.auto.offset.reset").default_name, "share.auto.offset.reset");
  EXPECT_FALSE(find("share.auto.offset.reset").is_int);
}

// The consumer.* keys (KIP-848 groups) with the bounds the reference broker ran with
// (group.consumer.min/max.heartbeat.interval.ms 1000/50000, group.consumer.min.session.timeout.ms
// 6000): Kafka 4.4's messages as its kafka-configs.sh printed them.
group_config wide_bounds() {
  group_config g;
  g.group_consumer_min_heartbeat_interval_ms = 1000;
  g.group_consumer_max_heartbeat_interval_ms = 50000;
  g.group_consumer_min_session_timeout_ms = 6000;
  return g;
}

std::string consumer_error(std::string_view name, std::string_view value) {
  return validate_group_config(wide_bounds(), share_config{}, name, value).value_or("valid");
}

std::string whole_error(const group_config_overrides& configs) {
  return validate_group_configs(wide_bounds(), share_config{}, configs).value_or("valid");
}

TEST(consumer_group_config, values_are_checked_with_kafkas_messages) {
  expect_verdicts(
      consumer_error,
      {{"consumer.session.timeout.ms", "7000", "valid"},
       {"consumer.session.timeout.ms", "5000",
        "consumer.session.timeout.ms must be in the range 6000 to 60000 inclusive."},
       {"consumer.session.timeout.ms", "70000",
        "consumer.session.timeout.ms must be in the range 6000 to 60000 inclusive."},
       {"consumer.session.timeout.ms", "abc",
        "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of "
        "type INT"},
       {"consumer.session.timeout.ms", "0",
        "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at "
        "least 1"},
       {"consumer.heartbeat.interval.ms", "500",
        "consumer.heartbeat.interval.ms must be in the range 1000 to 50000 inclusive."},
       {"consumer.assignment.interval.ms", "20000",
        "consumer.assignment.interval.ms must be in the range 0 to 15000 inclusive."},
       {"consumer.assignment.interval.ms", "-1",
        "Invalid value -1 for configuration consumer.assignment.interval.ms: Value must be "
        "at least 0"},
       {"consumer.assignment.interval.ms", "0", "valid"},
       {"consumer.assignor.offload.enable", "maybe",
        "Invalid value maybe for configuration consumer.assignor.offload.enable: Expected "
        "value to be either true or false"},
       {"consumer.assignor.offload.enable", "false", "valid"}});
  // With Kafka's default bounds (45000-60000, 5000-15000).
  EXPECT_EQ(
      validate_group_config(group_config{}, share_config{}, "consumer.session.timeout.ms", "30000")
          .value_or("valid"),
      "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.");
  EXPECT_TRUE(is_served_group_config("consumer.heartbeat.interval.ms"));
  EXPECT_FALSE(is_served_share_group_config("consumer.heartbeat.interval.ms"));
}

// GroupConfig.validate on the group's whole config after the request: a session timeout at or
// below the heartbeat interval is refused, the key not set counting as the broker's
// group.consumer.* value (45000 and 5000).
TEST(consumer_group_config, session_timeout_must_exceed_the_heartbeat_interval) {
  const std::string message =
      "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms";
  EXPECT_EQ(whole_error({{"consumer.session.timeout.ms", "30000"},
                         {"consumer.heartbeat.interval.ms", "40000"}}),
            message);
  EXPECT_EQ(whole_error({{"consumer.heartbeat.interval.ms", "45000"}}), message);
  EXPECT_EQ(whole_error({{"consumer.session.timeout.ms", "7000"}}), "valid");
  EXPECT_EQ(whole_error({{"consumer.session.timeout.ms", "7000"},
                         {"consumer.heartbeat.interval.ms", "8000"}}),
            message);
  EXPECT_EQ(whole_error({{"consumer.session.timeout.ms", "7000"},
                         {"consumer.heartbeat.interval.ms", "6000"}}),
            "valid");
  // Every key's range first, in Kafka's order (heartbeat before session).
  EXPECT_EQ(
      whole_error({{"consumer.session.timeout.ms", "1"}, {"consumer.heartbeat.interval.ms", "1"}}),
      "consumer.heartbeat.interval.ms must be in the range 1000 to 50000 inclusive.");
  // The share pair too.
  share_config share;
  share.group_share_min_heartbeat_interval_ms = 1000;
  share.group_share_max_heartbeat_interval_ms = 50000;
  EXPECT_EQ(
      validate_group_configs(group_config{}, share, {{"share.heartbeat.interval.ms", "45000"}})
          .value_or("valid"),
      "share.session.timeout.ms must be greater than share.heartbeat.interval.ms");
}

// What a group runs with: its values over the broker's, clamped into bounds narrowed since they
// were set (GroupConfig.evaluate).
TEST(consumer_group_config, effective_settings_are_clamped_into_the_brokers_bounds) {
  group_config broker;
  auto s = effective_consumer_group_settings(broker, {});
  EXPECT_EQ(s.session_timeout_ms, 45000);
  EXPECT_EQ(s.heartbeat_interval_ms, 5000);
  EXPECT_EQ(s.assignment_interval_ms, 1000);
  EXPECT_TRUE(s.assignor_offload_enable);
  s = effective_consumer_group_settings(broker, {{"consumer.session.timeout.ms", "50000"},
                                                 {"consumer.heartbeat.interval.ms", "7000"},
                                                 {"consumer.assignment.interval.ms", "0"},
                                                 {"consumer.assignor.offload.enable", "false"}});
  EXPECT_EQ(s.session_timeout_ms, 50000);
  EXPECT_EQ(s.heartbeat_interval_ms, 7000);
  EXPECT_EQ(s.assignment_interval_ms, 0);
  EXPECT_FALSE(s.assignor_offload_enable);
  s = effective_consumer_group_settings(broker, {{"consumer.session.timeout.ms", "6000"},
                                                 {"consumer.heartbeat.interval.ms", "90000"}});
  EXPECT_EQ(s.session_timeout_ms, 45000);
  EXPECT_EQ(s.heartbeat_interval_ms, 15000);
  EXPECT_EQ(effective_share_group_settings(share_config{}, {{"share.delivery.count.limit", "50"}})
                .delivery_count_limit,
            10);
}

// DescribeConfigs lists consumer.* beside share.* (Kafka 4.4's order and synonyms); the internal
// *.assignor.offload.enable only when the group sets it.
TEST(consumer_group_config, described_with_the_broker_keys_as_synonyms) {
  auto d = describe_group_configs(group_config{}, share_config{},
                                  {{"consumer.session.timeout.ms", "50000"}});
  std::vector<std::string> names;
  for (const auto& e : d) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "consumer.assignment.interval.ms", "consumer.heartbeat.interval.ms",
                       "consumer.session.timeout.ms", "share.assignment.interval.ms",
                       "share.auto.offset.reset", "share.delivery.count.limit",
                       "share.heartbeat.interval.ms", "share.isolation.level",
                       "share.partition.max.record.locks", "share.record.lock.duration.ms",
                       "share.renew.acknowledge.enable", "share.session.timeout.ms"}));
  EXPECT_EQ(d[2].value, "50000");
  EXPECT_TRUE(d[2].overridden);
  EXPECT_EQ(d[2].default_name, "group.consumer.session.timeout.ms");
  EXPECT_EQ(d[2].default_value, "45000");
  EXPECT_EQ(d[0].default_name, "group.consumer.assignment.interval.ms");
  EXPECT_FALSE(d[0].overridden);
  d = describe_group_configs(group_config{}, share_config{},
                             {{"consumer.assignor.offload.enable", "false"}});
  auto offload = std::find_if(d.begin(), d.end(), [](const auto& e) {
    return e.name == "consumer.assignor.offload.enable";
  });
  ASSERT_NE(offload, d.end());
  EXPECT_EQ(offload->value, "false");
  EXPECT_EQ(offload->default_name, "group.consumer.assignor.offload.enable");
  EXPECT_EQ(offload->default_value, "true");
  EXPECT_TRUE(offload->is_bool);
}

}  // namespace
}  // namespace tarn::coordinator
