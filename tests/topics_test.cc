// Topic management end to end: the real tarn binary driven by Kafka 4.4.0's Java Admin client,
// confluent-kafka-python, kafka-python, kcat, `tarn topics`, and hand-built requests for the
// error branches (bad names, existing topics, replication factor 2, bad config values, unknown
// topics and ids). One broker serves the whole suite; the restart tests (a clean restart, and
// SIGKILL with the metadata log's last entry torn) have their own.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>

#include "base/uuid_text.h"
#include "kafka_client.h"
#include "protocol/error_codes.h"
#include "protocol/messages/create_topics_request.h"
#include "protocol/messages/create_topics_response.h"
#include "protocol/messages/delete_topics_request.h"
#include "protocol/messages/delete_topics_response.h"
#include "protocol/messages/describe_configs_request.h"
#include "protocol/messages/describe_configs_response.h"
#include "protocol/messages/incremental_alter_configs_request.h"
#include "protocol/messages/incremental_alter_configs_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using protocol::error_code;

class topics : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { broker_ = new broker_process(); }
  static void TearDownTestSuite() {
    broker_->stop();
    delete broker_;
    broker_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(broker_->port(), 0) << broker_->output(); }

  static std::string bootstrap() { return "127.0.0.1:" + std::to_string(broker_->port()); }
  static std::unique_ptr<tools::kafka_client> client() {
    auto c = tools::kafka_client::connect(bootstrap());
    EXPECT_TRUE(c.has_value());
    return c ? std::move(*c) : nullptr;
  }
  static std::string tarn_topics(const std::string& args) {
    auto [rc, out] = run_command(std::string("timeout 30 ") + TARN_BINARY +
                                 " topics --bootstrap-server " + bootstrap() + " " + args);
    return "rc=" + std::to_string(rc) + "\n" + out;
  }

  static broker_process* broker_;
};
broker_process* topics::broker_ = nullptr;

protocol::create_topics_response create(
    tools::kafka_client& c, std::vector<uint8_t>& buf, std::string_view name, int32_t partitions,
    int16_t replication_factor, std::vector<std::pair<std::string, std::string>> configs = {},
    int16_t version = 7, bool validate_only = false) {
  protocol::create_topics_request req;
  protocol::create_topics_request::creatable_topic t;
  t.name = name;
  t.num_partitions = partitions;
  t.replication_factor = replication_factor;
  for (const auto& [k, v] : configs) t.configs.push_back({k, v});
  req.topics.push_back(t);
  req.validate_only = validate_only;
  auto r = tools::call<protocol::create_topics_response>(c, req, version, buf);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error());
  return r ? *r : protocol::create_topics_response{};
}

protocol::metadata_response metadata(tools::kafka_client& c, std::vector<uint8_t>& buf,
                                     std::optional<std::vector<std::string>> names, int16_t version,
                                     bool allow_auto_create = true) {
  protocol::metadata_request req;
  if (names) {
    req.topics.emplace();
    for (const auto& n : *names) {
      protocol::metadata_request::metadata_request_topic t;
      t.name = n;
      req.topics->push_back(t);
    }
  }
  req.allow_auto_topic_creation = allow_auto_create;
  auto r = tools::call<protocol::metadata_response>(c, req, version, buf);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error());
  return r ? *r : protocol::metadata_response{};
}

