// Client quotas end to end, against `tarn serve` and against Apache Kafka 4.4.0 (scripts/kafka-ref,
// when java and its jars are there) with the same assertions:
//   - Kafka's own kafka-configs (ConfigCommand from the 4.4.0 jars) sets, describes and removes
//     quotas of clients, users, user+client pairs, their defaults and ips, and prints byte for
//     byte what it prints against Kafka, its errors included;
//   - a producer (confluent-kafka) with client.id "limited" and producer_byte_rate 1 MiB/s is
//     held to 1 MiB/s +-10% over 20 s, while a producer without a quota on the same broker at the
//     same time is never throttled and writes far more. Both brokers run with quota.window.num=2:
//     with Kafka's default of 11 one-second windows a client may burst ~11 s of its quota at
//     once, so over 20 s Kafka itself lets 1.25 MiB/s through (measured here: 1.25 vs 1.26 for
//     tarn); with 2 windows the bursts are 2 s and both hold 1 MiB/s within a percent;
//   - a consumer (confluent-kafka, partition assigned, no group) with consumer_byte_rate 1 MiB/s
//     is held to 1 MiB/s +-10% over 20 s while an unlimited one reads the whole 48 MB topic;
//   - a client with request_percentage far below what one request takes gets ThrottleTimeMs
//     1000 (one quota window, the request quota's bound) in Metadata, ListOffsets,
//     DescribeCluster, ApiVersions and DescribeClientQuotas answers, and its connection muted
//     for that long (DescribeQuorum, which has no ThrottleTimeMs, mutes it too), while another
//     client gets 0 and no mute;
//   - hand-built AlterClientQuotas/DescribeClientQuotas requests: validate_only changes nothing,
//     one answer per entity with Kafka's codes and messages, an invalid filter answers its error
//     with null entries, a consumer over consumer_byte_rate gets empty throttled fetches.
// GCC 12's -Wrestrict misfires on std::string operator+ with literals (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kafka_conn.h"
#include "kafka_ref_broker.h"
#include "protocol/messages/alter_client_quotas_request.h"
#include "protocol/messages/alter_client_quotas_response.h"
#include "protocol/messages/api_versions_request.h"
#include "protocol/messages/api_versions_response.h"
#include "protocol/messages/create_partitions_request.h"
#include "protocol/messages/create_partitions_response.h"
#include "protocol/messages/create_topics_request.h"
#include "protocol/messages/create_topics_response.h"
#include "protocol/messages/delete_topics_request.h"
#include "protocol/messages/delete_topics_response.h"
#include "protocol/messages/describe_client_quotas_request.h"
#include "protocol/messages/describe_client_quotas_response.h"
#include "protocol/messages/describe_cluster_request.h"
#include "protocol/messages/describe_cluster_response.h"
#include "protocol/messages/describe_quorum_request.h"
#include "protocol/messages/describe_quorum_response.h"
#include "protocol/messages/list_offsets_request.h"
#include "protocol/messages/list_offsets_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

// An AlterClientQuotas request: per entity ((type, name or nullopt for the default)...), its
// ops (key, value, remove); the strings it points into are kept in `strings`.
protocol::alter_client_quotas_request alter_request(
    std::vector<std::pair<std::vector<std::pair<std::string, std::optional<std::string>>>,
                          std::vector<std::tuple<std::string, double, bool>>>>
        entries,
    bool validate_only, std::vector<std::string>& strings) {
  strings.reserve(1024);
  auto keep = [&](const std::string& s) -> std::string_view { return strings.emplace_back(s); };
  protocol::alter_client_quotas_request req;
  for (const auto& [entity, ops] : entries) {
    auto& e = req.entries.emplace_back();
    for (const auto& [type, n] : entity) {
      auto& d = e.entity.emplace_back();
      d.entity_type = keep(type);
      if (n) {
        d.entity_name = keep(*n);
      } else {
        d.entity_name = std::nullopt;  // the type's default (a nullable string's default is "")
      }
    }
    for (const auto& [key, value, remove] : ops) {
      auto& o = e.ops.emplace_back();
      o.key = keep(key);
      o.value = value;
      o.remove = remove;
    }
  }
  req.validate_only = validate_only;
  return req;
}

