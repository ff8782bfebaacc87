// Replication in a cluster (docs/cluster.md, "Replication", issue 27): three real brokers on one
// real etcd; a topic created with replication factor 3 is led by its creator and followed by the
// other two, acks=all produces wait for the ISR, and every broker's segment ends up with the same
// bytes. A follower paused past replica.lag.time.max.ms leaves the ISR (acks=all with
// min.insync.replicas=2 still succeeds), a second one paused brings NOT_ENOUGH_REPLICAS, and both
// resumed join the ISR again. Produce on a follower is NOT_LEADER_OR_FOLLOWER. Follower fetching
// (KIP-392): brokers in racks, consumers sent to and served by an in-sync replica in theirs.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "etcd_process.h"
#include "kafka_conn.h"
#include "kafka_ref_broker.h"
#include "produce_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/create_partitions_request.h"
#include "protocol/messages/create_partitions_response.h"
#include "protocol/messages/delete_topics_request.h"
#include "protocol/messages/delete_topics_response.h"
#include "protocol/messages/fetch_request.h"
#include "protocol/messages/fetch_response.h"
#include "replication_util.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;
using protocol::code;
using protocol::error_code;

// Sessions long enough to outlast the pauses below (a broker paused past its session would be
// fenced and exit); the lag bound short, so that the ISR shrinks within a second or so.
std::vector<std::string> replication_args(const etcd_cluster& etcd, int32_t node_id) {
  return tarn::test::replication_args(etcd, node_id, 15000, 800);
}

// Metadata v12 naming `topic` with AllowAutoTopicCreation: the topic's error code (-1 without an
// answer).
int16_t metadata_auto_create(uint16_t port, const std::string& topic) {
  kafka_conn c(port, nullptr);
  protocol::metadata_request req;
  req.allow_auto_topic_creation = true;
  auto& t = req.topics.emplace().emplace_back();
  t.name = topic;
  auto r = c.call<protocol::metadata_response>(req, 12);
  if (!r || r->topics.size() != 1) return -1;
  return r->topics[0].error_code;
}

using assignment = std::vector<std::vector<int32_t>>;

struct create_partitions_answer {
  int16_t error = -1;
  std::string message;
};

// CreatePartitions v3 of one topic to `count` partitions, with manual assignments if given.
create_partitions_answer create_partitions(uint16_t port, const std::string& topic, int32_t count,
                                           std::optional<assignment> assignments = std::nullopt) {
  kafka_conn c(port, nullptr);
  protocol::create_partitions_request req;
  auto& t = req.topics.emplace_back();
  t.name = topic;
  t.count_ = count;
  if (assignments) {
    t.assignments.emplace();
    for (const auto& ids : *assignments) {
      t.assignments->emplace_back().broker_ids.assign(ids.begin(), ids.end());
    }
  } else {
    t.assignments = std::nullopt;
  }
  req.timeout_ms = 10000;
  auto r = c.call<protocol::create_partitions_response>(req, 3);
  if (!r || r->results.size() != 1) return {};
  return {r->results[0].error_code, std::string(r->results[0].error_message.value_or(""))};
}

class cluster_replication : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!etcd_available()) GTEST_SKIP() << "etcd is not installed (scripts/install-deps)";
    start_etcd_and_brokers(etcd_, brokers_, 3, [&](int32_t id) { return args(id); });
    if (HasFatalFailure()) return;
  }
  // Overrides a test adds to every broker's (k=v), then to broker `id`'s alone.
  virtual std::vector<std::string> extra_overrides() const { return {}; }
  virtual std::vector<std::string> broker_overrides(int32_t /*id*/) const { return {}; }
  std::vector<std::string> args(int32_t id) const {
    auto a = replication_args(*etcd_, id);
    a.insert(a.end(), {"--override", "http.listener=127.0.0.1:0"});  // for gauge()
    for (const auto& kv : extra_overrides()) {
      a.push_back("--override");
      a.push_back(kv);
    }
    for (const auto& kv : broker_overrides(id)) {
      a.push_back("--override");
      a.push_back(kv);
    }
    return a;
  }
  void TearDown() override {
    // A paused broker would not stop on SIGTERM.
    for (auto& b : brokers_) b->process().send_signal(SIGCONT);
  }
  broker_process& broker(int32_t id) { return *brokers_[static_cast<size_t>(id - 1)]; }
  uint16_t port(int32_t id) { return broker(id).port(); }
  // A gauge of broker `id`'s /metrics (Prometheus text, no labels), or -1.
  // The HTTP listener's port of broker `id`, 0 if it has none.
  uint16_t http_port(int32_t id) {
    auto http =
        broker(id).process().wait_for_number_after("http listening on 127.0.0.1:", startup_timeout);
    return http ? static_cast<uint16_t>(std::stoi(*http)) : 0;
  }
  // One request to the web console's JSON API of broker `id`: the whole answer.
  std::string console(int32_t id, const std::string& method, const std::string& path,
                      const std::string& body = "") {
    return http_exchange(http_port(id), method + " " + path +
                                            " HTTP/1.0\r\nHost: x\r\nContent-Type: "
                                            "application/json\r\nContent-Length: " +
                                            std::to_string(body.size()) + "\r\n\r\n" + body);
  }
  double gauge(int32_t id, const std::string& name) {
    const uint16_t http = http_port(id);
    if (http == 0) return -1;
    const std::string text = http_exchange(http, "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n");
    for (const auto& line : lines_with(text, name + " ")) {
      return std::stod(line.substr(name.size()));
    }
    return -1;
  }
  std::filesystem::path segment(int32_t id, const std::string& topic, int32_t partition = 0) {
    return broker(id).data_dir() / (topic + "-" + std::to_string(partition)) /
           "00000000000000000000.log";
  }

  std::unique_ptr<etcd_cluster> etcd_;
  std::vector<std::unique_ptr<broker_process>> retired_;  // stopped; they own data directories
  std::vector<std::unique_ptr<broker_process>> brokers_;
};

