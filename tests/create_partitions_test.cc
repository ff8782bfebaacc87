// CreatePartitions end to end, against tarn and against Kafka 4.4.0 (scripts/kafka-ref, when java
// and its jars are there) with the same assertions, so every expected code and message is
// Kafka's: every version 0-3, validate_only, assignments on a one-broker cluster, the count
// errors, duplicate names, unknown topics, 1,000,000 partitions (POLICY_VIOLATION, no
// allocation), Metadata showing the new partitions, and Kafka's own kafka-topics.sh --alter
// --partitions. tarn only: partition counts, topic ids and configs survive SIGKILL and restart.
#include <gtest/gtest.h>

#include <regex>
#include <thread>

#include "kafka_client.h"
#include "kafka_ref_broker.h"
#include "protocol/error_codes.h"
#include "protocol/messages/create_partitions_request.h"
#include "protocol/messages/create_partitions_response.h"
#include "protocol/messages/create_topics_request.h"
#include "protocol/messages/create_topics_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using protocol::code;
using protocol::error_code;
using cp_request = protocol::create_partitions_request;
using cp_response = protocol::create_partitions_response;

struct answer {
  std::string name;
  int16_t error = -100;
  std::optional<std::string> message;
};

int32_t partition_count(tools::kafka_client& c, const std::string& name) {
  protocol::metadata_request req;
  req.topics.emplace();
  protocol::metadata_request::metadata_request_topic t;
  t.name = name;
  req.topics->push_back(t);
  req.allow_auto_topic_creation = false;
  std::vector<uint8_t> buf;
  auto r = tools::call<protocol::metadata_response>(c, req, 12, buf);
  if (!r || r->topics.size() != 1 || r->topics[0].error_code != 0) return -1;
  return static_cast<int32_t>(r->topics[0].partitions.size());
}

struct topic_ask {
  std::string name;
  int32_t count = 0;
  std::optional<std::vector<std::vector<int32_t>>> assignments;
};

// Kafka's brokers learn a change from the metadata log a moment after the answer: wait (bounded)
// for Metadata to show `expected` partitions.
int32_t wait_for_count(tools::kafka_client& c, const std::string& name, int32_t expected) {
  int32_t n = partition_count(c, name);
  for (int i = 0; i < 100 && n != expected; ++i) {
    std::this_thread::sleep_for(100ms);
    n = partition_count(c, name);
  }
  return n;
}

void create_topic(tools::kafka_client& c, const std::string& name, int32_t partitions) {
  protocol::create_topics_request req;
  protocol::create_topics_request::creatable_topic t;
  t.name = name;
  t.num_partitions = partitions;
  t.replication_factor = 1;
  req.topics.push_back(t);
  req.timeout_ms = 30000;
  std::vector<uint8_t> buf;
  auto r = tools::call<protocol::create_topics_response>(c, req, 7, buf);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->topics[0].error_code, 0) << name;
  // Kafka answers CreateTopics before every broker has the topic in its metadata cache.
  ASSERT_EQ(wait_for_count(c, name, partitions), partitions) << name;
}

std::vector<answer> create_partitions(tools::kafka_client& c, const std::vector<topic_ask>& asks,
                                      int16_t version, bool validate_only = false) {
  cp_request req;
  for (const auto& a : asks) {
    cp_request::create_partitions_topic t;
    t.name = a.name;
    t.count_ = a.count;
    if (a.assignments) {
      t.assignments.emplace();
      for (const auto& ids : *a.assignments) {
        cp_request::create_partitions_assignment as;
        as.broker_ids.assign(ids.begin(), ids.end());
        t.assignments->push_back(as);
      }
    } else {
      t.assignments = std::nullopt;
    }
    req.topics.push_back(std::move(t));
  }
  req.timeout_ms = 30000;
  req.validate_only = validate_only;
  std::vector<uint8_t> buf;
  auto r = tools::call<cp_response>(c, req, version, buf);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error());
  std::vector<answer> out;
  if (!r) return out;
  for (const auto& res : r->results) {
    out.push_back(
        {std::string(res.name), res.error_code,
         res.error_message ? std::optional<std::string>(*res.error_message) : std::nullopt});
  }
  return out;
}

