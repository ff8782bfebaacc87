// The group coordinator in a cluster (docs/cluster.md, "Coordinators", issue 27): three real
// brokers on one real etcd with 2 s sessions. __consumer_offsets is one topic for the cluster,
// replicated with offsets.topic.replication.factor=3 and listed by every broker; FindCoordinator
// on any broker names the leader of the group's partition, and the other brokers answer the
// group's requests NOT_COORDINATOR. A consumer group commits; the coordinator's broker is killed
// with SIGKILL; once the controller has moved the partition's leadership, FindCoordinator names
// the new leader, which has loaded the partition from its replica: OffsetFetch returns every
// committed offset and the group's next consumer resumes where the first one committed, and a
// classic group answered JoinGroup/SyncGroup before the kill is there with its generation and
// assignment (its records were committed before the answers). A share group's heartbeat on a
// broker that does not lead its partition is NOT_COORDINATOR. Last, with min.insync.replicas=2
// and the new coordinator's only follower stopped (SIGSTOP), its writes are not answered as a
// success: COORDINATOR_NOT_AVAILABLE, Kafka's mapping of NOT_ENOUGH_REPLICAS and REQUEST_TIMED_OUT.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "etcd_process.h"
#include "kafka_conn.h"
#include "produce_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/describe_groups_request.h"
#include "protocol/messages/describe_groups_response.h"
#include "protocol/messages/find_coordinator_request.h"
#include "protocol/messages/find_coordinator_response.h"
#include "protocol/messages/join_group_request.h"
#include "protocol/messages/join_group_response.h"
#include "protocol/messages/leave_group_request.h"
#include "protocol/messages/leave_group_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "protocol/messages/offset_commit_request.h"
#include "protocol/messages/offset_commit_response.h"
#include "protocol/messages/offset_fetch_request.h"
#include "protocol/messages/offset_fetch_response.h"
#include "protocol/messages/share_group_heartbeat_request.h"
#include "protocol/messages/share_group_heartbeat_response.h"
#include "protocol/messages/sync_group_request.h"
#include "protocol/messages/sync_group_response.h"
#include "replication_util.h"
#include "tarn/consumer.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;
using client::consumer;
using client::topic_partition;
using protocol::code;
using protocol::error_code;

constexpr int32_t offsets_partitions = 3;
const std::string group = "billing";
const std::string topic = "events";

std::vector<std::string> coordinator_args(const etcd_cluster& etcd, int32_t node_id) {
  return replication_args(
      etcd, node_id, 2000, 10000,
      {"offsets.topic.num.partitions=" + std::to_string(offsets_partitions),
       "offsets.topic.replication.factor=3", "group.initial.rebalance.delay.ms=0",
       "min.insync.replicas=2", "offsets.commit.timeout.ms=2000"});
}

struct coordinator_answer {
  int16_t error = -100;  // -100: no answer
  int32_t node_id = -1;
  int32_t port = -1;
};

// FindCoordinator v4 (a batch of one key) for the group on the broker at `port`.
coordinator_answer find_coordinator(uint16_t port, const std::string& key) {
  kafka_conn c(port, nullptr);
  if (!c.connected()) return {};
  protocol::find_coordinator_request req;
  req.key_type = 0;
  req.coordinator_keys = {key};
  auto r = c.call<protocol::find_coordinator_response>(req, 4);
  if (!r || r->coordinators.size() != 1) return {};
  return {r->coordinators[0].error_code, r->coordinators[0].node_id, r->coordinators[0].port};
}

// FindCoordinator until it names a coordinator for which `ok` holds.
template <class Pred>
coordinator_answer wait_for_coordinator(uint16_t port, Pred ok, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  coordinator_answer a = find_coordinator(port, group);
  while (!(a.error == 0 && ok(a)) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    a = find_coordinator(port, group);
  }
  return a;
}