// A consumer's Fetch of partition 0 of `topic` at `offset` (RackId v11+). The request holds
// views of `topic` and `rack`: they must outlive it (a literal, or a named string).
protocol::fetch_request consumer_fetch(std::string_view topic, int64_t offset,
                                       std::string_view rack, int32_t current_leader_epoch = -1,
                                       int32_t max_wait_ms = 0) {
  protocol::fetch_request req;
  req.replica_id = -1;
  req.max_wait_ms = max_wait_ms;
  req.min_bytes = 1;
  req.max_bytes = 1 << 20;
  req.session_epoch = -1;
  req.rack_id = rack;
  auto& t = req.topics.emplace_back();
  t.topic = topic;
  auto& p = t.partitions.emplace_back();
  p.partition = 0;
  p.fetch_offset = offset;
  p.partition_max_bytes = 1 << 20;
  p.current_leader_epoch = current_leader_epoch;
  return req;
}

struct consumer_fetch_answer {
  int16_t error = -100;
  int32_t preferred_read_replica = -2;
  int64_t high_watermark = -2;
  int64_t last_stable_offset = -2;
  int32_t hint_leader = -2;
  int32_t hint_epoch = -2;
  std::vector<int64_t> base_offsets;  // of the batches returned
};

consumer_fetch_answer fetch_as_consumer(uint16_t port, const protocol::fetch_request& req,
                                        int16_t version) {
  consumer_fetch_answer a;
  kafka_conn c(port, nullptr);
  auto r = c.call<protocol::fetch_response>(req, version);
  if (!r || r->responses.size() != 1 || r->responses[0].partitions.size() != 1) return a;
  const auto& p = r->responses[0].partitions[0];
  a.error = p.error_code;
  a.preferred_read_replica = p.preferred_read_replica;
  a.high_watermark = p.high_watermark;
  a.last_stable_offset = p.last_stable_offset;
  a.hint_leader = p.current_leader.leader_id;
  a.hint_epoch = p.current_leader.leader_epoch;
  if (p.records) {
    std::span<const uint8_t> rest(p.records->data(), p.records->size());
    while (rest.size() >= 12) {
      const int64_t base = (int64_t{get_int32(rest, 0)} << 32) | uint32_t(get_int32(rest, 4));
      const size_t size = 12 + static_cast<size_t>(get_int32(rest, 8));
      if (size > rest.size()) break;
      a.base_offsets.push_back(base);
      rest = rest.subspan(size);
    }
  }
  return a;
}

