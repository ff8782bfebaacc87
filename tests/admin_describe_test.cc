// The describe/inspect admin APIs (issue 22: DescribeCluster, DescribeTopicPartitions,
// DescribeLogDirs, OffsetForLeaderEpoch, ListOffsets -3/-4/-5, ElectLeaders,
// Alter/ListPartitionReassignments) end to end, against `tarn serve` and Apache Kafka 4.4.0
// (scripts/kafka-ref, when java and its jars are there), comparing the two:
//   - Kafka 4.4.0's Java Admin client (tests/java/AdminDescribeCheck.java) prints the same lines;
//   - Kafka's own tools (kafka-topics --describe, kafka-log-dirs, kafka-get-offsets -1..-5,
//     kafka-leader-election, kafka-reassign-partitions --list, kafka-broker-api-versions for these
//     APIs) print the same, topic ids and the log directory's path normalised;
//   - kafka-broker-api-versions prints the same line for every API tarn serves, and neither
//     broker advertises the telemetry APIs (71/72);
//   - confluent-kafka-python's admin calls (tests/python/admin_confluent.py, and with 2.x's
//     tests/python/admin_confluent2.py) print the same;
//   - hand-built requests for the error branches give the same answers, field by field;
//   - tarn only: truncated bodies close the connection, huge arrays are answered within bounded
//     memory.
// GCC 12's -Wrestrict misfires on std::string operator+ with literals (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kafka_client.h"
#include "kafka_ref_broker.h"
#include "protocol/error_codes.h"
#include "protocol/messages/alter_partition_reassignments_request.h"
#include "protocol/messages/alter_partition_reassignments_response.h"
#include "protocol/messages/api_versions_request.h"
#include "protocol/messages/api_versions_response.h"
#include "protocol/messages/describe_cluster_request.h"
#include "protocol/messages/describe_cluster_response.h"
#include "protocol/messages/describe_log_dirs_request.h"
#include "protocol/messages/describe_log_dirs_response.h"
#include "protocol/messages/describe_topic_partitions_request.h"
#include "protocol/messages/describe_topic_partitions_response.h"
#include "protocol/messages/elect_leaders_request.h"
#include "protocol/messages/elect_leaders_response.h"
#include "protocol/messages/list_partition_reassignments_request.h"
#include "protocol/messages/list_partition_reassignments_response.h"
#include "protocol/messages/offset_for_leader_epoch_request.h"
#include "protocol/messages/offset_for_leader_epoch_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

std::string opt(const std::optional<std::string_view>& s) {
  return s ? "'" + std::string(*s) + "'" : "null";
}

