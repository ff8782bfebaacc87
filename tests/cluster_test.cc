// Brokers joining a cluster on etcd (docs/cluster.md, issue 27): three real tarn brokers on one
// real etcd see each other in Metadata and DescribeCluster (hand-built requests and kcat -L),
// agree on the cluster id and the controller, list the topics any of them created; a broker
// killed leaves the list when its session times out and the controller role moves; a duplicate
// node.id is refused; a broker paused past its session timeout is fenced and registers again;
// a broker cut from etcd (etcd paused) is fenced and leaves itself out of its Metadata;
// InitProducerId on each broker hands out distinct producer ids (blocks taken from etcd).
// Sessions are 2 s here so that each of those takes a few seconds at most.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "etcd_process.h"
#include "kafka_conn.h"
#include "protocol/error_codes.h"
#include "protocol/messages/create_topics_request.h"
#include "protocol/messages/create_topics_response.h"
#include "protocol/messages/delete_topics_request.h"
#include "protocol/messages/delete_topics_response.h"
#include "protocol/messages/describe_cluster_request.h"
#include "protocol/messages/describe_cluster_response.h"
#include "protocol/messages/describe_configs_request.h"
#include "protocol/messages/describe_configs_response.h"
#include "protocol/messages/describe_topic_partitions_request.h"
#include "protocol/messages/describe_topic_partitions_response.h"
#include "protocol/messages/init_producer_id_request.h"
#include "protocol/messages/init_producer_id_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;
using protocol::error_code;

constexpr int32_t session_timeout_ms = 2000;

std::vector<std::string> cluster_args(const etcd_cluster& etcd, int32_t node_id) {
  std::string connect;
  for (const auto& e : etcd.endpoints()) {
    if (!connect.empty()) connect += ",";
    connect += e.substr(e.find("://") + 3);  // host:port, as zookeeper.connect is written
  }
  return {"--override", "node.id=" + std::to_string(node_id),
          "--override", "etcd.connect=" + connect,
          "--override", "broker.session.timeout.ms=" + std::to_string(session_timeout_ms),
          "--override", "broker.heartbeat.interval.ms=500",
          "--override", "broker.rack=rack-" + std::to_string(node_id)};
}

// What Metadata v12 says of the cluster, in plain values.
struct cluster_view {
  bool answered = false;
  std::string cluster_id;
  int32_t controller = -2;
  std::map<int32_t, std::pair<int32_t, std::string>> brokers;  // id -> (port, rack)
  // topic -> per partition (error, leader, replicas, isr)
  struct partition {
    int16_t error = 0;
    int32_t leader = -2;
    int32_t leader_epoch = -1;
    std::vector<int32_t> replicas, isr;
  };
  std::map<std::string, std::vector<partition>> topics;
};

cluster_view metadata_of(uint16_t port) {
  cluster_view v;
  kafka_conn c(port, nullptr);
  if (!c.connected()) return v;
  protocol::metadata_request req;  // topics null: every topic
  auto r = c.call<protocol::metadata_response>(req, 12);
  if (!r) return v;
  v.answered = true;
  v.cluster_id = std::string(r->cluster_id.value_or(""));
  v.controller = r->controller_id;
  for (const auto& b : r->brokers) {
    v.brokers[b.node_id] = {b.port, std::string(b.rack.value_or("<null>"))};
  }
  for (const auto& t : r->topics) {
    auto& parts = v.topics[std::string(t.name.value_or(""))];
    for (const auto& p : t.partitions) {
      parts.push_back({p.error_code, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes});
    }
  }
  return v;
}

// Polls `port`'s Metadata until `done` holds (the others learn of a change by their watch).
template <class Pred>
cluster_view wait_for(uint16_t port, Pred done, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  cluster_view v = metadata_of(port);
  while (!done(v) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
    v = metadata_of(port);
  }
  return v;
}

std::set<int32_t> ids_of(const cluster_view& v) {
  std::set<int32_t> out;
  for (const auto& [id, b] : v.brokers) out.insert(id);
  return out;
}