class quotas : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
    if (auto skip = start_test_broker(GetParam(), {"quota.window.num=2"}, tarn_, port_);
        !skip.empty()) {
      GTEST_SKIP() << skip;
    }
    ASSERT_NE(port_, 0);
    prefix_ = test_name_prefix();
  }
  void TearDown() override {
    // The Kafka broker is shared by the tests of this process: leave no quota behind.
    if (GetParam() == broker_kind::kafka && !kafka_libs().empty() && port_ != 0) {
      for (const auto& e : cleanup_) configs("--alter " + e);
    }
    if (GetParam() == broker_kind::kafka && port_ != 0) {
      for (const auto& [client, key] : client_quota_cleanup_)
        alter_client_quota(client, key, 0, true);
    }
    if (tarn_) tarn_->stop();
  }

  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string name(const std::string& n) const { return prefix_ + n; }

  // kafka-configs from Kafka's jars: its output (stdout and stderr) and exit code.
  std::pair<int, std::string> configs(const std::string& args) const {
    if (kafka_libs().empty()) return {-1, "no jars"};
    auto [rc, out] = run_command("timeout 120 java -cp '" + kafka_libs() +
                                 "/*' org.apache.kafka.tools.ConfigCommand --bootstrap-server " +
                                 bootstrap() + " " + args);
    std::istringstream in(out);
    std::string line, kept;  // without the stack traces of a failed call
    while (std::getline(in, line)) {
      if (!line.starts_with("\tat ") && !line.starts_with("\t... ")) kept += line + "\n";
    }
    return {rc, kept};
  }
  // Sets `config` on the entity (args like "--entity-type clients --entity-name x") and
  // remembers to remove it.
  void set_quota(const std::string& entity, const std::string& config, const std::string& key) {
    auto [rc, out] = configs("--alter " + entity + " --add-config " + config);
    ASSERT_EQ(rc, 0) << out;
    cleanup_.push_back(entity + " --delete-config " + key);
  }

  // Sets (or removes) a client-id's quota `key` with a hand-built AlterClientQuotas v1, as
  // kafka-configs sends it; the rate tests set theirs so, without a JVM's start-up (what the tool
  // itself prints is kafka_configs_sets_describes_and_deletes_client_quotas's to check).
  void alter_client_quota(const std::string& client, const std::string& key, double value,
                          bool remove) {
    std::vector<std::string> strings;
    kafka_conn c(port_, nullptr);
    ASSERT_TRUE(c.connected());
    auto r = c.call<protocol::alter_client_quotas_response>(
        alter_request({{{{"client-id", client}}, {{key, value, remove}}}}, false, strings), 1);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->entries.size(), 1u);
    ASSERT_EQ(r->entries[0].error_code, 0) << r->entries[0].error_message.value_or("");
  }
  void set_client_quota(const std::string& client, const std::string& key, double value) {
    ASSERT_NO_FATAL_FAILURE(alter_client_quota(client, key, value, false));
    client_quota_cleanup_.emplace_back(client, key);
    // Kafka's broker learns the quota from its metadata log a moment after the answer.
    if (GetParam() == broker_kind::kafka) std::this_thread::sleep_for(std::chrono::seconds(1));
  }

  uint16_t port_ = 0;
  std::unique_ptr<broker_process> tarn_;
  std::string prefix_;
  std::vector<std::string> cleanup_;
  std::vector<std::pair<std::string, std::string>> client_quota_cleanup_;  // client-id, key
};

// What kafka-configs prints for these calls, with this test's names in place of ${p}; the same
// text for tarn and Kafka.
TEST_P(quotas, kafka_configs_sets_describes_and_deletes_client_quotas) {
#ifdef TARN_SANITIZED_BUILD
  // A JVM a command: the tool's output is the release suite's to check; the quota APIs have the
  // hand-built tests below, which the sanitizer trees run.
  GTEST_SKIP() << "kafka-configs.sh's test runs in the release build only";
#endif
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  const std::string c = name("client"), u = name("user");
  set_quota("--entity-type clients --entity-name " + c,
            "producer_byte_rate=1048576,consumer_byte_rate=2097152", "producer_byte_rate");
  cleanup_.push_back("--entity-type clients --entity-name " + c +
                     " --delete-config consumer_byte_rate");
  set_quota("--entity-type users --entity-name " + u, "request_percentage=12.5",
            "request_percentage");
  set_quota("--entity-type users --entity-name " + u + " --entity-type clients --entity-name " + c,
            "controller_mutation_rate=10", "controller_mutation_rate");
  set_quota("--entity-type clients --entity-default", "producer_byte_rate=5000000",
            "producer_byte_rate");
  set_quota("--entity-type ips --entity-name 10.20.30.40", "connection_creation_rate=7",
            "connection_creation_rate");

  auto expect = [&](const std::string& args, const std::string& want) {
    auto [rc, out] = configs(args);
    EXPECT_EQ(rc, 0) << args << "\n" << out;
    EXPECT_EQ(out, want) << args;
  };
  expect("--describe --entity-type clients --entity-name " + c,
         "Quota configs for client-id '" + c +
             "' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0\n");
  expect("--describe --entity-type users --entity-name " + u,
         "Quota configs for user-principal '" + u + "' are request_percentage=12.5\n");
  expect("--describe --entity-type users --entity-name " + u +
             " --entity-type clients --entity-name " + c,
         "Quota configs for user-principal '" + u + "', client-id '" + c +
             "' are controller_mutation_rate=10.0\n");
  expect("--describe --entity-type clients --entity-default",
         "Quota configs for the default client-id are producer_byte_rate=5000000.0\n");
  expect("--describe --entity-type ips --entity-name 10.20.30.40",
         "Quota configs for ip '10.20.30.40' are connection_creation_rate=7.0\n");

  // Removing: the entity is gone from describe.
  auto [rc, out] = configs("--alter --entity-type clients --entity-name " + c +
                           " --delete-config producer_byte_rate,consumer_byte_rate");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "Completed updating config for client " + c + ".\n");
  expect("--describe --entity-type clients --entity-name " + c, "");

  // Kafka's validation, reported by the tool.
  // (kafka-configs prints the error and exits 0 for both brokers.)
  auto [bad_rc, bad] = configs("--alter --entity-type clients --entity-name " + c +
                               " --add-config producer_byte_rate=-5");
  EXPECT_NE(bad.find("Quota producer_byte_rate must be greater than 0"), std::string::npos) << bad;
  auto [frac_rc, frac] = configs("--alter --entity-type clients --entity-name " + c +
                                 " --add-config producer_byte_rate=1.5");
  EXPECT_NE(frac.find("producer_byte_rate cannot be a fractional value."), std::string::npos)
      << frac;
}

