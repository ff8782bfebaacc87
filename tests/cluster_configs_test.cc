// Dynamic configs in a cluster (docs/cluster.md, "Dynamic configs", issue 27): a config recorded
// through any broker takes effect on every broker it concerns, as Kafka's KRaft brokers apply
// the ConfigRecords of the metadata log. Three brokers, one single-replica topic led by each
// (created with a manual assignment through its broker), and message.max.bytes as the config
// whose effect each broker shows: a Produce of a 20,000-byte batch is MESSAGE_TOO_LARGE at its
// partition's leader once the limit there is lower.
// - a cluster default set through broker 1 (IncrementalAlterConfigs by client::config_admin, one
//   broker's connection) is described by brokers 2 and 3 as DYNAMIC_DEFAULT_BROKER_CONFIG and
//   refuses the batch on each of them;
// - broker 3's own value set with Kafka's kafka-configs.sh pointed at broker 1 (the Java Admin
//   client sends a broker's own configs to that broker) applies on broker 3 only, and
//   kafka-configs.sh describes it; the same change sent to broker 1 itself is refused
//   INVALID_REQUEST, as Kafka 4.4's ConfigAdminManager refuses another broker's id;
// - brokers 2 and 3 stopped and started again keep both;
// - topic configs: a topic's max.message.bytes set through a broker that holds no replica of it
//   applies at its leader, and a replicated topic's config set through its leader is described
//   by every replica.
// The same scenario runs against three tarn brokers on etcd and against a three-node Kafka
// 4.4.0 KRaft cluster (the reference that checks the scenario; `make interop`).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <thread>

#include "client/config_admin.h"
#include "cluster_harness.h"
#include "kafka_conn.h"
#include "kafka_ref_broker.h"
#include "kafka_test_names.h"
#include "produce_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/create_topics_request.h"
#include "protocol/messages/create_topics_response.h"
#include "protocol/messages/produce_request.h"
#include "protocol/messages/produce_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;
using protocol::code;
using protocol::error_code;

constexpr client::config_resource_type broker_resource = client::config_resource_type::broker;
constexpr client::config_resource_type topic_resource = client::config_resource_type::topic;
// DescribeConfigs' ConfigSource, as the numbers the answers below show.
constexpr int8_t source_dynamic_topic =
    static_cast<int8_t>(client::config_source::dynamic_topic_config);
constexpr int8_t source_dynamic_broker =
    static_cast<int8_t>(client::config_source::dynamic_broker_config);
constexpr int8_t source_dynamic_default_broker =
    static_cast<int8_t>(client::config_source::dynamic_default_broker_config);

// An admin client of the broker at `port` alone (client::config_admin, as `tarn configs`): a
// request goes to that broker, whichever resource it names.
result<std::unique_ptr<client::config_admin>, client::client_error> admin_of(uint16_t port) {
  return client::config_admin::connect("127.0.0.1:" + std::to_string(port), 10s);
}

std::string error_text(const client::client_error& e) {
  return std::to_string(e.code) + " " + e.message;
}

// One config as DescribeConfigs v4 answers it: "error value source", e.g. "0 5000 5", or
// "error message".
std::string describe(uint16_t port, client::config_resource_type type, const std::string& name,
                     std::string_view key) {
  auto admin = admin_of(port);
  if (!admin) return error_text(admin.error());
  auto configs = (*admin)->describe_configs(type, name, false);
  if (!configs) return error_text(configs.error());
  for (const auto& c : *configs) {
    if (c.name == key) return fmt::format("0 {} {}", c.value.value_or("<null>"), c.source);
  }
  return fmt::format("{} not described", key);
}

// IncrementalAlterConfigs v1 setting one key: "0", or "error message".
std::string alter(uint16_t port, client::config_resource_type type, const std::string& name,
                  const std::string& key, const std::string& value) {
  auto admin = admin_of(port);
  if (!admin) return error_text(admin.error());
  auto altered = (*admin)->alter_configs(type, name, {{key, client::config_op::set, value}});
  return altered ? "0" : error_text(altered.error());
}

// Produce v9 (acks=1) of one batch to partition 0: the partition's error code, -1 unanswered.
int16_t produce(uint16_t port, const std::string& topic, const std::vector<uint8_t>& batch) {
  kafka_conn c(port, nullptr);
  protocol::produce_request req;
  req.acks = 1;
  req.timeout_ms = 10000;
  auto& t = req.topic_data.emplace_back();
  t.name = topic;
  auto& p = t.partition_data.emplace_back();
  p.index = 0;
  p.records = batch;
  auto r = c.call<protocol::produce_response>(req, 9);
  if (!r || r->responses.size() != 1 || r->responses[0].partition_responses.size() != 1) {
    return -1;
  }
  return r->responses[0].partition_responses[0].error_code;
}