// OffsetCommit v8 of one offset a partition of `topic`; the partition's error.
int16_t commit_offset(uint16_t port, int32_t partition, int64_t offset) {
  kafka_conn c(port, nullptr);
  protocol::offset_commit_request req;
  req.group_id = group;
  req.generation_id_or_member_epoch = -1;
  auto& t = req.topics.emplace_back();
  t.name = topic;
  auto& p = t.partitions.emplace_back();
  p.partition_index = partition;
  p.committed_offset = offset;
  auto r = c.call<protocol::offset_commit_response>(req, 8);
  if (!r || r->topics.size() != 1 || r->topics[0].partitions.size() != 1) return -100;
  return r->topics[0].partitions[0].error_code;
}

// A classic group of one member, joined and synced through raw JoinGroup v5 / SyncGroup v3
// (the KIP-394 dance first) on the broker at `port`.
const std::string roster = "roster";
const std::vector<uint8_t> roster_assignment = {0, 1, 2, 3, 4};

struct roster_member {
  int16_t error = -100;
  std::string member_id;
  int32_t generation = -1;
};

roster_member join_roster(uint16_t port, const std::string& group_id) {
  roster_member out;
  kafka_conn c(port, nullptr);
  protocol::join_group_request join;
  join.group_id = group_id;
  join.session_timeout_ms = 30000;
  join.rebalance_timeout_ms = 30000;
  join.protocol_type = "consumer";
  const std::vector<uint8_t> metadata = {0, 1};
  join.protocols.push_back({"range", metadata});
  auto first = c.call<protocol::join_group_response>(join, 5);
  if (!first) return out;
  out.error = first->error_code;
  if (first->error_code != code(error_code::member_id_required)) return out;
  out.member_id = std::string(first->member_id);
  join.member_id = out.member_id;
  auto joined = c.call<protocol::join_group_response>(join, 5);
  if (!joined) return out;
  out.error = joined->error_code;
  out.generation = joined->generation_id;
  if (joined->error_code != 0) return out;
  protocol::sync_group_request sync;
  sync.group_id = group_id;
  sync.generation_id = out.generation;
  sync.member_id = out.member_id;
  sync.assignments.push_back({out.member_id, roster_assignment});
  auto synced = c.call<protocol::sync_group_response>(sync, 3);
  out.error = synced ? synced->error_code : -100;
  if (synced && synced->error_code == 0) {
    EXPECT_EQ(std::vector<uint8_t>(synced->assignment.begin(), synced->assignment.end()),
              roster_assignment);
  }
  return out;
}

// FindCoordinator for `key` until a coordinator other than `not_node` answers (10 s).
coordinator_answer coordinator_of(uint16_t port, const std::string& key, int32_t not_node) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  coordinator_answer a = find_coordinator(port, key);
  while (!(a.error == 0 && a.node_id != not_node) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    a = find_coordinator(port, key);
  }
  return a;
}

// ShareGroupHeartbeat v1 of a new member of share group "sharers" subscribed to `topic`.
int16_t share_join(uint16_t port) {
  kafka_conn c(port, nullptr);
  protocol::share_group_heartbeat_request h;
  h.group_id = "sharers";
  h.member_id = "0123456789abcdef0123456789";
  h.member_epoch = 0;
  std::vector<std::string_view> topics = {topic};
  h.subscribed_topic_names = topics;
  auto r = c.call<protocol::share_group_heartbeat_response>(h, 1);
  return r ? r->error_code : -100;
}

// The partition of __consumer_offsets of an ASCII group id: Java's String.hashCode, as the
// broker computes it.
int32_t java_partition(const std::string& id) {
  int32_t h = 0;
  for (char ch : id) {
    h = static_cast<int32_t>(31u * static_cast<uint32_t>(h) + static_cast<unsigned char>(ch));
  }
  return (h < 0 ? -h : h) % offsets_partitions;
}

struct fetched_offsets {
  int16_t error = -100;
  std::map<int32_t, int64_t> offsets;  // partition -> committed offset (-1 none)
};

// OffsetFetch v8 of every committed offset of the group.
fetched_offsets fetch_offsets(uint16_t port) {
  fetched_offsets out;
  kafka_conn c(port, nullptr);
  protocol::offset_fetch_request req;
  auto& g = req.groups.emplace_back();
  g.group_id = group;
  auto r = c.call<protocol::offset_fetch_response>(req, 8);
  if (!r || r->groups.size() != 1) return out;
  out.error = r->groups[0].error_code;
  for (const auto& t : r->groups[0].topics) {
    if (t.name != topic) continue;
    for (const auto& p : t.partitions) out.offsets[p.partition_index] = p.committed_offset;
  }
  return out;
}