class create_partitions_both : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
    if (auto skip = start_test_broker(GetParam(), {}, tarn_, port_); !skip.empty()) {
      GTEST_SKIP() << skip;
    }
    ASSERT_NE(port_, 0);
    prefix_ = "cp-" + test_name_prefix();
    std::replace(prefix_.begin(), prefix_.end(), '_', '-');
  }
  void TearDown() override {
    if (tarn_) tarn_->stop();
  }
  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string topic(const std::string& t) const { return prefix_ + t; }
  std::unique_ptr<tools::kafka_client> client() const {
    auto c = tools::kafka_client::connect(bootstrap());
    EXPECT_TRUE(c.has_value());
    return c ? std::move(*c) : nullptr;
  }

  std::unique_ptr<broker_process> tarn_;
  uint16_t port_ = 0;
  std::string prefix_;
};

TEST_P(create_partitions_both, grows_at_every_version_with_kafkas_errors) {
  auto c = client();
  ASSERT_NE(c, nullptr);
  const std::string t = topic("grow");
  create_topic(*c, t, 1);
  int32_t before = 1;
  for (int16_t v = 0; v <= 3; ++v) {
    // validate_only: all checks, no change.
    auto a = create_partitions(*c, {{t, before + 2, std::nullopt}}, v, true);
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].error, 0) << "v" << v;
    EXPECT_EQ(a[0].message, std::nullopt);
    a = create_partitions(*c, {{t, before + 2, std::nullopt}}, v);
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].name, t);
    EXPECT_EQ(a[0].error, 0) << "v" << v << " " << a[0].message.value_or("");
    EXPECT_EQ(wait_for_count(*c, t, before + 2), before + 2) << "v" << v;
    before += 2;
  }
  const int32_t now = partition_count(*c, t);
  ASSERT_EQ(now, 9);
  auto a = create_partitions(*c, {{t, now, std::nullopt}}, 3);
  EXPECT_EQ(a[0].error, code(error_code::invalid_partitions));
  EXPECT_EQ(a[0].message, "Topic already has 9 partition(s).");
  a = create_partitions(*c, {{t, 4, std::nullopt}}, 3);
  EXPECT_EQ(a[0].error, code(error_code::invalid_partitions));
  EXPECT_EQ(a[0].message, "The topic " + t +
                              " currently has 9 partition(s); 4 would not be an "
                              "increase.");
  a = create_partitions(*c, {{t, -1, std::nullopt}}, 0, true);
  EXPECT_EQ(a[0].error, code(error_code::invalid_partitions));
  a = create_partitions(*c, {{topic("missing"), 3, std::nullopt}}, 3);
  EXPECT_EQ(a[0].error, code(error_code::unknown_topic_or_partition));
  EXPECT_EQ(a[0].message, std::nullopt);
  // A name twice: INVALID_REQUEST first, then the other topics.
  const std::string other = topic("other");
  create_topic(*c, other, 1);
  a = create_partitions(
      *c, {{t, 20, std::nullopt}, {other, 2, std::nullopt}, {t, 21, std::nullopt}}, 3);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].name, t);
  EXPECT_EQ(a[0].error, code(error_code::invalid_request));
  EXPECT_EQ(a[0].message, "Duplicate topic name.");
  EXPECT_EQ(a[1].name, other);
  EXPECT_EQ(a[1].error, 0);
  EXPECT_EQ(wait_for_count(*c, other, 2), 2);
  EXPECT_EQ(partition_count(*c, t), 9);
}