int16_t create_topic(uint16_t port, const std::string& name, int32_t partitions,
                     int16_t replication_factor = -1) {
  kafka_conn c(port, nullptr);
  protocol::create_topics_request req;
  protocol::create_topics_request::creatable_topic t;
  t.name = name;
  t.num_partitions = partitions;
  t.replication_factor = replication_factor;
  req.topics.push_back(t);
  req.timeout_ms = 10000;
  auto r = c.call<protocol::create_topics_response>(req, 7);
  if (!r || r->topics.size() != 1) return -1;
  return r->topics[0].error_code;
}

// DescribeTopicPartitions v0 (what kafka-topics.sh --describe and Admin.describeTopics send) of
// one topic's partition 0 on the broker at `port`.
struct described_partition {
  int16_t topic_error = -1, error = -1;
  int32_t leader = -2;
  std::vector<int32_t> replicas, offline;
};
std::optional<described_partition> describe_partition(uint16_t port, const std::string& topic) {
  kafka_conn c(port, nullptr);
  protocol::describe_topic_partitions_request req;
  req.topics.emplace_back().name = topic;
  auto r = c.call<protocol::describe_topic_partitions_response>(req, 0);
  if (!r || r->topics.size() != 1) return std::nullopt;
  described_partition d;
  d.topic_error = r->topics[0].error_code;
  if (!r->topics[0].partitions.empty()) {
    const auto& p = r->topics[0].partitions[0];
    d.error = p.error_code;
    d.leader = p.leader_id;
    d.replicas = p.replica_nodes;
    d.offline = p.offline_replicas;
  }
  return d;
}

// DescribeConfigs v4 of a topic on the broker at `port`: its error code and how many configs.
std::pair<int16_t, size_t> describe_topic_configs(uint16_t port, const std::string& topic) {
  kafka_conn c(port, nullptr);
  protocol::describe_configs_request req;
  auto& res = req.resources.emplace_back();
  res.resource_type = 2;  // TOPIC
  res.resource_name = topic;
  res.configuration_keys = std::nullopt;
  auto r = c.call<protocol::describe_configs_response>(req, 4);
  if (!r || r->results.size() != 1) return {-1, 0};
  return {r->results[0].error_code, r->results[0].configs.size()};
}

class cluster_three_brokers : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!etcd_available()) GTEST_SKIP() << "etcd is not installed (scripts/install-deps)";
    etcd_ = std::make_unique<etcd_cluster>(1);
    ASSERT_TRUE(etcd_->wait_ready(0)) << etcd_->output(0);
    for (int32_t id = 1; id <= 3; ++id) {
      brokers_.push_back(std::make_unique<broker_process>(cluster_args(*etcd_, id)));
      ASSERT_NE(brokers_.back()->port(), 0) << brokers_.back()->output();
    }
    // Each sees all three once the registrations reach it.
    for (auto& b : brokers_) {
      auto v = wait_for(b->port(), [](const cluster_view& v) { return v.brokers.size() == 3; });
      ASSERT_EQ(ids_of(v), (std::set<int32_t>{1, 2, 3})) << b->output();
    }
  }
  uint16_t port(int32_t id) const { return brokers_[static_cast<size_t>(id - 1)]->port(); }

  std::unique_ptr<etcd_cluster> etcd_;
  std::vector<std::unique_ptr<broker_process>> brokers_;
};