std::unique_ptr<consumer> group_consumer(uint16_t port) {
  auto c = consumer::create({{"bootstrap.servers", "127.0.0.1:" + std::to_string(port)},
                             {"group.id", group},
                             {"enable.auto.commit", "false"},
                             {"auto.offset.reset", "earliest"},
                             {"session.timeout.ms", "6000"},
                             {"heartbeat.interval.ms", "200"},
                             {"retry.backoff.ms", "20"},
                             {"metadata.max.age.ms", "500"}});
  EXPECT_TRUE(c) << (c ? "" : c.error().message);
  return c ? std::move(*c) : nullptr;
}

// Polls until `count` records came (or 10 s passed); their values.
std::vector<std::string> poll_values(consumer& c, size_t count) {
  std::vector<std::string> values;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (values.size() < count && std::chrono::steady_clock::now() < deadline) {
    auto records = c.poll(200ms);
    if (!records) continue;
    for (const auto& r : *records) values.push_back(r.value.value_or(""));
  }
  return values;
}

class cluster_coordinator : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!etcd_available()) GTEST_SKIP() << "etcd is not installed (scripts/install-deps)";
    start_etcd_and_brokers(etcd_, brokers_, 3,
                           [&](int32_t id) { return coordinator_args(*etcd_, id); });
    if (HasFatalFailure()) return;
  }
  broker_process& broker(int32_t id) { return *brokers_[static_cast<size_t>(id - 1)]; }
  uint16_t port(int32_t id) { return broker(id).port(); }

  std::unique_ptr<etcd_cluster> etcd_;
  std::vector<std::unique_ptr<broker_process>> brokers_;
};

