// Reassignments in a cluster (docs/cluster.md, "Reassignments", issue 27): three real brokers on
// one real etcd, AlterPartitionReassignments and ListPartitionReassignments on the wire.
//   - A topic with replication factor 2 on brokers {1,2} and {1,3}: partition 0 moved to {2,3}
//     (its leader removed), partition 1 to {1,2} (a follower replaced) while broker 3 is paused:
//     List shows partition 0 in progress with Kafka's adding/removing sets, partition 1 done;
//     broker 3 resumed: the move completes, broker 2 leads, broker 3's segment equals the
//     leader's byte for byte, broker 1's copy is gone, acks=all produces go on at the new
//     leader, and every acknowledged record is read back in order. Kafka's errors for unknown
//     topics, partitions and brokers, duplicates, a cancel with nothing to cancel.
//   - A new replica of a partition whose log start is past 0 (DeleteRecords on the leader)
//     starts over at the leader's log start offset, catches up and joins the ISR; a move that
//     cannot complete, cancelled, restores the original assignment.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "etcd_process.h"
#include "kafka_conn.h"
#include "produce_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/alter_partition_reassignments_request.h"
#include "protocol/messages/alter_partition_reassignments_response.h"
#include "protocol/messages/delete_records_request.h"
#include "protocol/messages/delete_records_response.h"
#include "protocol/messages/incremental_alter_configs_request.h"
#include "protocol/messages/incremental_alter_configs_response.h"
#include "protocol/messages/list_partition_reassignments_request.h"
#include "protocol/messages/list_partition_reassignments_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "replication_util.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;
using protocol::code;
using protocol::error_code;

// One partition's answer to AlterPartitionReassignments.
struct reassign_answer {
  int16_t error = -100;
  std::string message;
  bool message_null = true;
};

// AlterPartitionReassignments v1 of (topic, partition, replicas or nullopt to cancel).
std::vector<reassign_answer> alter_reassignments(
    uint16_t port,
    const std::vector<std::tuple<std::string, int32_t, std::optional<std::vector<int32_t>>>>& asked,
    bool allow_rf_change = true) {
  kafka_conn c(port, nullptr);
  protocol::alter_partition_reassignments_request req;
  req.timeout_ms = 10000;
  req.allow_replication_factor_change = allow_rf_change;
  for (const auto& [topic, partition, replicas] : asked) {
    if (req.topics.empty() || req.topics.back().name != topic) {
      req.topics.emplace_back().name = topic;
    }
    auto& p = req.topics.back().partitions.emplace_back();
    p.partition_index = partition;
    p.replicas = replicas;
  }
  std::vector<reassign_answer> out;
  auto r = c.call<protocol::alter_partition_reassignments_response>(req, 1);
  if (!r) return out;
  EXPECT_EQ(r->error_code, 0);
  for (const auto& t : r->responses) {
    for (const auto& p : t.partitions) {
      out.push_back(
          {p.error_code, std::string(p.error_message.value_or("")), !p.error_message.has_value()});
    }
  }
  return out;
}

struct ongoing {
  std::string topic;
  int32_t partition;
  std::vector<int32_t> replicas, adding, removing;
  bool operator==(const ongoing&) const = default;
};

// ListPartitionReassignments v0 of every partition; nullopt without an answer.
std::optional<std::vector<ongoing>> list_reassignments(uint16_t port) {
  kafka_conn c(port, nullptr);
  protocol::list_partition_reassignments_request req;
  req.timeout_ms = 10000;
  auto r = c.call<protocol::list_partition_reassignments_response>(req, 0);
  if (!r) return std::nullopt;
  std::vector<ongoing> out;
  for (const auto& t : r->topics) {
    for (const auto& p : t.partitions) {
      out.push_back({std::string(t.name), p.partition_index, p.replicas, p.adding_replicas,
                     p.removing_replicas});
    }
  }
  return out;
}