// Until `get()` returns `want` (Kafka's brokers apply a change when its record reaches them,
// tarn's when the metadata log's watch brings it): at most 15 s. The last answer.
template <class Get>
auto until(Get get, const decltype(get())& want) {
  auto got = get();
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (got != want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
    got = get();
  }
  return got;
}

class cluster_configs : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
    if (GetParam() == broker_kind::kafka) {
#ifdef TARN_SANITIZED_BUILD
      GTEST_SKIP() << "the Kafka reference half checks the scenario only (release builds)";
#endif
      if (auto why = kafka_test_name_error(); !why.empty()) FAIL() << why;
      cluster_ = make_kafka_cluster(3);
    } else {
      cluster_ = make_tarn_cluster(3);
    }
    const std::string why = cluster_->start();
    if (!why.empty()) {
      if (GetParam() == broker_kind::tarn &&
          why.find("etcd is not installed") != std::string::npos) {
        GTEST_SKIP() << why;
      }
      FAIL() << why;
    }
    for (int node = 0; node < 3; ++node) {
      ASSERT_NO_FATAL_FAILURE(create_led_by(node, "on-" + std::to_string(node + 1)));
    }
  }
  void TearDown() override {
    if (cluster_ && HasFailure()) std::cerr << cluster_->diagnostics();
  }

  uint16_t port(int node) const { return cluster_->port(node); }

  // A topic of one partition whose only replica is broker node + 1, created through that broker
  // (tarn's interim rule: a manual assignment names the broker it is sent to), then produced to
  // until its leader takes a batch.
  void create_led_by(int node, const std::string& topic) {
    kafka_conn c(port(node), nullptr);
    protocol::create_topics_request req;
    auto& t = req.topics.emplace_back();
    t.name = topic;
    t.num_partitions = -1;
    t.replication_factor = -1;
    t.assignments.push_back({0, {node + 1}});
    auto r = c.call<protocol::create_topics_response>(req, 7);
    ASSERT_TRUE(r && r->topics.size() == 1);
    ASSERT_EQ(r->topics[0].error_code, 0) << r->topics[0].error_message.value_or("");
    ASSERT_EQ(until([&] { return produce(port(node), topic, small_); }, int16_t{0}), 0);
  }

  // What broker node + 1 answers a 20,000-byte batch to the topic it leads.
  int16_t big_on(int node) { return produce(port(node), "on-" + std::to_string(node + 1), big_); }
  int16_t big_until(int node, error_code want) {
    return until([&] { return big_on(node); }, code(want));
  }
  std::string max_bytes_on(int node) {
    return describe(port(node), broker_resource, std::to_string(node + 1), "message.max.bytes");
  }

  // kafka-configs.sh (Kafka 4.4.0's ConfigCommand) through node `via`: exit status and output
  // without log lines.
  std::string configs_tool(int via, const std::string& args) {
    auto [rc, out] = run_command("timeout 120 java -cp '" + kafka_libs() +
                                 "/*' org.apache.kafka.tools.ConfigCommand --bootstrap-server "
                                 "127.0.0.1:" +
                                 std::to_string(port(via)) + " " + args + " 2>&1");
    out =
        std::regex_replace(out, std::regex("(^|\n)([0-9]{4}-[0-9]{2}-[0-9]{2}T|\tat )[^\n]*"), "");
    return "rc=" + std::to_string(rc) + "\n" + out;
  }

  // Kafka's tool where the release suite can run it (a JVM a command; the sanitizer trees send
  // the same requests through config_admin).
  static bool tool_available() {
#ifdef TARN_SANITIZED_BUILD
    return false;
#else
    return !kafka_libs().empty();
#endif
  }

  std::unique_ptr<cluster_harness> cluster_;
  const std::vector<uint8_t> big_ = value_batch(std::string(20000, 'b'));
  const std::vector<uint8_t> small_ = value_batch(std::string(100, 's'));
};