TEST_F(cluster_coordinator, the_coordinator_moves_with_its_partition_and_keeps_every_commit) {
  for (int32_t id = 1; id <= 3; ++id) {
    ASSERT_TRUE(wait_for_brokers(port(id), 3)) << "broker " << id << "\n" << broker(id).output();
  }
  // The records the group reads, on broker 2 (so that killing the coordinator below leaves them
  // where they are): six records in each of two partitions.
  ASSERT_EQ(create_topic(port(2), topic, 2, {}, 3), 0);
  {
    raw_client producer(port(2));
    for (int32_t p = 0; p < 2; ++p) {
      for (int i = 0; i < 6; ++i) {
        auto a = produce_one(producer, p * 10 + i + 1, topic, p,
                             value_batch(std::to_string(p) + "-" + std::to_string(i)));
        ASSERT_EQ(a.error_code, 0) << p << " " << i;
      }
    }
  }

  // The first FindCoordinator (on broker 1) creates __consumer_offsets with three replicas a
  // partition; broker 1, its creator, leads them first and coordinates the group.
  const coordinator_answer first = wait_for_coordinator(
      port(1), [](const coordinator_answer&) { return true; }, 10s);
  ASSERT_EQ(first.error, 0);
  EXPECT_EQ(first.node_id, 1);
  EXPECT_EQ(first.port, port(1));
  // Every broker lists it (internal, three replicas) and names the same coordinator.
  for (int32_t id = 1; id <= 3; ++id) {
    auto p = wait_for_partition(
        port(id), "__consumer_offsets",
        [](const partition_view& v) { return v.leader == 1 && v.isr.size() == 3; }, 10s);
    ASSERT_TRUE(p && p->leader == 1) << "broker " << id;
    EXPECT_EQ(sorted(p->replicas), (std::vector<int32_t>{1, 2, 3}));
    const coordinator_answer a = wait_for_coordinator(
        port(id), [](const coordinator_answer& c) { return c.node_id == 1; }, 10s);
    EXPECT_EQ(a.error, 0) << "broker " << id;
    EXPECT_EQ(a.node_id, 1) << "broker " << id;
    EXPECT_EQ(a.port, port(1)) << "broker " << id;
  }
  {
    kafka_conn c(port(3), nullptr);
    protocol::metadata_request req;
    req.allow_auto_topic_creation = false;
    req.topics.emplace().emplace_back().name = "__consumer_offsets";
    auto r = c.call<protocol::metadata_response>(req, 12);
    ASSERT_TRUE(r && r->topics.size() == 1);
    EXPECT_TRUE(r->topics[0].is_internal);
    EXPECT_EQ(r->topics[0].partitions.size(), static_cast<size_t>(offsets_partitions));
  }

  // A group consumer reads four records of each partition and commits its position.
  {
    auto c = group_consumer(port(1));
    ASSERT_TRUE(c);
    c->subscribe({topic});
    std::map<int32_t, int> seen;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while ((seen[0] < 6 || seen[1] < 6) && std::chrono::steady_clock::now() < deadline) {
      auto records = c->poll(200ms);
      if (!records) continue;
      for (const auto& r : *records) ++seen[r.partition];
    }
    ASSERT_EQ(seen[0], 6);
    ASSERT_EQ(seen[1], 6);
    ASSERT_TRUE(c->commit_sync({{{topic, 0}, 4}, {{topic, 1}, 3}}));
    ASSERT_TRUE(c->close());
  }
  auto committed = fetch_offsets(port(1));
  ASSERT_EQ(committed.error, 0);
  EXPECT_EQ(committed.offsets, (std::map<int32_t, int64_t>{{0, 4}, {1, 3}}));

  // The other brokers are not the group's coordinator.
  for (int32_t id = 2; id <= 3; ++id) {
    EXPECT_EQ(commit_offset(port(id), 0, 5), code(error_code::not_coordinator)) << id;
    EXPECT_EQ(fetch_offsets(port(id)).error, code(error_code::not_coordinator)) << id;
  }

  // A classic group answered JoinGroup and SyncGroup by its coordinator (broker 1, which leads
  // every partition of __consumer_offsets at first): answered once its records are committed.
  const coordinator_answer roster_first = coordinator_of(port(1), roster, -1);
  ASSERT_EQ(roster_first.node_id, 1);
  const roster_member member = join_roster(port(1), roster);
  ASSERT_EQ(member.error, 0);
  ASSERT_EQ(member.generation, 1);
  // A share group's members are served by the same leader only: elsewhere NOT_COORDINATOR.
  EXPECT_EQ(share_join(port(2)), code(error_code::not_coordinator));
  EXPECT_EQ(share_join(port(3)), code(error_code::not_coordinator));
  EXPECT_EQ(share_join(port(1)), 0);

  // The commits reach the followers' replicas of the group's partition (byte for byte).
  const int32_t group_partition = java_partition(group);
  const auto segment = [&](int32_t id) {
    return broker(id).data_dir() / ("__consumer_offsets-" + std::to_string(group_partition)) /
           "00000000000000000000.log";
  };
  const std::string leader_bytes = file_bytes(segment(1));
  ASSERT_FALSE(leader_bytes.empty());
  for (int32_t id = 2; id <= 3; ++id) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (file_bytes(segment(id)) != leader_bytes && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    EXPECT_EQ(file_bytes(segment(id)), leader_bytes) << "broker " << id;
  }

  // kill -9 of the coordinator's broker: after its session ends the controller moves the
  // partition's leadership, and FindCoordinator names the new leader on both survivors.
  broker(1).process().send_signal(SIGKILL);
  ASSERT_TRUE(broker(1).process().wait_exit(10s).has_value());
  const coordinator_answer moved = wait_for_coordinator(
      port(2), [](const coordinator_answer& c) { return c.node_id != 1; }, 15s);
  ASSERT_EQ(moved.error, 0);
  ASSERT_TRUE(moved.node_id == 2 || moved.node_id == 3) << moved.node_id;
  EXPECT_EQ(moved.port, port(moved.node_id));
  const coordinator_answer from_3 = wait_for_coordinator(
      port(3), [&](const coordinator_answer& c) { return c.node_id == moved.node_id; }, 10s);
  EXPECT_EQ(from_3.node_id, moved.node_id);
  const int32_t other = moved.node_id == 2 ? 3 : 2;

  // The new coordinator loaded the partition from its replica: every committed offset.
  fetched_offsets after;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  do {
    after = fetch_offsets(port(moved.node_id));
    if (after.error == 0) break;
    std::this_thread::sleep_for(20ms);
  } while (std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(after.error, 0);
  EXPECT_EQ(after.offsets, (std::map<int32_t, int64_t>{{0, 4}, {1, 3}}));
  EXPECT_EQ(fetch_offsets(port(other)).error, code(error_code::not_coordinator));

  // The group resumes where it committed: its next consumer reads 0-4, 0-5, 1-3, 1-4, 1-5.
  auto c = group_consumer(port(other));
  ASSERT_TRUE(c);
  c->subscribe({topic});
  auto values = poll_values(*c, 5);
  std::set<std::string> got(values.begin(), values.end());
  EXPECT_EQ(got, (std::set<std::string>{"0-4", "0-5", "1-3", "1-4", "1-5"}));
  EXPECT_EQ(values.size(), 5u);
  ASSERT_TRUE(c->commit_sync({{{topic, 0}, 6}}));
  EXPECT_EQ(fetch_offsets(port(moved.node_id)).offsets[0], 6);
  ASSERT_TRUE(c->close());

  // The classic group moved too, with the generation and assignment SyncGroup answered.
  const coordinator_answer roster_now = coordinator_of(port(other), roster, 1);
  ASSERT_EQ(roster_now.error, 0);
  const int32_t roster_leader = roster_now.node_id;
  {
    kafka_conn dc(port(roster_leader), nullptr);
    protocol::describe_groups_request d;
    d.groups = {roster};
    reply<protocol::describe_groups_response> r;
    const auto until = std::chrono::steady_clock::now() + 10s;
    do {  // COORDINATOR_LOAD_IN_PROGRESS while the new leader replays the partition
      r = dc.call<protocol::describe_groups_response>(d, 5);
      if (r && r->groups.size() == 1 && r->groups[0].error_code == 0) break;
      std::this_thread::sleep_for(20ms);
    } while (std::chrono::steady_clock::now() < until);
    ASSERT_TRUE(r && r->groups.size() == 1);
    const auto& g = r->groups[0];
    EXPECT_EQ(g.error_code, 0);
    EXPECT_EQ(g.group_state, "Stable");
    ASSERT_EQ(g.members.size(), 1u);
    EXPECT_EQ(g.members[0].member_id, member.member_id);
    EXPECT_EQ(std::vector<uint8_t>(g.members[0].member_assignment.begin(),
                                   g.members[0].member_assignment.end()),
              roster_assignment);
  }

  // The coordinator's only follower stops: with min.insync.replicas=2 no write of the group's
  // partition can be committed, so none is answered as a success.
  const int32_t follower = moved.node_id == 2 ? 3 : 2;
  // Every thread stopped before the commit: kill() returns before a loaded machine has stopped
  // them, and a follower still running fetched the commit and moved the high watermark past it
  // (the commit answered 0: this test's failure under load until stop_process).
  ASSERT_TRUE(stop_process(broker(follower).process()));
  EXPECT_EQ(commit_offset(port(moved.node_id), 0, 5), code(error_code::coordinator_not_available));
  // Once the follower is out of the ISR (its session ended) the append itself is refused.
  auto shrunk = wait_for_partition(
      port(moved.node_id), "__consumer_offsets",
      [](const partition_view& v) { return v.isr.size() == 1; }, 10s, group_partition);
  EXPECT_TRUE(shrunk && shrunk->isr.size() == 1);
  // A new classic group of the same partition: its first GroupMetadata is refused, no group.
  std::string stalled = "stalled";
  for (int i = 0; java_partition(stalled) != group_partition; ++i) {
    stalled = "stalled-" + std::to_string(i);
  }
  EXPECT_EQ(join_roster(port(moved.node_id), stalled).error,
            code(error_code::coordinator_not_available));
  const int64_t before = fetch_offsets(port(moved.node_id)).offsets[0];
  EXPECT_EQ(commit_offset(port(moved.node_id), 0, 2), code(error_code::coordinator_not_available));
  EXPECT_EQ(fetch_offsets(port(moved.node_id)).offsets[0], before) << "the refused commit";
  broker(follower).process().send_signal(SIGKILL);
}

}  // namespace
}  // namespace tarn::test