TEST_F(cluster_replication, acks_all_waits_for_the_isr_which_follows_the_followers) {
  const std::string topic = "replicated";
  // Every broker must see the other two before a topic can have three replicas.
  for (int32_t id = 1; id <= 3; ++id) ASSERT_TRUE(wait_for_brokers(port(id), 3)) << "broker " << id;
  EXPECT_EQ(create_topic(port(1), "too-many", 1, {}, 4),
            code(error_code::invalid_replication_factor));
  ASSERT_EQ(create_topic(port(1), topic, 1, {{"min.insync.replicas", "2"}}, 3), 0);

  // Every broker reports the partition state from etcd: led by its creator, three in sync.
  for (int32_t id = 1; id <= 3; ++id) {
    auto p = wait_for_partition(port(id), topic, [](const partition_view& v) {
      return v.leader == 1 && v.isr.size() == 3;
    });
    ASSERT_TRUE(p) << "broker " << id;
    EXPECT_EQ(p->error, 0);
    EXPECT_EQ(p->leader, 1);
    EXPECT_EQ(p->replicas, (std::vector<int32_t>{1, 2, 3})) << "broker " << id;
    EXPECT_EQ(sorted(p->isr), (std::vector<int32_t>{1, 2, 3})) << "broker " << id;
  }

  // acks=all: answered once the followers have the batch.
  raw_client leader(port(1));
  int32_t correlation = 1;
  for (int i = 0; i < 5; ++i) {
    auto a =
        produce_one(leader, correlation++, topic, 0, value_batch("value-" + std::to_string(i)));
    ASSERT_EQ(a.error_code, 0) << "batch " << i;
    EXPECT_EQ(a.base_offset, i);
  }
  {
    raw_client follower(port(2));
    auto a = produce_one(follower, 1, topic, 0, value_batch("not here"));
    EXPECT_EQ(a.error_code, code(error_code::not_leader_or_follower));
    // Consumers read from the leader, up to the high watermark the ISR reached (below Fetch
    // v11; from v11 a follower serves them too: cluster_follower_fetching below).
    EXPECT_EQ(fetch_as_consumer(port(2), consumer_fetch(topic, 0, ""), 10).error,
              code(error_code::not_leader_or_follower));
    ASSERT_TRUE(leader.send_bytes(fetch_frame(correlation++, topic, 0, 0, 0, 1)));
    EXPECT_EQ(decode_fetch(leader.read_frame(10s)).high_watermark, 5);
  }
  // The followers hold the leader's batches byte for byte at the same offsets.
  const std::string leader_bytes = file_bytes(segment(1, topic));
  ASSERT_FALSE(leader_bytes.empty());
  for (int32_t id = 2; id <= 3; ++id) {
    EXPECT_EQ(file_bytes(segment(id, topic)), leader_bytes) << "broker " << id;
  }

  // Follower 3 paused: it leaves the ISR after replica.lag.time.max.ms, and acks=all with
  // min.insync.replicas=2 goes on with the two left.
  ASSERT_TRUE(stop_process(broker(3).process()));
  {
    auto a = produce_one(leader, correlation++, topic, 0, value_batch("while 3 sleeps"));
    EXPECT_EQ(a.error_code, 0);
    EXPECT_EQ(a.base_offset, 5);
  }
  auto shrunk =
      wait_for_partition(port(1), topic, [](const partition_view& v) { return v.isr.size() == 2; });
  ASSERT_TRUE(shrunk);
  EXPECT_EQ(sorted(shrunk->isr), (std::vector<int32_t>{1, 2}));
  // Kafka's ReplicaManager gauges on the leader: under-replicated, at its min ISR of 2.
  EXPECT_EQ(gauge(1, "kafka_server_replicamanager_leadercount"), 1);
  EXPECT_EQ(gauge(1, "kafka_server_replicamanager_partitioncount"), 1);
  EXPECT_EQ(gauge(1, "kafka_server_replicamanager_underreplicatedpartitions"), 1);
  EXPECT_EQ(gauge(1, "kafka_server_replicamanager_atminisrpartitioncount"), 1);
  EXPECT_EQ(gauge(1, "kafka_server_replicamanager_underminisrpartitioncount"), 0);
  // A follower leads nothing and reports nothing under-replicated.
  EXPECT_EQ(gauge(2, "kafka_server_replicamanager_leadercount"), 0);
  EXPECT_EQ(gauge(2, "kafka_server_replicamanager_partitioncount"), 1);
  EXPECT_EQ(gauge(2, "kafka_server_replicamanager_underreplicatedpartitions"), 0);
  // One active controller among the live brokers, and no partition offline.
  double controllers = 0;
  for (int32_t id = 1; id <= 2; ++id) {
    controllers += gauge(id, "kafka_controller_kafkacontroller_activecontrollercount");
    EXPECT_EQ(gauge(id, "kafka_controller_kafkacontroller_offlinepartitionscount"), 0);
  }
  EXPECT_LE(controllers, 1);

  // Follower 2 paused too: the ISR is the leader alone, below min.insync.replicas.
  ASSERT_TRUE(stop_process(broker(2).process()));
  {
    // Appended (the ISR had two members); once 2 left the ISR, below min.insync.replicas, the
    // high watermark does not pass it (KIP-966's strict min ISR, Kafka 4.4): the request times
    // out (Kafka answered NOT_ENOUGH_REPLICAS_AFTER_APPEND before KIP-966).
    ASSERT_TRUE(leader.send_bytes(
        produce_frame(correlation++, topic, 0, value_batch("while 2 and 3 sleep"), -1, 5000)));
    auto a = decode_produce(leader.read_frame(30s));
    EXPECT_EQ(a.error_code, code(error_code::request_timed_out));
  }
  auto alone =
      wait_for_partition(port(1), topic, [](const partition_view& v) { return v.isr.size() == 1; });
  ASSERT_TRUE(alone);
  EXPECT_EQ(alone->isr, (std::vector<int32_t>{1}));
  EXPECT_EQ(gauge(1, "kafka_server_replicamanager_underminisrpartitioncount"), 1);
  EXPECT_EQ(gauge(1, "kafka_server_replicamanager_atminisrpartitioncount"), 0);
  {
    auto a = produce_one(leader, correlation++, topic, 0, value_batch("refused"));
    EXPECT_EQ(a.error_code, code(error_code::not_enough_replicas));
  }

  // Both resumed: they catch up and join the ISR again; the segments are equal once more.
  broker(2).process().send_signal(SIGCONT);
  broker(3).process().send_signal(SIGCONT);
  auto back =
      wait_for_partition(port(1), topic, [](const partition_view& v) { return v.isr.size() == 3; });
  ASSERT_TRUE(back);
  EXPECT_EQ(sorted(back->isr), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(gauge(1, "kafka_server_replicamanager_underreplicatedpartitions"), 0);
  EXPECT_EQ(gauge(1, "kafka_server_replicamanager_underminisrpartitioncount"), 0);
  {
    auto a = produce_one(leader, correlation++, topic, 0, value_batch("all three again"));
    EXPECT_EQ(a.error_code, 0);
    EXPECT_EQ(a.base_offset, 7);
  }
  const std::string final_bytes = file_bytes(segment(1, topic));
  for (int32_t id = 2; id <= 3; ++id) {
    EXPECT_EQ(file_bytes(segment(id, topic)), final_bytes) << "broker " << id;
  }

  // Follower 3 restarted on its data: it keeps its log (loaded as a followed topic, not set
  // aside), fetches what it missed and joins the ISR again.
  ASSERT_TRUE(broker(3).stop().has_value());
  {
    auto a = produce_one(leader, correlation++, topic, 0, value_batch("while 3 restarts"));
    EXPECT_EQ(a.error_code, 0);
    EXPECT_EQ(a.base_offset, 8);
  }
  const std::filesystem::path data3 = broker(3).data_dir();
  retired_.push_back(std::move(brokers_[2]));  // owns the data directory
  brokers_[2] = std::make_unique<broker_process>(args(3), data3);
  ASSERT_NE(port(3), 0) << broker(3).output();
  auto rejoined =
      wait_for_partition(port(1), topic, [](const partition_view& v) { return v.isr.size() == 3; });
  ASSERT_TRUE(rejoined);
  EXPECT_EQ(sorted(rejoined->isr), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(file_bytes(segment(3, topic)), file_bytes(segment(1, topic)));
  for (const auto& e : std::filesystem::directory_iterator(data3)) {
    EXPECT_FALSE(e.path().filename().string().ends_with("-stray")) << e.path();
  }

  // Deleted on the leader: the followers drop their copies when the states go.
  {
    kafka_conn c(port(1), nullptr);
    protocol::delete_topics_request req;
    req.topic_names = {topic};
    req.timeout_ms = 10000;
    auto r = c.call<protocol::delete_topics_response>(req, 4);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->responses.size(), 1u);
    EXPECT_EQ(r->responses[0].error_code, 0);
  }
  for (int32_t id = 2; id <= 3; ++id) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::filesystem::exists(segment(id, topic)) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(50ms);
    }
    EXPECT_FALSE(std::filesystem::exists(segment(id, topic))) << "broker " << id;
    EXPECT_FALSE(partition_of(port(id), topic).has_value()) << "broker " << id;
  }
}