TEST_F(topics, create_errors_match_kafka) {
  auto c = client();
  ASSERT_TRUE(c);
  std::vector<uint8_t> buf;
  auto ok = create(*c, buf, "errs", 2, 1, {{"retention.ms", "5000"}});
  ASSERT_EQ(ok.topics.size(), 1u);
  EXPECT_EQ(ok.topics[0].error_code, 0);
  EXPECT_EQ(ok.topics[0].num_partitions, 2);
  EXPECT_EQ(ok.topics[0].replication_factor, 1);
  EXPECT_FALSE(ok.topics[0].topic_id.is_zero());
  ASSERT_TRUE(ok.topics[0].configs.has_value());
  bool saw_retention = false;
  for (const auto& cfg : *ok.topics[0].configs) {
    if (cfg.name == "retention.ms") {
      saw_retention = true;
      EXPECT_EQ(cfg.value, "5000");
      EXPECT_EQ(cfg.config_source, 1);  // DYNAMIC_TOPIC_CONFIG
    }
  }
  EXPECT_TRUE(saw_retention);

  struct bad_case {
    std::string name;
    int32_t partitions;
    int16_t rf;
    std::vector<std::pair<std::string, std::string>> configs;
    error_code expected;
    std::string message;
  };
  const std::vector<bad_case> cases = {
      {"errs", 1, 1, {}, error_code::topic_already_exists, "Topic 'errs' already exists."},
      {"bad name",
       1,
       1,
       {},
       error_code::invalid_topic_exception,
       "Topic name is invalid: 'bad name' contains one or more characters other than ASCII "
       "alphanumerics, '.', '_' and '-'"},
      {"..",
       1,
       1,
       {},
       error_code::invalid_topic_exception,
       "Topic name is invalid: '..' is not "
       "allowed"},
      {"rf2",
       1,
       2,
       {},
       error_code::invalid_replication_factor,
       "Unable to replicate the partition 2 time(s): The target replication factor of 2 cannot "
       "be reached because only 1 broker(s) are registered or some brokers have all their log "
       "directories cordoned."},
      {"rf0",
       1,
       0,
       {},
       error_code::invalid_replication_factor,
       "Replication factor must be larger than 0, or -1 to use the default value."},
      {"p0",
       0,
       1,
       {},
       error_code::invalid_partitions,
       "Number of partitions was set to an invalid non-positive value."},
      {"badcfg",
       1,
       1,
       {{"retention.ms", "abc"}},
       error_code::invalid_config,
       "Invalid value abc for configuration retention.ms: Not a number of type LONG"},
      {"badcfg",
       1,
       1,
       {{"segment.bytes", "12"}},
       error_code::invalid_config,
       "Invalid value 12 for configuration segment.bytes: Value must be at least 1048576"},
      {"badcfg",
       1,
       1,
       {{"no.such", "1"}},
       error_code::invalid_config,
       "Unknown topic config name: no.such"},
  };
  for (const auto& bc : cases) {
    auto r = create(*c, buf, bc.name, bc.partitions, bc.rf, bc.configs);
    ASSERT_EQ(r.topics.size(), 1u);
    EXPECT_EQ(r.topics[0].error_code, code(bc.expected)) << bc.name;
    EXPECT_EQ(r.topics[0].error_message.value_or("<null>"), bc.message) << bc.name;
    EXPECT_EQ(r.topics[0].num_partitions, -1);
  }
  // Old version (v2, no v5 fields) and validate-only.
  auto v2 = create(*c, buf, "errs", 1, 1, {}, 2);
  EXPECT_EQ(v2.topics[0].error_code, code(error_code::topic_already_exists));
  auto vo = create(*c, buf, "vonly", 3, -1, {}, 7, true);
  EXPECT_EQ(vo.topics[0].error_code, 0);
  EXPECT_EQ(vo.topics[0].num_partitions, 3);
  auto md = metadata(*c, buf, std::vector<std::string>{"vonly"}, 12, false);
  EXPECT_EQ(md.topics[0].error_code, code(error_code::unknown_topic_or_partition));
  // The same name twice in one request: one result for it, after the other topic's, and nothing
  // created (Kafka 4.4 answers so; checked with raw CreateTopics v4 requests).
  protocol::create_topics_request dup;
  protocol::create_topics_request::creatable_topic t;
  t.name = "dup";
  t.num_partitions = 1;
  t.replication_factor = 1;
  protocol::create_topics_request::creatable_topic other = t;
  other.name = "dup-other";
  dup.topics = {t, t, other};
  auto d = tools::call<protocol::create_topics_response>(*c, dup, 7, buf);
  ASSERT_TRUE(d.has_value());
  ASSERT_EQ(d->topics.size(), 2u);
  EXPECT_EQ(d->topics[0].name, "dup-other");
  EXPECT_EQ(d->topics[0].error_code, 0);
  EXPECT_EQ(d->topics[1].name, "dup");
  EXPECT_EQ(d->topics[1].error_code, code(error_code::invalid_request));
  EXPECT_EQ(d->topics[1].error_message.value_or("<null>"), "Duplicate topic name.");
  EXPECT_EQ(d->topics[1].num_partitions, -1);
  md = metadata(*c, buf, std::vector<std::string>{"dup"}, 12, false);
  EXPECT_EQ(md.topics[0].error_code, code(error_code::unknown_topic_or_partition));
}