TEST_P(create_partitions_both, assignments_on_a_one_broker_cluster) {
  auto c = client();
  ASSERT_NE(c, nullptr);
  const std::string t = topic("assign");
  create_topic(*c, t, 1);
  using ids = std::vector<std::vector<int32_t>>;
  auto a = create_partitions(*c, {{t, 3, ids{{1}, {1}}}}, 3);
  EXPECT_EQ(a[0].error, 0) << a[0].message.value_or("");
  EXPECT_EQ(wait_for_count(*c, t, 3), 3);
  a = create_partitions(*c, {{t, 5, ids{{1}}}}, 3);
  EXPECT_EQ(a[0].error, code(error_code::invalid_replica_assignment));
  EXPECT_EQ(a[0].message,
            "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.");
  a = create_partitions(*c, {{t, 4, ids{{}}}}, 3);
  EXPECT_EQ(a[0].error, code(error_code::invalid_replica_assignment));
  EXPECT_EQ(a[0].message, "The manual partition assignment includes an empty replica list.");
  a = create_partitions(*c, {{t, 4, ids{{7}}}}, 3);
  EXPECT_EQ(a[0].error, code(error_code::invalid_replica_assignment));
  EXPECT_EQ(a[0].message,
            "The manual partition assignment includes broker 7, but no such broker is registered.");
  a = create_partitions(*c, {{t, 4, ids{{1, 1}}}}, 3);
  EXPECT_EQ(a[0].error, code(error_code::invalid_replica_assignment));
  EXPECT_EQ(a[0].message, "The manual partition assignment includes the broker 1 more than once.");
  EXPECT_EQ(partition_count(*c, t), 3);
}

TEST_P(create_partitions_both, a_million_partitions_is_a_policy_violation) {
  // tarn's peak memory stays within what the requests could justify (memory_growth_bound_kib):
  // nothing is allocated for the partitions asked for.
  const long baseline = tarn_ ? tarn_->process().peak_rss_kib() : -1;
  auto c = client();
  ASSERT_NE(c, nullptr);
  const std::string t = topic("huge");
  const std::string u = topic("huge2");
  create_topic(*c, t, 1);
  create_topic(*c, u, 1);
  for (bool validate_only : {true, false}) {
    auto a = create_partitions(*c, {{t, 1000000, std::nullopt}}, 3, validate_only);
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].error, code(error_code::policy_violation));
    EXPECT_EQ(a[0].message, "Excessively large number of additional partitions per request.");
  }
  // The limit is over the request: 6,000 + 6,000 fails both topics, the second included.
  auto a = create_partitions(*c, {{t, 6001, std::nullopt}, {u, 6001, std::nullopt}}, 3);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].error, code(error_code::policy_violation));
  EXPECT_EQ(a[1].error, code(error_code::policy_violation));
  EXPECT_EQ(partition_count(*c, t), 1);
  EXPECT_EQ(partition_count(*c, u), 1);
  if (tarn_) {
    const long peak = tarn_->process().peak_rss_kib();
    EXPECT_LE(peak, baseline + memory_growth_bound_kib(4096))
        << "peak " << peak << " KiB, baseline " << baseline;
  }
}

TEST_P(create_partitions_both, kafka_topics_alter_partitions) {
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  auto c = client();
  ASSERT_NE(c, nullptr);
  const std::string t = topic("tool");
  create_topic(*c, t, 1);
  auto tool = [&](const std::string& args) {
    auto [rc, out] = run_command("timeout 120 java -cp '" + kafka_libs() +
                                 "/*' org.apache.kafka.tools.TopicCommand --bootstrap-server " +
                                 bootstrap() + " " + args + " 2>&1");
    // Without the log lines ("<ISO time> main ERROR ...") and stack frames.
    out =
        std::regex_replace(out, std::regex("(^|\n)([0-9]{4}-[0-9]{2}-[0-9]{2}T|\tat )[^\n]*"), "");
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return "rc=" + std::to_string(rc) + "\n" + out;
  };
  EXPECT_EQ(tool("--alter --topic " + t + " --partitions 3"), "rc=0\n");
  EXPECT_EQ(wait_for_count(*c, t, 3), 3);
  EXPECT_EQ(tool("--alter --topic " + t + " --partitions 2"),
            "rc=1\nError while executing topic command : The topic " + t +
                " currently has 3 partition(s); 2 would not be an increase.");
  EXPECT_EQ(tool("--alter --topic " + t + " --partitions 1000000"),
            "rc=1\nError while executing topic command : Excessively large number of additional "
            "partitions per request.");
  // tarn's own tool, through src/client.
  auto [rc, out] =
      run_command(std::string("timeout 30 ") + TARN_BINARY + " topics --bootstrap-server " +
                  bootstrap() + " --alter --topic " + t + " --partitions 5 2>&1");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(wait_for_count(*c, t, 5), 5);
}

