// The transaction coordinator in a cluster (docs/cluster.md, "Coordinators", issue 27): three
// real brokers on one real etcd with 2 s sessions. __transaction_state is one topic for the
// cluster (three partitions, replication factor 3); FindCoordinator for a transactional id names
// the same broker everywhere, the leader of the id's partition. A transactional producer (tarn's
// library) writes to three topics led by the three brokers: the coordinator writes its own
// leader's markers and sends WriteTxnMarkers to the others, so a read_committed consumer sees
// the committed transaction and not the aborted one, and the last stable offset passes both on
// every partition. __transaction_state is created by a Metadata request with auto-creation, as
// FindCoordinator creates it. Each leader that is not the coordinator asks it (AddPartitionsToTxn
// VerifyOnly) before it appends the first batch of a transaction. A second transactional id sends
// hand-built transactions v2 requests (KIP-890 part 2): Produce v12 to each leader adds the
// partition through the leader (AddPartitionsToTxn VerifyOnly=false to the coordinator), and
// TxnOffsetCommit v5 the group's through the group coordinator on another broker; EndTxn v5
// commits and aborts; a Produce v11 / v9 batch to a partition never added is refused by its
// leader's verification (TRANSACTION_ABORTABLE / INVALID_TXN_STATE, as Kafka 4.4). Two partitions
// of __transaction_state are moved to other preferred leaders, so two brokers coordinate: with one
// SIGSTOPped, the third broker's verification for the other's transaction is answered at once
// (one verifier thread per coordinator broker) and the stopped one's completes after SIGCONT. Then
// the coordinator's broker is killed with SIGKILL just after committing a transaction whose markers
// it writes to its own partition and another leader's, and with another transaction open: the new
// leader of the id's partition loads them, completes the committed one (its records read committed
// exactly once), the next producer's InitProducerId aborts and fences the open transaction, and
// the next transaction commits.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "etcd_process.h"
#include "kafka_conn.h"
#include "kafka_ref_broker.h"
#include "produce_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/add_partitions_to_txn_request.h"
#include "protocol/messages/add_partitions_to_txn_response.h"
#include "protocol/messages/alter_partition_reassignments_request.h"
#include "protocol/messages/alter_partition_reassignments_response.h"
#include "protocol/messages/api_versions_request.h"
#include "protocol/messages/api_versions_response.h"
#include "protocol/messages/describe_transactions_request.h"
#include "protocol/messages/describe_transactions_response.h"
#include "protocol/messages/elect_leaders_request.h"
#include "protocol/messages/elect_leaders_response.h"
#include "protocol/messages/end_txn_request.h"
#include "protocol/messages/end_txn_response.h"
#include "protocol/messages/find_coordinator_request.h"
#include "protocol/messages/find_coordinator_response.h"
#include "protocol/messages/init_producer_id_request.h"
#include "protocol/messages/init_producer_id_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "protocol/messages/offset_fetch_request.h"
#include "protocol/messages/offset_fetch_response.h"
#include "protocol/messages/txn_offset_commit_request.h"
#include "protocol/messages/txn_offset_commit_response.h"
#include "replication_util.h"
#include "tarn/consumer.h"
#include "tarn/producer.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;
using client::consumer;
using client::producer;

const std::string txn_id = "payments";
const std::vector<std::string> topics = {"led-by-1", "led-by-2", "led-by-3"};

std::vector<std::string> txn_args(const etcd_cluster& etcd, int32_t node_id) {
  return replication_args(
      etcd, node_id, 2000, 10000,
      {"transaction.state.log.num.partitions=3", "transaction.state.log.replication.factor=3",
       "transaction.state.log.min.isr=2", "offsets.topic.num.partitions=1",
       "offsets.topic.replication.factor=3"});
}

struct coordinator_answer {
  int16_t error = -100;  // -100: no answer
  int32_t node_id = -1;
};

// FindCoordinator v4, key type TRANSACTION, on the broker at `port`.
coordinator_answer find_txn_coordinator(uint16_t port, const std::string& id = txn_id) {
  kafka_conn c(port, nullptr);
  if (!c.connected()) return {};
  protocol::find_coordinator_request req;
  req.key_type = 1;
  req.coordinator_keys = {id};
  auto r = c.call<protocol::find_coordinator_response>(req, 4);
  if (!r || r->coordinators.size() != 1) return {};
  return {r->coordinators[0].error_code, r->coordinators[0].node_id};
}

coordinator_answer wait_for_txn_coordinator(uint16_t port, int32_t not_node,
                                            std::chrono::milliseconds timeout,
                                            const std::string& id = txn_id) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  coordinator_answer a = find_txn_coordinator(port, id);
  while (!(a.error == 0 && a.node_id != not_node) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    a = find_txn_coordinator(port, id);
  }
  return a;
}