TEST_P(cluster_configs, broker_configs_apply_on_every_broker_they_concern) {
  // The cluster default, through broker 1: every broker describes it and applies it.
  EXPECT_EQ(alter(port(0), broker_resource, "", "message.max.bytes", "5000"), "0");
  for (int node = 0; node < 3; ++node) {
    EXPECT_EQ(until([&] { return max_bytes_on(node); },
                    fmt::format("0 5000 {}", source_dynamic_default_broker)),
              fmt::format("0 5000 {}", source_dynamic_default_broker))
        << "broker " << node + 1;
    EXPECT_EQ(big_until(node, error_code::message_too_large), code(error_code::message_too_large))
        << "broker " << node + 1;
    EXPECT_EQ(produce(port(node), "on-" + std::to_string(node + 1), small_), 0);
  }

  // Broker 3's own value: another broker's id is refused as Kafka refuses it ...
  EXPECT_EQ(alter(port(0), broker_resource, "3", "message.max.bytes", "50000"),
            "42 Unexpected broker id, expected 1, but received 3");
  // ... and Kafka's tool, pointed at broker 1, sends it to broker 3 itself.
  if (tool_available()) {
    EXPECT_EQ(configs_tool(0,
                           "--alter --entity-type brokers --entity-name 3 --add-config "
                           "message.max.bytes=50000"),
              "rc=0\nCompleted updating config for broker 3.\n");
  } else {
    EXPECT_EQ(alter(port(2), broker_resource, "3", "message.max.bytes", "50000"), "0");
  }
  EXPECT_EQ(
      until([&] { return max_bytes_on(2); }, fmt::format("0 50000 {}", source_dynamic_broker)),
      fmt::format("0 50000 {}", source_dynamic_broker));
  EXPECT_EQ(big_until(2, error_code::none), 0);
  for (int node = 0; node < 2; ++node) {
    EXPECT_EQ(max_bytes_on(node), fmt::format("0 5000 {}", source_dynamic_default_broker));
    EXPECT_EQ(big_on(node), code(error_code::message_too_large)) << "broker " << node + 1;
  }
  if (tool_available()) {
    const std::string d = configs_tool(0, "--describe --entity-type brokers --entity-name 3");
    EXPECT_NE(d.find("Dynamic configs for broker 3 are:\n  message.max.bytes=50000 "
                     "sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:message.max.bytes=50000, "
                     "DYNAMIC_DEFAULT_BROKER_CONFIG:message.max.bytes=5000"),
              std::string::npos)
        << d;
  }

  // Brokers 2 and 3 started again: both values are theirs again.
  for (int node : {1, 2}) {
    ASSERT_TRUE(cluster_->stop(node)) << "broker " << node + 1;
    ASSERT_TRUE(cluster_->restart(node)) << "broker " << node + 1;
  }
  EXPECT_EQ(until([&] { return max_bytes_on(1); },
                  fmt::format("0 5000 {}", source_dynamic_default_broker)),
            fmt::format("0 5000 {}", source_dynamic_default_broker));
  EXPECT_EQ(
      until([&] { return max_bytes_on(2); }, fmt::format("0 50000 {}", source_dynamic_broker)),
      fmt::format("0 50000 {}", source_dynamic_broker));
  EXPECT_EQ(big_until(1, error_code::message_too_large), code(error_code::message_too_large));
  EXPECT_EQ(big_until(2, error_code::none), 0);
}

TEST_P(cluster_configs, topic_configs_apply_on_every_replica) {
  // A topic's config through a broker that holds no replica of it (broker 2 for on-1): its
  // leader applies it.
  EXPECT_EQ(alter(port(1), topic_resource, "on-1", "max.message.bytes", "5000"), "0");
  EXPECT_EQ(big_until(0, error_code::message_too_large), code(error_code::message_too_large));
  EXPECT_EQ(until([&] { return describe(port(2), topic_resource, "on-1", "max.message.bytes"); },
                  fmt::format("0 5000 {}", source_dynamic_topic)),
            fmt::format("0 5000 {}", source_dynamic_topic));

  // A replicated topic's config through its leader: every replica describes it.
  ASSERT_EQ(create_topic(*cluster_, "replicated", 1, 3), "");
  ASSERT_TRUE(wait_fully_replicated(*cluster_, "replicated", 30s)) << cluster_->diagnostics();
  auto d = describe_topic(*cluster_, "replicated");
  ASSERT_TRUE(d && d->size() == 1u);
  const int leader = (*d)[0].leader - 1;
  ASSERT_GE(leader, 0);
  EXPECT_EQ(alter(port(leader), topic_resource, "replicated", "retention.ms", "123456"), "0");
  for (int node = 0; node < 3; ++node) {
    EXPECT_EQ(
        until([&] { return describe(port(node), topic_resource, "replicated", "retention.ms"); },
              fmt::format("0 123456 {}", source_dynamic_topic)),
        fmt::format("0 123456 {}", source_dynamic_topic))
        << "broker " << node + 1;
  }
}

INSTANTIATE_TEST_SUITE_P(brokers, cluster_configs,
                         ::testing::Values(broker_kind::tarn, broker_kind::kafka), kind_name);

}  // namespace
}  // namespace tarn::test