// IncrementalAlterConfigs v1 SET of `configs` on one resource (2 TOPIC, 4 BROKER); its error.
int16_t set_configs(uint16_t port, int8_t type, const std::string& name,
                    const std::vector<std::pair<std::string, std::string>>& configs) {
  kafka_conn c(port, nullptr);
  protocol::incremental_alter_configs_request req;
  auto& r = req.resources.emplace_back();
  r.resource_type = type;
  r.resource_name = name;
  for (const auto& [k, v] : configs) {
    auto& a = r.configs.emplace_back();
    a.name = k;
    a.config_operation = 0;  // SET
    a.value = v;
  }
  auto answer = c.call<protocol::incremental_alter_configs_response>(req, 1);
  if (!answer || answer->responses.size() != 1) return -100;
  return answer->responses[0].error_code;
}

// The controller's id as the broker at `port` names it.
int32_t controller_of(uint16_t port) {
  kafka_conn c(port, nullptr);
  protocol::metadata_request req;
  req.topics.emplace();  // no topic
  auto r = c.call<protocol::metadata_response>(req, 12);
  return r ? r->controller_id : -1;
}

class cluster_reassign : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!etcd_available()) GTEST_SKIP() << "etcd is not installed (scripts/install-deps)";
    start_etcd_and_brokers(etcd_, brokers_, 3, [&](int32_t id) { return args(id); });
    if (HasFatalFailure()) return;
    for (int32_t id = 1; id <= 3; ++id) {
      ASSERT_TRUE(wait_for_brokers(port(id), 3)) << "broker " << id;
    }
  }
  void TearDown() override {
    for (auto& b : brokers_) b->process().send_signal(SIGCONT);
  }
  // Replication throttles measured over two windows of a second (replication.quota.window.*),
  // 16 KiB a partition per replica fetch: a throttled copy of a few hundred KB takes seconds.
  std::vector<std::string> args(int32_t id) {
    return replication_args(*etcd_, id, 15000, 800,
                            {"replication.quota.window.num=2", "replica.fetch.max.bytes=16384"});
  }
  broker_process& broker(int32_t id) { return *brokers_[static_cast<size_t>(id - 1)]; }
  uint16_t port(int32_t id) { return broker(id).port(); }
  std::filesystem::path dir(int32_t id, const std::string& topic, int32_t partition) {
    return broker(id).data_dir() / (topic + "-" + std::to_string(partition));
  }
  // Waits until every broker's Metadata shows the partition with `replicas` (in order) all in
  // sync and led by `leader`.
  void wait_for_assignment(const std::string& topic, int32_t partition,
                           const std::vector<int32_t>& replicas, int32_t leader) {
    for (int32_t id = 1; id <= 3; ++id) {
      auto v = wait_for_partition(
          port(id), topic,
          [&](const partition_view& p) {
            return p.replicas == replicas && sorted(p.isr) == sorted(replicas) &&
                   p.leader == leader;
          },
          15s, partition);
      ASSERT_TRUE(v) << topic << "-" << partition << " on broker " << id;
      EXPECT_EQ(v->replicas, replicas) << topic << "-" << partition << " on broker " << id;
      EXPECT_EQ(sorted(v->isr), sorted(replicas))
          << topic << "-" << partition << " on broker " << id;
      EXPECT_EQ(v->leader, leader) << topic << "-" << partition << " on broker " << id;
    }
  }

  std::unique_ptr<etcd_cluster> etcd_;
  std::vector<std::unique_ptr<broker_process>> brokers_;
  std::vector<std::unique_ptr<broker_process>> retired_;  // stopped; they own data directories
};