class cluster_txn : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!etcd_available()) GTEST_SKIP() << "etcd is not installed (scripts/install-deps)";
    start_etcd_and_brokers(etcd_, brokers_, 3, [&](int32_t id) { return txn_args(*etcd_, id); });
    if (HasFatalFailure()) return;
    for (int32_t id = 1; id <= 3; ++id) ASSERT_TRUE(wait_for_brokers(port(id), 3));
  }
  // A failure in CI leaves only this output: each broker's last lines say where it stood.
  void TearDown() override {
    if (!HasFailure()) return;
    for (size_t i = 0; i < brokers_.size(); ++i) {
      if (!brokers_[i]) continue;
      const std::string out = brokers_[i]->output();
      std::cerr << "--- broker " << i + 1 << " ---\n"
                << (out.size() <= 6000 ? out : "..." + out.substr(out.size() - 6000)) << "\n";
      if (const char* dir = std::getenv("TARN_TEST_LOG_DIR")) {
        std::ofstream(std::string(dir) + "/broker" + std::to_string(i + 1) + ".log") << out;
      }
    }
  }
  broker_process& broker(int32_t id) { return *brokers_[static_cast<size_t>(id - 1)]; }
  uint16_t port(int32_t id) { return broker(id).port(); }
  std::string bootstrap(std::vector<int32_t> ids) {
    std::string out;
    for (int32_t id : ids)
      out += (out.empty() ? "" : ",") + ("127.0.0.1:" + std::to_string(port(id)));
    return out;
  }

  std::unique_ptr<producer> make_producer(const std::string& servers) {
    auto p = producer::create({{"bootstrap.servers", servers},
                               {"transactional.id", txn_id},
                               {"max.block.ms", "20000"},
                               {"retry.backoff.ms", "20"},
                               {"metadata.max.age.ms", "500"}});
    EXPECT_TRUE(p) << (p ? "" : p.error().message);
    return p ? std::move(*p) : nullptr;
  }

  // One transaction of one record per topic, values "<prefix>-<topic>", ended by commit or
  // abort.
  void transaction(producer& p, const std::string& prefix, bool commit) {
    ASSERT_TRUE(p.begin_transaction());
    std::vector<std::string> values;
    for (const auto& t : topics) values.push_back(prefix + "-" + t);
    for (size_t i = 0; i < topics.size(); ++i) {
      p.send({topics[i], 0, std::nullopt, values[i], {}, std::nullopt});
    }
    if (commit) {
      auto done = p.commit_transaction();
      ASSERT_TRUE(done) << done.error().message;
    } else {
      auto done = p.abort_transaction();
      ASSERT_TRUE(done) << done.error().message;
    }
  }

  // Reads every topic with read_committed until `want` values came (or 15 s passed).
  std::multiset<std::string> read_committed(const std::string& servers, size_t want) {
    auto c = consumer::create({{"bootstrap.servers", servers},
                               {"isolation.level", "read_committed"},
                               {"metadata.max.age.ms", "500"},
                               {"retry.backoff.ms", "20"}});
    EXPECT_TRUE(c);
    if (!c) return {};
    std::vector<client::topic_partition> tps;
    for (const auto& t : topics) tps.push_back({t, 0});
    (*c)->assign(tps);
    for (const auto& tp : tps) (*c)->seek(tp, client::offset_beginning);
    std::multiset<std::string> values;
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (values.size() < want && std::chrono::steady_clock::now() < deadline) {
      auto records = (*c)->poll(100ms);
      if (!records) continue;
      for (const auto& r : *records) values.insert(r.value.value_or(""));
    }
    EXPECT_TRUE((*c)->close());
    return values;
  }

  // Produce at `version` of one transactional record to topic-0 on the broker at `port` (its
  // leader): the partition's error code. Retried, as a Kafka client retries them, while the
  // leader answers NOT_ENOUGH_REPLICAS (a verification the coordinator could not answer yet) or
  // CONCURRENT_TRANSACTIONS (the previous transaction's markers are still being written).
  int16_t produce(uint16_t port, int16_t version, const std::string& id, const std::string& topic,
                  int64_t pid, int16_t epoch, int32_t seq, const std::string& value) {
    const std::vector<uint8_t> batch = transactional_batch(pid, epoch, seq, value);
    const protocol::produce_request req = transactional_produce(id, topic, 0, batch, 10000);
    kafka_conn c(port, nullptr);
    int16_t e = -2;
    for (int i = 0; i < 250; ++i) {
      auto r = c.call<protocol::produce_response>(req, version);
      if (!r || r->responses.size() != 1 || r->responses[0].partition_responses.size() != 1) {
        return -2;
      }
      e = r->responses[0].partition_responses[0].error_code;
      if (e != static_cast<int16_t>(protocol::error_code::not_enough_replicas) &&
          e != static_cast<int16_t>(protocol::error_code::concurrent_transactions)) {
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
    return e;
  }

  // TxnOffsetCommit v5 (transactions v2: adds the group's partition) of topics[0]-0 at
  // `offset` on the group's coordinator: the partition's error code.
  int16_t txn_offset_commit(uint16_t port, const std::string& id, const std::string& group,
                            int64_t pid, int16_t epoch, int64_t offset) {
    kafka_conn c(port, nullptr);
    protocol::txn_offset_commit_request req;
    req.transactional_id = id;
    req.group_id = group;
    req.producer_id = pid;
    req.producer_epoch = epoch;
    req.topics.emplace_back();
    req.topics[0].name = topics[0];
    req.topics[0].partitions.emplace_back();
    req.topics[0].partitions[0].partition_index = 0;
    req.topics[0].partitions[0].committed_offset = offset;
    int16_t e = -2;
    for (int i = 0; i < 250; ++i) {
      auto r = c.call<protocol::txn_offset_commit_response>(req, 5);
      if (!r || r->topics.size() != 1 || r->topics[0].partitions.size() != 1) return -2;
      e = r->topics[0].partitions[0].error_code;
      if (e != static_cast<int16_t>(protocol::error_code::coordinator_load_in_progress) &&
          e != static_cast<int16_t>(protocol::error_code::concurrent_transactions)) {
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
    return e;
  }

  // EndTxn v5 (transactions v2: the epoch is bumped) on the coordinator: the error and the
  // epoch answered.
  std::pair<int16_t, int16_t> end_txn(uint16_t port, const std::string& id, int64_t pid,
                                      int16_t epoch, bool commit) {
    kafka_conn c(port, nullptr);
    protocol::end_txn_request req;
    req.transactional_id = id;
    req.producer_id = pid;
    req.producer_epoch = epoch;
    req.committed = commit;
    std::pair<int16_t, int16_t> out{-2, -2};
    for (int i = 0; i < 250; ++i) {
      auto r = c.call<protocol::end_txn_response>(req, 5);
      if (!r) return out;
      out = {r->error_code, r->producer_epoch};
      if (r->error_code != static_cast<int16_t>(protocol::error_code::concurrent_transactions)) {
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
    return out;
  }

  // Creates each of `topics` on its broker, which leads it (the interim placement rule), with
  // three replicas so that it survives a kill, and __transaction_state through a Metadata
  // request with auto-creation, as FindCoordinator would (replicated with its partition states:
  // Kafka's AutoTopicCreationManager).
  void create_topics_and_transaction_state() {
    for (int32_t id = 1; id <= 3; ++id) {
      ASSERT_EQ(create_topic(port(id), topics[static_cast<size_t>(id - 1)], 1, {}, 3), 0);
    }
    kafka_conn c(port(2), nullptr);
    protocol::metadata_request req;
    req.topics.emplace();
    req.topics->push_back({{}, "__transaction_state"});
    req.allow_auto_topic_creation = true;
    auto r = c.call<protocol::metadata_response>(req, 12);
    ASSERT_TRUE(r);
    EXPECT_TRUE(broker(2).process().wait_for_output("auto-created topic __transaction_state", 5s));
  }

  // The transaction's state as DescribeTransactions on `node` gives it, once it is `want` (or
  // after about 30 s: the partitions' leaders may be moving).
  std::string wait_for_txn_state(int32_t node, const std::string& id, const std::string& want) {
    kafka_conn c(port(node), nullptr);
    protocol::describe_transactions_request req;
    req.transactional_ids = {id};
    std::string state;
    for (int i = 0; i < 1500 && state != want; ++i) {
      auto r = c.call<protocol::describe_transactions_response>(req, 0);
      if (!r || r->transaction_states.size() != 1) return "(no answer)";
      state = std::string(r->transaction_states[0].transaction_state);
      if (state != want) std::this_thread::sleep_for(20ms);
    }
    return state;
  }

  std::unique_ptr<etcd_cluster> etcd_;
  std::vector<std::unique_ptr<broker_process>> brokers_;
};

TEST_F(cluster_txn, markers_reach_every_leader_and_the_coordinator_moves_with_its_partition) {
  create_topics_and_transaction_state();
  if (HasFatalFailure()) return;
  coordinator_answer first = wait_for_txn_coordinator(port(1), -1, 15s);
  ASSERT_EQ(first.error, 0);
  {
    kafka_conn c(port(3), nullptr);
    protocol::metadata_request req;
    req.topics.emplace();
    req.topics->push_back({{}, "__transaction_state"});
    // Broker 3 learns the topic and its partitions' states by two watches: until both arrived
    // its partitions have no leader (LEADER_NOT_AVAILABLE), as a client retries them.
    reply<protocol::metadata_response> r;
    const auto known = [&] {
      if (!r || r->topics.size() != 1 || r->topics[0].partitions.size() != 3) return false;
      return std::all_of(r->topics[0].partitions.begin(), r->topics[0].partitions.end(),
                         [](const auto& p) { return p.error_code == 0; });
    };
    for (int i = 0; i < 500; ++i) {
      r = c.call<protocol::metadata_response>(req, 12);
      if (known()) break;
      std::this_thread::sleep_for(20ms);
    }
    ASSERT_TRUE(r);
    ASSERT_EQ(r->topics.size(), 1u);
    EXPECT_EQ(r->topics[0].error_code, 0);
    ASSERT_EQ(r->topics[0].partitions.size(), 3u);
    for (const auto& p : r->topics[0].partitions) EXPECT_EQ(p.error_code, 0);
    std::string layout;
    for (const auto& p : r->topics[0].partitions) {
      EXPECT_EQ(p.replica_nodes.size(), 3u);
      layout += " " + std::to_string(p.partition_index) + ": leader " +
                std::to_string(p.leader_id) + " replicas";
      for (int32_t n : p.replica_nodes) layout += " " + std::to_string(n);
    }
    // Auto-created, every partition has its creator first, so one broker would coordinate every
    // id: partitions 1 and 2 get another preferred leader (a reorder, complete at once) and are
    // elected to it, so that different brokers coordinate (the paused coordinator below).
    protocol::alter_partition_reassignments_request move;
    move.topics.emplace_back();
    move.topics[0].name = "__transaction_state";
    protocol::elect_leaders_request elect;
    elect.election_type = 0;  // PREFERRED
    elect.topic_partitions.emplace();
    elect.topic_partitions->emplace_back();
    elect.topic_partitions->back().topic = "__transaction_state";
    for (const auto& p : r->topics[0].partitions) {
      if (p.partition_index == 0 || p.replica_nodes.size() != 3) continue;
      std::vector<int32_t> rotated = p.replica_nodes;
      std::rotate(rotated.begin(), rotated.begin() + p.partition_index, rotated.end());
      move.topics[0].partitions.push_back({p.partition_index, rotated});
      elect.topic_partitions->back().partitions.push_back(p.partition_index);
    }
    auto moved = c.call<protocol::alter_partition_reassignments_response>(move, 0);
    ASSERT_TRUE(moved);
    EXPECT_EQ(moved->error_code, 0) << layout;
    auto elected = c.call<protocol::elect_leaders_response>(elect, 1);
    ASSERT_TRUE(elected);
    EXPECT_EQ(elected->error_code, 0) << layout;
  }
  // Every broker names the same coordinator once the elections reached them.
  bool agreed = false;
  for (int i = 0; i < 500 && !agreed; ++i) {
    first = find_txn_coordinator(port(1));
    agreed = first.error == 0;
    for (int32_t id = 2; id <= 3 && agreed; ++id) {
      const coordinator_answer a = find_txn_coordinator(port(id));
      agreed = a.error == 0 && a.node_id == first.node_id;
    }
    if (!agreed) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(agreed) << "the brokers name different transaction coordinators";
  const int32_t coordinator = first.node_id;

  auto p = make_producer(bootstrap({1, 2, 3}));
  ASSERT_TRUE(p);
  auto init = p->init_transactions();
  ASSERT_TRUE(init) << init.error().message;
  transaction(*p, "committed", true);
  transaction(*p, "aborted", false);
  transaction(*p, "second", true);

  // Transactions v2 by hand for another id: Produce v12 adds each partition through its leader.
  const std::string v2_id = "payments-v2";
  const coordinator_answer v2_coordinator = wait_for_txn_coordinator(port(1), -1, 15s, v2_id);
  ASSERT_EQ(v2_coordinator.error, 0);
  const uint16_t v2_port = port(v2_coordinator.node_id);
  int64_t pid = -1;
  int16_t epoch = -1;
  {
    kafka_conn c(v2_port, nullptr);
    protocol::init_producer_id_request req;
    req.transactional_id = std::string_view(v2_id);
    req.transaction_timeout_ms = 60000;
    auto r = c.call<protocol::init_producer_id_response>(req, 5);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->error_code, 0);
    pid = r->producer_id;
    epoch = r->producer_epoch;
  }
  // The group's coordinator on another broker than the transaction's (the broker a
  // FindCoordinator first reaches creates __consumer_offsets and leads it): TxnOffsetCommit v5
  // adds the group's partition through it.
  const int32_t other = v2_coordinator.node_id % 3 + 1;
  const std::string group = "v2-group";
  coordinator_answer group_coordinator;
  for (int i = 0; i < 500 && group_coordinator.error != 0; ++i) {
    kafka_conn c(port(other), nullptr);
    protocol::find_coordinator_request req;
    req.key_type = 0;
    req.coordinator_keys = {group};
    auto r = c.call<protocol::find_coordinator_response>(req, 4);
    if (r && r->coordinators.size() == 1) {
      group_coordinator = {r->coordinators[0].error_code, r->coordinators[0].node_id};
    }
    if (group_coordinator.error != 0) std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(group_coordinator.error, 0);
  EXPECT_NE(group_coordinator.node_id, v2_coordinator.node_id);
  for (const bool commit : {true, false}) {
    const std::string prefix = commit ? "v2-committed-" : "v2-aborted-";
    for (int32_t id = 1; id <= 3; ++id) {
      const std::string& t = topics[static_cast<size_t>(id - 1)];
      EXPECT_EQ(produce(port(id), 12, v2_id, t, pid, epoch, 0, prefix + t), 0) << t;
    }
    EXPECT_EQ(txn_offset_commit(port(group_coordinator.node_id), v2_id, group, pid, epoch,
                                commit ? 7 : 9),
              0);
    const auto [error, bumped] = end_txn(v2_port, v2_id, pid, epoch, commit);
    ASSERT_EQ(error, 0);
    EXPECT_EQ(bumped, epoch + 1);
    epoch = bumped;
  }
  // A transactions v1 batch to a partition never added, on a leader that is not the
  // coordinator: its verification refuses it (TRANSACTION_ABORTABLE for v11, INVALID_TXN_STATE
  // below), with a transaction open elsewhere and with none.
  const std::string& other_topic = topics[static_cast<size_t>(other - 1)];
  const std::string& own_topic = topics[static_cast<size_t>(v2_coordinator.node_id - 1)];
  EXPECT_EQ(produce(port(other), 11, v2_id, other_topic, pid, epoch, 0, "never-added"), 120);
  ASSERT_EQ(produce(v2_port, 12, v2_id, own_topic, pid, epoch, 0, "v2-open"), 0);
  EXPECT_EQ(produce(port(other), 11, v2_id, other_topic, pid, epoch, 0, "never-added"), 120);
  EXPECT_EQ(produce(port(other), 9, v2_id, other_topic, pid, epoch, 0, "never-added"), 48);
  ASSERT_EQ(end_txn(v2_port, v2_id, pid, epoch, false).first, 0);

  // The committed transaction's offset, not the aborted one's (OffsetFetch v8 RequireStable).
  {
    kafka_conn c(port(group_coordinator.node_id), nullptr);
    protocol::offset_fetch_request req;
    req.require_stable = true;
    req.groups.emplace_back();
    req.groups[0].group_id = group;
    req.groups[0].topics.emplace();
    req.groups[0].topics->emplace_back();
    req.groups[0].topics->back().name = topics[0];
    req.groups[0].topics->back().partition_indexes = {0};
    int64_t offset = -2;
    for (int i = 0; i < 250 && offset == -2; ++i) {
      auto r = c.call<protocol::offset_fetch_response>(req, 8);
      ASSERT_TRUE(r);
      const auto& p = r->groups.at(0).topics.at(0).partitions.at(0);
      if (p.error_code == 0) {
        offset = p.committed_offset;
      } else {
        std::this_thread::sleep_for(20ms);
      }
    }
    EXPECT_EQ(offset, 7);
  }

  // read_committed stops at the last stable offset: "second" is visible on every partition only
  // once the aborted transaction's markers (and the committed ones') were written everywhere.
  const std::multiset<std::string> committed = {
      "committed-led-by-1",    "committed-led-by-2",    "committed-led-by-3",
      "second-led-by-1",       "second-led-by-2",       "second-led-by-3",
      "v2-committed-led-by-1", "v2-committed-led-by-2", "v2-committed-led-by-3"};
  EXPECT_EQ(read_committed(bootstrap({1, 2, 3}), committed.size()), committed);

  // A paused coordinator holds up only the verifications of the transactions it coordinates
  // (one verifier thread per coordinator broker). Two ids coordinated by two brokers, `paused`
  // and `prompt`; the third broker leads the partition both write to with Produce v11
  // (VerifyOnly: nothing is written on the coordinator, so the paused broker, a follower of every
  // partition, holds no answer up) and acks=1. With `paused` stopped (shorter than
  // broker.session.timeout.ms, so it is not fenced), the leader's verification for `prompt`'s
  // transaction is answered at once while the one for `paused`'s waits; SIGCONT, and it
  // completes.
  std::map<int32_t, std::string> id_of;  // coordinator -> a transactional id it serves
  for (int i = 0; i < 64 && id_of.size() < 3; ++i) {
    const std::string id = "verify-" + std::to_string(i);
    const coordinator_answer a = find_txn_coordinator(port(1), id);
    if (a.error == 0 && !id_of.contains(a.node_id)) id_of[a.node_id] = id;
  }
  ASSERT_GE(id_of.size(), 2u) << "every partition of __transaction_state has one leader";
  const int32_t paused = id_of.begin()->first;
  const int32_t prompt = std::next(id_of.begin())->first;
  const int32_t leader = 6 - paused - prompt;
  const std::string& leader_topic = topics[static_cast<size_t>(leader - 1)];
  // InitProducerId, then AddPartitionsToTxn v3 (a transactions v1 client) of leader_topic-0.
  auto begin_v1 = [&](int32_t node) -> std::pair<int64_t, int16_t> {
    kafka_conn c(port(node), nullptr);
    protocol::init_producer_id_request init_req;
    init_req.transactional_id = std::string_view(id_of[node]);
    init_req.transaction_timeout_ms = 60000;
    auto r = c.call<protocol::init_producer_id_response>(init_req, 5);
    if (!r || r->error_code != 0) return {-1, -1};
    protocol::add_partitions_to_txn_request add;
    add.v3_and_below_transactional_id = id_of[node];
    add.v3_and_below_producer_id = r->producer_id;
    add.v3_and_below_producer_epoch = r->producer_epoch;
    add.v3_and_below_topics.emplace_back();
    add.v3_and_below_topics[0].name = leader_topic;
    add.v3_and_below_topics[0].partitions = {0};
    auto a = c.call<protocol::add_partitions_to_txn_response>(add, 3);
    if (!a || a->results_by_topic_v3_and_below.size() != 1 ||
        a->results_by_topic_v3_and_below[0].results_by_partition.size() != 1 ||
        a->results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code != 0) {
      return {-1, -1};
    }
    return {r->producer_id, r->producer_epoch};
  };
  const auto [paused_pid, paused_epoch] = begin_v1(paused);
  const auto [prompt_pid, prompt_epoch] = begin_v1(prompt);
  ASSERT_GE(paused_pid, 0);
  ASSERT_GE(prompt_pid, 0);
  // Produce v11, acks=1, of one record of the transaction to leader_topic-0: the error code.
  auto produce_v11 = [&](int32_t node, int64_t pid, int16_t epoch) -> int16_t {
    const std::vector<uint8_t> batch = transactional_batch(pid, epoch, 0, "v1-" + id_of[node]);
    protocol::produce_request req =
        transactional_produce(id_of[node], leader_topic, 0, batch, 10000);
    req.acks = 1;
    kafka_conn c(port(leader), nullptr);
    auto r = c.call<protocol::produce_response>(req, 11);
    if (!r || r->responses.size() != 1 || r->responses[0].partition_responses.size() != 1) {
      return -2;
    }
    return r->responses[0].partition_responses[0].error_code;
  };
  ASSERT_TRUE(stop_process(broker(paused).process()));
  const auto paused_at = std::chrono::steady_clock::now();
  std::atomic<int16_t> held_answer{-100};
  std::thread held([&] { held_answer = produce_v11(paused, paused_pid, paused_epoch); });
  std::this_thread::sleep_for(150ms);  // its verification is on its way to the paused broker
  const auto prompt_start = std::chrono::steady_clock::now();
  EXPECT_EQ(produce_v11(prompt, prompt_pid, prompt_epoch), 0);
  const auto prompt_took = std::chrono::steady_clock::now() - prompt_start;
  EXPECT_EQ(held_answer.load(), -100) << "answered while its coordinator was stopped";
  broker(paused).process().send_signal(SIGCONT);
  const auto paused_for = std::chrono::steady_clock::now() - paused_at;
  held.join();
  EXPECT_EQ(held_answer.load(), 0);
  EXPECT_LT(prompt_took, 1000ms) << "a stopped coordinator held up another's verification";
  EXPECT_LT(paused_for, 1500ms);  // below broker.session.timeout.ms: the broker stays in
  EXPECT_EQ(end_txn(port(paused), id_of[paused], paused_pid, paused_epoch, false).first, 0);
  EXPECT_EQ(end_txn(port(prompt), id_of[prompt], prompt_pid, prompt_epoch, false).first, 0);

  // Mid-transaction (the partitions added, records written, no EndTxn) the coordinator dies.
  ASSERT_TRUE(p->begin_transaction());
  for (const auto& t : topics) p->send({t, 0, std::nullopt, "open-" + t, {}, std::nullopt});
  p->flush();
  // Another transaction of this coordinator's, to its own partition (a marker it writes
  // locally) and another leader's, is committed just before: EndTxn is answered once
  // PrepareCommit is committed, so the markers are being written as the broker dies. The
  // coordinator writes CompleteCommit only once each marker is committed (the high watermark
  // passed it), so whatever the kill interrupts, the next coordinator finds PrepareCommit (and
  // sends the markers again, to the partitions' new leaders) or every marker replicated: the
  // transaction's records are read committed exactly once below.
  ASSERT_TRUE(id_of.contains(coordinator));
  const std::string& dying_id = id_of[coordinator];
  const std::string& own_topic_of_coordinator = topics[static_cast<size_t>(coordinator - 1)];
  const std::string& next_topic = topics[static_cast<size_t>(coordinator % 3)];
  int64_t dying_pid = -1;
  int16_t dying_epoch = -1;
  {
    kafka_conn c(port(coordinator), nullptr);
    protocol::init_producer_id_request req;
    req.transactional_id = std::string_view(dying_id);
    req.transaction_timeout_ms = 60000;
    // CONCURRENT_TRANSACTIONS while the id's transaction above completes.
    auto r = c.call<protocol::init_producer_id_response>(req, 5);
    for (int i = 0; i < 250 && r && r->error_code == 51; ++i) {
      std::this_thread::sleep_for(20ms);
      r = c.call<protocol::init_producer_id_response>(req, 5);
    }
    ASSERT_TRUE(r);
    ASSERT_EQ(r->error_code, 0);
    dying_pid = r->producer_id;
    dying_epoch = r->producer_epoch;
  }
  EXPECT_EQ(produce(port(coordinator), 12, dying_id, own_topic_of_coordinator, dying_pid,
                    dying_epoch, 0, "dying-" + own_topic_of_coordinator),
            0);
  EXPECT_EQ(produce(port(coordinator % 3 + 1), 12, dying_id, next_topic, dying_pid, dying_epoch, 0,
                    "dying-" + next_topic),
            0);
  ASSERT_EQ(end_txn(port(coordinator), dying_id, dying_pid, dying_epoch, true).first, 0);
  broker(coordinator).process().send_signal(SIGKILL);
  ASSERT_TRUE(broker(coordinator).process().wait_exit(10s).has_value());
  std::vector<int32_t> survivors;
  for (int32_t id = 1; id <= 3; ++id) {
    if (id != coordinator) survivors.push_back(id);
  }
  const coordinator_answer moved = wait_for_txn_coordinator(port(survivors[0]), coordinator, 20s);
  ASSERT_EQ(moved.error, 0);
  // The other survivor names it too once the leadership reached it (a moment later under TSan).
  EXPECT_EQ(wait_for_txn_coordinator(port(survivors[1]), coordinator, 20s).node_id, moved.node_id);

  // The next producer of the id: the new coordinator aborts the open transaction with a bumped
  // epoch (fencing the old producer), then hands out the next epoch.
  auto next = make_producer(bootstrap(survivors));
  ASSERT_TRUE(next);
  init = next->init_transactions();
  ASSERT_TRUE(init) << init.error().message;
  transaction(*next, "after", true);
  // The transaction committed as its coordinator died completes at the next one.
  {
    const coordinator_answer at =
        wait_for_txn_coordinator(port(survivors[0]), coordinator, 20s, dying_id);
    ASSERT_EQ(at.error, 0);
    EXPECT_EQ(wait_for_txn_state(at.node_id, dying_id, "CompleteCommit"), "CompleteCommit");
  }
  std::multiset<std::string> all = committed;
  all.insert({"after-led-by-1", "after-led-by-2", "after-led-by-3"});
  all.insert({"dying-" + own_topic_of_coordinator, "dying-" + next_topic});
  EXPECT_EQ(read_committed(bootstrap(survivors), all.size()), all);
  // The old producer is fenced.
  auto fenced = p->commit_transaction();
  EXPECT_FALSE(fenced);
}

// A leader of a transaction's partition that is not its coordinator dies as the transaction is
// committed: EndTxn is answered once PrepareCommit is committed, so the coordinator is sending the
// markers when the leader is killed (before, during or after its marker, as the race falls). The
// coordinator completes the commit only once a marker is committed on every partition, so it
// sends the dead leader's marker again to the partition's next leader: the transaction becomes
// CompleteCommit, its records on all three partitions are read committed exactly once (the last
// stable offset passes the marker at the new leader), and the producer's next transaction, on
// the new leaders, commits too.
TEST_F(cluster_txn, a_data_leader_killed_as_a_transaction_commits_gets_its_marker_at_the_next) {
  create_topics_and_transaction_state();
  if (HasFatalFailure()) return;
  const coordinator_answer at = wait_for_txn_coordinator(port(1), -1, 15s);
  ASSERT_EQ(at.error, 0);
  const int32_t coordinator = at.node_id;
  const int32_t data_leader = coordinator % 3 + 1;  // leads topics[data_leader - 1]
  std::vector<int32_t> survivors;
  for (int32_t id = 1; id <= 3; ++id) {
    if (id != data_leader) survivors.push_back(id);
  }
  auto p = make_producer(bootstrap({1, 2, 3}));
  ASSERT_TRUE(p);
  auto init = p->init_transactions();
  ASSERT_TRUE(init) << init.error().message;
  transaction(*p, "before", true);

  ASSERT_TRUE(p->begin_transaction());
  for (const auto& t : topics) p->send({t, 0, std::nullopt, "dying-" + t, {}, std::nullopt});
  p->flush();
  auto committed = p->commit_transaction();
  ASSERT_TRUE(committed) << committed.error().message;
  broker(data_leader).process().send_signal(SIGKILL);
  ASSERT_TRUE(broker(data_leader).process().wait_exit(10s).has_value());
  const std::string& orphan = topics[static_cast<size_t>(data_leader - 1)];
  const auto moved = wait_for_partition(
      port(survivors[0]), orphan,
      [&](const partition_view& v) { return v.leader > 0 && v.leader != data_leader; }, 20s);
  ASSERT_TRUE(moved) << broker(survivors[0]).output();

  EXPECT_EQ(wait_for_txn_state(coordinator, txn_id, "CompleteCommit"), "CompleteCommit")
      << broker(coordinator).output();
  transaction(*p, "after", true);
  std::multiset<std::string> all;
  for (const char* prefix : {"before-", "dying-", "after-"}) {
    for (const auto& t : topics) all.insert(std::string(prefix) + t);
  }
  EXPECT_EQ(read_committed(bootstrap(survivors), all.size()), all);
}

// Kafka 4.4.0's Java clients (tests/java/ClusterTxnCheck.java): a KafkaProducer with the default
// transaction.version (transactions v2: Produce v12 adds each partition through its leader)
// commits, aborts and commits across the three leaders, and a read_committed KafkaConsumer sees
// exactly the committed records; then kafka-transactions.sh lists and describes the id. Named for
// `make interop` (three JVM start-ups: about 15 s on a loaded machine).
TEST_F(cluster_txn, java_clients_and_tools_across_three_leaders_against_kafka_clients) {
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  for (int32_t id = 1; id <= 3; ++id) {
    ASSERT_EQ(create_topic(port(id), topics[static_cast<size_t>(id - 1)], 1, {}, 3), 0);
  }
  // The cluster finalizes transaction.version 2, so the producer uses transactions v2.
  {
    kafka_conn c(port(2), nullptr);
    protocol::api_versions_request req;
    req.client_software_name = "tarn-test";
    req.client_software_version = "1";
    auto r = c.call<protocol::api_versions_response>(req, 3);
    ASSERT_TRUE(r);
    int16_t finalized = -1;
    for (const auto& f : r->finalized_features) {
      if (f.name == "transaction.version") finalized = f.max_version_level;
    }
    EXPECT_EQ(finalized, 2);
  }
  const std::string id = "java-payments";
  auto [rc, out] =
      run_command("timeout 120 java -cp '" + kafka_libs() + "/*' " + std::string(TARN_SOURCE_DIR) +
                  "/tests/java/ClusterTxnCheck.java " + bootstrap({1, 2, 3}) + " " + id + " " +
                  topics[0] + " " + topics[1] + " " + topics[2] + " 2>&1");
  ASSERT_EQ(rc, 0) << out;
  std::vector<std::string> got = lines_with(out, "got ");
  std::sort(got.begin(), got.end());
  std::vector<std::string> want;
  for (const std::string prefix : {"c-", "d-"}) {
    for (const auto& t : topics) want.push_back("got " + t + " " + prefix + t);
  }
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want) << out;

  // Kafka's own tool: ListTransactions from every broker, DescribeTransactions at the
  // coordinator.
  const std::string tool = "timeout 60 " + std::string(TARN_SOURCE_DIR) +
                           "/scripts/kafka-ref tool org.apache.kafka.tools.TransactionsCommand "
                           "--bootstrap-server " +
                           bootstrap({1, 2, 3}) + " ";
  auto [list_rc, list] = run_command(tool + "list 2>&1");
  EXPECT_EQ(list_rc, 0) << list;
  EXPECT_NE(list.find(id), std::string::npos) << list;
  auto [describe_rc, described] = run_command(tool + "describe --transactional-id " + id + " 2>&1");
  EXPECT_EQ(describe_rc, 0) << described;
  EXPECT_NE(described.find("CompleteCommit"), std::string::npos) << described;
}

}  // namespace
}  // namespace tarn::test