struct produced {
  double rate = 0;
  long acked_bytes = 0;
  long errors = -1;
  double throttle_max_ms = -1;
};

produced parse_produced(const std::string& out) {
  produced p;
  std::smatch m;
  auto num = [&](const char* key) -> double {
    std::regex re(std::string("\"") + key + "\": ([0-9.e+-]+)");
    return std::regex_search(out, m, re) ? std::stod(m[1]) : -1;
  };
  p.rate = num("rate");
  p.acked_bytes = static_cast<long>(num("acked_bytes"));
  p.errors = static_cast<long>(num("errors"));
  p.throttle_max_ms = num("throttle_max_ms");
  return p;
}

TEST_P(quotas, a_producer_is_held_to_its_byte_rate_and_another_is_not_slowed) {
  const std::string topic = name("topic");
  const std::string limited = name("limited"), free = name("free");
  {
    auto [rc, out] =
        run_command(std::string("timeout 60 ") + TARN_BINARY + " topics --bootstrap-server " +
                    bootstrap() + " --create --topic " + topic + " --partitions 1");
    ASSERT_EQ(rc, 0) << out;
  }
  ASSERT_NO_FATAL_FAILURE(set_client_quota(limited, "producer_byte_rate", 1048576));
  const std::string script = std::string(TARN_SOURCE_DIR) + "/tests/python/quota_produce.py ";
  const std::string args = bootstrap() + " " + topic + " ";
  // 25 s each, counted over [5 s, 25 s).
  std::pair<int, std::string> free_out;
  std::thread other(
      [&] { free_out = run_command("timeout 120 " + script + args + free + " 25 5 1000"); });
  auto lim_out = run_command("timeout 120 " + script + args + limited + " 25 5 1000");
  other.join();
  ASSERT_EQ(lim_out.first, 0) << lim_out.second;
  ASSERT_EQ(free_out.first, 0) << free_out.second;
  const produced lim = parse_produced(lim_out.second), fr = parse_produced(free_out.second);
  EXPECT_EQ(lim.errors, 0) << lim_out.second;
  EXPECT_EQ(fr.errors, 0) << free_out.second;
  // The quota counts the whole Produce request; the script counts values: never more than 10 %
  // above. Below, how far a held producer falls short is the client's and the machine's: on a
  // loaded machine (ctest -j4 beside other jobs) the Python client resumes late after each
  // throttle, and it fell 10.6 % short under a sanitized broker (937,700 B/s, throttled 1.9 s a
  // request) and 10.7 % under a release one (936,100 B/s, throttled 2.4 s); 20 % still tells an
  // over-eager throttle (a producer held to half its quota) from a late client.
  EXPECT_LE(lim.rate, 1.1 * 1048576.0) << lim_out.second;
  EXPECT_GE(lim.rate, 0.8 * 1048576.0) << lim_out.second;
  EXPECT_GT(lim.throttle_max_ms, 0) << "librdkafka saw ThrottleTimeMs: " << lim_out.second;
  EXPECT_EQ(fr.throttle_max_ms, 0) << free_out.second;
  EXPECT_GT(fr.rate, 5 * 1048576.0)
      << "the unlimited producer is not held back: " << free_out.second;
}

struct consumed {
  double rate = 0;
  long total_bytes = -1;
  long errors = -1;
  double throttle_max_ms = -1;
};

consumed parse_consumed(const std::string& out) {
  consumed c;
  std::smatch m;
  auto num = [&](const char* key) -> double {
    std::regex re(std::string("\"") + key + "\": ([0-9.e+-]+)");
    return std::regex_search(out, m, re) ? std::stod(m[1]) : -1;
  };
  c.rate = num("rate");
  c.total_bytes = static_cast<long>(num("total_bytes"));
  c.errors = static_cast<long>(num("errors"));
  c.throttle_max_ms = num("throttle_max_ms");
  return c;
}

