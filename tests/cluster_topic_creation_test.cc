// Topic creation in a cluster does not hold the event loop (docs/cluster.md, "Replication"):
// three real tarn brokers on one real etcd, each with a single event loop
// (num.network.threads=1). While broker 1 creates a topic of many partitions for one connection
// (CreateTopics, Metadata's auto-creation, FindCoordinator creating __consumer_offsets), another
// connection to it is answered (ApiVersions, Metadata) before the creator is, and that Metadata
// does not list the topic yet; then the creator is answered and the topic is there, led by broker
// 1. The creation is caught in flight for sure: once its first partition's log directory exists,
// etcd is paused, so its partition states cannot be written until the test lets etcd go on.
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "etcd_process.h"
#include "kafka_conn.h"
#include "protocol/error_codes.h"
#include "protocol/messages/api_versions_request.h"
#include "protocol/messages/api_versions_response.h"
#include "protocol/messages/create_topics_request.h"
#include "protocol/messages/create_topics_response.h"
#include "protocol/messages/find_coordinator_request.h"
#include "protocol/messages/find_coordinator_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "replication_util.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;
using protocol::error_code;

constexpr int32_t partitions = 120;
// Long enough that a paused etcd (a few milliseconds here) fences nobody.
constexpr int32_t session_timeout_ms = 10000;

protocol::api_versions_request versions_request() {
  protocol::api_versions_request req;
  req.client_software_name = "tarn-test";
  req.client_software_version = "1";
  return req;
}

// Whether an answer has arrived on `c`, without waiting for one.
bool answered_now(kafka_conn& c) {
  pollfd p{c.raw().fd(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

bool wait_for_directory(const std::filesystem::path& dir, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!std::filesystem::exists(dir)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

class cluster_topic_creation : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!etcd_available()) GTEST_SKIP() << "etcd is not installed (scripts/install-deps)";
    start_etcd_and_brokers(etcd_, brokers_, 3, [&](int32_t id) {
      return replication_args(
          *etcd_, id, session_timeout_ms, 10000,
          {"num.network.threads=1", "num.partitions=" + std::to_string(partitions),
           "default.replication.factor=3"});
    });
    if (HasFatalFailure()) return;
    for (int32_t id = 1; id <= 3; ++id) {
      ASSERT_TRUE(wait_for_brokers(port(id), 3)) << "broker " << id;
    }
  }

  uint16_t port(int32_t id) const { return brokers_[static_cast<size_t>(id - 1)]->port(); }

  // With `creator`'s request sent to broker 1, which creates `topic`: waits for its first
  // partition's directory, pauses etcd, and expects another connection's ApiVersions and
  // Metadata (every topic) answered while the creator is not, and `topic` not listed yet.
  // `while_paused` runs last before etcd goes on.
  void expect_answered_while_creating(kafka_conn& creator, kafka_conn& other,
                                      const std::string& topic,
                                      const std::function<void()>& while_paused = {}) {
    ASSERT_TRUE(wait_for_directory(brokers_[0]->data_dir() / (topic + "-0"), event_timeout))
        << brokers_[0]->output();
    etcd_->pause(0);
    // Bounded well below the brokers' etcd request timeout (5 s) and session timeout: an event
    // loop held by the creation answers neither before etcd goes on.
    other.send(versions_request(), 3);
    auto versions = other.receive<protocol::api_versions_response>(3, 3s);
    bool listed = false;
    reply<protocol::metadata_response> all;
    if (versions) {
      other.send(protocol::metadata_request{}, 12);
      all = other.receive<protocol::metadata_response>(12, 3s);
      if (all) {
        for (const auto& t : all->topics) listed = listed || t.name == topic;
      }
    }
    const bool creator_answered = answered_now(creator);
    if (while_paused) while_paused();
    etcd_->resume(0);
    EXPECT_TRUE(versions) << "ApiVersions not answered while " << topic << " was being created";
    if (versions) {
      EXPECT_EQ(versions->error_code, 0);
    }
    EXPECT_TRUE(all) << "Metadata not answered while " << topic << " was being created";
    EXPECT_FALSE(listed) << topic << " listed before its partitions had leaders";
    EXPECT_FALSE(creator_answered)
        << "the creation of " << topic << " was answered before the other connection";
  }

  // Broker 1 leads every partition of `topic`, as Metadata says once the creation is answered.
  void expect_ready(const std::string& topic, int32_t count) {
    kafka_conn c(port(1), nullptr);
    protocol::metadata_request req;
    req.allow_auto_topic_creation = false;
    req.topics.emplace().emplace_back().name = topic;
    auto r = c.call<protocol::metadata_response>(req, 12);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->topics.size(), 1u);
    EXPECT_EQ(r->topics[0].error_code, 0);
    ASSERT_EQ(r->topics[0].partitions.size(), static_cast<size_t>(count));
    for (const auto& p : r->topics[0].partitions) {
      EXPECT_EQ(p.leader_id, 1) << topic << "-" << p.partition_index;
      EXPECT_EQ(p.replica_nodes.size(), 3u) << topic << "-" << p.partition_index;
    }
  }

  std::unique_ptr<etcd_cluster> etcd_;
  std::vector<std::unique_ptr<broker_process>> brokers_;
};