TEST_F(topics, metadata_versions_auto_creation_and_ids) {
  auto c = client();
  ASSERT_TRUE(c);
  std::vector<uint8_t> buf;
  ASSERT_EQ(create(*c, buf, "md", 3, -1).topics[0].error_code, 0);
  for (int16_t v = 0; v <= 13; ++v) {
    auto r = metadata(*c, buf, std::vector<std::string>{"md"}, v);
    ASSERT_EQ(r.topics.size(), 1u) << v;
    EXPECT_EQ(r.topics[0].error_code, 0) << v;
    ASSERT_EQ(r.topics[0].partitions.size(), 3u) << v;
    EXPECT_EQ(r.topics[0].partitions[2].partition_index, 2);
    EXPECT_EQ(r.topics[0].partitions[2].leader_id, 1);
    EXPECT_EQ(r.topics[0].partitions[2].replica_nodes, std::vector<int32_t>{1});
    ASSERT_EQ(r.brokers.size(), 1u);
    EXPECT_EQ(r.brokers[0].port, broker_->port());
    EXPECT_EQ(r.brokers[0].host, "127.0.0.1");
    if (v >= 1) {
      EXPECT_EQ(r.controller_id, 1);
    }
    if (v >= 2) {
      EXPECT_EQ(r.cluster_id.value_or("").size(), 22u);
    }
    if (v >= 7) {
      EXPECT_EQ(r.topics[0].partitions[0].leader_epoch, 0);
    }
    if (v >= 10) {
      EXPECT_FALSE(r.topics[0].topic_id.is_zero());
    }
  }
  // All topics: v0 with an empty list, v1+ with a null list.
  auto all0 = metadata(*c, buf, std::vector<std::string>{}, 0);
  auto all12 = metadata(*c, buf, std::nullopt, 12);
  EXPECT_GE(all0.topics.size(), 1u);
  EXPECT_EQ(all0.topics.size(), all12.topics.size());
  EXPECT_TRUE(metadata(*c, buf, std::vector<std::string>{}, 12).topics.empty());
  // Invalid names, auto-creation refused by the request, then allowed (Kafka 4.4 answers
  // UNKNOWN_TOPIC_OR_PARTITION to the request that creates the topic).
  EXPECT_EQ(metadata(*c, buf, std::vector<std::string>{"a/b"}, 12).topics[0].error_code,
            code(error_code::invalid_topic_exception));
  EXPECT_EQ(metadata(*c, buf, std::vector<std::string>{"auto1"}, 12, false).topics[0].error_code,
            code(error_code::unknown_topic_or_partition));
  EXPECT_EQ(metadata(*c, buf, std::vector<std::string>{"auto1"}, 12, true).topics[0].error_code,
            code(error_code::unknown_topic_or_partition));
  auto created = metadata(*c, buf, std::vector<std::string>{"auto1"}, 12, false);
  EXPECT_EQ(created.topics[0].error_code, 0);
  EXPECT_EQ(created.topics[0].partitions.size(), 1u);  // num.partitions
  EXPECT_EQ(metadata(*c, buf, std::vector<std::string>{"auto0"}, 1).topics[0].error_code,
            code(error_code::unknown_topic_or_partition));
  EXPECT_EQ(metadata(*c, buf, std::vector<std::string>{"auto0"}, 1).topics[0].error_code, 0);
  // v12 by topic id.
  protocol::metadata_request by_id;
  by_id.topics.emplace();
  protocol::metadata_request::metadata_request_topic known;
  known.name = std::nullopt;
  known.topic_id = created.topics[0].topic_id;
  protocol::metadata_request::metadata_request_topic unknown;
  unknown.name = std::nullopt;
  unknown.topic_id.bytes[15] = 42;
  by_id.topics->push_back(known);
  by_id.topics->push_back(unknown);
  auto ids = tools::call<protocol::metadata_response>(*c, by_id, 12, buf);
  ASSERT_TRUE(ids.has_value());
  ASSERT_EQ(ids->topics.size(), 2u);
  EXPECT_EQ(ids->topics[0].name, "auto1");
  EXPECT_EQ(ids->topics[1].error_code, code(error_code::unknown_topic_id));
  EXPECT_FALSE(ids->topics[1].name.has_value());
}