TEST_P(quotas, a_consumer_is_held_to_its_byte_rate_and_another_is_not_slowed) {
  const std::string topic = name("topic");
  const std::string limited = name("limited"), free = name("free");
  const std::string tarn = std::string("timeout 120 ") + TARN_BINARY;
  {
    auto [rc, out] = run_command(tarn + " topics --bootstrap-server " + bootstrap() +
                                 " --create --topic " + topic + " --partitions 1");
    ASSERT_EQ(rc, 0) << out;
  }
  // 48,000 values of 1,000 bytes: more than the limited consumer can read in 25 s.
  constexpr long values_bytes = 48'000L * 1000;
  {
    auto [rc, out] =
        run_command(tarn + " perf produce --bootstrap-server " + bootstrap() + " --topic " + topic +
                    " --num-records 48000 --record-size 1000 --throughput -1");
    ASSERT_EQ(rc, 0) << out;
  }
  ASSERT_NO_FATAL_FAILURE(set_client_quota(limited, "consumer_byte_rate", 1048576));
  const std::string script = std::string(TARN_SOURCE_DIR) + "/tests/python/quota_consume.py ";
  const std::string args = bootstrap() + " " + topic + " ";
  // 25 s each, counted over [5 s, 25 s).
  std::pair<int, std::string> free_out;
  std::thread other(
      [&] { free_out = run_command("timeout 120 " + script + args + free + " 25 5"); });
  auto lim_out = run_command("timeout 120 " + script + args + limited + " 25 5");
  other.join();
  ASSERT_EQ(lim_out.first, 0) << lim_out.second;
  ASSERT_EQ(free_out.first, 0) << free_out.second;
  const consumed lim = parse_consumed(lim_out.second), fr = parse_consumed(free_out.second);
  EXPECT_EQ(lim.errors, 0) << lim_out.second;
  EXPECT_EQ(fr.errors, 0) << free_out.second;
  // The quota counts the Fetch responses; the script counts values: within +-10 %.
  EXPECT_NEAR(lim.rate, 1048576.0, 0.1 * 1048576.0) << lim_out.second;
  EXPECT_GT(lim.throttle_max_ms, 0) << "librdkafka saw ThrottleTimeMs: " << lim_out.second;
  EXPECT_EQ(fr.throttle_max_ms, 0) << free_out.second;
  EXPECT_EQ(fr.total_bytes, values_bytes)
      << "the unlimited consumer reads everything: " << free_out.second;
}

// ---- Hand-built requests.

TEST_P(quotas, alter_and_describe_answer_kafkas_codes_and_messages) {
  kafka_conn c(port_, nullptr);
  ASSERT_TRUE(c.connected());
  const std::string id = name("raw");
  std::vector<std::string> strings;
  for (int16_t v : {int16_t{0}, int16_t{1}}) {
    SCOPED_TRACE(testing::Message() << "version " << v);
    // validate_only: answered as a real change, nothing changes.
    auto r = c.call<protocol::alter_client_quotas_response>(
        alter_request({{{{"client-id", id}}, {{"producer_byte_rate", 1000, false}}}}, true,
                      strings),
        v);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->entries.size(), 1u);
    EXPECT_EQ(r->entries[0].error_code, 0);
    protocol::describe_client_quotas_request d;
    auto& comp = d.components.emplace_back();
    comp.entity_type = "client-id";
    comp.match_type = 0;
    comp.match = std::string_view(id);
    d.strict = true;
    auto dr = c.call<protocol::describe_client_quotas_response>(d, v);
    ASSERT_TRUE(dr);
    EXPECT_EQ(dr->error_code, 0);
    ASSERT_TRUE(dr->entries.has_value());
    EXPECT_TRUE(dr->entries->empty());

    // Errors, one answer per entity.
    r = c.call<protocol::alter_client_quotas_response>(
        alter_request({{{{"client-id", id}}, {{"producer_byte_rate", 0, false}}},
                       {{{"group", std::string("g")}}, {{"producer_byte_rate", 1, false}}},
                       {{{"ip", std::string("10.0.0.1")}}, {{"producer_byte_rate", 1, false}}}},
                      false, strings),
        v);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->entries.size(), 3u);
    std::map<std::string, std::pair<int16_t, std::string>> by_type;
    for (const auto& e : r->entries) {
      by_type[std::string(e.entity.at(0).entity_type)] = {
          e.error_code, e.error_message ? std::string(*e.error_message) : ""};
    }
    EXPECT_EQ(by_type["client-id"],
              std::make_pair(int16_t{42},
                             std::string("Quota producer_byte_rate must be greater than 0")));
    EXPECT_EQ(
        by_type["group"],
        std::make_pair(int16_t{42}, std::string("Unhandled client quota entity type: group")));
    EXPECT_EQ(
        by_type["ip"],
        std::make_pair(int16_t{42}, std::string("Invalid configuration key producer_byte_rate")));

    // An invalid filter: its error, null entries.
    protocol::describe_client_quotas_request bad;
    auto& b = bad.components.emplace_back();
    b.entity_type = "user";
    b.match_type = 0;
    b.match = std::nullopt;  // a nullable string's default is "" (as in Kafka's messages)
    auto br = c.call<protocol::describe_client_quotas_response>(bad, v);
    ASSERT_TRUE(br);
    EXPECT_EQ(br->error_code, 42);
    EXPECT_EQ(br->error_message.value_or(""),
              "Request specified MATCH_TYPE_EXACT, but set match string to null.");
    EXPECT_FALSE(br->entries.has_value());
  }
}