TEST_F(cluster_three_brokers, see_each_other_and_agree_on_cluster_and_controller) {
  std::set<std::string> cluster_ids;
  std::set<int32_t> controllers;
  for (int32_t id = 1; id <= 3; ++id) {
    // The controller is elected a moment after the registration: wait for it too.
    auto v = wait_for(port(id), [](const cluster_view& v) { return v.controller >= 1; });
    ASSERT_TRUE(v.answered);
    EXPECT_EQ(v.brokers.size(), 3u);
    for (int32_t other = 1; other <= 3; ++other) {
      ASSERT_EQ(v.brokers.count(other), 1u);
      EXPECT_EQ(v.brokers[other].first, port(other)) << "broker " << other << " seen from " << id;
      EXPECT_EQ(v.brokers[other].second, "rack-" + std::to_string(other));
    }
    cluster_ids.insert(v.cluster_id);
    controllers.insert(v.controller);
  }
  EXPECT_EQ(cluster_ids.size(), 1u) << "the brokers agreed the cluster id in etcd";
  ASSERT_EQ(controllers.size(), 1u);
  EXPECT_GE(*controllers.begin(), 1);
  EXPECT_LE(*controllers.begin(), 3);

  // Every Metadata version tarn serves lists the three (racks from v1, the controller from v1).
  for (int16_t version = protocol::metadata_request::min_version;
       version <= protocol::metadata_request::max_version; ++version) {
    kafka_conn c(port(1), nullptr);
    protocol::metadata_request req;
    if (version == 0) req.topics.emplace();  // v0: an empty list means every topic
    auto r = c.call<protocol::metadata_response>(req, version);
    ASSERT_TRUE(r) << "v" << version;
    std::set<int32_t> ids;
    for (const auto& b : r->brokers) {
      ids.insert(b.node_id);
      EXPECT_EQ(b.port, port(b.node_id)) << "v" << version;
      if (version >= 1) {
        EXPECT_EQ(b.rack, "rack-" + std::to_string(b.node_id)) << "v" << version;
      }
    }
    EXPECT_EQ(ids, (std::set<int32_t>{1, 2, 3})) << "v" << version;
    if (version >= 1) {
      EXPECT_EQ(r->controller_id, *controllers.begin()) << "v" << version;
    }
  }

  // DescribeCluster v1 and v2: the same brokers, racks and controller.
  for (int16_t version : {1, 2}) {
    kafka_conn c(port(2), nullptr);
    protocol::describe_cluster_request req;
    req.endpoint_type = 1;
    auto r = c.call<protocol::describe_cluster_response>(req, version);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->error_code, 0);
    EXPECT_EQ(r->controller_id, *controllers.begin());
    EXPECT_EQ(std::string(r->cluster_id), *cluster_ids.begin());
    std::map<int32_t, std::pair<int32_t, std::string>> seen;
    for (const auto& b : r->brokers) {
      seen[b.broker_id] = {b.port, std::string(b.rack.value_or("<null>"))};
    }
    EXPECT_EQ(seen.size(), 3u);
    for (int32_t id = 1; id <= 3; ++id) {
      EXPECT_EQ(seen[id],
                std::make_pair(static_cast<int32_t>(port(id)), "rack-" + std::to_string(id)));
    }
  }

  // A real client's view: kcat -L lists the three brokers.
  if (have_program("kcat")) {
    auto [rc, out] = run_command("kcat -L -m 5 -b 127.0.0.1:" + std::to_string(port(3)) + " 2>&1");
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find(" 3 brokers:"), std::string::npos) << out;
    for (int32_t id = 1; id <= 3; ++id) {
      EXPECT_NE(
          out.find("broker " + std::to_string(id) + " at 127.0.0.1:" + std::to_string(port(id))),
          std::string::npos)
          << out;
    }
  }

  // Producer ids come from one key in etcd, a block of 1000 per broker: an idempotent
  // producer's InitProducerId on each broker gets an id no other broker hands out (each broker
  // kept a file of its own before, and all three answered 0).
  std::set<int64_t> producer_ids;
  for (int32_t id = 1; id <= 3; ++id) {
    kafka_conn c(port(id), nullptr);
    protocol::init_producer_id_request req;
    req.transactional_id = std::nullopt;
    req.transaction_timeout_ms = INT32_MAX;
    auto r = c.call<protocol::init_producer_id_response>(req, 4);
    ASSERT_TRUE(r) << "broker " << id;
    EXPECT_EQ(r->error_code, 0) << "broker " << id;
    EXPECT_EQ(r->producer_epoch, 0) << "broker " << id;
    producer_ids.insert(r->producer_id);
  }
  EXPECT_EQ(producer_ids.size(), 3u) << "two brokers handed out the same producer id";
}

// Listed with a leader for every partition: another broker learns a topic and its partitions'
// states by two watches, and until both arrived answers LEADER_NOT_AVAILABLE for its partitions
// (docs/cluster.md, "Topics, interim").
bool listed_with_leaders(const cluster_view& v, const std::string& topic) {
  auto t = v.topics.find(topic);
  return t != v.topics.end() && !t->second.empty() &&
         std::all_of(t->second.begin(), t->second.end(),
                     [](const cluster_view::partition& p) { return p.error == 0; });
}