TEST_F(cluster_reassign, replicas_move_and_no_acknowledged_record_is_lost) {
  const std::string topic = "moved";
  // Placed by the creator: partition 0 on [1,2], partition 1 on [1,3].
  ASSERT_EQ(create_topic(port(1), topic, 2, {{"min.insync.replicas", "2"}}, 2), 0);
  wait_for_assignment(topic, 0, {1, 2}, 1);
  wait_for_assignment(topic, 1, {1, 3}, 1);
  if (HasFatalFailure()) return;
  std::map<int32_t, std::vector<std::vector<uint8_t>>> acknowledged;  // by partition, in order
  raw_client leader1(port(1));
  int32_t correlation = 1;
  auto produce = [&](raw_client& c, int32_t partition, const std::string& value) {
    auto batch = value_batch(value);
    auto a = produce_one(c, correlation++, topic, partition, batch);
    if (a.error_code == 0) acknowledged[partition].push_back(batch);
    return a.error_code;
  };
  for (int i = 0; i < 5; ++i) {
    for (int32_t p = 0; p < 2; ++p) {
      ASSERT_EQ(produce(leader1, p, "before-" + std::to_string(i)), 0) << p;
    }
  }

  // Kafka's answers for what cannot be done.
  auto refused = alter_reassignments(port(2), {{"nowhere", 0, std::vector<int32_t>{1}},
                                               {topic, 7, std::vector<int32_t>{1}},
                                               {topic, 0, std::vector<int32_t>{}},
                                               {topic, 0, std::vector<int32_t>{2, 9}},
                                               {topic, 0, std::vector<int32_t>{3, 2, 3}},
                                               {topic, 0, std::nullopt}});
  ASSERT_EQ(refused.size(), 6u);
  EXPECT_EQ(refused[0].error, code(error_code::unknown_topic_or_partition));
  EXPECT_EQ(refused[0].message, "Unable to find a topic named nowhere.");
  EXPECT_EQ(refused[1].error, code(error_code::unknown_topic_or_partition));
  EXPECT_EQ(refused[1].message, "Unable to find partition moved:7.");
  EXPECT_EQ(refused[2].error, code(error_code::invalid_replica_assignment));
  EXPECT_EQ(refused[2].message, "The manual partition assignment includes an empty replica list.");
  EXPECT_EQ(refused[3].error, code(error_code::invalid_replica_assignment));
  EXPECT_EQ(refused[3].message,
            "The manual partition assignment includes broker 9, but no such broker is registered.");
  EXPECT_EQ(refused[4].error, code(error_code::invalid_replica_assignment));
  EXPECT_EQ(refused[4].message,
            "The manual partition assignment includes the broker 3 more than once.");
  EXPECT_EQ(refused[5].error, code(error_code::no_reassignment_in_progress));
  EXPECT_TRUE(refused[5].message_null);
  auto same_factor = alter_reassignments(port(3), {{topic, 0, std::vector<int32_t>{2}}}, false);
  ASSERT_EQ(same_factor.size(), 1u);
  EXPECT_EQ(same_factor[0].error, code(error_code::invalid_replication_factor));
  EXPECT_EQ(same_factor[0].message, "The replication factor is changed from 2 to 1");

  // Broker 3 paused: partition 0's move to [2,3] waits for it; partition 1's to [1,2] does not
  // (2 catches up, and 3 is the replica being removed).
  ASSERT_TRUE(stop_process(broker(3).process()));
  auto moved = alter_reassignments(
      port(2), {{topic, 0, std::vector<int32_t>{2, 3}}, {topic, 1, std::vector<int32_t>{1, 2}}});
  ASSERT_EQ(moved.size(), 2u);
  EXPECT_EQ(moved[0].error, 0) << moved[0].message;
  EXPECT_TRUE(moved[0].message_null);
  EXPECT_EQ(moved[1].error, 0) << moved[1].message;
  // In progress, as every broker lists it (Replicas: the target, then the replica removed).
  const std::vector<ongoing> in_progress{{topic, 0, {2, 3, 1}, {3}, {1}}};
  for (int32_t id : {1, 2}) {
    std::optional<std::vector<ongoing>> listed;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    do {
      listed = list_reassignments(port(id));
      if (listed && *listed == in_progress) break;
      std::this_thread::sleep_for(20ms);
    } while (std::chrono::steady_clock::now() < deadline);
    ASSERT_TRUE(listed) << "broker " << id;
    EXPECT_EQ(*listed, in_progress) << "broker " << id;
  }
  // Meanwhile partition 0 goes on at its leader with the ISR it has.
  for (int i = 0; i < 3; ++i) ASSERT_EQ(produce(leader1, 0, "during-" + std::to_string(i)), 0);

  broker(3).process().send_signal(SIGCONT);
  wait_for_assignment(topic, 0, {2, 3}, 2);
  wait_for_assignment(topic, 1, {1, 2}, 1);
  if (HasFatalFailure()) return;
  for (int32_t id = 1; id <= 3; ++id) {
    auto listed = list_reassignments(port(id));
    ASSERT_TRUE(listed);
    EXPECT_TRUE(listed->empty()) << "broker " << id;
  }
  // The old leader refuses, the new one takes acks=all produces.
  {
    auto a = produce_one(leader1, correlation++, topic, 0, value_batch("not here"));
    EXPECT_EQ(a.error_code, code(error_code::not_leader_or_follower));
  }
  raw_client leader2(port(2));
  for (int i = 0; i < 3; ++i) ASSERT_EQ(produce(leader2, 0, "after-" + std::to_string(i)), 0);
  ASSERT_EQ(produce(leader1, 1, "after-p1"), 0);

  // Every acknowledged record, in order, at the leaders.
  for (const auto& [partition, sent] : acknowledged) {
    auto stored = fetch_all(port(partition == 0 ? 2 : 1), topic, partition);
    ASSERT_EQ(stored.size(), sent.size()) << "partition " << partition;
    size_t i = 0;
    for (const auto& [offset, batch] : stored) {
      EXPECT_EQ(offset, static_cast<int64_t>(i));
      EXPECT_TRUE(same_batch(batch, sent[i])) << "partition " << partition << " offset " << offset;
      ++i;
    }
  }
  // The new replicas hold the leaders' segments byte for byte; the removed ones hold nothing.
  const std::string segment = "00000000000000000000.log";
  auto wait_equal = [&](int32_t follower, int32_t leader, int32_t partition) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (file_bytes(dir(follower, topic, partition) / segment) !=
               file_bytes(dir(leader, topic, partition) / segment) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    const std::string bytes = file_bytes(dir(leader, topic, partition) / segment);
    EXPECT_FALSE(bytes.empty());
    EXPECT_EQ(file_bytes(dir(follower, topic, partition) / segment), bytes)
        << topic << "-" << partition << " on broker " << follower;
  };
  wait_equal(3, 2, 0);
  wait_equal(2, 1, 1);
  auto wait_gone = [&](int32_t id, int32_t partition) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!file_bytes(dir(id, topic, partition) / segment).empty() &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    EXPECT_TRUE(file_bytes(dir(id, topic, partition) / segment).empty())
        << topic << "-" << partition << " on broker " << id;
  };
  wait_gone(1, 0);
  wait_gone(3, 1);
}