TEST_F(cluster_topic_creation, create_topics_leaves_the_event_loop_serving_other_connections) {
  const std::string topic = "many-partitions";
  kafka_conn other(port(1), nullptr);
  ASSERT_TRUE(other.call<protocol::api_versions_response>(versions_request(), 3));
  kafka_conn creator(port(1), nullptr);
  protocol::create_topics_request req;
  auto& t = req.topics.emplace_back();
  t.name = topic;
  t.num_partitions = partitions;
  t.replication_factor = 3;
  req.timeout_ms = 30000;
  ASSERT_GT(creator.send(req, 7), 0);
  // A second CreateTopics of the name while the first is in flight waits for it, and finds the
  // topic.
  kafka_conn second(port(1), nullptr);
  expect_answered_while_creating(creator, other, topic, [&] { second.send(req, 7); });
  auto created = creator.receive<protocol::create_topics_response>(7);
  ASSERT_TRUE(created);
  ASSERT_EQ(created->topics.size(), 1u);
  EXPECT_EQ(created->topics[0].error_code, 0);
  EXPECT_EQ(created->topics[0].num_partitions, partitions);
  auto again = second.receive<protocol::create_topics_response>(7);
  ASSERT_TRUE(again);
  ASSERT_EQ(again->topics.size(), 1u);
  EXPECT_EQ(again->topics[0].error_code, code(error_code::topic_already_exists));
  expect_ready(topic, partitions);
}

TEST_F(cluster_topic_creation, auto_creation_leaves_the_event_loop_serving_other_connections) {
  const std::string topic = "auto-created";
  kafka_conn other(port(1), nullptr);
  ASSERT_TRUE(other.call<protocol::api_versions_response>(versions_request(), 3));
  kafka_conn creator(port(1), nullptr);
  protocol::metadata_request req;
  req.allow_auto_topic_creation = true;
  req.topics.emplace().emplace_back().name = topic;
  ASSERT_GT(creator.send(req, 12), 0);
  expect_answered_while_creating(creator, other, topic);
  auto first = creator.receive<protocol::metadata_response>(12);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->topics.size(), 1u);
  // Kafka 4.4 answers the Metadata that auto-creates a topic so; the client asks again.
  EXPECT_EQ(first->topics[0].error_code, code(error_code::unknown_topic_or_partition));
  expect_ready(topic, partitions);
}

TEST_F(cluster_topic_creation,
       find_coordinator_creating_the_offsets_topic_leaves_the_loop_serving) {
  const std::string topic = "__consumer_offsets";
  kafka_conn other(port(1), nullptr);
  ASSERT_TRUE(other.call<protocol::api_versions_response>(versions_request(), 3));
  kafka_conn creator(port(1), nullptr);
  protocol::find_coordinator_request req;
  req.key_type = 0;
  req.coordinator_keys = {"a-group"};
  ASSERT_GT(creator.send(req, 4), 0);
  expect_answered_while_creating(creator, other, topic);
  auto found = creator.receive<protocol::find_coordinator_response>(4);
  ASSERT_TRUE(found);
  ASSERT_EQ(found->coordinators.size(), 1u);
  EXPECT_EQ(found->coordinators[0].error_code, 0);
  EXPECT_EQ(found->coordinators[0].node_id, 1);
  expect_ready(topic, 50);  // offsets.topic.num.partitions
}

}  // namespace
}  // namespace tarn::test