TEST_F(cluster_three_brokers, a_topic_created_on_one_is_listed_by_all) {
  ASSERT_EQ(create_topic(port(1), "orders", 3), 0);
  for (int32_t id = 2; id <= 3; ++id) {
    auto v =
        wait_for(port(id), [](const cluster_view& v) { return listed_with_leaders(v, "orders"); });
    ASSERT_EQ(v.topics.count("orders"), 1u) << "broker " << id;
    const auto& parts = v.topics["orders"];
    ASSERT_EQ(parts.size(), 3u);
    for (const auto& p : parts) {
      EXPECT_EQ(p.error, 0);
      EXPECT_EQ(p.leader, 1) << "the creator leads its topic (interim, docs/cluster.md)";
      EXPECT_EQ(p.replicas, std::vector<int32_t>{1});
      EXPECT_EQ(p.isr, std::vector<int32_t>{1});
    }
  }
  // Its name is taken cluster-wide: another broker cannot create it again.
  EXPECT_EQ(create_topic(port(2), "orders", 1), code(error_code::topic_already_exists));
  // A topic created on broker 3 is listed by broker 1 next to its own.
  ASSERT_EQ(create_topic(port(3), "payments", 1), 0);
  auto v =
      wait_for(port(1), [](const cluster_view& v) { return listed_with_leaders(v, "payments"); });
  ASSERT_EQ(v.topics.count("payments"), 1u);
  EXPECT_EQ(v.topics["payments"][0].leader, 3);
  EXPECT_EQ(v.topics["orders"][0].leader, 1);
  // DescribeTopicPartitions and DescribeConfigs on a broker without a copy of it answer it too
  // (kafka-topics.sh --describe sends them to any broker).
  auto described = describe_partition(port(1), "payments");
  ASSERT_TRUE(described);
  EXPECT_EQ(described->topic_error, 0);
  EXPECT_EQ(described->leader, 3);
  EXPECT_EQ(described->replicas, std::vector<int32_t>{3});
  auto configs = describe_topic_configs(port(1), "payments");
  EXPECT_EQ(configs.first, 0);
  EXPECT_GT(configs.second, 10u);

  // Deleted by its creator, it disappears from the others.
  {
    kafka_conn c(port(1), nullptr);
    protocol::delete_topics_request req;
    req.topic_names = {"orders"};
    req.timeout_ms = 10000;
    auto r = c.call<protocol::delete_topics_response>(req, 4);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->responses.size(), 1u);
    EXPECT_EQ(r->responses[0].error_code, 0);
  }
  v = wait_for(port(2), [](const cluster_view& v) { return v.topics.count("orders") == 0; });
  EXPECT_EQ(v.topics.count("orders"), 0u);
  EXPECT_EQ(v.topics.count("payments"), 1u);
}