TEST_F(topics, delete_describe_and_alter_errors) {
  auto c = client();
  ASSERT_TRUE(c);
  std::vector<uint8_t> buf;
  ASSERT_EQ(create(*c, buf, "del", 2, 1).topics[0].error_code, 0);
  auto dirs_of = [&](const std::string& prefix) {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(broker_->data_dir())) {
      if (e.path().filename().string().rfind(prefix, 0) == 0) ++n;
    }
    return n;
  };
  EXPECT_EQ(dirs_of("del-"), 2);

  // DescribeConfigs: unknown topic, bad name, unknown broker, the broker itself.
  protocol::describe_configs_request dreq;
  dreq.resources.push_back({2, "nope", std::nullopt});
  dreq.resources.push_back({2, "bad name", std::nullopt});
  dreq.resources.push_back({4, "7", std::nullopt});
  dreq.resources.push_back({4, "1", std::vector<std::string_view>{"num.partitions"}});
  dreq.resources.push_back({2, "del", std::vector<std::string_view>{"cleanup.policy"}});
  auto dresp = tools::call<protocol::describe_configs_response>(*c, dreq, 4, buf);
  ASSERT_TRUE(dresp.has_value());
  ASSERT_EQ(dresp->results.size(), 5u);
  EXPECT_EQ(dresp->results[0].error_code, code(error_code::unknown_topic_or_partition));
  EXPECT_EQ(dresp->results[1].error_code, code(error_code::invalid_topic_exception));
  EXPECT_EQ(dresp->results[2].error_code, code(error_code::invalid_request));
  ASSERT_EQ(dresp->results[3].configs.size(), 1u);
  EXPECT_EQ(dresp->results[3].configs[0].value, "1");
  EXPECT_EQ(dresp->results[3].configs[0].config_type, 3);  // INT
  ASSERT_EQ(dresp->results[4].configs.size(), 1u);
  EXPECT_EQ(dresp->results[4].configs[0].value, "delete");
  EXPECT_EQ(dresp->results[4].configs[0].config_source, 5);  // DEFAULT_CONFIG
  EXPECT_EQ(dresp->results[4].configs[0].config_type, 7);    // LIST

  // IncrementalAlterConfigs: a broker key Kafka cannot change at runtime; topic errors. The
  // topic's cases one request each: a resource named twice in one request is refused as such
  // (dynamic_configs_test).
  protocol::incremental_alter_configs_request areq;
  areq.resources.push_back({4, "1", {{"log.dirs", 0, "/elsewhere"}}});
  areq.resources.push_back({2, "nope", {{"retention.ms", 0, "1"}}});
  areq.resources.push_back({2, "del", {{"retention.ms", 0, "-5"}}});
  auto aresp = tools::call<protocol::incremental_alter_configs_response>(*c, areq, 1, buf);
  ASSERT_TRUE(aresp.has_value());
  ASSERT_EQ(aresp->responses.size(), 3u);
  EXPECT_EQ(aresp->responses[0].error_code, code(error_code::invalid_request));
  EXPECT_EQ(aresp->responses[0].error_message,
            "Cannot update these configs dynamically: [log.dirs]");  // Kafka 4.4.0's answer
  EXPECT_EQ(aresp->responses[1].error_code, code(error_code::unknown_topic_or_partition));
  EXPECT_EQ(aresp->responses[2].error_code, code(error_code::invalid_config));
  EXPECT_EQ(aresp->responses[2].error_message,
            "Invalid value -5 for configuration retention.ms: Value must be at least -1");
  areq.resources.clear();
  areq.resources.push_back({2, "del", {{"retention.ms", 2, "1"}}});
  aresp = tools::call<protocol::incremental_alter_configs_response>(*c, areq, 1, buf);
  ASSERT_TRUE(aresp.has_value());
  ASSERT_EQ(aresp->responses.size(), 1u);
  EXPECT_EQ(aresp->responses[0].error_code, code(error_code::invalid_config));
  EXPECT_EQ(aresp->responses[0].error_message,
            "Can't APPEND to key retention.ms because its type is not LIST.");
  areq.resources.clear();
  areq.resources.push_back({2, "del", {{"retention.ms", 0, "1"}, {"retention.ms", 1, {}}}});
  aresp = tools::call<protocol::incremental_alter_configs_response>(*c, areq, 1, buf);
  ASSERT_TRUE(aresp.has_value());
  ASSERT_EQ(aresp->responses.size(), 1u);
  EXPECT_EQ(aresp->responses[0].error_code, code(error_code::invalid_request));

  // DeleteTopics: v6 by id and by name, unknown ones; the data leaves the disk.
  auto md = metadata(*c, buf, std::vector<std::string>{"del"}, 12);
  protocol::delete_topics_request del;
  del.topics.push_back({std::nullopt, md.topics[0].topic_id});
  protocol::uuid unknown_id;
  unknown_id.bytes[0] = 9;
  del.topics.push_back({std::nullopt, unknown_id});
  del.topics.push_back({"never", {}});
  auto dr = tools::call<protocol::delete_topics_response>(*c, del, 6, buf);
  ASSERT_TRUE(dr.has_value());
  ASSERT_EQ(dr->responses.size(), 3u);
  EXPECT_EQ(dr->responses[0].error_code, 0);
  EXPECT_EQ(dr->responses[0].name, "del");
  EXPECT_EQ(dr->responses[1].error_code, code(error_code::unknown_topic_id));
  EXPECT_EQ(dr->responses[2].error_code, code(error_code::unknown_topic_or_partition));
  EXPECT_EQ(dirs_of("del-"), 0);
  protocol::delete_topics_request del1;
  del1.topic_names = {"del"};
  auto dr1 = tools::call<protocol::delete_topics_response>(*c, del1, 1, buf);
  ASSERT_TRUE(dr1.has_value());
  EXPECT_EQ(dr1->responses[0].error_code, code(error_code::unknown_topic_or_partition));
}