class admin_describe : public ::testing::Test {
 protected:
  void SetUp() override {
    tarn_ = std::make_unique<broker_process>();
    ASSERT_NE(tarn_->port(), 0) << tarn_->output();
  }
  void TearDown() override {
    if (tarn_) tarn_->stop();
  }
  static std::string bootstrap(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

  // The reference broker's port, or 0 (then the test checks tarn alone and says so).
  uint16_t kafka_port() {
#ifdef TARN_SANITIZED_BUILD
    return 0;
#else
    if (kafka_libs().empty()) return 0;
    EXPECT_EQ(kafka_test_name_error(), "");  // else the comparison would be skipped unseen
    if (!kafka_broker::instance().start().empty()) return 0;
    return kafka_broker::instance().port();
#endif
  }

  std::string tool(const std::string& args) const {
    auto [rc, out] = run_command("timeout 120 " + std::string(TARN_SOURCE_DIR) +
                                 "/scripts/kafka-ref tool " + args + " 2>&1");
    return "[rc " + std::to_string(rc) + "] " + out;
  }

  std::unique_ptr<broker_process> tarn_;
};

// Lines the Java client's own logging adds to stdout (timestamped) are left out.
std::string without_log_lines(const std::string& out) {
  std::istringstream in(out);
  std::string line, kept;
  while (std::getline(in, line)) {
    if (std::regex_search(line, std::regex("^20[0-9][0-9]-[0-9][0-9]-")) ||
        line.rfind("org.apache.kafka.common.errors.", 0) == 0 || line.empty()) {
      continue;
    }
    kept += line + "\n";
  }
  return kept;
}

TEST_F(admin_describe, java_admin_client_prints_what_it_prints_against_kafka) {
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  auto run = [&](uint16_t port) {
    auto [rc, out] =
        run_command("timeout 150 java -cp '" + kafka_libs() + "/*' " + TARN_SOURCE_DIR +
                    "/tests/java/AdminDescribeCheck.java " + bootstrap(port) + " java 2>/dev/null");
    EXPECT_EQ(rc, 0) << out;
    return without_log_lines(out);
  };
  const std::string tarn_out = run(tarn_->port());
  EXPECT_NE(tarn_out.find("DONE"), std::string::npos) << tarn_out;
  const uint16_t kafka = kafka_port();
  if (kafka == 0) GTEST_SKIP() << "no Kafka 4.4.0 to compare with; tarn printed:\n" << tarn_out;
  EXPECT_EQ(tarn_out, run(kafka));
}

TEST_F(admin_describe, kafka_tools_print_what_they_print_against_kafka) {
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  if (!have_program("kcat")) GTEST_SKIP() << "kcat is missing";
  auto run = [&](uint16_t port) {
    const std::string b = " --bootstrap-server " + bootstrap(port);
    const std::string t = "tools";
    std::string out;
    out += tool("topics" + b + " --create --topic " + t + " --partitions 2");
    auto [rc, produced] = run_command("printf 'a\\n' | timeout 60 kcat -P -b " + bootstrap(port) +
                                      " -t " + t + " -p 0 -X acks=all 2>&1");
    EXPECT_EQ(rc, 0) << produced;
    out += tool("topics" + b + " --describe --topic " + t);
    out += tool("topics" + b + " --describe --topic " + t + "-missing");
    out += tool("org.apache.kafka.tools.LogDirsCommand" + b + " --describe --topic-list " + t);
    for (const char* time : {"-1", "-2", "-3", "-4", "-5"}) {
      out += tool("get-offsets" + b + " --topic " + t + " --time " + time);
    }
    out += tool("org.apache.kafka.tools.LeaderElectionCommand" + b +
                " --election-type preferred --topic " + t + " --partition 0");
    out += tool("org.apache.kafka.tools.LeaderElectionCommand" + b +
                " --election-type unclean --topic " + t + " --partition 5");
    out += tool("org.apache.kafka.tools.LeaderElectionCommand" + b +
                " --election-type preferred --all-topic-partitions");
    out += tool("org.apache.kafka.tools.reassign.ReassignPartitionsCommand" + b + " --list");
    // ApiVersions: the lines of the APIs this test is about.
    std::istringstream versions(tool("api-versions" + b));
    std::string line;
    while (std::getline(versions, line, ',')) {
      if (std::regex_search(line, std::regex("\\((2|23|35|43|45|46|60|75)\\):"))) {
        out += line + "\n";
      }
    }
    // What must differ: the topic id, the log directory's path, log timestamps; and Kafka 4.4's
    // CreateTopics sets min.insync.replicas as a topic config (not part of this API set).
    out = std::regex_replace(out, std::regex("TopicId: [A-Za-z0-9_-]{22}"), "TopicId: <id>");
    out = std::regex_replace(out, std::regex("\"logDir\":\"[^\"]*\""), "\"logDir\":<dir>");
    out = std::regex_replace(out, std::regex("Configs: [^\\n]*"), "Configs: <configs>");
    out = std::regex_replace(out, std::regex("\\[20[0-9-]+ [0-9:,]+\\]"), "[<time>]");
    return out;
  };
  const std::string tarn_out = run(tarn_->port());
  EXPECT_NE(tarn_out.find("Valid replica already elected for partitions tools-0"),
            std::string::npos)
      << tarn_out;
  const uint16_t kafka = kafka_port();
  if (kafka == 0) GTEST_SKIP() << "no Kafka 4.4.0 to compare with; tarn printed:\n" << tarn_out;
  EXPECT_EQ(tarn_out, run(kafka));
}

// kafka-broker-api-versions.sh's line of every API tarn serves (not UNSUPPORTED against tarn) is
// the line Kafka 4.4.0 gets: the same version range and usable version, but for the documented
// differences below. GetTelemetrySubscriptions
// and PushTelemetry (71/72) are UNSUPPORTED against both (no client-metrics plugin), and a
// hand-built ApiVersions v0-v4 of either broker leaves them out.
TEST_F(admin_describe, api_versions_of_every_api_are_the_same_against_kafka) {
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  auto lines = [&](uint16_t port) {
    std::map<int, std::string> by_key;
    std::istringstream in(tool("api-versions --bootstrap-server " + bootstrap(port)));
    std::string item;
    // Items are "Name(key): 0 to 13 [usable: 13]" or "Name(key): UNSUPPORTED", split by commas;
    // the first follows the broker's header, the last precedes the closing parenthesis.
    const std::regex api("([A-Za-z]+)\\(([0-9]+)\\): [^\\n]*$");
    while (std::getline(in, item, ',')) {
      std::smatch m;
      item = std::regex_replace(item, std::regex("[\\s)]+$"), "");
      if (std::regex_search(item, m, api)) by_key[std::stoi(m[2])] = m[0];
    }
    return by_key;
  };
  auto advertised = [&](uint16_t port) {
    auto c = tools::kafka_client::connect(bootstrap(port));
    EXPECT_TRUE(c.has_value());
    std::set<int> keys;
    if (!c) return keys;
    std::vector<uint8_t> buf;
    for (int16_t v = 0; v <= 4; ++v) {
      protocol::api_versions_request req;
      req.client_software_name = "tarn-test";
      req.client_software_version = "1";
      auto r = tools::call<protocol::api_versions_response>(**c, req, v, buf);
      EXPECT_TRUE(r.has_value()) << "v" << v;
      if (!r) continue;
      EXPECT_EQ(r->error_code, 0) << "v" << v;
      for (const auto& k : r->api_keys) keys.insert(k.api_key);
    }
    return keys;
  };
  const auto tarn_lines = lines(tarn_->port());
  const auto tarn_keys = advertised(tarn_->port());
  ASSERT_GT(tarn_keys.size(), 40u);
  EXPECT_EQ(tarn_keys.count(71), 0u);
  EXPECT_EQ(tarn_keys.count(72), 0u);
  EXPECT_EQ(tarn_lines.at(71), "GetTelemetrySubscriptions(71): UNSUPPORTED");
  EXPECT_EQ(tarn_lines.at(72), "PushTelemetry(72): UNSUPPORTED");
  const uint16_t kafka = kafka_port();
  if (kafka == 0) GTEST_SKIP() << "no Kafka 4.4.0 to compare with";
  const auto kafka_lines = lines(kafka);
  const auto kafka_keys = advertised(kafka);
  EXPECT_EQ(kafka_keys.count(71), 0u);
  EXPECT_EQ(kafka_keys.count(72), 0u);
  EXPECT_EQ(kafka_lines.at(71), "GetTelemetrySubscriptions(71): UNSUPPORTED");
  EXPECT_EQ(kafka_lines.at(72), "PushTelemetry(72): UNSUPPORTED");
  // The versions tarn serves short of Kafka's, each in docs/compatibility.md: none now.
  const std::map<int, std::string> documented = {};
  int compared = 0;
  for (const auto& [key, line] : tarn_lines) {
    if (line.ends_with("UNSUPPORTED")) continue;
    EXPECT_TRUE(tarn_keys.count(key)) << line;
    ASSERT_TRUE(kafka_lines.count(key)) << line;
    if (auto d = documented.find(key); d != documented.end()) {
      EXPECT_EQ(line, d->second);
      EXPECT_NE(kafka_lines.at(key), d->second) << "no longer a difference: " << line;
    } else {
      EXPECT_EQ(line, kafka_lines.at(key));
    }
    ++compared;
  }
  EXPECT_EQ(compared, static_cast<int>(tarn_keys.size()));
}

// confluent-kafka-python's admin calls (tests/python/admin_confluent.py: create_partitions, the
// legacy alter_configs for a topic and the broker, a consumer's watermarks and offsets_for_times)
// print the same lines against tarn and Kafka 4.4.0. The topic prefix differs per broker run, as
// the reference broker is shared by this process's tests; it is normalised.
TEST_F(admin_describe, confluent_kafka_admin_calls_print_what_they_print_against_kafka) {
  const std::string python = "/usr/bin/python3";
  if (run_command(python + " -c 'import confluent_kafka'").first != 0) {
    GTEST_SKIP() << "no confluent_kafka for /usr/bin/python3";
  }
  const std::string base_ts =
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count());
  auto run = [&](uint16_t port, const std::string& prefix) {
    auto [rc, out] = run_command("timeout 120 " + python + " " + TARN_SOURCE_DIR +
                                 "/tests/python/admin_confluent.py " + bootstrap(port) + " " +
                                 prefix + " " + base_ts + " 2>/dev/null");
    EXPECT_EQ(rc, 0) << out;
    return std::regex_replace(out, std::regex(prefix + "-adm"), "<prefix>-adm");
  };
  const std::string tarn_out = run(tarn_->port(), "ck-tarn");
  for (const char* line : {
           "grow to 3: none\nafter grow: 3\n",
           "a hundred thousand: POLICY_VIOLATION Excessively large number of additional "
           "partitions per request.\n",
           "topic configs: cleanup.policy=delete:5 retention.ms=5000:1\n",
           "broker configs: log.retention.ms=7200000:2\n",
           "broker configs after clear: log.retention.ms=None:5\n",
           "watermarks p0: (0, 3)\n",
           "offset for time +3: 1 None\n",
           "DONE\n",
       }) {
    EXPECT_NE(tarn_out.find(line), std::string::npos) << "missing: " << line << "\n" << tarn_out;
  }
  const uint16_t kafka = kafka_port();
  if (kafka == 0) GTEST_SKIP() << "no Kafka 4.4.0 to compare with; tarn printed:\n" << tarn_out;
  EXPECT_EQ(tarn_out, run(kafka, "ck-kafka"));
}