// The controller killed (kill -9): another broker wins the election (the etcd transaction on
// the controller key) and goes on moving partition states: the dead controller's own leadership
// first, then, after the change, a leader killed under the new controller.
TEST_F(cluster_three_brokers, a_killed_broker_leaves_and_the_controller_moves) {
  auto before = wait_for(port(1), [](const cluster_view& v) { return v.controller >= 1; });
  const int32_t controller = before.controller;
  ASSERT_GE(controller, 1);
  ASSERT_EQ(create_topic(port(controller), "kept-by-the-dead", 1), 0);
  const int32_t witness = controller == 1 ? 2 : 1;
  const int32_t third = 6 - controller - witness;
  // Replicated topics, each led by its creator: one by the controller, one by each other broker.
  const std::map<int32_t, std::string> led = {{controller, "led-by-the-controller"},
                                              {witness, "led-by-the-witness"},
                                              {third, "led-by-the-third"}};
  for (const auto& [id, name] : led) ASSERT_EQ(create_topic(port(id), name, 1, 3), 0) << name;
  wait_for(port(witness), [&](const cluster_view& v) {
    if (!listed_with_leaders(v, "kept-by-the-dead")) return false;  // its state arrived too
    for (const auto& [id, name] : led) {
      auto t = v.topics.find(name);
      if (t == v.topics.end() || t->second.empty() || t->second[0].isr.size() != 3) return false;
    }
    return true;
  });

  const auto killed_at = std::chrono::steady_clock::now();
  brokers_[static_cast<size_t>(controller - 1)]->process().send_signal(SIGKILL);
  auto after = wait_for(
      port(witness),
      [&](const cluster_view& v) {
        return v.brokers.size() == 2 && v.controller >= 1 && v.controller != controller;
      },
      std::chrono::milliseconds(session_timeout_ms * 4));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - killed_at);
  EXPECT_EQ(after.brokers.count(controller), 0u);
  EXPECT_EQ(after.brokers.size(), 2u);
  EXPECT_NE(after.controller, controller);
  EXPECT_GE(after.controller, 1);
  // Not before the lease could expire (whole seconds in etcd), not much after.
  // Its last renewal came at most one heartbeat (500 ms) before the kill.
  EXPECT_GE(took.count(), session_timeout_ms - 500 - 200) << "left before its session timed out";
  EXPECT_LE(took.count(), session_timeout_ms + 3000);
  std::cout << "broker " << controller << " (the controller) gone from Metadata after "
            << took.count() << " ms; controller now " << after.controller << "\n";
  // Its topic is still listed, leaderless, with its replica offline.
  ASSERT_EQ(after.topics.count("kept-by-the-dead"), 1u);
  EXPECT_EQ(after.topics["kept-by-the-dead"][0].leader, -1);
  EXPECT_EQ(after.topics["kept-by-the-dead"][0].error, code(error_code::leader_not_available));
  // DescribeTopicPartitions alike (kafka-topics.sh --unavailable-partitions lists it).
  auto described = describe_partition(port(witness), "kept-by-the-dead");
  ASSERT_TRUE(described);
  EXPECT_EQ(described->error, code(error_code::leader_not_available));
  EXPECT_EQ(described->leader, -1);
  EXPECT_EQ(described->offline, std::vector<int32_t>{controller});
  // Every survivor names the same new controller.
  auto other = wait_for(port(third), [&](const cluster_view& v) {
    return v.brokers.size() == 2 && v.controller == after.controller;
  });
  EXPECT_EQ(other.controller, after.controller);
  // The new controller moved the dead controller's leadership to an in-sync survivor, at a new
  // leader epoch, and took the dead broker out of the ISR.
  auto moved = wait_for(port(witness), [&](const cluster_view& v) {
    auto t = v.topics.find("led-by-the-controller");
    return t != v.topics.end() && !t->second.empty() && t->second[0].leader >= 1 &&
           t->second[0].leader != controller;
  });
  ASSERT_EQ(moved.topics.count("led-by-the-controller"), 1u);
  const auto& p = moved.topics["led-by-the-controller"][0];
  EXPECT_NE(p.leader, controller);
  EXPECT_GE(p.leader_epoch, 1);
  EXPECT_EQ(std::count(p.isr.begin(), p.isr.end(), controller), 0);

  // After the change: the leader that is not the new controller is killed; the new controller
  // moves its leadership to itself, the last live replica.
  const int32_t new_controller = after.controller;
  const int32_t victim = new_controller == witness ? third : witness;
  const std::string victims_topic = led.at(victim);
  brokers_[static_cast<size_t>(victim - 1)]->process().send_signal(SIGKILL);
  auto failed_over = wait_for(
      port(new_controller),
      [&](const cluster_view& v) {
        auto t = v.topics.find(victims_topic);
        return v.brokers.size() == 1 && t != v.topics.end() && !t->second.empty() &&
               t->second[0].leader == new_controller;
      },
      std::chrono::milliseconds(session_timeout_ms * 4));
  ASSERT_EQ(failed_over.topics.count(victims_topic), 1u) << brokers_[new_controller - 1]->output();
  const auto& q = failed_over.topics[victims_topic][0];
  EXPECT_EQ(q.leader, new_controller) << brokers_[new_controller - 1]->output();
  EXPECT_GE(q.leader_epoch, 1);
  EXPECT_EQ(q.isr, std::vector<int32_t>{new_controller});
  EXPECT_EQ(failed_over.controller, new_controller);
  EXPECT_NE(brokers_[new_controller - 1]->output().find("controller (epoch"), std::string::npos);
}