// Brokers that auto-create topics with three replicas (default.replication.factor=3).
class cluster_replication_defaults : public cluster_replication {
 protected:
  std::vector<std::string> extra_overrides() const override {
    return {"default.replication.factor=3", "num.partitions=1"};
  }
};

// Auto-creation (Metadata) asks for default.replication.factor replicas and writes the partition
// states as CreateTopics does; CreatePartitions places the new partitions with the topic's
// replication factor, and the followers open and replicate them. Either fails as Kafka's does
// when the factor exceeds the live brokers.
TEST_F(cluster_replication_defaults, auto_created_topics_and_new_partitions_are_replicated) {
  const std::string topic = "auto";
  for (int32_t id = 1; id <= 3; ++id) ASSERT_TRUE(wait_for_brokers(port(id), 3)) << "broker " << id;
  // Kafka answers an auto-created topic UNKNOWN_TOPIC_OR_PARTITION; the client asks again.
  EXPECT_EQ(metadata_auto_create(port(1), topic), code(error_code::unknown_topic_or_partition));
  for (int32_t id = 1; id <= 3; ++id) {
    auto p = wait_for_partition(port(id), topic, [](const partition_view& v) {
      return v.leader == 1 && v.isr.size() == 3;
    });
    ASSERT_TRUE(p) << "broker " << id;
    EXPECT_EQ(p->replicas, (std::vector<int32_t>{1, 2, 3})) << "broker " << id;
  }
  raw_client leader(port(1));
  int32_t correlation = 1;
  {
    auto a = produce_one(leader, correlation++, topic, 0, value_batch("auto-created"));
    ASSERT_EQ(a.error_code, 0);  // acks=all: the followers have it
  }

  // Grown to three partitions: each with three replicas, striped as CreateTopics places them.
  auto grown = create_partitions(port(1), topic, 3);
  ASSERT_EQ(grown.error, 0) << grown.message;
  const std::vector<std::vector<int32_t>> placed = {{1, 3, 2}, {1, 2, 3}};
  for (int32_t p = 1; p <= 2; ++p) {
    for (int32_t id = 1; id <= 3; ++id) {
      auto v = wait_for_partition(
          port(id), topic, [](const partition_view& v) { return v.isr.size() == 3; }, 10s, p);
      ASSERT_TRUE(v) << "broker " << id << " partition " << p;
      EXPECT_EQ(v->leader, 1);
      EXPECT_EQ(v->replicas, placed[static_cast<size_t>(p - 1)])
          << "broker " << id << " partition " << p;
    }
    // acks=all on a new partition: answered once both followers fetched it.
    auto a = produce_one(leader, correlation++, topic, p, value_batch("new partition"));
    ASSERT_EQ(a.error_code, 0) << "partition " << p;
    const std::string leader_bytes = file_bytes(segment(1, topic, p));
    ASSERT_FALSE(leader_bytes.empty());
    for (int32_t id = 2; id <= 3; ++id) {
      EXPECT_EQ(file_bytes(segment(id, topic, p)), leader_bytes)
          << "broker " << id << " partition " << p;
    }
  }
  // On a follower the topic is its leader's to grow, as DeleteTopics answers there.
  EXPECT_EQ(create_partitions(port(2), topic, 4).error,
            code(error_code::unknown_topic_or_partition));
  // Manual assignments: the topic's replica count, led by its leader (tarn's interim rule).
  auto short_list = create_partitions(port(1), topic, 4, assignment{{1, 2}});
  EXPECT_EQ(short_list.error, code(error_code::invalid_replica_assignment));
  EXPECT_EQ(short_list.message,
            "The manual partition assignment includes a partition with 2 replica(s), but this is "
            "not consistent with previous partitions, which have 3 replica(s).");
  EXPECT_EQ(create_partitions(port(1), topic, 4, assignment{{2, 1, 3}}).error,
            code(error_code::invalid_replica_assignment));
  EXPECT_EQ(create_partitions(port(1), topic, 4, assignment{{1, 2, 9}}).message,
            "The manual partition assignment includes broker 9, but no such broker is registered.");
  auto manual = create_partitions(port(1), topic, 4, assignment{{1, 3, 2}});
  ASSERT_EQ(manual.error, 0) << manual.message;
  auto v3 = wait_for_partition(
      port(2), topic, [](const partition_view& v) { return v.isr.size() == 3; }, 10s, 3);
  ASSERT_TRUE(v3);
  EXPECT_EQ(v3->replicas, (std::vector<int32_t>{1, 3, 2}));

  // The web console creates and deletes a topic as CreateTopics and DeleteTopics do: three
  // replicas with their states, every copy gone with them.
  const std::string made = console(1, "POST", "/v1/topics", R"({"name": "console-made"})");
  EXPECT_NE(made.find(" 201 "), std::string::npos) << made;
  for (int32_t id = 1; id <= 3; ++id) {
    auto v = wait_for_partition(port(id), "console-made",
                                [](const partition_view& v) { return v.isr.size() == 3; });
    ASSERT_TRUE(v) << "broker " << id;
    EXPECT_EQ(v->replicas, (std::vector<int32_t>{1, 2, 3})) << "broker " << id;
  }
  const std::string dropped = console(1, "DELETE", "/v1/topics/console-made");
  EXPECT_NE(dropped.find(" 200 "), std::string::npos) << dropped;
  for (int32_t id = 2; id <= 3; ++id) {
    const auto copy = broker(id).data_dir() / "console-made-0";
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::filesystem::exists(copy) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    EXPECT_FALSE(std::filesystem::exists(copy)) << "broker " << id;
  }

  // Broker 3 gone (a clean stop leaves at once): three replicas cannot be placed. Auto-creation
  // creates nothing and keeps answering UNKNOWN_TOPIC_OR_PARTITION, as Kafka's does;
  // CreatePartitions is INVALID_REPLICATION_FACTOR with Kafka's message.
  ASSERT_TRUE(broker(3).stop().has_value());
  ASSERT_TRUE(wait_for_brokers(port(1), 2));
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(metadata_auto_create(port(1), "too-few"),
              code(error_code::unknown_topic_or_partition));
  }
  EXPECT_FALSE(std::filesystem::exists(broker(1).data_dir() / "too-few-0"));
  // Written before the answer, but the test's reader thread may not have drained the pipe yet.
  EXPECT_TRUE(broker(1).process().wait_for_output(
      "Auto topic creation failed for too-few with error 'INVALID_REPLICATION_FACTOR': Unable to "
      "replicate the partition 3 time(s)",
      5s));
  const std::string too_few = console(1, "POST", "/v1/topics", R"({"name": "console-too-few"})");
  EXPECT_NE(too_few.find(" 400 "), std::string::npos) << too_few;
  EXPECT_NE(too_few.find("Unable to replicate the partition 3 time(s)"), std::string::npos)
      << too_few;
  auto refused = create_partitions(port(1), topic, 5);
  EXPECT_EQ(refused.error, code(error_code::invalid_replication_factor));
  EXPECT_EQ(refused.message,
            "Unable to replicate the partition 3 time(s): The target replication factor of 3 "
            "cannot be reached because only 2 broker(s) are registered or some brokers have all "
            "their log directories cordoned.");
}