TEST_F(topics, java_admin_client) {
  auto [libs_rc, libs_out] = run_command(std::string(TARN_SOURCE_DIR) + "/scripts/kafka-ref libs");
  std::string libs = libs_out.substr(0, libs_out.find('\n'));
  if (!have_program("java") || libs_rc != 0 || !std::filesystem::exists(libs)) {
    GTEST_SKIP() << "java or the Kafka 4.4.0 jars are not available";
  }
  auto [rc, out] = run_command("timeout 50 java -cp '" + libs + "/*' " + TARN_SOURCE_DIR +
                               "/tests/java/AdminCheck.java " + bootstrap() + " java");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ALL OK"), std::string::npos) << out;
  // Lines identical to what Kafka 4.4.0 prints for the same program (docs/compatibility.md).
  for (const char* line : {
           "create config segment.bytes 1073741824 DEFAULT_CONFIG",
           "create again: TopicExistsException: Topic 'java-admin' already exists.",
           "create bad name: InvalidTopicException: Topic name is invalid: 'bad/name' contains",
           "create manual assignment: none",
           "create manual assignment broker 2: InvalidReplicaAssignmentException: The manual "
           "partition assignment includes broker 2, but no such broker is registered.",
           "partition 2 leader 1 replicas 1 isr 1",
           "retention.ms 1000 DYNAMIC_TOPIC_CONFIG synonyms [retention.ms=1000:DYNAMIC_TOPIC_CONFIG"
           " ] type LONG documented true",
           "segment.bytes 1073741824 DEFAULT_CONFIG read-only false sensitive false type INT "
           "synonyms [log.segment.bytes=1073741824:DEFAULT_CONFIG ]",
           "describe configs of a missing topic: UnknownTopicOrPartitionException: \n",
           "after alter: cleanup.policy compact,delete retention.ms 2000 max.message.bytes 5000",
           "after subtract/delete: cleanup.policy delete max.message.bytes 1048588 "
           "DEFAULT_CONFIG",
           "alter missing topic: UnknownTopicOrPartitionException: The topic "
           "'java-admin-missing' does not exist.",
           "broker log.retention.hours 168 DEFAULT_CONFIG",
           "delete again: UnknownTopicOrPartitionException: This server does not host this "
           "topic-partition.",
           "delete unknown id: UnknownTopicIdException: This server does not host this topic ID.",
       }) {
    EXPECT_NE(out.find(line), std::string::npos) << "missing: " << line << "\n" << out;
  }
}

