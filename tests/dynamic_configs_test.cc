// Dynamic broker configs end to end, against tarn and against Kafka 4.4.0 (scripts/kafka-ref)
// with the same assertions: Kafka's own kafka-configs.sh (ConfigCommand, which drives the Java
// Admin client's incrementalAlterConfigs and describeConfigs) sets and removes configs of broker 1
// and of the cluster-wide default, is refused keys Kafka cannot change at runtime and bad values
// with Kafka's messages, and sees a topic without overrides follow the new defaults; hand-built
// IncrementalAlterConfigs for another broker id, and Describe/Alter/IncrementalAlterConfigs of
// an unknown resource type; a lowered message.max.bytes refuses a larger Produce at once; 10,000
// configs in one request (tarn's memory bounded); min.insync.replicas kept one cluster setting
// while ELR is on; a resource named twice refused. tarn only: the dynamic configs survive SIGKILL
// and restart.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>
#include <thread>

#include "kafka_client.h"
#include "kafka_ref_broker.h"
#include "produce_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/alter_configs_request.h"
#include "protocol/messages/alter_configs_response.h"
#include "protocol/messages/describe_configs_request.h"
#include "protocol/messages/describe_configs_response.h"
#include "protocol/messages/incremental_alter_configs_request.h"
#include "protocol/messages/incremental_alter_configs_response.h"
#include "protocol/messages/produce_request.h"
#include "protocol/messages/produce_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using protocol::code;
using protocol::error_code;

// kafka-configs.sh against `bootstrap`: exit status and output without log lines and frames.
std::string configs_tool(const std::string& bootstrap, const std::string& args) {
  auto [rc, out] = run_command("timeout 120 java -cp '" + kafka_libs() +
                               "/*' org.apache.kafka.tools.ConfigCommand --bootstrap-server " +
                               bootstrap + " " + args + " 2>&1");
  out = std::regex_replace(out, std::regex("(^|\n)([0-9]{4}-[0-9]{2}-[0-9]{2}T|\tat )[^\n]*"), "");
  return "rc=" + std::to_string(rc) + "\n" + out;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class dynamic_configs : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
    if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
    if (auto skip = start_test_broker(GetParam(), {}, tarn_, port_); !skip.empty()) {
      GTEST_SKIP() << skip;
    }
    ASSERT_NE(port_, 0);
  }
  void TearDown() override {
    if (tarn_) tarn_->stop();
  }
  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string tool(const std::string& args) const { return configs_tool(bootstrap(), args); }

  std::unique_ptr<broker_process> tarn_;
  uint16_t port_ = 0;
};