// Followers that stay in the ISR while paused (a long lag bound), and a high-watermark
// checkpoint every 100 ms.
class cluster_replication_checkpoint : public cluster_replication {
 protected:
  std::vector<std::string> extra_overrides() const override {
    return {"replica.lag.time.max.ms=30000", "replica.high.watermark.checkpoint.interval.ms=100"};
  }
  std::string checkpoint(int32_t id) {
    return file_bytes(broker(id).data_dir() / "replication-offset-checkpoint");
  }
  // Waits until broker `id`'s replication-offset-checkpoint holds `line`.
  bool wait_for_checkpoint(int32_t id, const std::string& line,
                           std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (checkpoint(id).find(line) == std::string::npos) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }
};

// replication-offset-checkpoint: a follower restarted while the partition's high watermark is
// held back (the other follower, paused, is still in the ISR) starts at its checkpointed high
// watermark, not at its log end offset (Kafka's Partition.createLog), and its periodic
// checkpoint follows the high watermark once the ISR lets it move.
TEST_F(cluster_replication_checkpoint,
       a_restarted_follower_starts_at_its_checkpointed_high_watermark) {
  const std::string topic = "hw";
  for (int32_t id = 1; id <= 3; ++id) ASSERT_TRUE(wait_for_brokers(port(id), 3)) << "broker " << id;
  ASSERT_EQ(create_topic(port(1), topic, 1, {}, 3), 0);
  ASSERT_TRUE(wait_for_partition(port(2), topic,
                                 [](const partition_view& v) { return v.isr.size() == 3; }));
  raw_client leader(port(1));
  int32_t correlation = 1;
  for (int i = 0; i < 3; ++i) {
    auto a = produce_one(leader, correlation++, topic, 0, value_batch("v" + std::to_string(i)));
    ASSERT_EQ(a.error_code, 0);
  }
  ASSERT_TRUE(wait_for_checkpoint(2, "\nhw 0 3\n")) << checkpoint(2);

  // Follower 3 paused, in the ISR still: an acks=1 record stays above the high watermark (3),
  // while follower 2 fetches it (log end offset 4).
  ASSERT_TRUE(stop_process(broker(3).process()));
  ASSERT_TRUE(leader.send_bytes(produce_frame(correlation++, topic, 0, value_batch("v3"), 1)));
  ASSERT_EQ(decode_produce(leader.read_frame(10s)).error_code, 0);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (file_bytes(segment(2, topic)) != file_bytes(segment(1, topic)) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(file_bytes(segment(2, topic)), file_bytes(segment(1, topic)));
  ASSERT_TRUE(leader.send_bytes(fetch_frame(correlation++, topic, 0, 0, 0, 1)));
  EXPECT_EQ(decode_fetch(leader.read_frame(10s)).high_watermark, 3);

  // Stopped cleanly, follower 2 checkpoints its high watermark (3, not its log end offset 4)...
  ASSERT_TRUE(broker(2).stop().has_value());
  EXPECT_NE(checkpoint(2).find("\nhw 0 3\n"), std::string::npos) << checkpoint(2);
  // ... and starts from it: the file its start rewrites says 3 (it said its log end offset, 4,
  // before the checkpoint was read back), and stays there while the high watermark cannot move.
  const std::filesystem::path data2 = broker(2).data_dir();
  retired_.push_back(std::move(brokers_[1]));  // owns the data directory
  brokers_[1] = std::make_unique<broker_process>(args(2), data2);
  ASSERT_NE(port(2), 0) << broker(2).output();
  EXPECT_NE(checkpoint(2).find("\nhw 0 3\n"), std::string::npos) << checkpoint(2);
  ASSERT_TRUE(
      wait_for_partition(port(2), topic, [](const partition_view& v) { return v.leader == 1; }));
  std::this_thread::sleep_for(500ms);  // several checkpoint intervals, fetches from the leader
  EXPECT_NE(checkpoint(2).find("\nhw 0 3\n"), std::string::npos) << checkpoint(2);

  // Follower 3 resumed: the high watermark reaches 4 on the leader and then on follower 2.
  broker(3).process().send_signal(SIGCONT);
  EXPECT_TRUE(wait_for_checkpoint(1, "\nhw 0 4\n")) << checkpoint(1);
  EXPECT_TRUE(wait_for_checkpoint(2, "\nhw 0 4\n")) << checkpoint(2);
  ASSERT_TRUE(leader.send_bytes(fetch_frame(correlation++, topic, 0, 0, 0, 1)));
  EXPECT_EQ(decode_fetch(leader.read_frame(10s)).high_watermark, 4);
}

// Brokers in three racks (broker.rack=rack-N) whose leaders send a consumer to an in-sync replica
// in its rack (replica.selector.class RackAwareReplicaSelector, KIP-392; docs/cluster.md
// "Follower fetching").
class cluster_follower_fetching : public cluster_replication {
 protected:
  std::vector<std::string> extra_overrides() const override {
    // One __consumer_offsets partition: librdkafka's consumer asks for its group's coordinator
    // (it is created then) even with assign().
    return {"replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector",
            "offsets.topic.num.partitions=1"};
  }
  std::vector<std::string> broker_overrides(int32_t id) const override {
    return {"broker.rack=rack-" + std::to_string(id)};
  }
  // The topic's BytesOut counter on broker `id` (kafka_server_brokertopicmetrics_bytesout_total
  // with its topic label), -1 if not found.
  double topic_bytes_out(int32_t id, const std::string& topic) {
    const std::string text =
        http_exchange(http_port(id), "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n");
    const std::string name =
        "kafka_server_brokertopicmetrics_bytesout_total{topic=\"" + topic + "\"} ";
    for (const auto& line : lines_with(text, name)) return std::stod(line.substr(name.size()));
    return -1;
  }
  // `topic` with one partition, replication factor 3, led by broker 1 (its creator), all three
  // in sync, and `count` records "r0", "r1", ... acknowledged with acks=all.
  void create_and_fill(const std::string& topic, int count) {
    for (int32_t id = 1; id <= 3; ++id) {
      ASSERT_TRUE(wait_for_brokers(port(id), 3)) << "broker " << id;
    }
    ASSERT_EQ(create_topic(port(1), topic, 1, {}, 3), 0);
    for (int32_t id = 1; id <= 3; ++id) {
      ASSERT_TRUE(wait_for_partition(
          port(id), topic,
          [](const partition_view& v) { return v.leader == 1 && v.isr.size() == 3; }))
          << "broker " << id;
    }
    raw_client leader(port(1));
    for (int i = 0; i < count; ++i) {
      ASSERT_EQ(produce_one(leader, i, topic, 0, value_batch("r" + std::to_string(i))).error_code,
                0);
    }
  }
};

// KIP-392 as Kafka 4.4 serves it: the leader answers a consumer in another broker's rack with
// PreferredReadReplica and no records; the follower serves it up to its high watermark (woken
// when the high watermark moves), refuses what Kafka's follower refuses, and a real client
// (librdkafka with client.rack) reads the partition from it.
TEST_F(cluster_follower_fetching, consumers_read_from_an_in_sync_replica_in_their_rack) {
  const std::string topic = "racks";
  create_and_fill(topic, 5);
  if (HasFatalFailure()) return;
  raw_client leader(port(1));
  // A follower learns the high watermark from the leader's next fetch answer.
  consumer_fetch_answer f;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  do {
    f = fetch_as_consumer(port(2), consumer_fetch(topic, 0, "rack-2"), 11);
  } while (f.high_watermark != 5 && std::chrono::steady_clock::now() < deadline &&
           (std::this_thread::sleep_for(20ms), true));

  // The follower serves its copy up to its high watermark; no preferred replica from it.
  EXPECT_EQ(f.error, 0);
  EXPECT_EQ(f.preferred_read_replica, -1);
  EXPECT_EQ(f.high_watermark, 5);
  EXPECT_EQ(f.base_offsets, (std::vector<int64_t>{0, 1, 2, 3, 4}));

  // The leader sends a consumer in rack-2 or rack-3 to that rack's replica, without records.
  for (int32_t id : {2, 3}) {
    auto a = fetch_as_consumer(port(1), consumer_fetch(topic, 0, "rack-" + std::to_string(id)), 11);
    EXPECT_EQ(a.error, 0);
    EXPECT_EQ(a.preferred_read_replica, id);
    EXPECT_EQ(a.high_watermark, 5);
    EXPECT_TRUE(a.base_offsets.empty());
  }
  // Its own rack, no rack, a rack without a replica, below v11: the leader serves it.
  for (const auto& [rack, version] : std::vector<std::pair<std::string, int16_t>>{
           {"rack-1", 11}, {"", 12}, {"rack-9", 11}, {"rack-2", 10}}) {
    auto a = fetch_as_consumer(port(1), consumer_fetch(topic, 0, rack), version);
    EXPECT_EQ(a.error, 0) << rack << " v" << version;
    EXPECT_EQ(a.preferred_read_replica, -1) << rack << " v" << version;
    EXPECT_EQ(a.base_offsets.size(), 5u) << rack << " v" << version;
  }

  // A follower's answers as Kafka's (Partition.localLogWithEpochOrThrow without requireLeader):
  // below v11 (no client metadata) only the leader serves; the current leader epoch is checked
  // against the one the follower knows; an offset past its log end is out of range, one at its
  // high watermark reads nothing; READ_COMMITTED stops at the last stable offset it knows.
  EXPECT_EQ(fetch_as_consumer(port(2), consumer_fetch(topic, 0, "rack-2"), 10).error,
            code(error_code::not_leader_or_follower));
  EXPECT_EQ(
      fetch_as_consumer(port(2), consumer_fetch(topic, 0, "rack-2", 0), 12).base_offsets.size(),
      5u);
  EXPECT_EQ(fetch_as_consumer(port(2), consumer_fetch(topic, 0, "rack-2", 1), 12).error,
            code(error_code::unknown_leader_epoch));
  EXPECT_EQ(fetch_as_consumer(port(2), consumer_fetch(topic, 6, "rack-2"), 12).error,
            code(error_code::offset_out_of_range));
  {
    auto at_end = fetch_as_consumer(port(2), consumer_fetch(topic, 5, "rack-2"), 12);
    EXPECT_EQ(at_end.error, 0);
    EXPECT_TRUE(at_end.base_offsets.empty());
    auto committed = consumer_fetch(topic, 0, "rack-2");
    committed.isolation_level = 1;
    auto c = fetch_as_consumer(port(2), committed, 12);
    EXPECT_EQ(c.error, 0);
    EXPECT_EQ(c.last_stable_offset, 5);
    EXPECT_EQ(c.base_offsets.size(), 5u);
  }

  // A consumer waiting on the follower at its high watermark is answered when the high
  // watermark moves, not at its MaxWaitMs.
  {
    raw_client waiting(port(2));
    std::vector<uint8_t> body;
    protocol::writer w(body);
    consumer_fetch(topic, 5, "rack-2", -1, 8000).encode(w, 11);
    const auto sent = std::chrono::steady_clock::now();
    ASSERT_TRUE(waiting.send_bytes(request_frame(1, 11, 7, body, false)));
    ASSERT_EQ(produce_one(leader, 5, topic, 0, value_batch("r5")).error_code, 0);
    auto frame = waiting.read_frame(15s);
    ASSERT_TRUE(frame);
    EXPECT_LT(std::chrono::steady_clock::now() - sent, 6s);
    protocol::reader r(std::span<const uint8_t>(*frame).subspan(4));  // correlation id
    auto decoded = protocol::fetch_response::decode(r, 11);
    ASSERT_TRUE(decoded);
    const auto& p = decoded->responses.at(0).partitions.at(0);
    EXPECT_EQ(p.error_code, 0);
    EXPECT_EQ(p.high_watermark, 6);
    EXPECT_TRUE(p.records && !p.records->empty());
  }

  // librdkafka with client.rack=rack-3, bootstrapped on the leader: sent to broker 3 and served
  // by it (its statistics name broker 3 as the partition's, and broker 3's BytesOut for the
  // topic grows: nothing else fetches the topic from a follower).
  const std::string python = "/usr/bin/python3";
  if (run_command(python + " -c 'import confluent_kafka'").first == 0) {
    const double before = topic_bytes_out(3, topic);
    const auto [rc, out] =
        run_command("timeout 30 " + python + " " + std::string(TARN_SOURCE_DIR) +
                    "/tests/python/follower_fetch.py 127.0.0.1:" + std::to_string(port(1)) + " " +
                    topic + " rack-3 6");
    std::cout << out;
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("records 6"), std::string::npos) << out;
    // Leader first, then broker 3 (statistics every 100 ms may miss the first).
    const auto from = lines_with(out, "fetched-from ");
    ASSERT_EQ(from.size(), 1u) << out;
    EXPECT_TRUE(from[0].ends_with(" 3")) << out;
    EXPECT_GT(topic_bytes_out(3, topic), before) << out;
  }

  // Leadership moves (broker 1 stops, controlled): a follower knows the new leader epoch, and a
  // consumer with the old one is fenced with KIP-951's hint.
  broker(1).process().send_signal(SIGTERM);
  ASSERT_TRUE(wait_for_partition(port(3), topic, [](const partition_view& v) {
    return v.leader == 2 && v.leader_epoch == 1;
  }));
  auto fenced = fetch_as_consumer(port(3), consumer_fetch(topic, 0, "rack-3", 0), 12);
  EXPECT_EQ(fenced.error, code(error_code::fenced_leader_epoch));
  EXPECT_EQ(fenced.hint_leader, 2);
  EXPECT_EQ(fenced.hint_epoch, 1);
  EXPECT_EQ(fetch_as_consumer(port(3), consumer_fetch(topic, 0, "rack-3", 1), 12).error, 0);
}