TEST_F(cluster_reassign,
       a_new_replica_starts_at_the_log_start_and_a_cancel_restores_the_assignment) {
  const std::string topic = "trimmed";
  // Partition 0 on [1,2]; partition 1 on [1,3] keeps broker 3 a replica of the topic at the end.
  ASSERT_EQ(create_topic(port(1), topic, 2, {}, 2), 0);
  wait_for_assignment(topic, 0, {1, 2}, 1);
  if (HasFatalFailure()) return;
  raw_client leader(port(1));
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(produce_one(leader, i + 1, topic, 0, value_batch("v" + std::to_string(i))).error_code,
              0);
  }
  {
    kafka_conn c(port(1), nullptr);
    protocol::delete_records_request req;
    req.timeout_ms = 10000;
    auto& t = req.topics.emplace_back();
    t.name = topic;
    auto& p = t.partitions.emplace_back();
    p.partition_index = 0;
    p.offset = 6;
    auto r = c.call<protocol::delete_records_response>(req, 2);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->topics.at(0).partitions.at(0).error_code, 0);
    ASSERT_EQ(r->topics.at(0).partitions.at(0).low_watermark, 6);
  }
  auto moved = alter_reassignments(port(3), {{topic, 0, std::vector<int32_t>{1, 3}}});
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].error, 0) << moved[0].message;
  // Broker 3 cannot fetch from 0 (the leader's log starts at 6): it starts over there.
  wait_for_assignment(topic, 0, {1, 3}, 1);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(std::filesystem::exists(dir(3, topic, 0) / "00000000000000000006.log"));
  EXPECT_FALSE(std::filesystem::exists(dir(3, topic, 0) / "00000000000000000000.log"));
  EXPECT_NE(broker(3).output().find("started over there"), std::string::npos);
  // acks=all with the new ISR, and the records from the log start on at the leader.
  ASSERT_EQ(produce_one(leader, 20, topic, 0, value_batch("after")).error_code, 0);
  raw_client reader(port(1));
  ASSERT_TRUE(reader.send_bytes(fetch_frame(1, topic, 0, 6, 0, 0)));
  auto a = decode_fetch(reader.read_frame(10s));
  EXPECT_EQ(a.error_code, 0);
  EXPECT_EQ(a.high_watermark, 11);

  // A move that cannot complete (its new replica is paused), cancelled: the original assignment
  // is back and nothing is in progress.
  ASSERT_TRUE(stop_process(broker(2).process()));
  auto stuck = alter_reassignments(port(1), {{topic, 0, std::vector<int32_t>{1, 2}}});
  ASSERT_EQ(stuck.size(), 1u);
  EXPECT_EQ(stuck[0].error, 0) << stuck[0].message;
  const std::vector<ongoing> in_progress{{topic, 0, {1, 2, 3}, {2}, {3}}};
  auto listed = list_reassignments(port(3));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!(listed && *listed == in_progress) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    listed = list_reassignments(port(3));
  }
  ASSERT_TRUE(listed);
  EXPECT_EQ(*listed, in_progress);
  auto cancelled = alter_reassignments(port(3), {{topic, 0, std::nullopt}});
  ASSERT_EQ(cancelled.size(), 1u);
  EXPECT_EQ(cancelled[0].error, 0) << cancelled[0].message;
  broker(2).process().send_signal(SIGCONT);
  wait_for_assignment(topic, 0, {1, 3}, 1);
  listed = list_reassignments(port(1));
  ASSERT_TRUE(listed);
  EXPECT_TRUE(listed->empty());
  if (HasFatalFailure()) return;

  // Broker 3 removed from partition 0 while it is down: restarted on its data (it still
  // replicates partition 1, so the topic's logs load), it deletes the copy the states no longer
  // give it, and follows partition 1 again.
  const std::filesystem::path data3 = broker(3).data_dir();
  ASSERT_TRUE(broker(3).stop().has_value());
  auto away = alter_reassignments(port(1), {{topic, 0, std::vector<int32_t>{1, 2}}});
  ASSERT_EQ(away.size(), 1u);
  EXPECT_EQ(away[0].error, 0) << away[0].message;
  for (int32_t id : {1, 2}) {
    ASSERT_TRUE(wait_for_partition(
        port(id), topic,
        [](const partition_view& p) {
          return p.replicas == std::vector<int32_t>{1, 2} && sorted(p.isr) == sorted(p.replicas);
        },
        15s, 0))
        << "broker " << id;
  }
  const auto copy = data3 / (topic + "-0") / "00000000000000000006.log";
  ASSERT_FALSE(file_bytes(copy).empty());
  retired_.push_back(std::move(brokers_[2]));  // owns the data directory
  brokers_[2] = std::make_unique<broker_process>(args(3), data3);
  ASSERT_NE(port(3), 0) << broker(3).output();
  const auto gone_by = std::chrono::steady_clock::now() + 10s;
  auto deleted = [&] {
    return file_bytes(copy).empty() &&
           broker(3).output().find("deleted the copy of trimmed-0") != std::string::npos;
  };
  while (!deleted() && std::chrono::steady_clock::now() < gone_by) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(file_bytes(copy).empty());
  EXPECT_NE(broker(3).output().find("deleted the copy of trimmed-0"), std::string::npos);
  wait_for_assignment(topic, 1, {1, 3}, 1);
}

}  // namespace
}  // namespace tarn::test