INSTANTIATE_TEST_SUITE_P(brokers, create_partitions_both,
                         ::testing::Values(broker_kind::tarn, broker_kind::kafka), kind_name);

TEST(create_partitions_restart, counts_ids_and_configs_survive_sigkill) {
  temp_dir dir;
  const auto data = dir.path() / "data";
  std::string id_before;
  {
    broker_process broker({}, data);
    ASSERT_NE(broker.port(), 0) << broker.output();
    auto c = tools::kafka_client::connect("127.0.0.1:" + std::to_string(broker.port()));
    ASSERT_TRUE(c.has_value());
    create_topic(**c, "kept", 2);
    auto a = create_partitions(**c, {{"kept", 7, std::nullopt}}, 3);
    ASSERT_EQ(a[0].error, 0);
    create_topic(**c, "dropped", 1);
    auto [rc, out] =
        run_command(std::string("timeout 30 ") + TARN_BINARY +
                    " topics --bootstrap-server 127.0.0.1:" + std::to_string(broker.port()) +
                    " --delete --topic dropped 2>&1");
    ASSERT_EQ(rc, 0) << out;
    auto [rc2, out2] =
        run_command(std::string("timeout 30 ") + TARN_BINARY +
                    " topics --bootstrap-server 127.0.0.1:" + std::to_string(broker.port()) +
                    " --alter --topic kept --add-config retention.ms=4242 2>&1");
    ASSERT_EQ(rc2, 0) << out2;
    auto [rc3, out3] =
        run_command(std::string("timeout 30 ") + TARN_BINARY +
                    " topics --bootstrap-server 127.0.0.1:" + std::to_string(broker.port()) +
                    " --describe --topic kept");
    ASSERT_EQ(rc3, 0) << out3;
    id_before = out3.substr(out3.find("TopicId: "), 31);
    broker.process().send_signal(SIGKILL);
    broker.process().wait_exit(15s);
  }
  EXPECT_TRUE(std::filesystem::exists(data / "tarn-metadata" / "log"));
  EXPECT_FALSE(std::filesystem::exists(data / "tarn-topics"));
  broker_process broker({}, data);
  ASSERT_NE(broker.port(), 0) << broker.output();
  EXPECT_NE(broker.output().find("1 topic(s), 7 partition log(s) loaded"), std::string::npos)
      << broker.output();
  auto c = tools::kafka_client::connect("127.0.0.1:" + std::to_string(broker.port()));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(partition_count(**c, "kept"), 7);
  EXPECT_EQ(partition_count(**c, "dropped"), -1);
  auto [rc, out] =
      run_command(std::string("timeout 30 ") + TARN_BINARY +
                  " topics --bootstrap-server 127.0.0.1:" + std::to_string(broker.port()) +
                  " --describe --topic kept 2>&1");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("PartitionCount: 7"), std::string::npos) << out;
  EXPECT_NE(out.find(id_before), std::string::npos) << id_before << "\n" << out;
  EXPECT_NE(out.find("retention.ms=4242"), std::string::npos) << out;
}

}  // namespace
}  // namespace tarn::test
