// A KIP-848 consumer group's own configs (consumer.session.timeout.ms,
// consumer.heartbeat.interval.ms, ...) set with Kafka's kafka-configs.sh (ConfigCommand from the
// 4.4.0 jars), against tarn and against Kafka 4.4.0 with the same expectations: the alter, a
// value outside the broker's bounds refused with Kafka's message, the describe, and a member
// that joins afterwards told the group's heartbeat interval in its ConsumerGroupHeartbeat
// response. On tarn the configs also survive a restart. Then the cluster default of
// group.consumer.assignment.interval.ms and group.share.assignment.interval.ms set dynamically
// (--entity-type brokers --entity-default), as Kafka allows.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kafka_conn.h"
#include "kafka_ref_broker.h"
#include "protocol/error_codes.h"
#include "protocol/messages/consumer_group_heartbeat_request.h"
#include "protocol/messages/consumer_group_heartbeat_response.h"
#include "protocol/messages/find_coordinator_request.h"
#include "protocol/messages/find_coordinator_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using protocol::error_code;

class consumer_group_configs : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
    if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are not available";
#ifdef TARN_SANITIZED_BUILD
    GTEST_SKIP() << "kafka-configs.sh's tests run in the release build only";
#endif
    if (auto skip = start_test_broker(GetParam(), {}, tarn_, port_); !skip.empty()) {
      GTEST_SKIP() << skip;
    }
    ASSERT_NE(port_, 0);
    group_ = test_name_prefix() + std::to_string(getpid());
  }
  void TearDown() override {
    if (tarn_) tarn_->stop();
  }

  // kafka-configs.sh with `args`; stdout and stderr together.
  std::pair<int, std::string> kafka_configs(const std::string& args) const {
    return run_command("timeout 180 java -cp '" + kafka_libs() +
                       "/*' org.apache.kafka.tools.ConfigCommand --bootstrap-server 127.0.0.1:" +
                       std::to_string(port_) + " " + args + " 2>&1");
  }
  std::pair<int, std::string> group_configs(const std::string& args) const {
    return kafka_configs("--entity-type groups --entity-name " + group_ + " " + args);
  }

  // A new member's first ConsumerGroupHeartbeat, once the group's coordinator is there (Kafka
  // creates __consumer_offsets at the first FindCoordinator and loads it meanwhile).
  reply<protocol::consumer_group_heartbeat_response> join(uint16_t port) const {
    kafka_conn c(port, nullptr);
    protocol::find_coordinator_request fc;
    fc.key_type = 0;
    fc.coordinator_keys = {group_};
    for (int i = 0; i < 120; ++i) {
      auto found = c.call<protocol::find_coordinator_response>(fc, 4);
      if (found && found->coordinators.size() == 1 && found->coordinators[0].error_code == 0) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    const std::string topic = group_ + "-t";
    std::vector<std::string_view> topics = {topic};
    protocol::consumer_group_heartbeat_request r;
    r.group_id = group_;
    r.member_id = "m" + std::to_string(++members_) + "aaaaaaaaaaaaaaaaaaaaa";
    r.member_epoch = 0;
    r.rebalance_timeout_ms = 30000;
    r.subscribed_topic_names = topics;
    r.topic_partitions.emplace();
    reply<protocol::consumer_group_heartbeat_response> out;
    for (int i = 0; i < 120; ++i) {
      out = c.call<protocol::consumer_group_heartbeat_response>(r, 1);
      if (!out || (out->error_code != code(error_code::coordinator_not_available) &&
                   out->error_code != code(error_code::coordinator_load_in_progress) &&
                   out->error_code != code(error_code::not_coordinator))) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return out;
  }

  std::unique_ptr<broker_process> tarn_;
  uint16_t port_ = 0;
  std::string group_;
  mutable int members_ = 0;
};

TEST_P(consumer_group_configs, kafka_configs_sets_the_session_timeout_and_heartbeat_interval) {
  // Outside group.consumer.min/max.session.timeout.ms (45000-60000 by default).
  auto [rc, out] = group_configs("--alter --add-config consumer.session.timeout.ms=30000");
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("InvalidConfigurationException: consumer.session.timeout.ms must be in the "
                     "range 45000 to 60000 inclusive."),
            std::string::npos)
      << out;
  // Not a number: ConfigDef's message.
  std::tie(rc, out) = group_configs("--alter --add-config consumer.heartbeat.interval.ms=abc");
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("Invalid value abc for configuration consumer.heartbeat.interval.ms: Not a "
                     "number of type INT"),
            std::string::npos)
      << out;

  std::tie(rc, out) = group_configs(
      "--alter --add-config consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=7000");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("Completed updating config for group " + group_ + "."), std::string::npos)
      << out;
  std::tie(rc, out) = group_configs("--describe");
  EXPECT_EQ(rc, 0) << out;
  const std::string expected =
      "Dynamic configs for group " + group_ +
      " are:\n"
      "  consumer.heartbeat.interval.ms=7000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
      "consumer.heartbeat.interval.ms=7000, DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms="
      "5000}\n"
      "  consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
      "consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms="
      "45000}\n";
  EXPECT_EQ(out, expected);
  std::tie(rc, out) = group_configs("--describe --all");
  EXPECT_NE(out.find("  consumer.assignment.interval.ms=1000 sensitive=false synonyms={"
                     "DEFAULT_CONFIG:group.consumer.assignment.interval.ms=1000}\n"),
            std::string::npos)
      << out;

  // A member joining now is told the group's heartbeat interval.
  auto joined = join(port_);
  ASSERT_TRUE(joined);
  EXPECT_EQ(joined->error_code, 0);
  EXPECT_EQ(joined->heartbeat_interval_ms, 7000);

  if (tarn_) {
    // Recorded in the metadata log: the same after a restart.
    ASSERT_TRUE(tarn_->stop());
    broker_process again({}, tarn_->data_dir());
    ASSERT_NE(again.port(), 0) << again.output();
    joined = join(again.port());
    ASSERT_TRUE(joined);
    EXPECT_EQ(joined->error_code, 0);
    EXPECT_EQ(joined->heartbeat_interval_ms, 7000);
    again.stop();
    return;
  }
  // Kafka's broker is shared: the group's configs go.
  std::tie(rc, out) = group_configs(
      "--alter --delete-config consumer.session.timeout.ms,consumer.heartbeat.interval.ms");
  EXPECT_EQ(rc, 0) << out;
}