TEST_P(dynamic_configs, kafka_configs_sets_describes_and_removes_broker_configs) {
#ifdef TARN_SANITIZED_BUILD
  // A JVM a command: the tool's output is the release suite's to check; the config APIs have the
  // hand-built tests of this file, which the sanitizer trees run.
  GTEST_SKIP() << "kafka-configs.sh's test runs in the release build only";
#endif
  auto [rc, out] = run_command("timeout 120 java -cp '" + kafka_libs() +
                               "/*' org.apache.kafka.tools.TopicCommand --bootstrap-server " +
                               bootstrap() + " --create --topic dyn-follow --partitions 1 2>&1");
  ASSERT_EQ(rc, 0) << out;

  EXPECT_EQ(tool("--alter --entity-type brokers --entity-name 1 --add-config "
                 "log.retention.ms=12345"),
            "rc=0\nCompleted updating config for broker 1.\n");
  EXPECT_EQ(tool("--alter --entity-type brokers --entity-default --add-config "
                 "log.retention.bytes=999999"),
            "rc=0\nCompleted updating default config for brokers in the cluster.\n");
  std::string r = tool("--alter --entity-type brokers --entity-name 1 --add-config log.dirs=/x");
  EXPECT_TRUE(contains(r, "rc=1\n")) << r;
  EXPECT_TRUE(contains(r,
                       "InvalidRequestException: Cannot update these configs dynamically: "
                       "[log.dirs]"))
      << r;
  r = tool("--alter --entity-type brokers --entity-name 1 --add-config log.retention.ms=abc");
  EXPECT_TRUE(contains(r,
                       "InvalidRequestException: Invalid value abc for configuration "
                       "log.retention.ms: Not a number of type LONG"))
      << r;

  // Kafka's brokers apply a change when its record reaches them: wait for it (bounded).
  std::string d;
  for (int i = 0; i < 50; ++i) {
    d = tool("--describe --entity-type brokers --entity-name 1");
    if (contains(d, "log.retention.ms=12345")) break;
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_TRUE(contains(d,
                       "rc=0\nDynamic configs for broker 1 are:\n  log.retention.ms=12345 "
                       "sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=12345"))
      << d;
  d = tool("--describe --entity-type brokers --entity-default");
  EXPECT_TRUE(contains(d,
                       "Default configs for brokers in the cluster are:\n"
                       "  log.retention.bytes=999999 sensitive=false "
                       "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=999999}"))
      << d;
  d = tool("--describe --entity-type brokers --entity-name 1 --all");
  EXPECT_TRUE(contains(d,
                       "  log.retention.bytes=999999 sensitive=false "
                       "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=999999"))
      << d;
  // The topic without overrides follows the new defaults.
  d = tool("--describe --entity-type topics --entity-name dyn-follow --all");
  EXPECT_TRUE(contains(d,
                       "  retention.ms=12345 sensitive=false "
                       "synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=12345"))
      << d;
  EXPECT_TRUE(contains(d,
                       "  retention.bytes=999999 sensitive=false "
                       "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=999999"))
      << d;

  EXPECT_EQ(tool("--alter --entity-type brokers --entity-name 1 --delete-config log.retention.ms"),
            "rc=0\nCompleted updating config for broker 1.\n");
  EXPECT_EQ(tool("--alter --entity-type brokers --entity-default --delete-config "
                 "log.retention.bytes"),
            "rc=0\nCompleted updating default config for brokers in the cluster.\n");
  for (int i = 0; i < 50; ++i) {
    d = tool("--describe --entity-type topics --entity-name dyn-follow --all");
    if (contains(d, "  retention.bytes=-1 ")) break;
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_TRUE(contains(d, "  retention.ms=604800000 ")) << d;
  EXPECT_TRUE(contains(d, "  retention.bytes=-1 ")) << d;
}

TEST_P(dynamic_configs, other_broker_ids_and_unknown_resource_types) {
  auto c = tools::kafka_client::connect(bootstrap());
  ASSERT_TRUE(c.has_value());
  protocol::incremental_alter_configs_request req;
  req.resources.push_back({4, "7", {{"log.retention.ms", 0, "1"}}});
  req.resources.push_back({99, "x", {{"log.retention.ms", 0, "1"}}});
  std::vector<uint8_t> buf;
  auto r = tools::call<protocol::incremental_alter_configs_response>(**c, req, 1, buf);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->responses.size(), 2u);
  EXPECT_EQ(r->responses[0].error_code, code(error_code::invalid_request))
      << r->responses[0].error_message.value_or("");
  EXPECT_EQ(r->responses[1].error_code, code(error_code::invalid_request))
      << r->responses[1].error_message.value_or("");
  // DescribeConfigs and the legacy AlterConfigs of an unknown resource type, beside a known one.
  protocol::describe_configs_request d;
  d.resources.push_back({99, "x", std::nullopt});
  d.resources.push_back({4, "1", std::vector<std::string_view>{"log.retention.ms"}});
  for (int16_t v = 1; v <= 4; ++v) {
    auto dr = tools::call<protocol::describe_configs_response>(**c, d, v, buf);
    ASSERT_TRUE(dr.has_value()) << "v" << v;
    ASSERT_EQ(dr->results.size(), 2u) << "v" << v;
    EXPECT_EQ(dr->results[0].error_code, code(error_code::invalid_request)) << "v" << v;
    // Kafka 4.4 answers with INVALID_REQUEST's default message.
    EXPECT_EQ(dr->results[0].error_message, protocol::describe(error_code::invalid_request).message)
        << "v" << v;
    EXPECT_EQ(dr->results[0].resource_type, 99) << "v" << v;
    EXPECT_TRUE(dr->results[0].configs.empty()) << "v" << v;
    // One unknown type fails the whole request in Kafka 4.4, the broker resource included.
    EXPECT_EQ(dr->results[1].error_code, code(error_code::invalid_request)) << "v" << v;
    EXPECT_TRUE(dr->results[1].configs.empty()) << "v" << v;
  }
  protocol::alter_configs_request a;
  a.resources.push_back({99, "x", {{"log.retention.ms", "1"}}});
  a.resources.push_back({4, "1", {{"log.retention.ms", "1"}}});
  a.validate_only = true;
  for (int16_t v = 0; v <= 2; ++v) {
    auto ar = tools::call<protocol::alter_configs_response>(**c, a, v, buf);
    ASSERT_TRUE(ar.has_value()) << "v" << v;
    ASSERT_EQ(ar->responses.size(), 2u) << "v" << v;
    EXPECT_EQ(ar->responses[0].error_code, code(error_code::invalid_request)) << "v" << v;
    EXPECT_EQ(ar->responses[0].error_message, "Unknown resource type 99") << "v" << v;
    EXPECT_EQ(ar->responses[1].error_code, 0)
        << "v" << v << " " << ar->responses[1].error_message.value_or("");
  }
}

// message.max.bytes lowered at runtime (IncrementalAlterConfigs BROKER 1): a Produce above the
// new limit is MESSAGE_TOO_LARGE without a restart, one below it passes, and deleting the key
// brings the default back.
TEST_P(dynamic_configs, lowered_message_max_bytes_refuses_a_larger_produce_at_once) {
  static int runs = 0;  // a topic of this run: the reference broker outlives a --gtest_repeat
  const std::string topic = "dyn-max-" + std::to_string(++runs);
  auto [rc, out] = run_command("timeout 120 java -cp '" + kafka_libs() +
                               "/*' org.apache.kafka.tools.TopicCommand --bootstrap-server " +
                               bootstrap() + " --create --topic " + topic + " --partitions 1 2>&1");
  ASSERT_EQ(rc, 0) << out;
  auto c = tools::kafka_client::connect(bootstrap());
  ASSERT_TRUE(c.has_value());
  std::vector<uint8_t> buf;
  const std::vector<uint8_t> big = value_batch(std::string(20000, 'b'));
  const std::vector<uint8_t> small = value_batch(std::string(100, 's'));
  auto produce = [&](const std::vector<uint8_t>& batch) {
    protocol::produce_request req;
    req.acks = -1;
    req.timeout_ms = 30000;
    auto& t = req.topic_data.emplace_back();
    t.name = topic;
    auto& p = t.partition_data.emplace_back();
    p.index = 0;
    p.records = batch;
    auto r = tools::call<protocol::produce_response>(**c, req, 9, buf);
    return r ? r->responses[0].partition_responses[0].error_code : int16_t{-1};
  };
  auto alter = [&](int8_t op, std::optional<std::string_view> value) {
    protocol::incremental_alter_configs_request req;
    req.resources.push_back({4, "1", {{"message.max.bytes", op, value}}});
    auto r = tools::call<protocol::incremental_alter_configs_response>(**c, req, 1, buf);
    if (!r) return int16_t{-1};
    // NONE comes without a message, as Kafka's (cluster_configs_test alters through
    // client::config_admin, which does not show it).
    if (r->responses[0].error_code == 0) {
      EXPECT_FALSE(r->responses[0].error_message.has_value()) << *r->responses[0].error_message;
    }
    return r->responses[0].error_code;
  };
  // Until the answer is `want` (Kafka elects the leader and applies broker configs when their
  // records reach it): bounded at 10 s.
  auto produce_until = [&](const std::vector<uint8_t>& batch, int16_t want) {
    int16_t got = -1;
    for (int i = 0; i < 50 && got != want; ++i) {
      if (i > 0) std::this_thread::sleep_for(200ms);
      got = produce(batch);
    }
    return got;
  };
  EXPECT_EQ(produce_until(big, 0), 0);
  ASSERT_EQ(alter(0, "5000"), 0);
  EXPECT_EQ(produce_until(big, code(error_code::message_too_large)),
            code(error_code::message_too_large));
  EXPECT_EQ(produce(small), 0);
  ASSERT_EQ(alter(1, std::nullopt), 0);  // the reference broker is shared: put it back
  EXPECT_EQ(produce_until(big, 0), 0);
}

// BROKER_LOGGER (resource type 8): describe and set the root logger's level, and every refusal
// with the code and message Kafka 4.4.0 answers.
TEST_P(dynamic_configs, broker_logger_levels) {
  auto c = tools::kafka_client::connect(bootstrap());
  ASSERT_TRUE(c.has_value());
  std::vector<uint8_t> buf;
  auto describe = [&](std::string_view name, int8_t type = 8, std::string_view key = "root") {
    protocol::describe_configs_request req;
    auto& res = req.resources.emplace_back();
    res.resource_type = type;
    res.resource_name = name;
    res.configuration_keys.emplace().push_back(key);
    auto r = tools::call<protocol::describe_configs_response>(**c, req, 4, buf);
    EXPECT_TRUE(r.has_value());
    std::string out;
    if (!r) return out;
    for (const auto& result : r->results) {
      out += std::to_string(result.error_code) + " " +
             std::string(result.error_message.value_or("<null>"));
      for (const auto& e : result.configs) {
        out +=
            fmt::format(" | {}={} source={} ro={} sensitive={}", e.name, e.value.value_or("<null>"),
                        e.config_source, e.read_only, e.is_sensitive);
      }
    }
    return out;
  };
  EXPECT_EQ(describe("1"), "0  | root=INFO source=6 ro=false sensitive=false");
  // A described resource's ErrorMessage is "" (Kafka 4.4), for brokers as for loggers.
  EXPECT_EQ(describe("1", 4, "num.io.threads").substr(0, 3), "0  ");
  EXPECT_EQ(describe(""), "42 Broker id must not be empty");
  EXPECT_EQ(describe("7"), "42 Unexpected broker id, expected 1 but received 7");

  auto alter = [&](std::string_view name,
                   std::vector<std::tuple<std::string, int8_t, std::optional<std::string>>> ops,
                   bool validate_only) {
    protocol::incremental_alter_configs_request req;
    std::vector<std::string> keep;
    keep.reserve(16);
    auto& res = req.resources.emplace_back();
    res.resource_type = 8;
    res.resource_name = name;
    for (const auto& [key, op, value] : ops) {
      auto& o = res.configs.emplace_back();
      o.name = keep.emplace_back(key);
      o.config_operation = op;
      if (value) {
        o.value = keep.emplace_back(*value);
      } else {
        o.value = std::nullopt;
      }
    }
    req.validate_only = validate_only;
    auto r = tools::call<protocol::incremental_alter_configs_response>(**c, req, 1, buf);
    EXPECT_TRUE(r.has_value());
    if (!r || r->responses.size() != 1) return std::string("no answer");
    return std::to_string(r->responses[0].error_code) + " " +
           std::string(r->responses[0].error_message.value_or("<null>"));
  };
  EXPECT_EQ(alter("1", {{"root", 0, "WARN"}}, true), "0 <null>");
  EXPECT_EQ(describe("1"), "0  | root=INFO source=6 ro=false sensitive=false");
  EXPECT_EQ(alter("1", {{"no.such.logger", 0, "INFO"}}, false),
            "40 Logger no.such.logger does not exist!");
  EXPECT_EQ(alter("1", {{"root", 0, "LOUD"}}, false),
            "40 Cannot set the log level of root to LOUD as it is not a supported log level. "
            "Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN");
  EXPECT_EQ(alter("1", {{"root", 1, std::nullopt}}, false),
            "42 Removing the log level of the root logger is not allowed");
  EXPECT_EQ(alter("1", {{"root", 2, "INFO"}}, false),
            "42 APPEND operation is not allowed for the BROKER_LOGGER resource");
  EXPECT_EQ(alter("1", {{"root", 3, "INFO"}}, false),
            "42 SUBTRACT operation is not allowed for the BROKER_LOGGER resource");
  EXPECT_EQ(alter("7", {{"root", 0, "INFO"}}, false),
            "42 Unexpected node id. Expected 1, but received 7");
  EXPECT_EQ(alter("x", {{"root", 0, "INFO"}}, false),
            "42 Node id must be an integer, but it is: x");
  // A key twice is refused before anything else; one bad operation fails the resource and
  // applies nothing.
  EXPECT_EQ(alter("1", {{"root", 0, "WARN"}, {"root", 2, "INFO"}}, false),
            "42 Error due to duplicate config keys");
  EXPECT_EQ(alter("1", {{"root", 0, "WARN"}, {"no.such.logger", 0, "INFO"}}, false),
            "40 Logger no.such.logger does not exist!");
  EXPECT_EQ(describe("1"), "0  | root=INFO source=6 ro=false sensitive=false");
  EXPECT_EQ(alter("1", {{"root", 0, "WARN"}}, false), "0 <null>");
  EXPECT_EQ(describe("1"), "0  | root=WARN source=6 ro=false sensitive=false");
  EXPECT_EQ(alter("1", {{"root", 0, "INFO"}}, false), "0 <null>");
  EXPECT_EQ(describe("1"), "0  | root=INFO source=6 ro=false sensitive=false");
}

// The legacy AlterConfigs (33): the given set replaces the resource's configs, at every version.
TEST_P(dynamic_configs, legacy_alter_configs_replaces_the_whole_set) {
  auto [rc, out] =
      run_command("timeout 120 java -cp '" + kafka_libs() +
                  "/*' org.apache.kafka.tools.TopicCommand --bootstrap-server " + bootstrap() +
                  " --create --topic dyn-legacy --partitions 1 --config "
                  "retention.ms=1000 --config cleanup.policy=compact 2>&1");
  ASSERT_EQ(rc, 0) << out;
  auto c = tools::kafka_client::connect(bootstrap());
  ASSERT_TRUE(c.has_value());
  std::vector<uint8_t> buf;
  using legacy = protocol::alter_configs_request;
  for (int16_t v = 0; v <= 2; ++v) {
    legacy req;
    req.resources.push_back({2, "dyn-legacy", {{"retention.ms", "2000"}}});
    req.resources.push_back({2, "dyn-legacy-missing", {{"retention.ms", "2000"}}});
    req.resources.push_back({4, "1", {{"log.dirs", "/x"}}});
    auto r = tools::call<protocol::alter_configs_response>(**c, req, v, buf);
    ASSERT_TRUE(r.has_value()) << "v" << v;
    ASSERT_EQ(r->responses.size(), 3u);
    EXPECT_EQ(r->responses[0].error_code, 0) << r->responses[0].error_message.value_or("");
    EXPECT_EQ(r->responses[1].error_code, code(error_code::unknown_topic_or_partition)) << "v" << v;
    EXPECT_EQ(r->responses[2].error_code, code(error_code::invalid_request)) << "v" << v;
    EXPECT_EQ(r->responses[2].error_message, "Cannot update these configs dynamically: [log.dirs]");
    legacy null_value;
    null_value.resources.push_back({2, "dyn-legacy", {{"retention.ms", std::nullopt}}});
    null_value.validate_only = true;
    r = tools::call<protocol::alter_configs_response>(**c, null_value, v, buf);
    ASSERT_TRUE(r.has_value()) << "v" << v;
    EXPECT_EQ(r->responses[0].error_code, code(error_code::invalid_request))
        << "v" << v << " " << r->responses[0].error_message.value_or("");
  }
  // cleanup.policy was not in the set: gone, back to its default.
  protocol::describe_configs_request d;
  d.resources.push_back(
      {2, "dyn-legacy", std::vector<std::string_view>{"cleanup.policy", "retention.ms"}});
  std::string seen;
  for (int i = 0; i < 50; ++i) {
    auto r = tools::call<protocol::describe_configs_response>(**c, d, 4, buf);
    ASSERT_TRUE(r.has_value());
    seen.clear();
    for (const auto& e : r->results[0].configs) {
      seen += std::string(e.name) + "=" + std::string(e.value.value_or("null")) + ":" +
              std::to_string(e.config_source) + " ";
    }
    if (seen == "cleanup.policy=delete:5 retention.ms=2000:1 ") break;
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(seen, "cleanup.policy=delete:5 retention.ms=2000:1 ");
}

// KIP-966: with eligible leader replicas on (eligible.leader.replicas.version 1, as a new Kafka
// 4.4 cluster and tarn finalize it) min.insync.replicas is one setting for the cluster: set or
// deleted for one broker, or deleted from the cluster default, it is INVALID_CONFIG with Kafka's
// controller's messages, through IncrementalAlterConfigs and the legacy AlterConfigs alike; the
// cluster default may change. Validate-only, so the shared Kafka keeps its configs.
TEST_P(dynamic_configs, min_insync_replicas_stays_one_cluster_setting_while_elr_is_on) {
  auto c = tools::kafka_client::connect(bootstrap());
  ASSERT_TRUE(c.has_value());
  std::vector<uint8_t> buf;
  const std::string broker_level =
      "Broker-level min.insync.replicas cannot be altered while ELR is enabled.";
  const std::string cluster_level =
      "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.";
  // One resource a request (a resource named twice is refused as such: the test below).
  const auto alter = [&](int8_t op, const std::string& name, std::optional<std::string> value) {
    protocol::incremental_alter_configs_request req;
    req.resources.push_back({4, name, {{"min.insync.replicas", op, value}}});
    req.validate_only = true;
    auto r = tools::call<protocol::incremental_alter_configs_response>(**c, req, 1, buf);
    if (!r || r->responses.size() != 1) return std::string("no answer");
    return std::to_string(r->responses[0].error_code) + " " +
           std::string(r->responses[0].error_message.value_or(""));
  };
  const std::string invalid_config = std::to_string(code(error_code::invalid_config)) + " ";
  EXPECT_EQ(alter(0, "1", "2"), invalid_config + broker_level);           // SET
  EXPECT_EQ(alter(1, "1", std::nullopt), invalid_config + broker_level);  // DELETE
  EXPECT_EQ(alter(1, "", std::nullopt), invalid_config + cluster_level);
  EXPECT_EQ(alter(0, "", "1"), "0 ");

  protocol::alter_configs_request legacy;
  legacy.resources.push_back({4, "1", {{"min.insync.replicas", "2"}}});
  legacy.resources.push_back({4, "", {{"min.insync.replicas", "1"}}});
  legacy.validate_only = true;
  for (int16_t v = 0; v <= 2; ++v) {
    auto ar = tools::call<protocol::alter_configs_response>(**c, legacy, v, buf);
    ASSERT_TRUE(ar.has_value()) << "v" << v;
    ASSERT_EQ(ar->responses.size(), 2u) << "v" << v;
    EXPECT_EQ(ar->responses[0].error_code, code(error_code::invalid_config)) << "v" << v;
    EXPECT_EQ(ar->responses[0].error_message.value_or(""), broker_level) << "v" << v;
    EXPECT_EQ(ar->responses[1].error_code, 0)
        << "v" << v << " " << ar->responses[1].error_message.value_or("");
  }
}

// A resource named twice in one AlterConfigs or IncrementalAlterConfigs: every entry naming it is
// INVALID_REQUEST "Each resource must appear at most once." and none is altered; the other
// resources of the request are served.
TEST_P(dynamic_configs, a_resource_named_twice_is_refused_in_every_entry) {
  auto c = tools::kafka_client::connect(bootstrap());
  ASSERT_TRUE(c.has_value());
  std::vector<uint8_t> buf;
  const std::string twice = "Each resource must appear at most once.";
  protocol::incremental_alter_configs_request req;
  req.resources.push_back({4, "1", {{"log.retention.ms", 0, "1000"}}});
  req.resources.push_back({4, "", {{"log.retention.ms", 0, "2000"}}});
  req.resources.push_back({4, "1", {{"log.retention.bytes", 0, "1000"}}});
  req.validate_only = true;
  auto r = tools::call<protocol::incremental_alter_configs_response>(**c, req, 1, buf);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->responses.size(), 3u);
  for (size_t i : {0u, 2u}) {
    EXPECT_EQ(r->responses[i].error_code, code(error_code::invalid_request)) << i;
    EXPECT_EQ(r->responses[i].error_message.value_or(""), twice) << i;
    EXPECT_EQ(r->responses[i].resource_name, "1") << i;
  }
  EXPECT_EQ(r->responses[1].error_code, 0) << r->responses[1].error_message.value_or("");

  // The legacy AlterConfigs has the same check in Kafka 4.4's ConfigAdminManager.preprocess, but
  // Kafka 4.4.0 left such a request unanswered (30 s, twice, on 2026-12-07; topics or brokers
  // named twice alike): tarn answers it as the check says (docs/compatibility.md).
  if (GetParam() == broker_kind::kafka) return;
  protocol::alter_configs_request legacy;
  legacy.resources.push_back({2, "dyn-twice-missing", {{"retention.ms", "1000"}}});
  legacy.resources.push_back({4, "1", {{"log.retention.ms", "1000"}}});
  legacy.resources.push_back({2, "dyn-twice-missing", {{"retention.ms", "2000"}}});
  legacy.validate_only = true;
  for (int16_t v = 0; v <= 2; ++v) {
    auto ar = tools::call<protocol::alter_configs_response>(**c, legacy, v, buf);
    ASSERT_TRUE(ar.has_value()) << "v" << v;
    ASSERT_EQ(ar->responses.size(), 3u) << "v" << v;
    for (size_t i : {0u, 2u}) {
      EXPECT_EQ(ar->responses[i].error_code, code(error_code::invalid_request)) << "v" << v;
      EXPECT_EQ(ar->responses[i].error_message.value_or(""), twice) << "v" << v;
    }
    EXPECT_EQ(ar->responses[1].error_code, 0)
        << "v" << v << " " << ar->responses[1].error_message.value_or("");
  }
}

// Hostile sizes: 10,000 configs in one resource, for a topic (unknown keys) and, validate-only,
// for the broker (unknown keys are accepted); the broker answers both and keeps serving.
TEST_P(dynamic_configs, ten_thousand_configs_in_one_request) {
  const long baseline = tarn_ ? tarn_->process().peak_rss_kib() : -1;
  auto c = tools::kafka_client::connect(bootstrap());
  ASSERT_TRUE(c.has_value());
  auto [rc, out] = run_command("timeout 120 java -cp '" + kafka_libs() +
                               "/*' org.apache.kafka.tools.TopicCommand --bootstrap-server " +
                               bootstrap() + " --create --topic dyn-many --partitions 1 2>&1");
  ASSERT_EQ(rc, 0) << out;
  std::vector<std::string> names;
  for (int i = 0; i < 10000; ++i) names.push_back("hostile.key." + std::to_string(i));
  protocol::incremental_alter_configs_request req;
  protocol::incremental_alter_configs_request::alter_configs_resource topic{2, "dyn-many", {}};
  protocol::incremental_alter_configs_request::alter_configs_resource broker{4, "1", {}};
  for (const auto& n : names) {
    topic.configs.push_back({n, 0, "1"});
    broker.configs.push_back({n, 0, "1"});
  }
  req.resources.push_back(topic);
  req.resources.push_back(broker);
  req.validate_only = true;
  std::vector<uint8_t> buf;
  auto r = tools::call<protocol::incremental_alter_configs_response>(**c, req, 1, buf);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->responses.size(), 2u);
  EXPECT_EQ(r->responses[0].error_code, code(error_code::invalid_config))
      << r->responses[0].error_message.value_or("");
  EXPECT_EQ(r->responses[1].error_code, 0) << r->responses[1].error_message.value_or("");
  // Still serving.
  EXPECT_EQ(tool("--describe --entity-type brokers --entity-name 1"),
            "rc=0\nDynamic configs for broker 1 are:\n");
  // tarn's peak memory within what the request could justify (memory_growth_bound_kib).
  if (tarn_) {
    const long peak = tarn_->process().peak_rss_kib();
    EXPECT_LE(peak, baseline + memory_growth_bound_kib(req.encoded_size(1)))
        << "sent " << req.encoded_size(1) << " bytes, peak " << peak << " KiB, baseline "
        << baseline;
  }
}