namespace tarn::test {
namespace {

// Replication throttles (docs/cluster.md, "Replication throttles"), as kafka-reassign-partitions.sh
// --throttle sets them: leader.replication.throttled.rate on the leader, follower.replication.
// throttled.rate on the new replica, and the topic's leader./follower.replication.throttled.
// replicas naming partition 0's replicas only. Both partitions of a topic (about 320 KB each,
// led by L) get a new replica T: partition 1 is copied at once, partition 0 at about 100 KB/s.
// Mid-move the controller is killed (kill -9, a third broker): the move does not need it (the
// leader's AlterPartition that takes T into the ISR completes it) and ends as asked.
TEST_F(cluster_reassign, a_throttled_move_is_slowed_and_survives_the_controllers_death) {
  const int32_t controller = controller_of(port(1));
  ASSERT_GE(controller, 1);
  const int32_t leader = controller == 1 ? 2 : 1;
  const int32_t target = 6 - controller - leader;
  const std::string topic = "throttled";
  ASSERT_EQ(create_topic(port(leader), topic, 2, {}, 1), 0);
  raw_client c(port(leader));
  int32_t correlation = 1;
  const std::string value(10000, 'x');
  for (int32_t partition : {0, 1}) {
    for (int i = 0; i < 32; ++i) {
      ASSERT_TRUE(c.send_bytes(produce_frame(correlation++, topic, partition, value_batch(value))));
      ASSERT_EQ(decode_produce(c.read_frame(10s)).error_code, 0);
    }
  }
  ASSERT_EQ(set_configs(port(leader), 4, std::to_string(leader),
                        {{"leader.replication.throttled.rate", "100000"}}),
            0);
  ASSERT_EQ(set_configs(port(target), 4, std::to_string(target),
                        {{"follower.replication.throttled.rate", "100000"}}),
            0);
  ASSERT_EQ(
      set_configs(port(leader), 2, topic,
                  {{"leader.replication.throttled.replicas", "0:" + std::to_string(leader)},
                   {"follower.replication.throttled.replicas", "0:" + std::to_string(target)}}),
      0);
  // The leader applied its own lists as it recorded them; the target's come by the metadata
  // log's watch, within milliseconds (they were read every second before).
  std::this_thread::sleep_for(300ms);

  const auto moved_at = std::chrono::steady_clock::now();
  auto answers =
      alter_reassignments(port(leader), {{topic, 0, std::vector<int32_t>{leader, target}},
                                         {topic, 1, std::vector<int32_t>{leader, target}}});
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0].error, 0);
  EXPECT_EQ(answers[1].error, 0);
  brokers_[static_cast<size_t>(controller - 1)]->process().send_signal(SIGKILL);