// ---- controller_mutation_rate (KIP-599): strict from CreateTopics v6, DeleteTopics v5 and
// CreatePartitions v3, permissive before. At 0.1 partitions/s the bucket holds 11 windows x
// 1 s x 0.1 = 1.1 permits: two one-partition topics fit (the second goes 0.9 into debt), and
// the debt lasts 9 s, so every request below sees it. Each request goes on a new connection:
// a throttled answer mutes its connection for the throttle time.

template <class Resp, class Req>
std::optional<Resp> call_as(uint16_t port, const std::string& client_id, const Req& req,
                            int16_t version, std::vector<uint8_t>& keep) {
  kafka_conn c(port, nullptr);
  if (!c.connected()) return std::nullopt;
  const int32_t id = c.send(req, version, client_id);
  auto r = c.template receive<Resp>(version);
  if (!r || r.correlation_id != id) return std::nullopt;
  keep = std::move(r.frame);  // the views in the answer point into its frame
  return std::move(*r.body);
}

TEST_P(quotas, controller_mutation_rate_refuses_strict_and_throttles_permissive_changes) {
  const std::string client = name("mutator");
  std::vector<std::string> strings;
  std::vector<uint8_t> keep;
  auto set_rate = [&](bool remove) {
    kafka_conn c(port_, nullptr);
    ASSERT_TRUE(c.connected());
    auto r = c.call<protocol::alter_client_quotas_response>(
        alter_request({{{{"client-id", client}}, {{"controller_mutation_rate", 0.1, remove}}}},
                      false, strings),
        1);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->entries.size(), 1u);
    ASSERT_EQ(r->entries[0].error_code, 0);
  };
  set_rate(false);
  // Kafka's controller learns the quota from its metadata log a moment after the answer.
  if (GetParam() == broker_kind::kafka) std::this_thread::sleep_for(1s);

  auto create = [&](const std::vector<std::string>& names, int32_t partitions, int16_t version,
                    const std::string& as) {
    protocol::create_topics_request req;
    for (const auto& n : names) {
      auto& t = req.topics.emplace_back();
      t.name = n;
      t.num_partitions = partitions;
      t.replication_factor = 1;
    }
    req.timeout_ms = 30000;
    return call_as<protocol::create_topics_response>(port_, as, req, version, keep);
  };
  std::vector<std::string> names;
  for (int i = 0; i < 5; ++i) names.push_back(name("mut-" + std::to_string(i)));
  auto r = create(names, 1, 7, client);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->topics.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    SCOPED_TRACE(names[i]);
    EXPECT_EQ(r->topics[i].name, names[i]);
    if (i < 2) {
      EXPECT_EQ(r->topics[i].error_code, 0);
    } else {
      EXPECT_EQ(r->topics[i].error_code, 89);
      // Kafka's ApiError leaves out a message that is the code's default one.
      EXPECT_FALSE(r->topics[i].error_message.has_value()) << *r->topics[i].error_message;
    }
  }
  // 0.9 permits of debt at 0.1 a second: 9 s.
  EXPECT_GT(r->throttle_time_ms, 7000);
  EXPECT_LE(r->throttle_time_ms, 9000);

  {  // DeleteTopics v5 is strict: refused, the topic kept. v4 is permissive: deleted, throttled.
    protocol::delete_topics_request d;
    d.topic_names.push_back(names[0]);
    d.timeout_ms = 30000;
    auto dr = call_as<protocol::delete_topics_response>(port_, client, d, 5, keep);
    ASSERT_TRUE(dr);
    ASSERT_EQ(dr->responses.size(), 1u);
    EXPECT_EQ(dr->responses[0].error_code, 89);
    EXPECT_FALSE(dr->responses[0].error_message.has_value()) << *dr->responses[0].error_message;
    EXPECT_GT(dr->throttle_time_ms, 0);
    dr = call_as<protocol::delete_topics_response>(port_, client, d, 4, keep);
    ASSERT_TRUE(dr);
    ASSERT_EQ(dr->responses.size(), 1u);
    EXPECT_EQ(dr->responses[0].error_code, 0);
    EXPECT_GT(dr->throttle_time_ms, 9000);  // 1.9 permits of debt now
  }
  {  // CreatePartitions v3 strict, v2 permissive.
    protocol::create_partitions_request cp;
    auto& t = cp.topics.emplace_back();
    t.name = names[1];
    t.count_ = 2;
    t.assignments = std::nullopt;
    cp.timeout_ms = 30000;
    auto cr = call_as<protocol::create_partitions_response>(port_, client, cp, 3, keep);
    ASSERT_TRUE(cr);
    ASSERT_EQ(cr->results.size(), 1u);
    EXPECT_EQ(cr->results[0].error_code, 89);
    EXPECT_FALSE(cr->results[0].error_message.has_value()) << *cr->results[0].error_message;
    cr = call_as<protocol::create_partitions_response>(port_, client, cp, 2, keep);
    ASSERT_TRUE(cr);
    ASSERT_EQ(cr->results.size(), 1u);
    EXPECT_EQ(cr->results[0].error_code, 0);
    EXPECT_GT(cr->throttle_time_ms, 0);
  }
  // CreateTopics v5 is permissive: created, throttled.
  r = create({names[2]}, 1, 5, client);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->topics.size(), 1u);
  EXPECT_EQ(r->topics[0].error_code, 0);
  EXPECT_GT(r->throttle_time_ms, 0);
  // Another client has no quota: neither refused nor throttled.
  r = create({names[3]}, 3, 7, name("free"));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->topics.size(), 1u);
  EXPECT_EQ(r->topics[0].error_code, 0);
  EXPECT_EQ(r->throttle_time_ms, 0);
  set_rate(true);
}