// confluent-kafka-python 2.x's admin calls (tests/python/admin_confluent2.py, run by the venv
// scripts/install-deps makes: Debian's 1.7.0 has none of them) print the same JSON against tarn
// and Kafka 4.4.0: create_topics, create_partitions, describe_topics, describe_cluster,
// incremental_alter_configs and describe_configs, list_offsets, delete_records, elect_leaders,
// describe_user_scram_credentials, the consumer group calls after a member committed,
// delete_topics. The prefix is new on every run, as the reference broker is shared by this
// process's tests and runs (--gtest_repeat) and keeps a group once its topic is gone.
TEST_F(admin_describe, confluent_kafka_2_admin_calls_print_what_they_print_against_kafka) {
  const std::string python = "/opt/tarn/py-confluent2/bin/python";
  if (run_command(python + " -c 'import confluent_kafka' 2>/dev/null").first != 0) {
    GTEST_SKIP() << "no confluent-kafka 2.x in /opt/tarn/py-confluent2 (scripts/install-deps)";
  }
  static int runs = 0;
  ++runs;
  const std::string base_ts =
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count());
  auto run = [&](uint16_t port, const std::string& broker) {
    const std::string prefix = "ck2-" + broker + "-" + std::to_string(runs);
    // librdkafka's warnings go to stderr, shown only should the script fail.
    temp_dir tmp;
    const std::string err = (tmp.path() / "stderr").string();
    auto [rc, out] = run_command("timeout 150 " + python + " " + TARN_SOURCE_DIR +
                                 "/tests/python/admin_confluent2.py " + bootstrap(port) + " " +
                                 prefix + " " + base_ts + " 2>" + err);
    EXPECT_EQ(rc, 0) << out << read_file(err);
    EXPECT_TRUE(out.starts_with("{\n") && out.ends_with("\n}\n")) << out;
    return std::regex_replace(out, std::regex(prefix + "-"), "<prefix>-");
  };
  const std::string tarn_out = run(tarn_->port(), "tarn");
  for (const char* line : {
           "\"partitions after validate\": 2,\n",
           "\"partitions after grow\": 3,\n",
           "\"describe cluster\": {\"authorized_operations\": null, \"cluster_id\": "
           "\"<cluster-id>\", \"controller\": {\"host\": \"127.0.0.1\", \"id\": 1, \"port\": "
           "\"<port>\", \"rack\": null}, \"nodes\": [{\"host\": \"127.0.0.1\", \"id\": 1, "
           "\"port\": \"<port>\", \"rack\": null}]},\n",
           "\"topic configs after delete\": {\"cleanup.policy\": [\"compact,delete\", 1], "
           "\"retention.ms\": [\"604800000\", 5], \"segment.bytes\": [\"1073741824\", 5]},\n",
           "\"broker configs after set\": {\"log.retention.ms\": [\"3600000\", 2]},\n",
           "\"broker configs after delete\": {\"log.retention.ms\": [null, 5]},\n",
           "[\"max_timestamp\", [[\"<prefix>-ck2-0\", {\"ok\": {\"offset\": 1, \"timestamp\": "
           "5}}]]]",
           "[\"for +1\", [[\"<prefix>-ck2-0\", {\"ok\": {\"offset\": 1, \"timestamp\": 5}}]]]",
           "\"delete records\": [[\"<prefix>-ck2-0\", {\"ok\": {\"low_watermark\": 2}}], "
           "[\"<prefix>-ck2-2\", {\"ok\": {\"low_watermark\": 0}}]],\n",
           "\"offsets after delete records\": [[\"<prefix>-ck2-0\", {\"ok\": {\"offset\": 2, "
           "\"timestamp\": -1}}], [\"<prefix>-ck2-1\", {\"ok\": {\"offset\": 0, \"timestamp\": "
           "-1}}]],\n",
           "\"elect preferred\": [[\"<prefix>-ck2-0\", [\"ELECTION_NOT_NEEDED\", \"Leader "
           "election not needed for topic partition.\"]], [\"<prefix>-ck2-2\", "
           "[\"ELECTION_NOT_NEEDED\", \"Leader election not needed for topic partition.\"]]],\n",
           "\"scram all\": [],\n",
           "\"consumed\": [\"0@2\", \"1@0\", \"1@1\"],\n",
           "\"group offsets\": [[\"<prefix>-ck2-group\", {\"ok\": [[\"<prefix>-ck2-0\", 3, null, "
           "null], [\"<prefix>-ck2-1\", 2, null, null]]}]],\n",
           "\"delete\": [[\"<prefix>-ck2\", {\"ok\": null}]],\n",
       }) {
    EXPECT_NE(tarn_out.find(line), std::string::npos) << "missing: " << line << "\n" << tarn_out;
  }
  const uint16_t kafka = kafka_port();
  if (kafka == 0) GTEST_SKIP() << "no Kafka 4.4.0 to compare with; tarn printed:\n" << tarn_out;
  EXPECT_EQ(tarn_out, run(kafka, "kafka"));
}