TEST_F(topics, confluent_kafka_admin_client) {
  const std::string python = "/usr/bin/python3";
  if (run_command(python + " -c 'import confluent_kafka'").first != 0) {
    GTEST_SKIP() << "no confluent_kafka for /usr/bin/python3";
  }
  auto [rc, out] = run_command("timeout 50 " + python + " " + TARN_SOURCE_DIR +
                               "/tests/python/topics_confluent.py " + bootstrap() + " ck");
  EXPECT_EQ(rc, 0) << out;
  for (const char* line : {
           "create: none\n",
           "create again: TOPIC_ALREADY_EXISTS Topic 'ck-confluent' already exists.",
           "create rf 3: INVALID_REPLICATION_FACTOR Unable to replicate the partition 3 time(s)",
           "metadata partitions: 4 leaders: [1] brokers: [1]",
           "describe cleanup.policy: compact retention.ms: 12345 source: 1 segment.bytes source: 5",
           "broker num.partitions: 1",
           "delete: none",
           "delete again: UNKNOWN_TOPIC_OR_PART",
           "listed after delete: False",
           "DONE",
       }) {
    EXPECT_NE(out.find(line), std::string::npos) << "missing: " << line << "\n" << out;
  }
}

TEST_F(topics, kafka_python_admin_and_metadata_v0_v1) {
  const std::string python = "/usr/bin/python3";
  if (run_command(python + " -c 'import kafka'").first != 0) GTEST_SKIP() << "no kafka-python";
  auto [rc, out] = run_command("timeout 50 " + python + " " + TARN_SOURCE_DIR +
                               "/tests/python/topics_kafka_python.py " + bootstrap() + " kp");
  EXPECT_EQ(rc, 0) << out;
  for (const char* line : {
           "create errors: [('kp-kpy', 0)]",
           "create again: TopicAlreadyExistsError",
           "listed: True",
           "describe retention.ms: 777",
           "metadata v0: error 0 name kp-kpy partitions 2",
           "metadata v1: error 0 name kp-kpy partitions 2",
           "metadata v0 all topics has it: True",
           "delete errors: [('kp-kpy', 0)]",
           "DONE",
       }) {
    EXPECT_NE(out.find(line), std::string::npos) << "missing: " << line << "\n" << out;
  }
}

TEST_F(topics, kcat_lists_topics) {
  if (!have_program("kcat")) GTEST_SKIP() << "kcat not installed";
  EXPECT_NE(tarn_topics("--create --topic kc --partitions 3").find("Created topic kc."),
            std::string::npos);
  auto [rc, out] = run_command("timeout 20 kcat -L -b " + bootstrap() + " -t kc");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("broker 1 at 127.0.0.1:" + std::to_string(broker_->port()) + " (controller)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("topic \"kc\" with 3 partitions:"), std::string::npos) << out;
  EXPECT_NE(out.find("partition 2, leader 1, replicas: 1, isrs: 1"), std::string::npos) << out;
}