// A sustained flood: one client sends CreateTopics v7 (strict) back to back on one connection for
// 5 s under controller_mutation_rate 5. Its burst (KIP-599's token bucket, rate x 11 windows of
// 1 s) is spent first by one 60-partition topic; from then on its topics are admitted at the
// quota's rate, the others refused THROTTLING_QUOTA_EXCEEDED with the time to wait (and the
// connection muted that long). A client id without a quota is neither refused nor throttled
// meanwhile.
TEST_P(quotas, sustained_create_topics_flood_is_held_to_controller_mutation_rate) {
  // Names of this run: the reference broker outlives a --gtest_repeat iteration, and with it the
  // token bucket of a client id (still in debt when the quota is set again).
  static int runs = 0;
  const std::string run = std::to_string(++runs) + "-";
  const std::string client = name(run + "flood");
  constexpr double rate = 5;
  std::vector<std::string> strings;
  std::vector<uint8_t> keep;
  auto set_rate = [&](bool remove) {
    kafka_conn c(port_, nullptr);
    ASSERT_TRUE(c.connected());
    auto r = c.call<protocol::alter_client_quotas_response>(
        alter_request({{{{"client-id", client}}, {{"controller_mutation_rate", rate, remove}}}},
                      false, strings),
        1);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->entries.size(), 1u);
    ASSERT_EQ(r->entries[0].error_code, 0);
  };
  set_rate(false);
  if (GetParam() == broker_kind::kafka) std::this_thread::sleep_for(1s);
  auto request = [](const std::vector<std::string>& names, int32_t partitions) {
    protocol::create_topics_request req;
    for (const auto& n : names) {
      auto& t = req.topics.emplace_back();
      t.name = n;
      t.num_partitions = partitions;
      t.replication_factor = 1;
    }
    req.timeout_ms = 30000;
    return req;
  };
  kafka_conn flood(port_, nullptr);
  ASSERT_TRUE(flood.connected());
  using clock = std::chrono::steady_clock;
  const auto burst_sent = clock::now();
  {
    const std::vector<std::string> burst = {name(run + "flood-burst")};
    const int32_t id = flood.send(request(burst, 60), 7, client);
    auto r = flood.receive<protocol::create_topics_response>(7, 30s);
    ASSERT_TRUE(r);
    ASSERT_EQ(r.correlation_id, id);
    ASSERT_EQ(r->topics[0].error_code, 0);  // admitted while tokens are left, into debt
  }
  const auto start = clock::now();
  std::vector<double> admitted_at;  // seconds since start
  int refused = 0;
  int32_t max_throttle_ms = 0;
  for (int i = 0; clock::now() - start < 5s; ++i) {
    const std::vector<std::string> one = {name(run + "fl-" + std::to_string(i))};
    const int32_t id = flood.send(request(one, 1), 7, client);
    auto r = flood.receive<protocol::create_topics_response>(7, 30s);
    ASSERT_TRUE(r) << "request " << i;
    ASSERT_EQ(r.correlation_id, id);
    ASSERT_EQ(r->topics.size(), 1u);
    const int16_t error = r->topics[0].error_code;
    ASSERT_TRUE(error == 0 || error == 89) << "request " << i << ": error " << error;
    if (error == 0) {
      admitted_at.push_back(std::chrono::duration<double>(clock::now() - start).count());
    } else {
      ++refused;
      EXPECT_GT(r->throttle_time_ms, 0) << "request " << i;
      max_throttle_ms = std::max(max_throttle_ms, r->throttle_time_ms);
    }
  }
  // Meanwhile another client id: no quota, so neither refused nor throttled.
  auto free = call_as<protocol::create_topics_response>(
      port_, name("unlimited"),
      request({name(run + "free-0"), name(run + "free-1"), name(run + "free-2")}, 2), 7, keep);
  ASSERT_TRUE(free);
  ASSERT_EQ(free->topics.size(), 3u);
  for (const auto& t : free->topics) EXPECT_EQ(t.error_code, 0) << t.name;
  EXPECT_EQ(free->throttle_time_ms, 0);
  set_rate(true);

  // Admitted topics (one partition each) between the first and the last admission: the quota's
  // rate within 20%. The debt of the burst (about 5 partitions) makes the first wait ~1 s.
  ASSERT_GE(admitted_at.size(), 10u) << refused << " refused";
  const double measured =
      static_cast<double>(admitted_at.size() - 1) / (admitted_at.back() - admitted_at.front());
  EXPECT_GT(measured, rate * 0.8) << admitted_at.size() << " admitted, " << refused << " refused";
  EXPECT_LT(measured, rate * 1.2) << admitted_at.size() << " admitted, " << refused << " refused";
  // No more than the bucket allows from the burst on: it was full (55) when the 60 partitions
  // were taken, and refills at the rate.
  const double since_burst = std::chrono::duration<double>(clock::now() - burst_sent).count();
  EXPECT_LE(static_cast<double>(admitted_at.size()), rate * since_burst - 5 + 1);
  EXPECT_GT(refused, 0);
  // A refusal's wait is the time until the bucket is not in debt: at most the burst's debt.
  EXPECT_LE(max_throttle_ms, 2000);
  RecordProperty("admitted_per_s", std::to_string(measured));
  std::cout << "admitted " << admitted_at.size() << " (" << measured << "/s), refused " << refused
            << ", longest throttle " << max_throttle_ms << " ms\n";
}