  auto in_sync = [](const partition_view& p) {
    return p.isr.size() == 2 && p.replicas.size() == 2;
  };
  auto done = [&](int32_t partition, std::chrono::milliseconds timeout) {
    auto v = wait_for_partition(port(leader), topic, in_sync, timeout, partition);
    return v && in_sync(*v);
  };
  ASSERT_TRUE(done(1, 30s)) << broker(leader).output();
  const auto fast = std::chrono::steady_clock::now() - moved_at;
  // An order, not a time (a loaded machine slows both): the partition without a throttle is in
  // sync while the throttled one is still being copied; one fetcher asks for both, and only
  // partition 0's share of each answer is held to the rate.
  EXPECT_FALSE(done(0, 0ms)) << "the partition without a throttle was held back";
  ASSERT_TRUE(done(0, 60s)) << broker(target).output();
  const auto slow = std::chrono::steady_clock::now() - moved_at;
  // 320 KB: about 100 KB free (one second's worth over the two windows), the rest at 100 KB/s,
  // so at least about 2.2 s whatever the load.
  EXPECT_GE(slow, 1500ms) << "the throttled partition was not held back";
  auto left = list_reassignments(port(leader));
  ASSERT_TRUE(left);
  EXPECT_TRUE(left->empty());
  for (int32_t partition : {0, 1}) {
    EXPECT_EQ(file_bytes(dir(target, topic, partition) / "00000000000000000000.log"),
              file_bytes(dir(leader, topic, partition) / "00000000000000000000.log"))
        << "partition " << partition;
  }
  std::cout << "unthrottled partition in sync after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(fast).count()
            << " ms, throttled one after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(slow).count()
            << " ms (100 KB/s)\n";
}

}  // namespace
}  // namespace tarn::test