TEST_F(topics, tarn_topics_tool) {
  EXPECT_EQ(tarn_topics("--create --topic tool --partitions 2 --config retention.ms=1000 "
                        "--config cleanup.policy=compact"),
            "rc=0\nCreated topic tool.\n");
  std::string d = tarn_topics("--describe --topic tool");
  std::regex head(
      "rc=0\nTopic: tool\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 2\tReplicationFactor: "
      "1\tConfigs: cleanup.policy=compact,min.insync.replicas=1,retention.ms=1000\n\tTopic: "
      "tool\tPartition: 0\tLeader: "
      "1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: \n\tTopic: tool\tPartition: 1\tLeader: "
      "1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: \n");
  EXPECT_TRUE(std::regex_match(d, head)) << d;
  EXPECT_EQ(tarn_topics("--alter --topic tool --add-config 'cleanup.policy=[compact,delete],"
                        "segment.ms=100000' --delete-config retention.ms"),
            "rc=0\nCompleted updating config for topic tool.\n");
  EXPECT_NE(tarn_topics("--describe --topic tool")
                .find("Configs: cleanup.policy=compact,delete,min.insync.replicas=1,"
                      "segment.ms=100000\n"),
            std::string::npos);
  EXPECT_NE(tarn_topics("--list").find("\ntool\n"), std::string::npos);
  EXPECT_EQ(tarn_topics("--create --topic tool"),
            "rc=1\nError while executing topic command : Topic 'tool' already exists.\n");
  EXPECT_EQ(
      tarn_topics("--create --topic t2 --replication-factor 2")
          .rfind("rc=1\nError while executing topic command : Unable to replicate the partition 2 "
                 "time(s)",
                 0),
      0u);
  EXPECT_EQ(tarn_topics("--alter --topic tool --add-config retention.ms=x"),
            "rc=1\nError while executing topic command : Invalid value x for configuration "
            "retention.ms: Not a number of type LONG\n");
  EXPECT_EQ(tarn_topics("--delete --topic tool"), "rc=0\n");
  EXPECT_EQ(
      tarn_topics("--describe --topic tool"),
      "rc=1\nError while executing topic command : Topic 'tool' does not exist as expected\n");
}

TEST(topics_restart, topics_and_configs_survive_a_restart) {
  temp_dir dir;
  const auto data = dir.path() / "data";
  std::string id_before;
  {
    broker_process broker({}, data);
    ASSERT_NE(broker.port(), 0) << broker.output();
    auto c = tools::kafka_client::connect("127.0.0.1:" + std::to_string(broker.port()));
    ASSERT_TRUE(c.has_value());
    std::vector<uint8_t> buf;
    auto r = create(**c, buf, "keep", 2, 1, {{"cleanup.policy", "compact"}});
    ASSERT_EQ(r.topics[0].error_code, 0);
    protocol::incremental_alter_configs_request alter;
    alter.resources.push_back({2, "keep", {{"retention.ms", 0, "4242"}}});
    auto a = tools::call<protocol::incremental_alter_configs_response>(**c, alter, 0, buf);
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->responses[0].error_code, 0);
    // NONE comes without a message.
    EXPECT_FALSE(a->responses[0].error_message.has_value()) << *a->responses[0].error_message;
    auto md = metadata(**c, buf, std::nullopt, 1);
    ASSERT_EQ(md.cluster_id, std::nullopt);  // v1 has no cluster id
    auto md12 = metadata(**c, buf, std::vector<std::string>{"keep"}, 12);
    id_before = std::string(md12.cluster_id.value_or("")) + "/" +
                std::to_string(md12.topics[0].topic_id.bytes[0]) +
                std::to_string(md12.topics[0].topic_id.bytes[15]);
    c->reset();
    auto st = broker.stop();
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(st->code, 0) << broker.output();
  }
  broker_process broker({}, data);
  ASSERT_NE(broker.port(), 0) << broker.output();
  EXPECT_NE(broker.output().find("1 topic(s), 2 partition log(s) loaded"), std::string::npos)
      << broker.output();
  auto c = tools::kafka_client::connect("127.0.0.1:" + std::to_string(broker.port()));
  ASSERT_TRUE(c.has_value());
  std::vector<uint8_t> buf;
  auto md12 = metadata(**c, buf, std::vector<std::string>{"keep"}, 12, false);
  ASSERT_EQ(md12.topics[0].error_code, 0);
  EXPECT_EQ(md12.topics[0].partitions.size(), 2u);
  EXPECT_EQ(std::string(md12.cluster_id.value_or("")) + "/" +
                std::to_string(md12.topics[0].topic_id.bytes[0]) +
                std::to_string(md12.topics[0].topic_id.bytes[15]),
            id_before);
  protocol::describe_configs_request dreq;
  dreq.resources.push_back(
      {2, "keep", std::vector<std::string_view>{"cleanup.policy", "retention.ms"}});
  auto d = tools::call<protocol::describe_configs_response>(**c, dreq, 4, buf);
  ASSERT_TRUE(d.has_value());
  ASSERT_EQ(d->results[0].configs.size(), 2u);
  EXPECT_EQ(d->results[0].configs[0].value, "compact");
  EXPECT_EQ(d->results[0].configs[1].value, "4242");
  EXPECT_EQ(d->results[0].configs[1].config_source, 1);
}