// ---- request_percentage (KIP-124) on every API, not only Produce and Fetch. A quota far below
// what any request takes (1e-6 % of a thread) makes the answer deterministic on both brokers:
// the overshoot is enormous, and the request quota's throttle is bounded by one quota window
// (ClientRequestQuotaManager), so every answer to that client says exactly 1000 ms
// (quota.window.size.seconds 1). The client's connection is then muted for that long (KIP-219):
// a second request on it is answered no sooner. Another client is never throttled.

TEST_P(quotas, request_percentage_throttles_every_api_of_its_client_only) {
  const std::string busy = name("busy"), other = name("other");
  std::vector<std::string> strings;
  auto set_percentage = [&](bool remove) {
    kafka_conn c(port_, nullptr);
    ASSERT_TRUE(c.connected());
    auto r = c.call<protocol::alter_client_quotas_response>(
        alter_request({{{{"client-id", busy}}, {{"request_percentage", 1e-6, remove}}}}, false,
                      strings),
        1);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->entries.size(), 1u);
    ASSERT_EQ(r->entries[0].error_code, 0);
  };
  set_percentage(false);
  // Kafka's broker learns the quota from its metadata log a moment after the answer.
  if (GetParam() == broker_kind::kafka) std::this_thread::sleep_for(1s);

  // Each API's answer's ThrottleTimeMs, each on a new connection (a throttled one is muted).
  std::vector<uint8_t> keep;
  auto throttles = [&](const std::string& client) {
    std::map<std::string, int32_t> out;
    protocol::metadata_request md;
    md.topics = std::vector<protocol::metadata_request::metadata_request_topic>{};
    if (auto r = call_as<protocol::metadata_response>(port_, client, md, 12, keep)) {
      out["Metadata v12"] = r->throttle_time_ms;
    }
    protocol::list_offsets_request lo;
    lo.replica_id = -1;
    auto& t = lo.topics.emplace_back();
    t.name = "no-such-topic";
    t.partitions.push_back({0, -1, -1});
    if (auto r = call_as<protocol::list_offsets_response>(port_, client, lo, 7, keep)) {
      out["ListOffsets v7"] = r->throttle_time_ms;
    }
    protocol::describe_cluster_request dc;
    if (auto r = call_as<protocol::describe_cluster_response>(port_, client, dc, 1, keep)) {
      out["DescribeCluster v1"] = r->throttle_time_ms;
    }
    protocol::api_versions_request av;
    av.client_software_name = "tarn-test";
    av.client_software_version = "1";
    {  // An ApiVersions answer has response header v0 whatever its version (KIP-511).
      kafka_conn c(port_, nullptr);
      c.send(av, 3, client);
      auto frame = c.raw().read_frame(event_timeout);
      if (frame && frame->size() > 4) {
        protocol::reader r(std::span<const uint8_t>(*frame).subspan(4));
        auto decoded = protocol::api_versions_response::decode(r, 3);
        if (decoded) out["ApiVersions v3"] = decoded->throttle_time_ms;
      }
    }
    protocol::describe_client_quotas_request dq;
    if (auto r = call_as<protocol::describe_client_quotas_response>(port_, client, dq, 1, keep)) {
      out["DescribeClientQuotas v1"] = r->throttle_time_ms;
    }
    return out;
  };
  const std::map<std::string, int32_t> all_1000 = {{"Metadata v12", 1000},
                                                   {"ListOffsets v7", 1000},
                                                   {"DescribeCluster v1", 1000},
                                                   {"ApiVersions v3", 1000},
                                                   {"DescribeClientQuotas v1", 1000}};
  const std::map<std::string, int32_t> all_0 = {{"Metadata v12", 0},
                                                {"ListOffsets v7", 0},
                                                {"DescribeCluster v1", 0},
                                                {"ApiVersions v3", 0},
                                                {"DescribeClientQuotas v1", 0}};
  EXPECT_EQ(throttles(busy), all_1000);
  EXPECT_EQ(throttles(other), all_0);

  // The mute: two Metadata requests on one connection; the second is read only once the first
  // answer's throttle is over. DescribeQuorum has no ThrottleTimeMs, but mutes the same way.
  auto second_answer_after = [&](const std::string& client, bool quorum_first) {
    kafka_conn c(port_, nullptr);
    EXPECT_TRUE(c.connected());
    protocol::metadata_request md;
    md.topics = std::vector<protocol::metadata_request::metadata_request_topic>{};
    if (quorum_first) {
      protocol::describe_quorum_request dq;
      dq.topics.push_back({"__cluster_metadata", {{0}}});
      c.send(dq, 2, client);
      EXPECT_TRUE(c.receive<protocol::describe_quorum_response>(2));
    } else {
      c.send(md, 12, client);
      EXPECT_TRUE(c.receive<protocol::metadata_response>(12));
    }
    const auto sent = std::chrono::steady_clock::now();
    c.send(md, 12, client);
    EXPECT_TRUE(c.receive<protocol::metadata_response>(12));
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 sent)
        .count();
  };
  EXPECT_GE(second_answer_after(busy, false), 900);
  EXPECT_GE(second_answer_after(busy, true), 900);
  EXPECT_LT(second_answer_after(other, false), 900);
  EXPECT_LT(second_answer_after(other, true), 900);
  set_percentage(true);
}

