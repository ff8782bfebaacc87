// The share.* group configs: Kafka 4.4's validation messages (printed by its kafka-configs.sh
// against the reference broker), the settings a group runs with, and what DescribeConfigs lists.
#include "coordinator/share_group_config.h"

#include <gtest/gtest.h>

namespace tarn::coordinator {
namespace {

std::string error_of(std::string_view name, std::string_view value) {
  return validate_share_group_config(share_config{}, name, value).value_or("valid");
}

TEST(share_group_config, values_are_checked_with_kafkas_messages) {
  EXPECT_EQ(error_of("share.record.lock.duration.ms", "20000"), "valid");
  EXPECT_EQ(error_of("share.record.lock.duration.ms", "1000"),
            "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.");
  EXPECT_EQ(error_of("share.record.lock.duration.ms", "70000"),
            "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.");
  EXPECT_EQ(error_of("share.record.lock.duration.ms", "abc"),
            "Invalid value abc for configuration share.record.lock.duration.ms: Not a number of "
            "type INT");
  EXPECT_EQ(error_of("share.delivery.count.limit", "1"),
            "Invalid value 1 for configuration share.delivery.count.limit: Value must be at "
            "least 2");
  EXPECT_EQ(error_of("share.delivery.count.limit", "11"),
            "share.delivery.count.limit must be in the range 2 to 10 inclusive.");
  EXPECT_EQ(error_of("share.heartbeat.interval.ms", "1000"),
            "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.");
  EXPECT_EQ(error_of("share.session.timeout.ms", "70000"),
            "share.session.timeout.ms must be in the range 45000 to 60000 inclusive.");
  EXPECT_EQ(error_of("share.partition.max.record.locks", "50"),
            "Invalid value 50 for configuration share.partition.max.record.locks: Value must be "
            "at least 100");
  EXPECT_EQ(error_of("share.partition.max.record.locks", "20000"),
            "share.partition.max.record.locks must be in the range 100 to 4000 inclusive.");
  EXPECT_EQ(error_of("share.auto.offset.reset", "earliest"), "valid");
  EXPECT_EQ(error_of("share.auto.offset.reset", "foo"),
            "Invalid value foo for configuration share.auto.offset.reset: Invalid value `foo` for "
            "configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' "
            "or of the format 'by_duration:<PnDTnHnMn.nS>'.");
  EXPECT_EQ(error_of("share.isolation.level", "read_committed"), "valid");
  EXPECT_EQ(error_of("share.isolation.level", "foo"),
            "Invalid value foo for configuration share.isolation.level: String must be one of: "
            "read_committed, read_uncommitted");
  EXPECT_EQ(error_of("nosuch.key", "1"), "Unknown group config name: nosuch.key");
  EXPECT_EQ(error_of("consumer.session.timeout.ms", "45000"),
            "Group config consumer.session.timeout.ms is not supported by tarn");
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
  // Still refused: the assignor runs in the heartbeat, never offloaded.
  EXPECT_EQ(error_of("share.assignor.offload.enable", "true"),
            "Group config share.assignor.offload.enable is not supported by tarn");
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

}  // namespace
}  // namespace tarn::coordinator