// The metadata log's torn tail end to end (docs/metadata.md, Recovery): after SIGKILL, the log
// cut inside its last entry (a crash mid-append) at its first, middle and last byte. The broker
// starts, keeps every topic whose entry was whole (ids, partition counts, configs), and the cut
// change is gone whole: its topic is unknown and can be created again.
TEST(topics_restart, torn_tail_of_the_metadata_log_loses_only_the_cut_change) {
  temp_dir dir;
  const auto data = dir.path() / "data";
  const auto log = [](const std::filesystem::path& d) { return d / "tarn-metadata" / "log"; };
  auto topic_ids = [](tools::kafka_client& c, std::vector<uint8_t>& buf) {
    std::map<std::string, std::string> out;
    auto md = metadata(c, buf, std::vector<std::string>{"torn-a", "torn-b", "torn-c"}, 12, false);
    for (const auto& t : md.topics) {
      out[std::string(t.name.value_or(""))] =
          t.error_code == 0 ? std::to_string(t.partitions.size()) + " partitions, id " +
                                  uuid_text(t.topic_id.bytes)
                            : "error " + std::to_string(t.error_code);
    }
    return out;
  };
  uintmax_t whole = 0, last = 0;
  std::map<std::string, std::string> before;
  {
    broker_process broker({}, data);
    ASSERT_NE(broker.port(), 0) << broker.output();
    auto c = tools::kafka_client::connect("127.0.0.1:" + std::to_string(broker.port()));
    ASSERT_TRUE(c.has_value());
    std::vector<uint8_t> buf;
    ASSERT_EQ(create(**c, buf, "torn-a", 2, 1, {{"retention.ms", "4242"}}).topics[0].error_code, 0);
    ASSERT_EQ(create(**c, buf, "torn-b", 3, 1).topics[0].error_code, 0);
    whole = std::filesystem::file_size(log(data));
    ASSERT_EQ(create(**c, buf, "torn-c", 1, 1).topics[0].error_code, 0);
    last = std::filesystem::file_size(log(data)) - whole;  // torn-c's entry
    ASSERT_GT(last, 8u);
    before = topic_ids(**c, buf);
    ASSERT_EQ(before.size(), 3u);
    broker.process().send_signal(SIGKILL);
    ASSERT_TRUE(broker.process().wait_exit(15s).has_value());
  }
  for (uintmax_t kept : {uintmax_t{1}, last / 2, last - 1}) {
    SCOPED_TRACE("kept " + std::to_string(kept) + " of the last entry's " + std::to_string(last) +
                 " bytes");
    const auto copy = dir.path() / ("data-" + std::to_string(kept));
    std::filesystem::copy(data, copy, std::filesystem::copy_options::recursive);
    std::filesystem::resize_file(log(copy), whole + kept);
    broker_process broker({}, copy);
    ASSERT_NE(broker.port(), 0) << broker.output();
    auto c = tools::kafka_client::connect("127.0.0.1:" + std::to_string(broker.port()));
    ASSERT_TRUE(c.has_value());
    std::vector<uint8_t> buf;
    auto after = topic_ids(**c, buf);
    EXPECT_EQ(after["torn-a"], before["torn-a"]);
    EXPECT_EQ(after["torn-b"], before["torn-b"]);
    EXPECT_EQ(after["torn-c"], "error 3");
    protocol::describe_configs_request d;
    d.resources.push_back({2, "torn-a", std::vector<std::string_view>{"retention.ms"}});
    auto r = tools::call<protocol::describe_configs_response>(**c, d, 4, buf);
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->results[0].configs.size(), 1u);
    EXPECT_EQ(r->results[0].configs[0].value, "4242");
    EXPECT_EQ(create(**c, buf, "torn-c", 2, 1).topics[0].error_code, 0);
    EXPECT_EQ(topic_ids(**c, buf)["torn-c"].substr(0, 12), "2 partitions");
    // The cut bytes are gone from the file: the next entry follows the whole ones.
    EXPECT_GT(std::filesystem::file_size(log(copy)), whole);
  }
}

}  // namespace
}  // namespace tarn::test