// tarn only: quotas live in the metadata log, so they are in force again after a SIGKILL, and a
// removed quota stays removed.
TEST(quotas_restart, quotas_survive_sigkill_and_removals_stay_removed) {
  temp_dir dir;
  const auto data = dir.path() / "data";
  std::vector<std::string> strings;
  auto describe_all = [](kafka_conn& c) {
    protocol::describe_client_quotas_request d;  // no components: every entity
    d.strict = false;
    std::map<std::string, double> seen;  // "type=name,..|key" -> value
    auto dr = c.call<protocol::describe_client_quotas_response>(d, 1);
    if (!dr || dr->error_code != 0 || !dr->entries) return seen;
    for (const auto& e : *dr->entries) {
      std::vector<std::string> parts;  // in a fixed order: the answer's is the broker's own
      for (const auto& part : e.entity) {
        parts.push_back(std::string(part.entity_type) + "=" +
                        (part.entity_name ? std::string(*part.entity_name) : "<default>") + ",");
      }
      std::sort(parts.begin(), parts.end());
      std::string entity;
      for (const auto& p : parts) entity += p;
      for (const auto& v : e.values) seen[entity + "|" + std::string(v.key)] = v.value;
    }
    return seen;
  };
  const std::map<std::string, double> expected = {{"client-id=a,|producer_byte_rate", 1000},
                                                  {"user=<default>,|consumer_byte_rate", 2048},
                                                  {"client-id=b,user=u,|request_percentage", 12.5}};
  {
    broker_process broker({}, data);
    ASSERT_NE(broker.port(), 0) << broker.output();
    kafka_conn c(broker.port(), nullptr);
    ASSERT_TRUE(c.connected());
    auto r = c.call<protocol::alter_client_quotas_response>(
        alter_request({{{{"client-id", std::string("a")}}, {{"producer_byte_rate", 1000, false}}},
                       {{{"client-id", std::string("gone")}}, {{"producer_byte_rate", 5, false}}},
                       {{{"user", std::nullopt}}, {{"consumer_byte_rate", 2048, false}}},
                       {{{"user", std::string("u")}, {"client-id", std::string("b")}},
                        {{"request_percentage", 12.5, false}}}},
                      false, strings),
        1);
    ASSERT_TRUE(r);
    for (const auto& e : r->entries) EXPECT_EQ(e.error_code, 0);
    r = c.call<protocol::alter_client_quotas_response>(
        alter_request({{{{"client-id", std::string("gone")}}, {{"producer_byte_rate", 0, true}}}},
                      false, strings),
        1);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->entries.size(), 1u);
    EXPECT_EQ(r->entries[0].error_code, 0);
    EXPECT_EQ(describe_all(c), expected);
    broker.process().send_signal(SIGKILL);
    broker.process().wait_exit(15s);
  }
  broker_process broker({}, data);
  ASSERT_NE(broker.port(), 0) << broker.output();
  kafka_conn c(broker.port(), nullptr);
  ASSERT_TRUE(c.connected());
  EXPECT_EQ(describe_all(c), expected);
}

INSTANTIATE_TEST_SUITE_P(brokers, quotas, ::testing::Values(broker_kind::tarn, broker_kind::kafka),
                         kind_name);

}  // namespace
}  // namespace tarn::test