// Hand-built requests for the error branches, each answer printed field by field.
std::string hand_built_answers(uint16_t port) {
  auto connected = tools::kafka_client::connect("127.0.0.1:" + std::to_string(port));
  EXPECT_TRUE(connected.has_value());
  if (!connected) return "no connection";
  tools::kafka_client& c = **connected;
  std::ostringstream out;
  std::vector<uint8_t> buf;
  // Topics: zz-a (2 partitions, one record in partition 0), zz-b (1 partition); named to sort
  // after every other topic the reference broker may hold from the other tests.
  {
    auto [rc, o] =
        run_command(std::string("timeout 60 ") + TARN_BINARY +
                    " topics --bootstrap-server 127.0.0.1:" + std::to_string(port) +
                    " --create --topic zz-a --partitions 2 && timeout 60 " + TARN_BINARY +
                    " topics --bootstrap-server 127.0.0.1:" + std::to_string(port) +
                    " --create --topic zz-b --partitions 1");
    EXPECT_EQ(rc, 0) << o;
    auto [prc, po] =
        run_command("printf 'x\\n' | timeout 60 kcat -P -b 127.0.0.1:" + std::to_string(port) +
                    " -t zz-a -p 0 -X acks=all 2>&1");
    EXPECT_EQ(prc, 0) << po;
  }

  // DescribeCluster: each endpoint type, each version.
  for (int16_t v = 0; v <= 2; ++v) {
    for (int8_t type : {1, 2, 3}) {
      if (v == 0 && type != 1) continue;  // v0 has no field
      protocol::describe_cluster_request req;
      req.endpoint_type = type;
      auto r = tools::call<protocol::describe_cluster_response>(c, req, v, buf);
      if (!r) {
        out << "DescribeCluster v" << v << ": " << r.error() << "\n";
        continue;
      }
      out << "DescribeCluster v" << v << " type " << int(type) << ": error " << r->error_code << " "
          << opt(r->error_message) << " type " << int(r->endpoint_type) << " brokers "
          << r->brokers.size() << " controller " << r->controller_id << " ops "
          << r->cluster_authorized_operations << " cluster id length " << r->cluster_id.size()
          << "\n";
    }
  }

  // DescribeTopicPartitions: paging, unknown and invalid names, bad cursors.
  auto dtp = [&](const std::string& what, std::vector<std::string_view> names, int32_t limit,
                 std::optional<std::pair<std::string_view, int32_t>> cursor) {
    protocol::describe_topic_partitions_request req;
    for (auto n : names) req.topics.push_back({n});
    req.response_partition_limit = limit;
    if (cursor) req.cursor = {{cursor->first, cursor->second}};
    auto r = tools::call<protocol::describe_topic_partitions_response>(c, req, 0, buf);
    if (!r) {
      out << "DescribeTopicPartitions " << what << ": " << r.error() << "\n";
      return;
    }
    out << "DescribeTopicPartitions " << what << ":";
    for (const auto& t : r->topics) {
      if (!names.empty() || t.name->rfind("zz-", 0) == 0) {
        out << " [" << opt(t.name) << " error " << t.error_code << " internal " << t.is_internal
            << " ops " << t.topic_authorized_operations << " partitions";
        for (const auto& p : t.partitions) {
          out << " " << p.partition_index << "/" << p.leader_id << "/" << p.leader_epoch << "/"
              << p.replica_nodes.size() << "/" << p.isr_nodes.size() << "/"
              << (p.eligible_leader_replicas ? std::to_string(p.eligible_leader_replicas->size())
                                             : "null")
              << "/" << (p.last_known_elr ? std::to_string(p.last_known_elr->size()) : "null")
              << "/" << p.offline_replicas.size();
        }
        out << "]";
      }
    }
    if (r->next_cursor) {
      out << " next " << r->next_cursor->topic_name << ":" << r->next_cursor->partition_index;
    }
    out << "\n";
  };
  dtp("both", {"zz-b", "zz-a"}, 2000, std::nullopt);
  dtp("limit 1", {"zz-a", "zz-b"}, 1, std::nullopt);
  dtp("limit 2", {"zz-a", "zz-b"}, 2, std::nullopt);
  dtp("cursor hand-a:1", {"zz-a", "zz-b"}, 1, std::pair{"zz-a", 1});
  dtp("cursor past the end", {"zz-a", "zz-b"}, 10, std::pair{"zz-a", 9});
  dtp("cursor not asked", {"zz-b"}, 10, std::pair{"zz-a", 0});
  dtp("negative cursor", {"zz-a"}, 10, std::pair{"zz-a", -1});
  dtp("unknown and invalid", {"zz-missing", "bad/name", "__transaction_state"}, 10, std::nullopt);
  dtp("all topics from hand-a:1", {}, 2, std::pair{"zz-a", 1});

  // DescribeLogDirs at every version: null, asked, unknown.
  for (int16_t v = 1; v <= 5; ++v) {
    for (int mode = 0; mode < 3; ++mode) {
      protocol::describe_log_dirs_request req;
      if (mode > 0) {
        req.topics.emplace();
        req.topics->push_back({mode == 1 ? "zz-a" : "zz-missing", {0, 1, 7}});
      }
      auto r = tools::call<protocol::describe_log_dirs_response>(c, req, v, buf);
      if (!r) {
        out << "DescribeLogDirs v" << v << ": " << r.error() << "\n";
        continue;
      }
      out << "DescribeLogDirs v" << v << " mode " << mode << ": error " << r->error_code << " dirs "
          << r->results.size();
      for (const auto& d : r->results) {
        out << " [error " << d.error_code << " absolute " << (d.log_dir.substr(0, 1) == "/")
            << " total>0 " << (d.total_bytes > 0) << " usable>0 " << (d.usable_bytes > 0)
            << " cordoned " << d.is_cordoned;
        // Sorted: Kafka answers in its hash maps' order (docs/compatibility.md).
        std::set<std::string> partitions;
        for (const auto& t : d.topics) {
          if (t.name.rfind("zz-", 0) != 0) continue;
          for (const auto& p : t.partitions) {
            partitions.insert(" " + std::string(t.name) + "-" + std::to_string(p.partition_index) +
                              " size " + std::to_string(p.partition_size) + " lag " +
                              std::to_string(p.offset_lag) + " future " +
                              std::to_string(p.is_future_key));
          }
        }
        for (const auto& p : partitions) out << p;
        out << "]";
      }
      out << "\n";
    }
  }

  // OffsetForLeaderEpoch: known and unknown epochs, fencing, unknown partitions, replica ids.
  for (int16_t v = 2; v <= 4; ++v) {
    for (int32_t replica : {-1, 1}) {
      if (v < 3 && replica != -1) continue;
      protocol::offset_for_leader_epoch_request req;
      req.replica_id = replica;
      req.topics.push_back({"zz-a",
                            {{0, -1, 0},
                             {0, 0, 0},
                             {0, -1, 1},
                             {0, -1, -1},
                             {0, 1, 0},
                             {0, -5, 0},
                             {1, -1, 0},
                             {9, -1, 0}}});
      req.topics.push_back({"zz-missing", {{0, -1, 0}}});
      auto r = tools::call<protocol::offset_for_leader_epoch_response>(c, req, v, buf);
      if (!r) {
        out << "OffsetForLeaderEpoch v" << v << ": " << r.error() << "\n";
        continue;
      }
      out << "OffsetForLeaderEpoch v" << v << " replica " << replica << ":";
      for (const auto& t : r->topics) {
        for (const auto& p : t.partitions) {
          out << " " << t.topic << "-" << p.partition << "=" << p.error_code << "/"
              << p.leader_epoch << "/" << p.end_offset;
        }
      }
      out << "\n";
    }
  }

  // ElectLeaders: each version, an unknown election type.
  for (int16_t v = 0; v <= 2; ++v) {
    for (int8_t type : {0, 1, 7}) {
      if (v == 0 && type != 0) continue;
      protocol::elect_leaders_request req;
      req.election_type = type;
      req.topic_partitions.emplace();
      req.topic_partitions->push_back({"zz-a", {0, 0, 4}});
      req.topic_partitions->push_back({"zz-missing", {0}});
      auto r = tools::call<protocol::elect_leaders_response>(c, req, v, buf);
      if (!r) {
        out << "ElectLeaders v" << v << ": " << r.error() << "\n";
        continue;
      }
      out << "ElectLeaders v" << v << " type " << int(type) << ": error " << r->error_code;
      for (const auto& t : r->replica_election_results) {
        for (const auto& p : t.partition_result) {
          out << " [" << t.topic << "-" << p.partition_id << " " << p.error_code << " "
              << opt(p.error_message) << "]";
        }
      }
      out << "\n";
    }
  }

  // AlterPartitionReassignments: every branch, both versions, both AllowReplicationFactorChange.
  for (int16_t v = 0; v <= 1; ++v) {
    for (bool allow : {true, false}) {
      if (v == 0 && !allow) continue;
      protocol::alter_partition_reassignments_request req;
      req.allow_replication_factor_change = allow;
      protocol::alter_partition_reassignments_request::reassignable_topic t;
      t.name = "zz-a";
      t.partitions.push_back({0, std::vector<int32_t>{1}});
      t.partitions.push_back({0, std::vector<int32_t>{}});
      t.partitions.push_back({0, std::vector<int32_t>{3, 2}});
      t.partitions.push_back({0, std::vector<int32_t>{1, 1}});
      t.partitions.push_back({1, std::nullopt});
      t.partitions.push_back({6, std::vector<int32_t>{1}});
      req.topics.push_back(t);
      req.topics.push_back({"zz-missing", {{0, std::vector<int32_t>{1}}}});
      auto r = tools::call<protocol::alter_partition_reassignments_response>(c, req, v, buf);
      if (!r) {
        out << "AlterPartitionReassignments v" << v << ": " << r.error() << "\n";
        continue;
      }
      out << "AlterPartitionReassignments v" << v << " allow " << allow << ": error "
          << r->error_code << " " << opt(r->error_message) << " allow "
          << r->allow_replication_factor_change;
      for (const auto& rt : r->responses) {
        for (const auto& p : rt.partitions) {
          out << " [" << rt.name << "-" << p.partition_index << " " << p.error_code << " "
              << opt(p.error_message) << "]";
        }
      }
      out << "\n";
    }
  }

  // ListPartitionReassignments: everything, and named topics (known or not).
  for (bool all : {true, false}) {
    protocol::list_partition_reassignments_request req;
    if (!all) req.topics = {{{"zz-a", {0, 1}}, {"zz-missing", {0}}}};
    auto r = tools::call<protocol::list_partition_reassignments_response>(c, req, 0, buf);
    if (!r) {
      out << "ListPartitionReassignments: " << r.error() << "\n";
      continue;
    }
    out << "ListPartitionReassignments all " << all << ": error " << r->error_code << " "
        << opt(r->error_message) << " topics " << r->topics.size() << "\n";
  }
  return out.str();
}