INSTANTIATE_TEST_SUITE_P(brokers, dynamic_configs,
                         ::testing::Values(broker_kind::tarn, broker_kind::kafka), kind_name);

TEST(dynamic_configs_restart, survive_sigkill_and_apply_at_start) {
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  temp_dir dir;
  const auto data = dir.path() / "data";
  {
    broker_process broker({}, data);
    ASSERT_NE(broker.port(), 0) << broker.output();
    const std::string b = "127.0.0.1:" + std::to_string(broker.port());
    auto [rc, out] =
        run_command(std::string("timeout 30 ") + TARN_BINARY + " topics --bootstrap-server " + b +
                    " --create --topic follows --partitions 2");
    ASSERT_EQ(rc, 0) << out;
    EXPECT_EQ(configs_tool(b,
                           "--alter --entity-type brokers --entity-name 1 --add-config "
                           "log.retention.ms=4242,log.cleaner.threads=2"),
              "rc=0\nCompleted updating config for broker 1.\n");
    EXPECT_EQ(configs_tool(b,
                           "--alter --entity-type brokers --entity-default --add-config "
                           "log.segment.bytes=2097152"),
              "rc=0\nCompleted updating default config for brokers in the cluster.\n");
    EXPECT_TRUE(contains(broker.output(), "log cleaner reconfigured: 2 thread(s)"))
        << broker.output();
    broker.process().send_signal(SIGKILL);
    broker.process().wait_exit(15s);
  }
  broker_process broker({}, data);
  ASSERT_NE(broker.port(), 0) << broker.output();
  const std::string b = "127.0.0.1:" + std::to_string(broker.port());
  std::string d = configs_tool(b, "--describe --entity-type topics --entity-name follows --all");
  EXPECT_TRUE(contains(d,
                       "  retention.ms=4242 sensitive=false "
                       "synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=4242"))
      << d;
  EXPECT_TRUE(contains(d,
                       "  segment.bytes=2097152 sensitive=false "
                       "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=2097152"))
      << d;
  d = configs_tool(b, "--describe --entity-type brokers --entity-name 1");
  EXPECT_TRUE(contains(d,
                       "  log.cleaner.threads=2 sensitive=false "
                       "synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2"))
      << d;
}

}  // namespace
}  // namespace tarn::test