// Kafka 4.4.0's KafkaConsumer with client.rack=rack-3 (tests/java/FollowerFetch.java: Fetch with
// topic ids and a fetch session), bootstrapped on the leader: the leader names broker 3, the
// consumer's preferred-read-replica gauge shows it, and broker 3 serves the records. Several
// seconds with the JVM's start, so named for make interop (tests/kafka_tests.regex); it starts
// no Kafka broker.
TEST_F(cluster_follower_fetching, java_consumer_reads_from_its_racks_replica_against_kafka_jars) {
#ifdef TARN_SANITIZED_BUILD
  GTEST_SKIP() << "the Java clients run in the release build only";
#else
  const std::string libs = kafka_libs();
  if (libs.empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are not available";
  const std::string topic = "racks-java";
  create_and_fill(topic, 6);
  if (HasFatalFailure()) return;
  const double before = topic_bytes_out(3, topic);
  const auto [rc, out] =
      run_command("timeout 60 /usr/bin/java -cp '" + libs + "/*' " + std::string(TARN_SOURCE_DIR) +
                  "/tests/java/FollowerFetch.java 127.0.0.1:" + std::to_string(port(1)) + " " +
                  topic + " rack-3 6");
  std::cout << out;
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("records 6\n"), std::string::npos) << out;
  EXPECT_NE(out.find("preferred-read-replica 3\n"), std::string::npos) << out;
  EXPECT_GT(topic_bytes_out(3, topic), before) << out;
#endif
}

}  // namespace
}  // namespace tarn::test