TEST_F(cluster_three_brokers, a_duplicate_node_id_is_refused) {
  broker_process dup(cluster_args(*etcd_, 2));
  EXPECT_EQ(dup.port(), 0);
  auto status = dup.process().wait_exit(event_timeout);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->exited);
  EXPECT_NE(status->code, 0);
  EXPECT_NE(dup.output().find("DUPLICATE_BROKER_REGISTRATION"), std::string::npos) << dup.output();
  // The original keeps its registration.
  auto v = metadata_of(port(1));
  EXPECT_EQ(v.brokers.count(2), 1u);
  EXPECT_EQ(v.brokers[2].first, port(2));
}

TEST_F(cluster_three_brokers, a_broker_paused_past_its_session_is_fenced_and_registers_again) {
  child_process& b3 = brokers_[2]->process();
  b3.send_signal(SIGSTOP);
  auto v = wait_for(
      port(1), [](const cluster_view& v) { return v.brokers.size() == 2; },
      std::chrono::milliseconds(session_timeout_ms * 4));
  EXPECT_EQ(ids_of(v), (std::set<int32_t>{1, 2}));
  b3.send_signal(SIGCONT);
  // Its next renewal finds the lease gone: it is fenced, stays up (as Kafka's fenced broker) and
  // registers again with a new broker epoch; the others list it again.
  v = wait_for(
      port(1), [](const cluster_view& v) { return v.brokers.size() == 3; },
      std::chrono::milliseconds(session_timeout_ms * 4));
  EXPECT_EQ(ids_of(v), (std::set<int32_t>{1, 2, 3})) << brokers_[2]->output();
  EXPECT_EQ(v.brokers[3].first, port(3));
  EXPECT_FALSE(b3.wait_exit(0ms).has_value()) << brokers_[2]->output();
  // The others may list it before its log line has come through the pipe (seen under TSan).
  EXPECT_TRUE(b3.wait_for_output("broker 3 registered again (broker epoch", event_timeout))
      << brokers_[2]->output();
  const std::string out = brokers_[2]->output();
  EXPECT_NE(out.find("is fenced: it leads nothing until it registers again"), std::string::npos)
      << out;
  // It answers as a member again.
  EXPECT_EQ(ids_of(wait_for(port(3), [](const cluster_view& v) { return v.brokers.size() == 3; })),
            (std::set<int32_t>{1, 2, 3}));
}

TEST_F(cluster_three_brokers, a_broker_cut_from_etcd_is_fenced_and_leaves_itself_out_of_metadata) {
  // etcd paused past the session timeout: no renewal gets through and broker 1 is fenced. Its
  // watch never sees its registration go, yet a fenced broker is not live: Kafka lists no fenced
  // broker in Metadata, and neither names it controller.
  etcd_->pause(0);
  const bool fenced = brokers_[0]->process().wait_for_output(
      "broker 1 is fenced: it leads nothing until it registers again", event_timeout);
  const cluster_view v = metadata_of(port(1));
  etcd_->resume(0);
  ASSERT_TRUE(fenced) << brokers_[0]->output();
  ASSERT_TRUE(v.answered);
  EXPECT_EQ(v.brokers.count(1), 0u) << "a fenced broker listed itself";
  EXPECT_NE(v.controller, 1);
  // Once etcd answers again it registers again and lists itself.
  EXPECT_TRUE(brokers_[0]->process().wait_for_output("broker 1 registered again (broker epoch",
                                                     event_timeout))
      << brokers_[0]->output();
  const cluster_view back = wait_for(
      port(1), [](const cluster_view& v) { return v.brokers.count(1) == 1; }, event_timeout);
  EXPECT_EQ(back.brokers.count(1), 1u) << brokers_[0]->output();
}

TEST(cluster_single_node, without_etcd_the_broker_runs_as_before) {
  broker_process b({"--override", "node.id=7"});
  ASSERT_NE(b.port(), 0) << b.output();
  auto v = metadata_of(b.port());
  ASSERT_TRUE(v.answered);
  EXPECT_EQ(ids_of(v), std::set<int32_t>{7});
  EXPECT_EQ(v.controller, 7);
  EXPECT_EQ(v.brokers[7].second, "<null>");
  EXPECT_EQ(b.output().find("etcd"), std::string::npos) << b.output();
  auto status = b.stop();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->code, 0);
}

}  // namespace
}  // namespace tarn::test
