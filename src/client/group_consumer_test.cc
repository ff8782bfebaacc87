// The group consumer's configuration: Kafka's defaults and property names, the values it
// refuses, and the properties it leaves alone. (Joining, heartbeats and commits need a broker:
// tests/groups_cli_test.cc drives them through `tarn consume --group` against tarn and Kafka.)
#include "client/group_consumer.h"

#include <gtest/gtest.h>

namespace tarn::client {
namespace {

using namespace std::chrono_literals;

TEST(group_consumer_config, kafka_defaults) {
  group_consumer_config c;
  EXPECT_EQ(c.session_timeout, 45000ms);
  EXPECT_EQ(c.heartbeat_interval, 3000ms);
  EXPECT_EQ(c.max_poll_interval, 300000ms);
  EXPECT_EQ(c.auto_commit_interval, 5000ms);
  EXPECT_TRUE(c.enable_auto_commit);
  EXPECT_EQ(c.auto_offset_reset, "latest");
  EXPECT_EQ(c.isolation_level, 0);
  EXPECT_EQ(c.max_poll_records, 500);
  EXPECT_EQ(c.fetch_max_wait_ms, 500);
  EXPECT_EQ(c.max_partition_fetch_bytes, 1048576);
  EXPECT_FALSE(c.group_instance_id.has_value());
}

TEST(group_consumer_config, takes_kafka_property_names) {
  group_consumer_config c;
  std::vector<std::string> ignored;
  const std::vector<std::pair<std::string, std::string>> props = {
      {"bootstrap.servers", "h:1"},
      {"group.id", "g"},
      {"client.id", "c"},
      {"group.instance.id", "static-1"},
      {"session.timeout.ms", "6000"},
      {"heartbeat.interval.ms", "500"},
      {"max.poll.interval.ms", "10000"},
      {"auto.commit.interval.ms", "200"},
      {"enable.auto.commit", "false"},
      {"auto.offset.reset", "earliest"},
      {"isolation.level", "read_committed"},
      {"max.poll.records", "7"},
      {"partition.assignment.strategy", "org.apache.kafka.clients.consumer.RangeAssignor"},
      {"group.protocol", "classic"},
      {"key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer"},
      {"security.protocol", "PLAINTEXT"},
  };
  for (const auto& [k, v] : props) {
    auto r = c.set(k, v, &ignored);
    EXPECT_TRUE(r.has_value()) << k << ": " << r.error();
  }
  EXPECT_EQ(c.bootstrap_servers, "h:1");
  EXPECT_EQ(c.group_id, "g");
  EXPECT_EQ(c.client_id, "c");
  EXPECT_EQ(c.group_instance_id, "static-1");
  EXPECT_EQ(c.session_timeout, 6000ms);
  EXPECT_EQ(c.heartbeat_interval, 500ms);
  EXPECT_EQ(c.max_poll_interval, 10000ms);
  EXPECT_EQ(c.auto_commit_interval, 200ms);
  EXPECT_FALSE(c.enable_auto_commit);
  EXPECT_EQ(c.auto_offset_reset, "earliest");
  EXPECT_EQ(c.isolation_level, 1);
  EXPECT_EQ(c.max_poll_records, 7);
  // security.protocol is taken now (client_security.h), no longer ignored.
  EXPECT_EQ(c.security.protocol, security_protocol::plaintext);
  EXPECT_EQ(ignored, (std::vector<std::string>{"key.deserializer"}));
}

TEST(group_consumer_config, refuses_what_it_cannot_do) {
  group_consumer_config c;
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"session.timeout.ms", "soon"},
           {"enable.auto.commit", "yes"},
           {"auto.offset.reset", "smallest"},
           {"isolation.level", "serializable"},
           {"max.poll.records", "0"},
           {"partition.assignment.strategy", "cooperative-sticky"},
           {"group.protocol", "streams"},
           {"security.protocol", "TLS"},
           {"sasl.mechanism", "GSSAPI"},
       }) {
    EXPECT_FALSE(c.set(k, v).has_value()) << k << "=" << v;
  }
  // Both of Java's group protocols, case-insensitive as Java's validator; classic by default.
  EXPECT_FALSE(c.consumer_protocol);
  ASSERT_TRUE(c.set("group.protocol", "CONSUMER"));
  EXPECT_TRUE(c.consumer_protocol);
  ASSERT_TRUE(c.set("group.remote.assignor", "range"));
  EXPECT_EQ(c.group_remote_assignor, "range");
  ASSERT_TRUE(c.set("group.protocol", "classic"));
  EXPECT_FALSE(c.consumer_protocol);
  auto r = c.set("session.timeout.ms", "soon");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(),
            "Invalid value soon for configuration session.timeout.ms: Not a number of type INT");
}

}  // namespace
}  // namespace tarn::client