TEST_F(admin_describe, hand_built_requests_answered_the_same_against_kafka) {
  if (!have_program("kcat")) GTEST_SKIP() << "kcat is missing";
  const std::string tarn_out = hand_built_answers(tarn_->port());
  EXPECT_NE(tarn_out.find("DescribeCluster v2 type 1: error 0"), std::string::npos) << tarn_out;
  const uint16_t kafka = kafka_port();
  if (kafka == 0) GTEST_SKIP() << "no Kafka 4.4.0 to compare with; tarn answered:\n" << tarn_out;
  EXPECT_EQ(tarn_out, hand_built_answers(kafka));
}

// Every new API: a body cut short closes the connection; huge arrays are answered with memory
// bounded by what was received (memory_growth_bound_kib).
TEST_F(admin_describe, truncated_bodies_close_and_huge_arrays_stay_bounded) {
  const long baseline = tarn_->process().peak_rss_kib();
  size_t sent = 0;
  struct api {
    int16_t key, version;
    bool flexible;
    std::vector<uint8_t> body;
  };
  auto body_of = [](const auto& m, int16_t v) {
    std::vector<uint8_t> b;
    protocol::writer w(b);
    m.encode(w, v);
    return b;
  };
  protocol::describe_topic_partitions_request dtp;
  dtp.topics = {{"some-topic"}, {"other"}};
  protocol::describe_log_dirs_request dld;
  dld.topics = {{{"some-topic", {0, 1, 2}}}};
  protocol::offset_for_leader_epoch_request ofle;
  ofle.topics = {{"some-topic", {{0, -1, 0}, {1, 0, 0}}}};
  protocol::elect_leaders_request el;
  el.topic_partitions = {{{"some-topic", {0, 1}}}};
  protocol::alter_partition_reassignments_request apr;
  apr.topics = {{"some-topic", {{0, std::vector<int32_t>{1}}}}};
  protocol::list_partition_reassignments_request lpr;
  lpr.topics = {{{"some-topic", {0}}}};
  const std::vector<api> apis = {
      {60, 2, true, {1, 1, 0, 0}},    {75, 0, true, body_of(dtp, 0)},
      {35, 4, true, body_of(dld, 4)}, {23, 4, true, body_of(ofle, 4)},
      {43, 2, true, body_of(el, 2)},  {45, 1, true, body_of(apr, 1)},
      {46, 0, true, body_of(lpr, 0)},
  };
  int32_t id = 100;
  for (const auto& a : apis) {
    for (size_t n = 0; n < a.body.size(); ++n) {
      raw_client c(tarn_->port());
      ASSERT_TRUE(c.connected());
      std::vector<uint8_t> cut(a.body.begin(), a.body.begin() + static_cast<long>(n));
      auto frame = request_frame(a.key, a.version, ++id, cut, a.flexible);
      sent += frame.size();
      if (!c.send_bytes(frame)) continue;
      EXPECT_FALSE(c.read_frame(5s).has_value())
          << "api " << a.key << " cut at " << n << " was answered";
      EXPECT_TRUE(c.wait_closed(5s)) << "api " << a.key << " cut at " << n;
    }
  }
  // Huge arrays: 200,000 unknown topic names, 200,000 partitions of an unknown topic.
  auto c = tools::kafka_client::connect(bootstrap(tarn_->port()));
  ASSERT_TRUE(c.has_value());
  std::vector<std::string> names;
  for (int i = 0; i < 200000; ++i) names.push_back("missing-" + std::to_string(i));
  protocol::describe_topic_partitions_request big;
  for (const auto& n : names) big.topics.push_back({n});
  std::vector<uint8_t> buf;
  sent += big.encoded_size(0);
  auto r = tools::call<protocol::describe_topic_partitions_response>(**c, big, 0, buf);
  ASSERT_TRUE(r.has_value()) << r.error();
  EXPECT_EQ(r->topics.size(), names.size());
  EXPECT_EQ(r->topics[0].error_code, code(protocol::error_code::unknown_topic_or_partition));
  protocol::offset_for_leader_epoch_request many;
  many.topics.push_back({"missing", {}});
  for (int32_t p = 0; p < 200000; ++p) many.topics[0].partitions.push_back({p, -1, 0});
  sent += many.encoded_size(4);
  auto o = tools::call<protocol::offset_for_leader_epoch_response>(**c, many, 4, buf);
  ASSERT_TRUE(o.has_value()) << o.error();
  EXPECT_EQ(o->topics[0].partitions.size(), 200000u);
  protocol::describe_log_dirs_request dirs;
  dirs.topics = {
      {{"missing", many.topics[0].partitions.empty() ? std::vector<int32_t>{}
                                                     : std::vector<int32_t>(200000, 3)}}};
  sent += dirs.encoded_size(4);
  auto d = tools::call<protocol::describe_log_dirs_response>(**c, dirs, 4, buf);
  ASSERT_TRUE(d.has_value()) << d.error();
  const long peak = tarn_->process().peak_rss_kib();
  EXPECT_LE(peak, baseline + memory_growth_bound_kib(sent))
      << "sent " << sent << " bytes, peak " << peak << " KiB, baseline " << baseline;
  RecordProperty("peak_rss_kib", std::to_string(peak));
}

}  // namespace
}  // namespace tarn::test