// The cluster defaults of the assignment intervals are dynamic in Kafka 4.4 (GroupCoordinator
// Config's reconfigurable keys): set, described, refused beyond their max, and removed.
TEST_P(consumer_group_configs, assignment_intervals_are_dynamic_broker_configs) {
  const std::string brokers = "--entity-type brokers --entity-default ";
  auto [rc, out] = kafka_configs(brokers +
                                 "--alter --add-config "
                                 "group.share.assignment.interval.ms=20000");
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("InvalidRequestException: group.share.assignment.interval.ms must be less "
                     "than or equal to group.share.max.assignment.interval.ms"),
            std::string::npos)
      << out;
  std::tie(rc, out) = kafka_configs(brokers +
                                    "--alter --add-config group.consumer.assignment.interval.ms=0,"
                                    "group.share.assignment.interval.ms=2000");
  EXPECT_EQ(rc, 0) << out;
  std::tie(rc, out) = kafka_configs(brokers + "--describe");
  EXPECT_NE(out.find("  group.consumer.assignment.interval.ms=0 sensitive=false synonyms={"
                     "DYNAMIC_DEFAULT_BROKER_CONFIG:group.consumer.assignment.interval.ms=0}\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  group.share.assignment.interval.ms=2000 sensitive=false synonyms={"
                     "DYNAMIC_DEFAULT_BROKER_CONFIG:group.share.assignment.interval.ms=2000}\n"),
            std::string::npos)
      << out;
  // A group without its own value runs with (and describes) the cluster default.
  std::tie(rc, out) =
      kafka_configs("--entity-type groups --entity-name " + group_ + " --describe --all");
  EXPECT_NE(out.find("  consumer.assignment.interval.ms=0 sensitive=false synonyms={"
                     "DYNAMIC_DEFAULT_BROKER_CONFIG:group.consumer.assignment.interval.ms=0, "
                     "DEFAULT_CONFIG:group.consumer.assignment.interval.ms=1000}\n"),
            std::string::npos)
      << out;
  std::tie(rc, out) = kafka_configs(brokers +
                                    "--alter --delete-config group.consumer.assignment.interval.ms,"
                                    "group.share.assignment.interval.ms");
  EXPECT_EQ(rc, 0) << out;
}

INSTANTIATE_TEST_SUITE_P(brokers, consumer_group_configs,
                         ::testing::Values(broker_kind::tarn, broker_kind::kafka), kind_name);

}  // namespace
}  // namespace tarn::test
